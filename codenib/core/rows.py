"""Row files read whole (Parquet or JSONL: snapshot sets, query sets with patches), and the
names a SWE-bench-shaped file gives the columns CodeNib reads.

Core level: pyarrow is imported lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from codenib.core.errors import BadInputError

#: A CodeNib column -> SWE-bench's name for it: each instance is a query and its own snapshot.
SWE_BENCH_COLUMNS = {"qid": "instance_id", "index": "instance_id", "query": "problem_statement",
                     "rev": "base_commit"}
#: A column a row set may leave out, and the column that then stands for it: a snapshot named
#: by the query it serves (a dev set's `instances.parquet`: qid, repo, base_commit).
FALLBACK_COLUMNS = {"index": "qid"}


def column_of(names: Iterable[str], column: str) -> str | None:
    """The file's column that holds `column`: itself, else its SWE-bench name, else its
    fallback (`FALLBACK_COLUMNS`; None: none of them)."""
    names = set(names)
    for candidate in (column, SWE_BENCH_COLUMNS.get(column), FALLBACK_COLUMNS.get(column)):
        if candidate is not None and candidate in names:
            return candidate
    return None


def read_rows(path: str | Path, what: str, fix: str) -> list[dict[str, Any]]:
    """Every row of a Parquet or JSONL (`.jsonl`/`.json`) file as a dict.

    Raises:
        BadInputError: the file is missing or cannot be read (named as `what`, with `fix`).
    """
    from codenib.core.specs import read_jsonl

    p = Path(path)
    if not p.is_file():
        raise BadInputError(f"no such {what}", path=str(p), fix=fix)
    if p.suffix in (".jsonl", ".json"):
        return read_jsonl(p)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(p).to_pylist()
    except (OSError, pa.ArrowException) as exc:
        raise BadInputError(f"cannot read the {what} as Parquet: {exc}", path=str(p),
                            fix="pass a Parquet file, or JSONL with a .jsonl name") from exc
