"""The results folder of a job: its layout, and the one reader of its rows.

```
RESULTS_DIR/
  part-NNNNN.parquet         result rows of shard N (RESULTS_SCHEMA)
  _plans/part-NNNNN.parquet  plan rows of shard N (PLANS_SCHEMA)
  _manifest.json             job fingerprint, metadata and committed shards (per shard: its
                             part's rows and sha256, its plan part's rows and sha256)
  plans.parquet              every plan row, written once every shard is committed
  _SUCCESS                   written last
  _staging/                  shards being written (removed when the job ends)
  _LOCK                      the writing process (one writer per folder: it holds an flock on it)
```

Nothing else belongs in a results folder: a job stops (exit 2) at any other file, unless `--force`
(see `codenib.core.outputs`). Temporary files carry the writing process's id (`outputs.tmp_path`).

A folder is whole only when every part its manifest lists is there with the rows and sha256
recorded at commit (`damaged_parts`): a resumed job redoes a damaged shard, a reader refuses it.

Core level: the batch sink writes through these names; evaluation, re-ranking and the demo
read through `ResultsFolder`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from codenib.core.artifact import sha256_file
from codenib.core.errors import BadInputError
from codenib.core.outputs import TMP_NAME, Ownership, foreign_files, refuse_foreign, refuse_unknown
from codenib.core.types import RESULTS_SCHEMA

RESULTS_FORMAT = "codenib-results"
MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"
PLANS = "plans.parquet"
LOCK = "_LOCK"
STAGING = "_staging"
PLAN_PARTS = "_plans"
PART_GLOB = "part-*.parquet"
_PART = re.compile(r"part-\d{5}\.parquet")
#: The manifest key of what `plans.parquet` held when it was written (`plans_record`).
PLANS_RECORD = "plans"
#: `Damage.shard` of `plans.parquet`, which belongs to no one shard.
PLANS_SHARD = -1
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
        return json.loads(self.manifest_path.read_text(encoding="utf-8"))

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


# --- whether the committed parts are whole ----------------------------------------------------

#: A committed file as found: its sha256 and its rows (-1: not a readable Parquet file);
#: None when it is missing.
PartStat = tuple[str, int] | None
#: The files of a committed shard: (folder, manifest key of its rows, key of its sha256).
SHARD_FILES = (("", "rows", "sha256"), (PLAN_PARTS, "queries", "plans_sha256"))


@dataclass(frozen=True)
class Damage:
    """A committed file that is not what its commit recorded."""

    shard: int
    file: str        # relative to the results folder
    found: str       # "is missing", "holds 1 rows", ...
    expected: str    # what the manifest recorded

    def __str__(self) -> str:
        return f"{self.file} {self.found}; the manifest recorded {self.expected}"


def digest_bytes(data: bytes) -> tuple[str, int]:
    """sha256 and rows of a Parquet file's bytes (rows -1 when they are not Parquet)."""
    import pyarrow.parquet as pq

    return hashlib.sha256(data).hexdigest(), _rows(lambda: pq.ParquetFile(pa.BufferReader(data)))


def digest_file(path: Path) -> PartStat:
    """sha256 and rows of a Parquet file, read in chunks (None when it is not a file)."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    return sha256_file(path), _rows(lambda: pq.ParquetFile(path))


def damaged_parts(manifest: dict[str, Any], stat: Callable[[str], PartStat], *,
                  failed: bool = True) -> list[Damage]:
    """The committed files that are missing or differ from what their commit recorded, in
    shard order. `stat(rel)` digests one file; `failed=False` skips shards recorded as failed
    (a re-run redoes them anyway).

    A manifest written before checksums were recorded (no `sha256`) is checked by presence
    and rows only: a part rewritten with its own number of rows passes there.
    """
    out: list[Damage] = []
    shards = manifest.get("shards") if isinstance(manifest, dict) else None
    for key, shard in sorted(shards.items() if isinstance(shards, dict) else ()):
        if not isinstance(shard, dict) or not str(key).isdigit() or (shard.get("failed") and not failed):
            continue
        if shard.get("file") != part_name(int(key)):
            # Only the shard's own name is read (or removed on resume): never a path the manifest made up.
            out.append(Damage(int(key), part_name(int(key)), f"is listed under another name, {shard.get('file')!r}",
                              f"shard {key} as {part_name(int(key))}"))
            continue
        for folder, rows_key, sha_key in SHARD_FILES:
            rel = f"{folder}/{shard['file']}" if folder else shard["file"]
            damage = _damage(int(key), rel, stat(rel), shard.get(rows_key), shard.get(sha_key))
            if damage is not None:
                out.append(damage)
    return out


def damaged_plans(manifest: dict[str, Any], stat: Callable[[str], PartStat], complete: bool) -> Damage | None:
    """`plans.parquet` as found against the commits: once written (or once the folder is
    complete) it is a readable Parquet file holding the plan rows of every committed shard,
    with the sha256 the manifest recorded when it was written (`plans_record`; a folder of an
    earlier version has none, and is checked by rows). None when it is whole or not due yet.
    """
    found = stat(PLANS)
    if found is None and not complete:
        return None
    shards = manifest.get("shards") if isinstance(manifest, dict) else None
    counts = [s.get("queries") for s in shards.values() if isinstance(s, dict)] if isinstance(shards, dict) else []
    rows = sum(counts) if counts and all(isinstance(n, int) for n in counts) else None
    record = manifest.get(PLANS_RECORD) if isinstance(manifest, dict) else None
    sha = record.get("sha256") if isinstance(record, dict) else None
    if found is None and rows is None and sha is None:
        return None     # a manifest that records neither (not a job's): nothing says it was written
    return _damage(PLANS_SHARD, PLANS, found, rows, sha)


def plans_record(stat: PartStat) -> dict[str, Any]:
    """What the manifest keeps of a written `plans.parquet` (under `PLANS_RECORD`)."""
    sha, rows = stat if stat is not None else (None, None)
    return {"rows": rows, "sha256": sha}


def check_parts(folder: ResultsFolder, manifest: dict[str, Any]) -> None:
    """Refuse a folder whose committed parts, or whose `plans.parquet`, are not whole
    (`damaged_parts`, `damaged_plans`).

    Raises:
        BadInputError: naming the first damaged file, what was recorded and found, and the fix.
    """
    def stat(rel: str) -> PartStat:
        return digest_file(folder.path / rel)

    damage = damaged_parts(manifest, stat)
    plans = damaged_plans(manifest, stat, folder.complete)
    damage += [plans] if plans is not None else []
    if not damage:
        return
    first = damage[0]
    more = f" (and {len(damage) - 1} more damaged file(s))" if len(damage) > 1 else ""
    what = "file" if first.file == PLANS else "part"
    command = "codenib rerank" if str(manifest.get("run_id", "")).startswith("rerank-") else "codenib run"
    redo = "writes it again" if first.file == PLANS else "redoes the damaged shards"
    raise BadInputError(f"this committed {what} {first.found}; the manifest recorded {first.expected}{more}",
                        path=str(folder.path / first.file),
                        fix=f"re-run the same `{command}` command into {folder.path}: it checks every part and "
                            f"{PLANS}, and {redo}")


def _damage(shard: int, rel: str, found: PartStat, rows: Any, sha: Any) -> Damage | None:
    recorded = (f"{rows} rows" if isinstance(rows, int) else "") + \
        (f"{' and ' if isinstance(rows, int) else ''}sha256 {sha[:12]}..." if isinstance(sha, str) else "")
    recorded = recorded or "it as committed"
    if found is None:
        return Damage(shard, rel, "is missing", recorded)
    digest, n = found
    if n < 0:
        return Damage(shard, rel, "is not a readable Parquet file", recorded)
    if isinstance(rows, int) and n != rows:
        return Damage(shard, rel, f"holds {n} rows", recorded)
    if isinstance(sha, str) and digest != sha:
        return Damage(shard, rel, f"has other bytes (sha256 {digest[:12]}...)", recorded)
    return None


def _rows(open_file: Callable[[], Any]) -> int:
    try:
        return open_file().metadata.num_rows
    except (OSError, pa.ArrowException):
        return -1


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
    from codenib.core.storage import StorageError

    store = storage.open(uri)
    store.check_bucket()
    if not store.is_file(MANIFEST):
        raise StorageError(f"no {MANIFEST} under {uri}: not a results prefix of `codenib run`", path=uri,
                           fix="pass the --out URI of `codenib run`")
    manifest = json.loads(store.read_bytes(MANIFEST))
    dest.mkdir(parents=True, exist_ok=True)
    (dest / PLAN_PARTS).mkdir(exist_ok=True)
    (dest / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    for shard in manifest.get("shards", {}).values():
        for rel in (shard["file"], f"{PLAN_PARTS}/{shard['file']}"):
            if store.is_file(rel):  # a missing one is named by the reader's `check_parts`
                store.download(rel, dest / rel)
    for name in (PLANS, SUCCESS):
        if store.is_file(name):
            store.download(name, dest / name)
    return dest
