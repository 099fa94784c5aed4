"""What the readers of evaluation inputs share: the warning callback and checked Parquet reads.

Every reader (`runs`, `qrels`, `queries`, `trec`) validates its input and raises
`BadInputError` (exit 2) naming the file, the column and the fix. Warnings (inputs that are
usable but suspicious) go to the `warn` callback, which defaults to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.core.errors import BadInputError

Warn = Callable[[str], None]


def warn_stderr(message: str) -> None:
    """The default `Warn`: one line on stderr."""
    print(f"codenib eval: warning: {message}", file=sys.stderr)


def read_parquet(path: Path, what: str) -> pa.Table:
    """`path` as a table; an unreadable file is bad input naming `what` it should be."""
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise BadInputError(f"cannot read {what} {path} as Parquet: {exc}", path=str(path),
                            fix=f"pass a valid Parquet {what} file") from None


def string_column(table: pa.Table, name: str, path: Path, what: str) -> list[str]:
    """Column `name` as strings; an empty value is bad input."""
    col = table.column(name)
    if col.null_count:
        raise BadInputError(f"{what} {path}: column {name} has {col.null_count} empty value(s)",
                            path=str(path), fix=f"give every row a {name}")
    # Numeric qids are common in TREC-style files; compare them as strings like the results do.
    return [str(v) for v in col.to_pylist()]
