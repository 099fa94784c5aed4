"""The results folder of a job: its layout, and the one reader of its rows.

```
RESULTS_DIR/
  part-NNNNN.parquet         result rows of shard N (RESULTS_SCHEMA)
  _plans/part-NNNNN.parquet  plan rows of shard N (PLANS_SCHEMA)
  _manifest.json             job fingerprint, metadata and committed shards
  plans.parquet              every plan row, written once every shard is committed
  _SUCCESS                   written last
  _staging/                  shards being written (removed when the job ends)
  _LOCK                      the writing process (one writer per folder: it holds an flock on it)
```

Nothing else belongs in a results folder: a job stops (exit 2) at any other file, unless `--force`
(see `codenib.outputs`). Temporary files carry the writing process's id (`outputs.tmp_path`).

Core level: the batch sink writes through these names; evaluation, re-ranking and the demo
read through `ResultsFolder`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from codenib.outputs import TMP_NAME, Ownership, foreign_files, refuse_foreign, refuse_unknown
from codenib.types import RESULTS_SCHEMA

RESULTS_FORMAT = "codenib-results"
MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"
PLANS = "plans.parquet"
LOCK = "_LOCK"
STAGING = "_staging"
PLAN_PARTS = "_plans"
PART_GLOB = "part-*.parquet"
_PART = re.compile(r"part-\d{5}\.parquet")
#: The schema metadata key of every Parquet file a job writes (its metadata, as JSON).
METADATA_KEY = b"codenib"


def part_name(shard_id: int) -> str:
    """The file name of shard `shard_id` (in the folder, and under `_plans/`)."""
    return f"part-{shard_id:05d}.parquet"


def owns_result_file(rel: str) -> bool:
    """Whether a job writes the file at `rel` (a relative posix path) in a results folder."""
    folder, _, name = rel.rpartition("/")
    if TMP_NAME.fullmatch(name):
        return folder in ("", STAGING, PLAN_PARTS)
    if folder == "":
        return name in (MANIFEST, SUCCESS, PLANS, LOCK) or bool(_PART.fullmatch(name))
    if folder == PLAN_PARTS:
        return bool(_PART.fullmatch(name))
    if folder == STAGING:  # also the names of earlier versions, which staged without tmp names
        return name == PLANS or bool(_PART.fullmatch(name.removeprefix("plans-")))
    return False


#: What a job may write in a results folder.
RESULTS_OWNERSHIP = Ownership(owns_result_file, frozenset({STAGING, PLAN_PARTS}))


def check_results_dir(path: Path, force: bool = False) -> None:
    """Refuse (reading only) a non-empty folder with nothing of a job's in it, or a results
    folder that also holds files CodeNib did not write (unless `force`).

    Raises:
        BadInputError: naming the folder, or its first foreign file, and the fix.
    """
    if not path.is_dir():
        return
    entries = list(path.iterdir())
    # A folder with nothing of a job's in it is never taken over, --force or not.
    if entries and not any(_ours(e) for e in entries):
        refuse_unknown(path, "CodeNib results folder")
    refuse_foreign(path, foreign_files(path, RESULTS_OWNERSHIP), "the results folder", force)


@dataclass(frozen=True)
class ResultsFolder:
    """Paths of one results folder, and its reader."""

    path: Path

    def __post_init__(self):
        object.__setattr__(self, "path", Path(self.path))

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def plans_path(self) -> Path:
        return self.path / PLANS

    @property
    def success_path(self) -> Path:
        return self.path / SUCCESS

    @property
    def lock_path(self) -> Path:
        return self.path / LOCK

    @property
    def staging(self) -> Path:
        return self.path / STAGING

    @property
    def plan_parts(self) -> Path:
        return self.path / PLAN_PARTS

    @property
    def complete(self) -> bool:
        """True once `_SUCCESS` is written: every shard committed, none failed."""
        return self.success_path.is_file()

    def manifest(self) -> dict[str, Any]:
        """The parsed `_manifest.json` (raises OSError or ValueError; callers word the error)."""
        return json.loads(self.manifest_path.read_text())

    def parts(self) -> list[Path]:
        """The result part files, in shard order. A part is renamed into place only once
        complete, so every file here holds a whole shard."""
        return sorted(self.path.glob(PART_GLOB))

    def rows(self, read_part: Callable[[Path], pa.Table] | None = None,
             empty: pa.Table | None = None) -> pa.Table:
        """Every result row, sorted by (qid, plan, rank).

        `read_part` reads (and may validate or cast) one part file; `empty` is the table
        of a folder without parts.
        """
        import pyarrow.parquet as pq

        tables = [(read_part or pq.read_table)(part) for part in self.parts()]
        table = pa.concat_tables(tables) if tables else (empty if empty is not None else RESULTS_SCHEMA.empty_table())
        return table.sort_by([("qid", "ascending"), ("plan", "ascending"), ("rank", "ascending")])

    def plans(self, columns: list[str] | None = None) -> pa.Table:
        """The rows of `plans.parquet` (one per query and plan)."""
        import pyarrow.parquet as pq

        return pq.read_table(self.plans_path, columns=columns)


def read_results(path: str | Path) -> pa.Table:
    """Every result row of a results folder, sorted by (qid, plan, rank)."""
    return ResultsFolder(path).rows()


def _ours(entry: Path) -> bool:
    """Whether a top-level entry of a results folder has a name a job writes."""
    if entry.is_dir() and not entry.is_symlink():
        return entry.name in RESULTS_OWNERSHIP.dirs
    return RESULTS_OWNERSHIP.owns(entry.name)


def download_results(uri: str, storage, dest: Path) -> Path:
    """Copy what a job committed under a results prefix on object storage (`_manifest.json`,
    the parts it lists, `plans.parquet`, `_SUCCESS`) into the local folder `dest`, to read it
    like any results folder. Objects not committed (an interrupted job's) are not copied.

    Raises:
        StorageError: the prefix cannot be read or holds no `_manifest.json`.
    """
    from codenib.storage import StorageError

    store = storage.open(uri)
    store.check_bucket()
    if not store.is_file(MANIFEST):
        raise StorageError(f"no {MANIFEST} under {uri}: not a results prefix of `codenib run`", path=uri,
                           fix="pass the --out URI of `codenib run`")
    manifest = json.loads(store.read_bytes(MANIFEST))
    dest.mkdir(parents=True, exist_ok=True)
    (dest / PLAN_PARTS).mkdir(exist_ok=True)
    (dest / MANIFEST).write_text(json.dumps(manifest))
    for shard in manifest.get("shards", {}).values():
        store.download(shard["file"], dest / shard["file"])
        store.download(f"{PLAN_PARTS}/{shard['file']}", dest / PLAN_PARTS / shard["file"])
    for name in (PLANS, SUCCESS):
        if store.is_file(name):
            store.download(name, dest / name)
    return dest
