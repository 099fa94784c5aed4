"""Reading query-set files: Parquet in record batches, JSONL in chunks, text decoded without
failing, column types checked; a query set on object storage is read from a local copy."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.core.errors import BadInputError
from codenib.core.rows import SWE_BENCH_COLUMNS
from codenib.core.specs import iter_jsonl_lines
from codenib.core.storage import Location, StorageConfig, split_name


#: Arrow types each column may have (`null`: a column with no values at all); a `query`
#: stored as binary would otherwise read as bytes and every row would look empty.
COLUMN_TYPES: dict[str, tuple[str, ...]] = {
    "qid": ("string", "integer"),
    "query": ("string",),
    "index": ("string",),
    "budget": ("string",),
    "mode": ("string",),
}


#: The query-set columns a SWE-bench file is read for as it is: each instance its own snapshot
#: (`codenib index-set` names it so).
SWE_BENCH_ALIASES = {col: SWE_BENCH_COLUMNS[col] for col in ("qid", "query", "index")}


def swe_bench_aliases(names) -> dict[str, str]:
    """Query-set column -> the SWE-bench column it is read from, for a file with `instance_id`
    and no `qid` (only the columns it lacks; a file with its own `qid` is read as written)."""
    names = set(names)
    if "qid" in names or "instance_id" not in names:
        return {}
    return {col: src for col, src in SWE_BENCH_ALIASES.items() if col not in names and src in names}


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


def local_copy(location: Location, storage: StorageConfig) -> tuple[Path, str | None]:
    """A readable local file of the query set (a URI is downloaded, streamed, into a
    temporary folder that the scan removes when closed)."""
    if not location.uri:
        path = Path(location.text)
        if not path.is_file():
            raise BadInputError("the query set does not exist", path=str(path),
                                fix="pass a Parquet or JSONL file with qid and query columns")
        _format_of(path, str(path))
        return path, None
    import tempfile

    uri = location.text
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


def file_schema(local: Path, shown: str) -> tuple[list[str], dict[str, pa.DataType], int]:
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
        types = {f.name: f.type for f in schema}
        aliases = swe_bench_aliases(types)
        return list(schema.names) + list(aliases), {**types, **{c: types[s] for c, s in aliases.items()}}, n_rows
    columns = JsonlColumns(shown)
    for line, rec in _jsonl_rows(local, shown):
        columns.add(line, rec)
    types = columns.types()
    aliases = swe_bench_aliases(types)
    types = {**types, **{c: types[s] for c, s in aliases.items()}}
    return sorted(types), types, columns.rows


#: The Arrow type a JSON value takes in a column, its name, and how a message names the value.
_JSON_TYPES: dict[type, tuple[pa.DataType, str, str]] = {
    str: (pa.string(), "string", "a string"),
    int: (pa.int64(), "int64", "an integer"),
    float: (pa.float64(), "double", "a number with a fraction"),
    bool: (pa.bool_(), "bool", "true or false"),
    dict: (pa.struct([]), "struct", "a JSON object"),
    list: (pa.list_(pa.null()), "list", "a JSON array"),
    type(None): (pa.null(), "null", "null"),
}
_INT64 = range(-2**63, 2**63)


def _json_type(value) -> tuple[pa.DataType, str, str]:
    """The Arrow type of one JSON value as a Parquet column would hold it, its name, and the
    value's description."""
    if isinstance(value, float) and not math.isfinite(value):
        return pa.float64(), "double", "NaN" if math.isnan(value) else "an infinity"
    if type(value) is int and value not in _INT64:
        return pa.decimal128(38, 0), "decimal128(38, 0)", "an integer beyond 64 bits"
    return _JSON_TYPES[type(value)]


class JsonlColumns:
    """The columns of a JSONL query set, gathered a row at a time: the Arrow type of every
    column, checked as a Parquet file's column types are (`COLUMN_TYPES`), naming the line.

    A Parquet column has one type; so must a JSONL field: values of two types in one of
    CodeNib's columns (`qid` 1 on one line and "b" on another) are bad input too. A column
    CodeNib does not read may hold anything (objects and arrays are kept as JSON text).
    """

    def __init__(self, shown: str):
        self.shown = shown
        self.rows = 0
        self._first: dict[str, dict[str, tuple[int, pa.DataType, str]]] = {}   # column -> type name -> first
        self._samples: dict[str, dict[type, object]] = {}

    def add(self, line: int, rec: dict) -> None:
        self.rows += 1
        for name, value in rec.items():
            if name in COLUMN_TYPES:
                typ, type_name, said = _json_type(value)
                self._first.setdefault(name, {}).setdefault(type_name, (line, typ, said))
            value = _scalar(value)
            seen = self._samples.setdefault(name, {})
            kind = type(value)
            if kind is int and kind in seen:
                seen[kind] = max(seen[kind], value, key=abs)   # the widest decides the integer type
            else:
                seen.setdefault(kind, _valid(value))

    def types(self) -> dict[str, pa.DataType]:
        """Each column's Arrow type (as Arrow infers it from all values).

        Raises:
            BadInputError: a field of CodeNib's holds a value of a type its column may not
                have, or values of two types; naming the column, the line and the fix.
        """
        for name, seen in self._first.items():
            allowed = COLUMN_TYPES[name]
            expected = " or ".join(allowed)
            for type_name, (line, typ, said) in sorted(seen.items(), key=lambda t: t[1][0]):
                if not any(_type_is(typ, kind) for kind in (*allowed, "null")):
                    raise BadInputError(f"column `{name}` has type {type_name}; expected {expected} (line {line} "
                                        f"holds {said})", path=self.shown,
                                        fix=f"write `{name}` as a JSON {expected} on every line")
            kinds = sorted((line, type_name) for type_name, (line, _, _) in seen.items() if type_name != "null")
            if len(kinds) > 1:
                (a, ta), (b, tb) = kinds[:2]
                raise BadInputError(f"column `{name}` mixes types: {ta} (line {a}) and {tb} (line {b}); a column "
                                    "has one type", path=self.shown,
                                    fix=f"write every `{name}` as a JSON string (quoted, e.g. \"{name}\": \"17\")")
        out = {}
        for name in sorted(self._samples):
            try:
                out[name] = pa.array(list(self._samples[name].values())).type
            except (pa.ArrowException, OverflowError):
                # A column CodeNib does not read, of mixed types: kept as text, never refused.
                out[name] = pa.string()
        return out


def _unreadable(exc: BaseException, shown: str) -> BadInputError:
    return BadInputError(f"cannot read the query set: {exc}", path=shown, fix="pass a readable Parquet or JSONL file")


def record_batches(local: Path, batch_rows: int, shown: str, keys: list[str] | tuple[str, ...] | None
                    ) -> Iterator[list[dict]]:
    """The query set's rows as dicts, `batch_rows` at a time (text as `load_query_records`
    reads it). JSONL rows get every one of `keys` (None: only their own keys)."""
    if _format_of(local, shown) == "parquet":
        try:
            pf = pq.ParquetFile(local)
            names = pf.schema_arrow.names
            aliases = swe_bench_aliases(names)
            for batch in pf.iter_batches(batch_size=batch_rows):
                columns = [_texts(batch.column(i)) if _is_text(batch.schema.field(i).type)
                           else batch.column(i).to_pylist() for i in range(batch.num_columns)]
                rows = [dict(zip(names, values)) for values in zip(*columns)]
                for row in rows:
                    row.update((c, row[s]) for c, s in aliases.items())
                yield rows
        except BadInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - pyarrow and OS errors of many kinds
            raise _unreadable(exc, shown) from exc
        return
    chunk: list[dict] = []
    for _, rec in _jsonl_rows(local, shown):
        rec = {**rec, **{c: rec.get(s) for c, s in swe_bench_aliases(rec).items()}}
        if keys is None:
            chunk.append({k: _scalar(v) for k, v in rec.items()})
        else:
            chunk.append({k: _scalar(rec.get(k)) for k in keys})
        if len(chunk) >= batch_rows:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _jsonl_rows(path: Path, shown: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) per line, streamed (`codenib.core.specs.iter_jsonl_lines`; errors
    name `shown`)."""
    try:
        yield from iter_jsonl_lines(path, shown)
    except OSError as exc:
        raise _unreadable(exc, shown) from exc


def _read_table(path: str | Path, storage: StorageConfig) -> tuple[pa.Table, list[dict] | None]:
    """The table, and for JSONL its records as read (a Parquet file's are decoded later).
    A URI is read from a temporary local copy; errors name the path as given."""
    import shutil

    location = Location.of(path)
    shown = location.shown
    local, tmpdir = local_copy(location, storage)
    try:
        if _format_of(local, shown) == "jsonl":
            return _read_jsonl(local, shown)
        try:
            table = pq.read_table(local)
        except Exception as exc:  # noqa: BLE001 - pyarrow and OS errors of many kinds
            raise _unreadable(exc, shown) from exc
        if table.num_rows == 0:  # as an empty JSONL file is
            raise BadInputError("the query set is empty", path=shown, fix="add at least one query")
        return table, None
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _read_jsonl(local: Path, shown: str) -> tuple[pa.Table, list[dict]]:
    columns = JsonlColumns(shown)
    records = []
    for line, rec in _jsonl_rows(local, shown):
        columns.add(line, rec)
        records.append(rec)
    if not records:
        raise BadInputError("the query set is empty", path=shown, fix="add at least one query")
    types = columns.types()
    keys = sorted(types)
    records = [{k: _scalar(r.get(k)) for k in keys} for r in records]
    # The table gives column names and types; lone surrogates (JSON "\udce9") stay in the
    # records, where the query's cleaning counts them (Arrow would refuse them).
    try:
        return pa.table({k: pa.array([_valid(r[k] if k in COLUMN_TYPES or not pa.types.is_string(types[k])
                                             else _text(r[k])) for r in records], types[k])
                         for k in keys}), records
    except Exception as exc:  # noqa: BLE001 - Arrow's conversion errors
        raise _unreadable(exc, shown) from exc


def _texts(column: pa.ChunkedArray) -> list:
    """A string column's values, undecodable bytes as lone surrogates (never an exception)."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    raw = column.cast(pa.large_binary()).to_pylist()
    return [None if b is None else b.decode("utf-8", "surrogateescape") for b in raw]


def _is_text(found: pa.DataType) -> bool:
    return _type_is(found, "string")


def _type_is(found: pa.DataType, kind: str) -> bool:
    if pa.types.is_dictionary(found):
        found = found.value_type
    return {"string": pa.types.is_string(found) or pa.types.is_large_string(found)
            or getattr(pa.types, "is_string_view", lambda t: False)(found),
            "integer": pa.types.is_integer(found),
            "null": pa.types.is_null(found)}[kind]


def has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _scalar(v):
    return v if v is None or isinstance(v, (str, int, float, bool)) else json.dumps(v)


def _text(v):
    """A value of a column CodeNib does not read, as text (that column may mix types)."""
    return v if v is None or isinstance(v, str) else json.dumps(v)


def _valid(v):
    return v.encode("utf-8", "replace").decode("utf-8") if isinstance(v, str) else v
