"""Streaming a query set: `scan_query_set` validates it in one pass without holding its rows,
`QueryScan.batches` reads them again a batch at a time, and `ShardLayout` says which shard each
row goes to (the same shards `QuerySet.shards` cuts)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from codenib.batch.query_files import check_column_types, file_schema, has_surrogate, local_copy, record_batches
from codenib.batch.query_rows import MAX_LISTED, QueryRow, listed, qid_text, resolve_index, resolve_index_name
from codenib.core.errors import BadInputError
from codenib.model.planner import MODES
from codenib.model.planspec import BUDGETS
from codenib.core.querytext import clean_query_text
from codenib.core.storage import Location, StorageConfig


#: Rows per record batch when a query set is streamed (Parquet batches, JSONL chunks).
BATCH_ROWS = 65_536
#: Runs of consecutive rows of one index, per index, above which a set counts as interleaved
#: (grouped input has one run per index; a few allow for a set appended to now and then).
INTERLEAVED_RUNS = 4


@dataclass(frozen=True)
class QueryScan:
    """A validated query set, read once without holding its rows (`scan_query_set`); its
    rows are read again, a batch at a time, by `batches()`.

    Memory: the per-index row counts and resolved folders, the distinct (budget, mode,
    index) combinations, and during the scan one 8-byte hash per qid (1M queries: 8 MB).
    """

    path: str                 # as given (a local path or a URI)
    local: str                # the readable local file (a temporary copy of a URI)
    columns: tuple[str, ...]
    count: int
    digest: str
    warnings: tuple[str, ...]
    index: str | None
    index_root: str | None
    resolved: dict[str, str]                    # index name -> folder ('' when unresolved)
    problems: dict[str, str | None]
    index_counts: dict[tuple[str, str], int]   # (index name, folder) -> rows
    combos: tuple[tuple[str | None, str | None, str], ...]   # (budget, mode, folder) planned, first-seen order
    batch_rows: int = BATCH_ROWS
    tmpdir: str | None = None
    indexes_on_storage: bool = False   # the index folders are URIs (--index or --index-root on object storage)

    def __enter__(self) -> "QueryScan":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove the temporary copy of a query set read from object storage."""
        if self.tmpdir:
            import shutil

            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def batches(self) -> Iterator[list[QueryRow]]:
        """The rows in input order, `batch_rows` at a time (the same rows `read_query_set` gives)."""
        for records in record_batches(Path(self.local), self.batch_rows, self.path, self.columns):
            out = []
            for rec in records:
                qid = qid_text(rec.get("qid"))
                cleaned = clean_query_text(rec.get("query"))
                text = cleaned.text
                idx_name = self.index if self.index is not None else str(rec.get("index") or "")
                folder = self.resolved.get(idx_name, "")
                error = None
                if not text.strip():
                    error = "empty query text"
                elif not folder:
                    error = self.problems.get(idx_name) or (
                        f"index {idx_name!r} not found" + (f" under {self.index_root}" if self.index_root else "")
                        + " (fix: build it with `codenib index` or correct the `index` column)")
                out.append(QueryRow(qid, text, idx_name, folder, rec.get("budget") or None,
                                    rec.get("mode") or None, error, text_changes=tuple(cleaned.changes().items())))
            yield out

    def layout(self, shard_size: int) -> "ShardLayout":
        """Where each row's shard is: the same shards `QuerySet.shards` cuts."""
        if shard_size < 1:
            raise BadInputError(f"--shard-size must be at least 1, got {shard_size}", fix="pass --shard-size 256")
        return ShardLayout.of(self.index_counts, shard_size)


@dataclass(frozen=True)
class ShardInfo:
    """A shard without its rows: what the job needs before they are read."""

    shard_id: int
    index: str
    index_path: str
    size: int
    index_sha: str = ""


@dataclass(frozen=True)
class ShardLayout:
    """Shards grouped by index (sorted), input order within an index, cut every `shard_size`:
    the first shard id of each group, so a streamed row knows its shard."""

    shard_size: int
    first: dict[tuple[str, str], int]
    counts: dict[tuple[str, str], int]
    shards: tuple[ShardInfo, ...]

    @classmethod
    def of(cls, counts: dict[tuple[str, str], int], shard_size: int) -> "ShardLayout":
        first: dict[tuple[str, str], int] = {}
        infos: list[ShardInfo] = []
        for key, n in sorted(counts.items()):
            first[key] = len(infos)
            for start in range(0, n, shard_size):
                infos.append(ShardInfo(len(infos), key[0], key[1], min(shard_size, n - start)))
        return cls(shard_size, first, dict(counts), tuple(infos))


def scan_query_set(path: str | Path | Location, index: str | Path | Location | None = None,
                   index_root: str | Path | Location | None = None, storage: StorageConfig | None = None,
                   batch_rows: int | None = None, progress: bool = False) -> QueryScan:
    """Validate a query set in one streamed pass (record batches; no table in memory);
    `progress`: show rows/s and an ETA on stderr while it reads. The paths are classified
    (`Location`) here unless the caller classified them already (`JobOptions.location`).

    Raises the same `BadInputError`s, in the same order, as reading the whole set would:
    every check sees every row, and the first kind of problem found is reported.
    """
    storage = storage or StorageConfig()
    batch_rows = batch_rows or BATCH_ROWS
    if (index is None) == (index_root is None):
        raise BadInputError("give exactly one of --index and --index-root",
                            fix="--index DIR for one index, or --index-root DIR with an `index` column")
    index = None if index is None else Location.of(index)
    index_root = None if index_root is None else Location.of(index_root)
    if index_root is not None and index_root.uri:
        storage.open(index_root.text).check_bucket()
    folder = None
    if index is not None:
        folder = resolve_index(index, None, storage)
        if not folder:
            raise BadInputError("the index folder does not exist or holds no manifest.json", path=index.text,
                                fix=f"build it with `codenib index REPO --out {index.text}`")
    location = Location.of(path)
    local, tmpdir = local_copy(location, storage)
    try:
        return _scan(location.shown, local, tmpdir, index, folder, index_root, storage, batch_rows, progress)
    except BaseException:
        if tmpdir:
            import shutil

            shutil.rmtree(tmpdir, ignore_errors=True)
        raise


def _scan(shown: str, local: Path, tmpdir: str | None, index_location: Location | None, index_folder: str | None,
          root: Location | None, storage: StorageConfig, batch_rows: int, progress: bool = False) -> QueryScan:
    """The pass of `scan_query_set`; `index_folder`: the --index folder, resolved already."""
    import numpy as np

    from codenib.core.progress import Progress

    index = None if index_location is None else index_location.text
    index_root = None if root is None else root.text

    names, types, n_rows = file_schema(local, shown)
    if n_rows == 0:
        raise BadInputError("the query set is empty", path=shown, fix="add at least one query")
    missing = [c for c in ("qid", "query") if c not in names]
    if missing:
        raise BadInputError(f"missing column(s) {missing}; found {sorted(names)}", path=shown,
                            fix="a query set needs `qid` (string, unique) and `query` (string) columns")
    if index_root is not None and "index" not in names:
        raise BadInputError("--index-root needs an `index` column naming each query's index", path=shown,
                            fix="add an `index` column, or pass --index DIR for a single index")
    check_column_types(pa.schema([pa.field(n, t) for n, t in types.items()]), shown)
    bad_ident: dict[str, list[int]] = {c: [] for c in ("qid", "index", "budget", "mode")}
    n_ident: dict[str, int] = dict.fromkeys(bad_ident, 0)
    empty: list[int] = []
    n_empty_qid = 0
    bad_value: dict[str, list[int]] = {"budget": [], "mode": []}
    n_bad_value = {"budget": 0, "mode": 0}
    valid = {"budget": tuple(BUDGETS), "mode": MODES}
    hashes: list = []
    digest = hashlib.sha256()
    resolved: dict[str, str] = {}
    problems: dict[str, str | None] = {}
    counts: dict[tuple[str, str], int] = {}
    per_name: dict[str, int] = {}
    combos: dict[tuple[str | None, str | None, str], None] = {}
    n_text_empty = n_changed = 0
    row = 0
    runs, last_index = 0, None
    bar = Progress("validating queries", n_rows, "queries", enabled=progress and n_rows >= batch_rows)
    for records in record_batches(local, batch_rows, shown, names):
        bar.update(len(records))
        batch_hashes = []
        for rec in records:
            row += 1
            for col in bad_ident:
                v = rec.get(col)
                if isinstance(v, str) and has_surrogate(v):
                    n_ident[col] += 1
                    if len(bad_ident[col]) <= MAX_LISTED:
                        bad_ident[col].append(row)
            qid = qid_text(rec.get("qid"))
            if qid is None:
                n_empty_qid += 1
                if len(empty) <= MAX_LISTED:
                    empty.append(row)
            else:
                batch_hashes.append(_qid_hash(qid))
            for col in ("budget", "mode"):
                v = rec.get(col)
                if col in names and v not in (None, "") and v not in valid[col]:
                    n_bad_value[col] += 1
                    if len(bad_value[col]) <= MAX_LISTED:
                        bad_value[col].append(row)
            cleaned = clean_query_text(rec.get("query"))
            text = cleaned.text
            idx_name = index if index is not None else str(rec.get("index") or "")
            if idx_name not in resolved:
                if index is not None:
                    resolved[idx_name], problems[idx_name] = index_folder, None   # resolved once, before the pass
                else:
                    resolved[idx_name], problems[idx_name] = resolve_index_name(idx_name, root, storage)
            folder = resolved[idx_name]
            budget, mode = rec.get("budget") or None, rec.get("mode") or None
            digest.update(json.dumps([qid, text, idx_name, budget, mode]).encode())
            counts[(idx_name, folder)] = counts.get((idx_name, folder), 0) + 1
            runs += idx_name != last_index
            last_index = idx_name
            per_name[idx_name] = per_name.get(idx_name, 0) + 1
            if not text.strip():
                n_text_empty += 1
            elif folder:
                combos.setdefault((budget, mode, folder))
            n_changed += bool(cleaned.changes())
        hashes.append(np.fromiter(batch_hashes, dtype=np.int64, count=len(batch_hashes)))
    bar.close()
    for col, bad in bad_ident.items():
        if bad:
            raise BadInputError(f"`{col}` in row(s) {_listed(bad, n_ident[col])} holds bytes that are not UTF-8 text",
                                path=shown, fix=f"write `{col}` as UTF-8 text")
    if empty:
        raise BadInputError(f"empty or missing qid in row(s) {_listed(empty, n_empty_qid)}", path=shown,
                            fix="give every row a non-empty `qid`")
    all_hashes = np.sort(np.concatenate(hashes)) if hashes else np.empty(0, np.int64)
    del hashes
    twice = all_hashes[1:][all_hashes[1:] == all_hashes[:-1]]
    if twice.size:
        dups = _duplicates(local, batch_rows, shown, names, set(int(h) for h in twice))
        if dups:
            raise BadInputError(f"duplicate qid(s): {listed(dups)}", path=shown, fix="make every `qid` unique")
    for col in ("budget", "mode"):
        if bad_value[col]:
            raise BadInputError(f"invalid `{col}` in row(s) {_listed(bad_value[col], n_bad_value[col])}", path=shown,
                                fix=f"use one of: {', '.join(valid[col])} (or leave it empty)")
    warnings: list[str] = []
    # A SWE-bench file's `index` is its instance_id read as one (`swe_bench_aliases`), not a column it has.
    if index is not None and "index" in names and "instance_id" not in names:
        warnings.append(f"{shown}: its `index` column is not read: --index {index} answers every query "
                        "(pass --index-root DIR instead to route each query by that column)")
    for name, folder in sorted(resolved.items()):
        if not folder:
            what = "is not a name under --index-root" if problems.get(name) else "not found"
            warnings.append(f"{shown}: index {name!r} {what}; its {per_name[name]} queries become error rows")
    if n_text_empty:
        warnings.append(f"{shown}: {n_text_empty} queries have empty text; they become error rows")
    if n_changed:
        warnings.append(f"{shown}: the text of {n_changed} queries was cleaned (undecodable bytes, control "
                        "characters or excess length); their plan rows' trace says how (query_text)")
    if len(per_name) > 1 and runs > INTERLEAVED_RUNS * len(per_name):
        warnings.append(f"{shown}: the rows of its {len(per_name)} indexes are interleaved ({runs} runs of one "
                        "index); the set is streamed, so an index's shards fill up far apart and actors load "
                        "indexes again: sort the set by `index` for fewer loads")
    on_storage = (index_location or root).uri
    return QueryScan(shown, str(local), tuple(names), row, digest.hexdigest(), tuple(warnings), index, index_root,
                     resolved, problems, counts, tuple(combos), batch_rows, tmpdir, on_storage)


def _qid_hash(qid: str) -> int:
    return int.from_bytes(hashlib.blake2b(qid.encode("utf-8", "surrogateescape"), digest_size=8).digest(),
                          "little", signed=True)


def _duplicates(local: Path, batch_rows: int, shown: str, names: list[str], candidates: set[int]) -> list[str]:
    """The duplicate qids among rows whose qid hash occurs twice, as 'q' (rows a and b)."""
    first: dict[str, int] = {}
    dups = []
    row = 0
    for records in record_batches(local, batch_rows, shown, names):
        for rec in records:
            row += 1
            qid = qid_text(rec.get("qid"))
            if qid is None or _qid_hash(qid) not in candidates:
                continue
            if qid in first:
                dups.append(f"{qid!r} (rows {first[qid]} and {row})")
            else:
                first[qid] = row
    return dups


def _listed(shown: list[int], total: int) -> str:
    """Like `_list` for a list of which only the first MAX_LISTED (+1) items were kept."""
    text = ", ".join(str(i) for i in shown[:MAX_LISTED])
    return text + (f" and {total - MAX_LISTED} more" if total > MAX_LISTED else "")
