"""Reading and validating query sets (Parquet or JSONL), resolving indexes, cutting shards."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

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
    """Read and validate a query set.

    Whole-file problems (unreadable file, missing columns, a column of the wrong type, empty
    or duplicate qids, bad budget/mode values) raise `BadInputError` naming the file, rows
    and fix. Per-row problems (empty query text, an index that does not exist or is not a
    name under `index_root`) are recorded on the row, so that query becomes an error row
    while the rest of the job runs. Query text is cleaned (`codenib.querytext`): what was
    changed is kept on the row for its plan row's trace.
    """
    storage = storage or StorageConfig()
    path = str(path) if is_uri(str(path)) else Path(path)
    if (index is None) == (index_root is None):
        raise BadInputError("give exactly one of --index and --index-root",
                            fix="--index DIR for one index, or --index-root DIR with an `index` column")
    if index_root is not None and is_uri(str(index_root)):
        storage.open(str(index_root)).check_bucket()
    if index is not None and not _resolve_index(str(index), None, storage):
        raise BadInputError("the index folder does not exist or holds no manifest.json", path=str(index),
                            fix=f"build it with `codenib index REPO --out {index}`")
    table, records = load_query_records(path, storage)
    names = set(table.column_names)
    missing = [c for c in ("qid", "query") if c not in names]
    if missing:
        raise BadInputError(f"missing column(s) {missing}; found {sorted(names)}", path=str(path),
                            fix="a query set needs `qid` (string, unique) and `query` (string) columns")
    if index_root is not None and "index" not in names:
        raise BadInputError("--index-root needs an `index` column naming each query's index", path=str(path),
                            fix="add an `index` column, or pass --index DIR for a single index")
    check_column_types(table, path)
    _check_identifiers(records, path)
    qids = [_qid(r.get("qid")) for r in records]
    empty = [i + 1 for i, q in enumerate(qids) if q is None]
    if empty:
        raise BadInputError(f"empty or missing qid in row(s) {_list(empty)}", path=str(path),
                            fix="give every row a non-empty `qid`")
    seen: dict[str, int] = {}
    dups = []
    for i, q in enumerate(qids):
        if q in seen:
            dups.append(f"{q!r} (rows {seen[q]} and {i + 1})")
        else:
            seen[q] = i + 1
    if dups:
        raise BadInputError(f"duplicate qid(s): {_list(dups)}", path=str(path), fix="make every `qid` unique")
    for col, valid in (("budget", tuple(BUDGETS)), ("mode", MODES)):
        if col in names:
            bad = [i + 1 for i, r in enumerate(records) if r.get(col) not in (None, "") and r[col] not in valid]
            if bad:
                raise BadInputError(f"invalid `{col}` in row(s) {_list(bad)}", path=str(path),
                                    fix=f"use one of: {', '.join(valid)} (or leave it empty)")
    warnings: list[str] = []
    resolved: dict[str, str] = {}
    rows = []
    problems: dict[str, str | None] = {}
    for rec, qid in zip(records, qids):
        cleaned = clean_query_text(rec.get("query"))
        text = cleaned.text
        idx_name = str(index) if index is not None else (str(rec.get("index") or ""))
        if idx_name not in resolved:
            if index is not None:
                resolved[idx_name], problems[idx_name] = _resolve_index(idx_name, None, storage), None
            else:
                resolved[idx_name], problems[idx_name] = resolve_index_name(idx_name, index_root, storage)
        error = None
        if not text.strip():
            error = "empty query text"
        elif not resolved[idx_name]:
            error = problems[idx_name] or (f"index {idx_name!r} not found" + (f" under {index_root}" if index_root else "")
                                           + " (fix: build it with `codenib index` or correct the `index` column)")
        rows.append(QueryRow(qid, text, idx_name, resolved[idx_name], rec.get("budget") or None,
                             rec.get("mode") or None, error, text_changes=tuple(cleaned.changes().items())))
    for name, folder in sorted(resolved.items()):
        if not folder:
            n = sum(1 for r in rows if r.index == name)
            what = "is not a name under --index-root" if problems.get(name) else "not found"
            warnings.append(f"{path}: index {name!r} {what}; its {n} queries become error rows")
    n_empty = sum(1 for r in rows if r.error == "empty query text")
    if n_empty:
        warnings.append(f"{path}: {n_empty} queries have empty text; they become error rows")
    n_changed = sum(1 for r in rows if r.text_changes)
    if n_changed:
        warnings.append(f"{path}: the text of {n_changed} queries was cleaned (undecodable bytes, control "
                        "characters or excess length); their plan rows' trace says how (query_text)")
    return QuerySet(str(path), tuple(rows), _digest(rows), tuple(warnings))


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


def check_column_types(table: pa.Table, path: str | Path) -> None:
    """Every known column has one of the types in COLUMN_TYPES, else `BadInputError` naming
    the column, the type found and the type expected."""
    for name, allowed in COLUMN_TYPES.items():
        if name not in table.column_names:
            continue
        found = table.schema.field(name).type
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


def _check_identifiers(records: list[dict], path: Path) -> None:
    """Identifiers must be valid text: unlike a query's text, replacing a byte of a qid or an
    index name would silently make it another one."""
    for col in ("qid", "index", "budget", "mode"):
        bad = [i + 1 for i, r in enumerate(records) if isinstance(r.get(col), str) and _has_surrogate(r[col])]
        if bad:
            raise BadInputError(f"`{col}` in row(s) {_list(bad)} holds bytes that are not UTF-8 text", path=str(path),
                                fix=f"write `{col}` as UTF-8 text")


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
