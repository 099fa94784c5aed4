"""Reading a query set (Parquet or JSONL) into `QuerySet`: qids and their kind, index and repo;
and a table of each query's repository (`read_groups`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from codenib.core.errors import BadInputError
from codenib.eval.io import read_parquet, string_column
from codenib.core.specs import read_jsonl


#: Columns a query set may carry about each query, each a breakdown of the report: its kind,
#: its index, its repository (also the mean over repositories) and its language (Multi-SWE-bench
#: instance files carry one: targets are set per language).
QUERY_ATTRS = ("kind", "index", "repo", "language")


@dataclass(frozen=True, slots=True)
class QuerySet:
    """The qids of a query set, their optional columns of `QUERY_ATTRS` and their text."""

    source: str
    qids: list[str]
    attrs: dict[str, dict[str, str]]  # a column of `QUERY_ATTRS` -> qid -> value
    texts: dict[str, str] = field(default_factory=dict)  # qid -> query text (the `query` column)


@dataclass(frozen=True, slots=True)
class QueryGroups:
    """Each query's repository (and language), from a file of its own (`codenib eval --groups`)."""

    source: str
    attrs: dict[str, dict[str, str]]  # 'repo' (always) | 'language' (where the file has one) -> qid -> value

    @property
    def repo_of(self) -> dict[str, str]:
        return self.attrs["repo"]


def read_queries(path: str | os.PathLike) -> QuerySet:
    """Read a query set (Parquet or JSONL): qid, and optional kind, index, repo and language; a
    SWE-bench-shaped file (`instance_id` and no `qid`) as `codenib run` reads it: `instance_id`
    the qid and the index, `problem_statement` the query."""
    p = Path(path)
    if not p.is_file():
        raise BadInputError("no such query set", path=str(p),
                            fix="pass the --queries file of `codenib run` (Parquet or JSONL)")
    table = _read_table(p, "query set")
    if "qid" not in table.column_names:
        raise BadInputError(f"query set {p} lacks column qid (has: {', '.join(table.column_names)})",
                            path=str(p), fix="write the query set with columns qid, query (and optionally kind)")
    qids = string_column(table, "qid", p, "query set")
    dupes = sorted({q for q in qids if qids.count(q) > 1}) if len(set(qids)) != len(qids) else []
    if dupes:
        raise BadInputError(f"query set {p} repeats qid(s) {', '.join(dupes[:10])}", path=str(p),
                            fix="make every qid unique")
    attrs = {}
    for col in QUERY_ATTRS:
        if col in table.column_names:
            attrs[col] = {q: str(v) for q, v in zip(qids, table.column(col).to_pylist()) if v is not None}
    texts = {}
    if "query" in table.column_names:
        texts = {q: v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for q, v in zip(qids, table.column("query").to_pylist())
                 if v is not None}
    return QuerySet(source=str(p), qids=qids, attrs=attrs, texts=texts)


def read_groups(path: str | os.PathLike) -> QueryGroups:
    """Read each query's repository (and language, where the file has a `language` column) from
    a table (Parquet or JSONL) with `qid` (or SWE-bench's `instance_id`) and `repo`: a data set's
    instances file, or any query set that has `repo`.

    Raises:
        BadInputError: naming the file: missing, unreadable, without those columns or any
            repo, or a qid given two different repositories.
    """
    p = Path(path)
    fix = "pass a Parquet or JSONL file with columns qid (or instance_id) and repo, e.g. a data set's instances file"
    if not p.is_file():
        raise BadInputError("no such groups file", path=str(p), fix=fix)
    table = _read_table(p, "groups file")
    missing = [c for c in ("qid", "repo") if c not in table.column_names]
    if missing:
        raise BadInputError(f"groups file {p} lacks column(s) {', '.join(missing)} "
                            f"(has: {', '.join(table.column_names) or 'no rows'})", path=str(p), fix=fix)
    qids = string_column(table, "qid", p, "groups file")
    repo_of: dict[str, str] = {}
    for q, repo in zip(qids, table.column("repo").to_pylist()):
        if repo is None or str(repo) == "":
            continue
        if repo_of.setdefault(q, str(repo)) != str(repo):
            raise BadInputError(f"groups file {p} gives qid {q} two repositories ({repo_of[q]!r}, {str(repo)!r})",
                                path=str(p), fix="give every qid one repo")
    if not repo_of:
        raise BadInputError(f"groups file {p} gives no query a repo ({len(qids)} rows, every repo empty)",
                            path=str(p), fix=fix)
    attrs = {"repo": repo_of}
    if "language" in table.column_names:
        attrs["language"] = {q: str(v) for q, v in zip(qids, table.column("language").to_pylist()) if v}
    return QueryGroups(source=str(p), attrs=attrs)


def _read_table(p: Path, what: str) -> pa.Table:
    """A Parquet or JSONL file as a table, SWE-bench's columns also under CodeNib's names."""
    if p.suffix in (".jsonl", ".json"):
        rows = read_jsonl(p)
        table = pa.Table.from_pylist(rows) if rows else pa.table({"qid": pa.array([], pa.string())})
    else:
        table = read_parquet(p, what)
    return _swe_bench_named(table)


def _swe_bench_named(table: pa.Table) -> pa.Table:
    """`table` with SWE-bench's columns also under CodeNib's names, when it has `instance_id`
    and no `qid` (`codenib.core.rows.SWE_BENCH_COLUMNS`); otherwise as it is."""
    from codenib.core.rows import SWE_BENCH_COLUMNS

    names = table.column_names
    if "qid" in names or "instance_id" not in names:
        return table
    for ours, theirs in SWE_BENCH_COLUMNS.items():
        if ours not in table.column_names and theirs in names:
            table = table.append_column(ours, table.column(theirs))
    return table
