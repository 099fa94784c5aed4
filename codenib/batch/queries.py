"""Reading and validating query sets (Parquet or JSONL), resolving indexes, cutting shards."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.errors import BadInputError, CodeNibError
from codenib.model.planner import BUDGETS, MODES, QueryPlan
from codenib.querytext import clean_query_text
from codenib.specs import read_jsonl
from codenib.storage import StorageConfig, is_uri, split_name

#: Row numbers listed in an error message before "and N more".
MAX_LISTED = 10
#: Arrow types each column may have (`null`: a column with no values at all); a `query`
#: stored as binary would otherwise read as bytes and every row would look empty.
COLUMN_TYPES: dict[str, tuple[str, ...]] = {
    "qid": ("string", "integer"),
    "query": ("string",),
    "index": ("string",),
    "budget": ("string",),
    "mode": ("string",),
}


@dataclass(frozen=True, slots=True)
class QueryRow:
    """One query of a set, with its resolved index and optional per-row overrides."""

    qid: str
    query: str
    index: str            # the index as written (a path or a name under --index-root)
    index_path: str       # resolved folder ('' when it could not be resolved)
    budget: str | None = None
    mode: str | None = None
    error: str | None = None   # a per-row problem: the query becomes an error row
    plans: tuple[QueryPlan, ...] = ()   # planned once by the driver: one per mode it runs
    text_changes: tuple[tuple[str, int], ...] = ()   # what cleaning changed (codenib.querytext)

    def planned(self, mode: str) -> QueryPlan:
        """The driver's plan of this query for `mode`."""
        for p in self.plans:
            if p.mode == mode:
                return p
        raise CodeNibError(f"query {self.qid!r} carries no plan for mode {mode!r}: plan the rows first "
                           "(codenib.batch.driver.plan_rows)")


@dataclass(frozen=True, slots=True)
class Shard:
    """Queries of one index, processed and committed together."""

    shard_id: int
    index: str
    index_path: str
    rows: tuple[QueryRow, ...]
    index_sha: str = ""    # sha256 of the index's manifest when the job started


@dataclass(frozen=True)
class QuerySet:
    """A validated query set."""

    path: str
    rows: tuple[QueryRow, ...]
    digest: str
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def shards(self, shard_size: int) -> list[Shard]:
        """Group by index (sorted), keep input order within an index, cut every `shard_size`."""
        if shard_size < 1:
            raise BadInputError(f"--shard-size must be at least 1, got {shard_size}", fix="pass --shard-size 256")
        groups: dict[tuple[str, str], list[QueryRow]] = {}
        for row in self.rows:
            groups.setdefault((row.index, row.index_path), []).append(row)
        out: list[Shard] = []
        for (index, path), rows in sorted(groups.items()):
            for start in range(0, len(rows), shard_size):
                out.append(Shard(len(out), index, path, tuple(rows[start:start + shard_size])))
        return out


def read_query_set(path: str | Path, index: str | Path | None = None,
                   index_root: str | Path | None = None, storage: StorageConfig | None = None) -> QuerySet:
    """Read and validate a query set into memory (small sets, tools and tests; `codenib run`
    streams it instead: `scan_query_set` then `QueryScan.batches`).

    Whole-file problems (unreadable file, missing columns, a column of the wrong type, empty
    or duplicate qids, bad budget/mode values) raise `BadInputError` naming the file, rows
    and fix. Per-row problems (empty query text, an index that does not exist or is not a
    name under `index_root`) are recorded on the row, so that query becomes an error row
    while the rest of the job runs. Query text is cleaned (`codenib.querytext`): what was
    changed is kept on the row for its plan row's trace.
    """
    with scan_query_set(path, index, index_root, storage) as scan:
        rows = tuple(row for batch in scan.batches() for row in batch)
    return QuerySet(scan.path, rows, scan.digest, scan.warnings)


#: Rows per record batch when a query set is streamed (Parquet batches, JSONL chunks).
BATCH_ROWS = 65_536


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
        for records in _record_batches(Path(self.local), self.batch_rows, self.path, self.columns):
            out = []
            for rec in records:
                qid = _qid(rec.get("qid"))
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


def scan_query_set(path: str | Path, index: str | Path | None = None, index_root: str | Path | None = None,
                   storage: StorageConfig | None = None, batch_rows: int | None = None,
                   progress: bool = False) -> QueryScan:
    """Validate a query set in one streamed pass (record batches; no table in memory);
    `progress`: show rows/s and an ETA on stderr while it reads.

    Raises the same `BadInputError`s, in the same order, as reading the whole set would:
    every check sees every row, and the first kind of problem found is reported.
    """
    storage = storage or StorageConfig()
    batch_rows = batch_rows or BATCH_ROWS
    if (index is None) == (index_root is None):
        raise BadInputError("give exactly one of --index and --index-root",
                            fix="--index DIR for one index, or --index-root DIR with an `index` column")
    if index_root is not None and is_uri(str(index_root)):
        storage.open(str(index_root)).check_bucket()
    if index is not None and not _resolve_index(str(index), None, storage):
        raise BadInputError("the index folder does not exist or holds no manifest.json", path=str(index),
                            fix=f"build it with `codenib index REPO --out {index}`")
    shown = str(path) if is_uri(str(path)) else str(Path(path))
    local, tmpdir = _local_copy(path, storage)
    try:
        return _scan(shown, local, tmpdir, None if index is None else str(index),
                     None if index_root is None else str(index_root), storage, batch_rows, progress)
    except BaseException:
        if tmpdir:
            import shutil

            shutil.rmtree(tmpdir, ignore_errors=True)
        raise


def _scan(shown: str, local: Path, tmpdir: str | None, index: str | None, index_root: str | None,
          storage: StorageConfig, batch_rows: int, progress: bool = False) -> QueryScan:
    import numpy as np

    from codenib.progress import Progress

    names, types, n_rows = _schema(local, shown)
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
    bar = Progress("validating queries", n_rows, "queries", enabled=progress and n_rows >= batch_rows)
    for records in _record_batches(local, batch_rows, shown, names):
        bar.update(len(records))
        batch_hashes = []
        for rec in records:
            row += 1
            for col in bad_ident:
                v = rec.get(col)
                if isinstance(v, str) and _has_surrogate(v):
                    n_ident[col] += 1
                    if len(bad_ident[col]) <= MAX_LISTED:
                        bad_ident[col].append(row)
            qid = _qid(rec.get("qid"))
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
                    resolved[idx_name], problems[idx_name] = _resolve_index(idx_name, None, storage), None
                else:
                    resolved[idx_name], problems[idx_name] = resolve_index_name(idx_name, index_root, storage)
            folder = resolved[idx_name]
            budget, mode = rec.get("budget") or None, rec.get("mode") or None
            digest.update(json.dumps([qid, text, idx_name, budget, mode]).encode())
            counts[(idx_name, folder)] = counts.get((idx_name, folder), 0) + 1
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
            raise BadInputError(f"duplicate qid(s): {_list(dups)}", path=shown, fix="make every `qid` unique")
    for col in ("budget", "mode"):
        if bad_value[col]:
            raise BadInputError(f"invalid `{col}` in row(s) {_listed(bad_value[col], n_bad_value[col])}", path=shown,
                                fix=f"use one of: {', '.join(valid[col])} (or leave it empty)")
    warnings: list[str] = []
    for name, folder in sorted(resolved.items()):
        if not folder:
            what = "is not a name under --index-root" if problems.get(name) else "not found"
            warnings.append(f"{shown}: index {name!r} {what}; its {per_name[name]} queries become error rows")
    if n_text_empty:
        warnings.append(f"{shown}: {n_text_empty} queries have empty text; they become error rows")
    if n_changed:
        warnings.append(f"{shown}: the text of {n_changed} queries was cleaned (undecodable bytes, control "
                        "characters or excess length); their plan rows' trace says how (query_text)")
    return QueryScan(shown, str(local), tuple(names), row, digest.hexdigest(), tuple(warnings), index, index_root,
                     resolved, problems, counts, tuple(combos), batch_rows, tmpdir)


def _qid_hash(qid: str) -> int:
    return int.from_bytes(hashlib.blake2b(qid.encode("utf-8", "surrogateescape"), digest_size=8).digest(),
                          "little", signed=True)


def _duplicates(local: Path, batch_rows: int, shown: str, names: list[str], candidates: set[int]) -> list[str]:
    """The duplicate qids among rows whose qid hash occurs twice, as 'q' (rows a and b)."""
    first: dict[str, int] = {}
    dups = []
    row = 0
    for records in _record_batches(local, batch_rows, shown, names):
        for rec in records:
            row += 1
            qid = _qid(rec.get("qid"))
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


def _local_copy(path: str | Path, storage: StorageConfig) -> tuple[Path, str | None]:
    """A readable local file of the query set (a URI is downloaded, streamed, into a
    temporary folder that the scan removes when closed)."""
    if not is_uri(str(path)):
        path = Path(path)
        if not path.is_file():
            raise BadInputError("the query set does not exist", path=str(path),
                                fix="pass a Parquet or JSONL file with qid and query columns")
        _format_of(path, str(path))
        return path, None
    import tempfile

    uri = str(path)
    parent, name = split_name(uri)
    store = storage.open(parent)
    store.check_bucket()
    if not store.is_file(name):
        raise BadInputError("the query set does not exist", path=uri,
                            fix="pass the URI of a Parquet or JSONL object with qid and query columns")
    suffix = Path(name).suffix.lower()
    if suffix not in (".parquet", ".jsonl", ".json", ".ndjson"):
        raise BadInputError(f"unknown query-set format {suffix!r}", path=uri, fix="use a .parquet or .jsonl object")
    tmp = tempfile.mkdtemp(prefix="codenib-queries-")
    local = Path(tmp) / f"queries{suffix}"
    try:
        store.download(name, local)
    except BaseException:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return local, tmp


def _format_of(path: Path, shown: str) -> str:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    raise BadInputError(f"unknown query-set format {suffix!r}", path=shown, fix="use a .parquet or .jsonl file")


def _schema(local: Path, shown: str) -> tuple[list[str], dict[str, pa.DataType], int]:
    """Column names, Arrow types and the number of rows: a Parquet file's schema, or for
    JSONL the types Arrow infers from all values of each column (from one value per Python
    type seen, which infers the same type)."""
    if _format_of(local, shown) == "parquet":
        try:
            pf = pq.ParquetFile(local)
            schema = pf.schema_arrow
            n_rows = pf.metadata.num_rows
        except Exception as exc:  # noqa: BLE001 - pyarrow and OS errors of many kinds
            raise _unreadable(exc, shown) from exc
        return list(schema.names), {f.name: f.type for f in schema}, n_rows
    samples: dict[str, dict] = {}
    n_rows = 0
    for records in _record_batches(local, 65_536, shown, keys=None):
        n_rows += len(records)
        for rec in records:
            for k, v in rec.items():
                seen = samples.setdefault(k, {})
                kind = type(v)
                if kind is int and kind in seen:
                    seen[kind] = max(seen[kind], v, key=abs)
                else:
                    seen.setdefault(kind, _valid(v))
    keys = sorted(samples)
    try:
        return keys, {k: pa.array(list(samples[k].values())).type for k in keys}, n_rows
    except Exception as exc:  # noqa: BLE001 - Arrow's type inference errors
        raise _unreadable(exc, shown) from exc


def _unreadable(exc: BaseException, shown: str) -> BadInputError:
    return BadInputError(f"cannot read the query set: {exc}", path=shown, fix="pass a readable Parquet or JSONL file")


def _record_batches(local: Path, batch_rows: int, shown: str, keys: list[str] | tuple[str, ...] | None
                    ) -> Iterator[list[dict]]:
    """The query set's rows as dicts, `batch_rows` at a time (text as `load_query_records`
    reads it). JSONL rows get every one of `keys` (None: only their own keys)."""
    if _format_of(local, shown) == "parquet":
        try:
            pf = pq.ParquetFile(local)
            names = pf.schema_arrow.names
            for batch in pf.iter_batches(batch_size=batch_rows):
                columns = [_texts(batch.column(i)) if _is_text(batch.schema.field(i).type)
                           else batch.column(i).to_pylist() for i in range(batch.num_columns)]
                yield [dict(zip(names, values)) for values in zip(*columns)]
        except BadInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - pyarrow and OS errors of many kinds
            raise _unreadable(exc, shown) from exc
        return
    chunk: list[dict] = []
    for rec in _jsonl_rows(local, shown):
        if keys is None:
            chunk.append({k: _scalar(v) for k, v in rec.items()})
        else:
            chunk.append({k: _scalar(rec.get(k)) for k in keys})
        if len(chunk) >= batch_rows:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _jsonl_rows(path: Path, shown: str) -> Iterator[dict]:
    """One JSON object per line, streamed (as `codenib.specs.read_jsonl` reads them)."""
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise BadInputError(f"line {n} is not valid JSON: {exc}", path=shown,
                                        fix="write one JSON object per line") from None
                if not isinstance(row, dict):
                    raise BadInputError(f"line {n} is not a JSON object", path=shown,
                                        fix='write one object per line, like {"qid": "q1", "query": "..."}')
                yield row
    except UnicodeDecodeError as exc:
        raise BadInputError(f"not UTF-8 text: {exc}", path=shown, fix="save the file as UTF-8") from None
    except OSError as exc:
        raise _unreadable(exc, shown) from exc


def load_query_records(path: str | Path, storage: StorageConfig | None = None) -> tuple[pa.Table, list[dict]]:
    """A query set's table (for its column names and types) and its rows as dicts.

    Text is read as written: bytes of a Parquet string column that are not UTF-8, and lone
    surrogates escaped in JSON, arrive as lone surrogates (Python's `surrogateescape`), for
    `clean_query_text` to replace and count, instead of failing the whole file.
    """
    table, records = _read_table(path, storage or StorageConfig())
    if records is not None:
        return table, records
    columns = {name: _texts(table.column(name)) if _is_text(table.schema.field(name).type)
               else table.column(name).to_pylist() for name in table.column_names}
    return table, [dict(zip(columns, values)) for values in zip(*columns.values())] if columns else []


def check_column_types(table: pa.Table | pa.Schema, path: str | Path) -> None:
    """Every known column has one of the types in COLUMN_TYPES, else `BadInputError` naming
    the column, the type found and the type expected."""
    schema = table if isinstance(table, pa.Schema) else table.schema
    for name, allowed in COLUMN_TYPES.items():
        if name not in schema.names:
            continue
        found = schema.field(name).type
        if not any(_type_is(found, kind) for kind in (*allowed, "null")):
            expected = " or ".join(allowed)
            raise BadInputError(f"column `{name}` has type {found}; expected {expected}", path=str(path),
                                fix=f"write `{name}` as a {expected} column (text decoded as UTF-8, e.g. "
                                    f"pyarrow.array(values, pyarrow.string()))")


def resolve_index_name(name: str, root: str | Path, storage: StorageConfig | None = None) -> tuple[str, str | None]:
    """An index name of an `index` column resolved strictly under `root`.

    Returns (folder, None) for a name that is a relative path without `..` whose folder,
    symlinks resolved, lies under the resolved root and holds a manifest.json; ('', None)
    for such a name with no index there; ('', problem) for a name that could reach outside
    the root (absolute, `..`, a symlink leading out), the problem naming the fix. Under a URI
    root (object storage has no links) the folder is `ROOT/NAME`, the URI.
    """
    if not name:
        return "", None
    fix = (f"write the index's folder relative to {root} (e.g. 'click'), without '..' or a leading '/', "
           "or pass --index DIR for one index")
    pure = Path(name)
    if "\x00" in name or pure.is_absolute() or ".." in pure.parts:
        return "", f"index {name!r} is not a name under --index-root {root} (fix: {fix})"
    if is_uri(str(root)):
        if "\\" in name or "//" in name or pure.as_posix() in ("", "."):
            return "", f"index {name!r} is not a name under --index-root {root} (fix: {fix})"
        uri = f"{str(root).rstrip('/')}/{pure.as_posix()}"
        return (uri, None) if (storage or StorageConfig()).open(uri).is_file("manifest.json") else ("", None)
    try:
        base = Path(root).resolve(strict=True)
        folder = (base / pure).resolve(strict=False)
    except (OSError, RuntimeError):   # a missing root, a symlink loop
        return "", None
    if not folder.is_relative_to(base):
        return "", f"index {name!r} leads outside --index-root {root} through a symbolic link (fix: {fix})"
    return (str(folder), None) if (folder / "manifest.json").is_file() else ("", None)


def _texts(column: pa.ChunkedArray) -> list:
    """A string column's values, undecodable bytes as lone surrogates (never an exception)."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    raw = column.cast(pa.large_binary()).to_pylist()
    return [None if b is None else b.decode("utf-8", "surrogateescape") for b in raw]


def _is_text(found: pa.DataType) -> bool:
    return _type_is(found, "string")


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _type_is(found: pa.DataType, kind: str) -> bool:
    if pa.types.is_dictionary(found):
        found = found.value_type
    return {"string": pa.types.is_string(found) or pa.types.is_large_string(found)
            or getattr(pa.types, "is_string_view", lambda t: False)(found),
            "integer": pa.types.is_integer(found),
            "null": pa.types.is_null(found)}[kind]


def _read_table(path: str | Path, storage: StorageConfig) -> tuple[pa.Table, list[dict] | None]:
    """The table, and for JSONL its records as read (a Parquet file's are decoded later)."""
    if is_uri(str(path)):
        return _read_remote_table(str(path), storage)
    path = Path(path)
    if not path.is_file():
        raise BadInputError("the query set does not exist", path=str(path),
                            fix="pass a Parquet or JSONL file with qid and query columns")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            table = pq.read_table(path)
            if table.num_rows == 0:  # as an empty JSONL file is
                raise BadInputError("the query set is empty", path=str(path), fix="add at least one query")
            return table, None
        if suffix in (".jsonl", ".json", ".ndjson"):
            return _read_jsonl(path)
    except BadInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow and OS errors of many kinds
        raise BadInputError(f"cannot read the query set: {exc}", path=str(path),
                            fix="pass a readable Parquet or JSONL file") from exc
    raise BadInputError(f"unknown query-set format {suffix!r}", path=str(path),
                        fix="use a .parquet or .jsonl file")


def _read_remote_table(uri: str, storage: StorageConfig) -> tuple[pa.Table, list[dict] | None]:
    """A query set on object storage: read into memory, then as a local file would be."""
    import tempfile

    parent, name = split_name(uri)
    store = storage.open(parent)
    store.check_bucket()
    if not store.is_file(name):
        raise BadInputError("the query set does not exist", path=uri,
                            fix="pass the URI of a Parquet or JSONL object with qid and query columns")
    suffix = Path(name).suffix.lower()
    if suffix not in (".parquet", ".jsonl", ".json", ".ndjson"):
        raise BadInputError(f"unknown query-set format {suffix!r}", path=uri, fix="use a .parquet or .jsonl object")
    data = store.read_bytes(name)
    with tempfile.TemporaryDirectory(prefix="codenib-queries-") as tmp:
        local = Path(tmp) / f"queries{suffix}"
        local.write_bytes(data)
        try:
            return _read_table(local, storage)
        except BadInputError as exc:   # name the URI, not the temporary copy
            raise BadInputError(str(exc).replace(str(local), uri), path=uri) from None


def _read_jsonl(path: Path) -> tuple[pa.Table, list[dict]]:
    records = read_jsonl(path)
    if not records:
        raise BadInputError("the query set is empty", path=str(path), fix="add at least one query")
    keys = sorted({k for r in records for k in r})
    records = [{k: _scalar(r.get(k)) for k in keys} for r in records]
    # The table gives column names and types; lone surrogates (JSON "\udce9") stay in the
    # records, where the query's cleaning counts them (Arrow would refuse them).
    return pa.table({k: [_valid(r[k]) for r in records] for k in keys}), records


def _scalar(v):
    return v if v is None or isinstance(v, (str, int, float, bool)) else json.dumps(v)


def _valid(v):
    return v.encode("utf-8", "replace").decode("utf-8") if isinstance(v, str) else v


def _qid(v) -> str | None:
    if v is None:
        return None
    s = str(v).strip()
    return s or None


def _resolve_index(name: str, root: str | Path | None, storage: StorageConfig | None = None) -> str:
    """The index folder a name refers to ('' when there is none with a manifest): a path as
    given, or (with `root`) a name strictly under the root."""
    if root is not None:
        return resolve_index_name(name, root, storage)[0]
    if not name:
        return ""
    if is_uri(name):
        store = (storage or StorageConfig()).open(name)
        store.check_bucket()
        return store.uri if store.is_file("manifest.json") else ""
    folder = Path(name)
    return str(folder.resolve()) if (folder / "manifest.json").is_file() else ""


def _digest(rows: list[QueryRow]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps([r.qid, r.query, r.index, r.budget, r.mode]).encode())
    return h.hexdigest()


def _list(items: list) -> str:
    shown = ", ".join(str(i) for i in items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")
