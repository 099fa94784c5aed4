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
from codenib.specs import read_jsonl

#: Row numbers listed in an error message before "and N more".
MAX_LISTED = 10


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
                   index_root: str | Path | None = None) -> QuerySet:
    """Read and validate a query set.

    Whole-file problems (unreadable file, missing columns, empty or duplicate qids, bad
    budget/mode values) raise `BadInputError` naming the file, rows and fix. Per-row
    problems (empty query text, an index that does not exist) are recorded on the row, so
    that query becomes an error row while the rest of the job runs.
    """
    path = Path(path)
    if (index is None) == (index_root is None):
        raise BadInputError("give exactly one of --index and --index-root",
                            fix="--index DIR for one index, or --index-root DIR with an `index` column")
    if index is not None and not _resolve_index(str(index), None):
        raise BadInputError("the index folder does not exist or holds no manifest.json", path=str(index),
                            fix=f"build it with `codenib index REPO --out {index}`")
    table = _read_table(path)
    names = set(table.column_names)
    missing = [c for c in ("qid", "query") if c not in names]
    if missing:
        raise BadInputError(f"missing column(s) {missing}; found {sorted(names)}", path=str(path),
                            fix="a query set needs `qid` (string, unique) and `query` (string) columns")
    if index_root is not None and "index" not in names:
        raise BadInputError("--index-root needs an `index` column naming each query's index", path=str(path),
                            fix="add an `index` column, or pass --index DIR for a single index")
    records = table.to_pylist()
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
    for rec, qid in zip(records, qids):
        text = rec.get("query")
        idx_name = str(index) if index is not None else (str(rec.get("index") or ""))
        if idx_name not in resolved:
            resolved[idx_name] = _resolve_index(idx_name, index_root)
        error = None
        if not isinstance(text, str) or not text.strip():
            error = "empty query text"
            text = text if isinstance(text, str) else ""
        elif not resolved[idx_name]:
            error = (f"index {idx_name!r} not found" + (f" under {index_root}" if index_root else "")
                     + " (fix: build it with `codenib index` or correct the `index` column)")
        rows.append(QueryRow(qid, text, idx_name, resolved[idx_name], rec.get("budget") or None,
                             rec.get("mode") or None, error))
    for name, folder in sorted(resolved.items()):
        if not folder:
            n = sum(1 for r in rows if r.index == name)
            warnings.append(f"{path}: index {name!r} not found; its {n} queries become error rows")
    n_empty = sum(1 for r in rows if r.error == "empty query text")
    if n_empty:
        warnings.append(f"{path}: {n_empty} queries have empty text; they become error rows")
    return QuerySet(str(path), tuple(rows), _digest(rows), tuple(warnings))


def _read_table(path: Path) -> pa.Table:
    if not path.is_file():
        raise BadInputError("the query set does not exist", path=str(path),
                            fix="pass a Parquet or JSONL file with qid and query columns")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            table = pq.read_table(path)
            if table.num_rows == 0:  # as an empty JSONL file is
                raise BadInputError("the query set is empty", path=str(path), fix="add at least one query")
            return table
        if suffix in (".jsonl", ".json", ".ndjson"):
            return _read_jsonl(path)
    except BadInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow and OS errors of many kinds
        raise BadInputError(f"cannot read the query set: {exc}", path=str(path),
                            fix="pass a readable Parquet or JSONL file") from exc
    raise BadInputError(f"unknown query-set format {suffix!r}", path=str(path),
                        fix="use a .parquet or .jsonl file")


def _read_jsonl(path: Path) -> pa.Table:
    records = read_jsonl(path)
    if not records:
        raise BadInputError("the query set is empty", path=str(path), fix="add at least one query")
    keys = sorted({k for r in records for k in r})
    return pa.table({k: [_scalar(r.get(k)) for r in records] for k in keys})


def _scalar(v):
    return v if v is None or isinstance(v, (str, int, float, bool)) else json.dumps(v)


def _qid(v) -> str | None:
    if v is None:
        return None
    s = str(v).strip()
    return s or None


def _resolve_index(name: str, root: str | Path | None) -> str:
    """The index folder a name refers to ('' when there is none with a manifest)."""
    if not name:
        return ""
    candidates = [Path(name)] if root is None else [Path(root) / name, Path(name)]
    for c in candidates:
        if (c / "manifest.json").is_file():
            return str(c.resolve())
    return ""


def _digest(rows: list[QueryRow]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps([r.qid, r.query, r.index, r.budget, r.mode]).encode())
    return h.hexdigest()


def _list(items: list) -> str:
    shown = ", ".join(str(i) for i in items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")
