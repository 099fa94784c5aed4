"""Query sets: reading a small set into memory (its rows, shards and index names are
`codenib.batch.query_rows`, re-exported here).

Streaming a large set is `codenib.batch.scan`; reading the files is `codenib.batch.query_files`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from codenib.batch.query_rows import QueryRow, Shard
from codenib.core.errors import BadInputError
from codenib.core.storage import StorageConfig

__all__ = ["QuerySet", "read_query_set"]


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
    while the rest of the job runs. Query text is cleaned (`codenib.core.querytext`): what was
    changed is kept on the row for its plan row's trace.
    """
    from codenib.batch.scan import scan_query_set   # scan reads pyarrow: on first use

    with scan_query_set(path, index, index_root, storage) as scan:
        rows = tuple(row for batch in scan.batches() for row in batch)
    return QuerySet(scan.path, rows, scan.digest, scan.warnings)
