"""The build's use of the per-file store (`codenib.compiler.cache`): the entries it has for
unchanged bytes, and the files parsed now put back."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa

from codenib.compiler.build_options import BuildOptions, Logger
from codenib.core.types import Node


def open_cache(options: BuildOptions, out: Path):
    """The per-file store this build reads and fills, or None."""
    if not options.use_cache:
        return None
    from codenib.compiler.cache import DEFAULT_CACHE_NAME, FileCache

    return FileCache(options.cache or out.absolute().parent / DEFAULT_CACHE_NAME, options.tokenizer)


def cached_files(store, rels: list[str], shas: dict[str, str]) -> dict:
    """The store's entries for these files' bytes (those it has)."""
    if store is None:
        return {}
    found = {}
    for rel in rels:
        entry = store.get(rel, shas[rel])
        if entry is not None:
            found[rel] = entry
    return found


def fill_cache(store, fresh: set[str], parsed: dict[str, list[Node]], shas: dict[str, str],
                terms, nodes: pa.Table, new_counts: dict[str, Counter], log: Logger) -> None:
    """Store the files parsed now (best effort: a store that cannot be written is skipped)."""
    from codenib.core.file_entry import CachedFile

    row_of = None
    try:
        for rel in sorted(fresh):
            file_nodes = parsed[rel]
            if len({n.node_id for n in file_nodes}) != len(file_nodes):
                # Counts are matched to nodes by id: a reader that gave two nodes one id would
                # store one node's counts under both. Such a file is parsed again each time.
                log(f"warning: {rel}: two nodes share an id; not put in the parse cache")
                continue
            counts = []
            for n in file_nodes:
                c = new_counts.get(n.node_id)
                if c is None:       # counts reused from the earlier index: read them back
                    if row_of is None:
                        row_of = {nid: i for i, nid in enumerate(nodes.column("node_id").to_pylist())}
                    c = terms.counts_of(row_of[n.node_id])
                counts.append(c)
            store.put(rel, shas[rel], CachedFile(file_nodes, counts))
    except (OSError, UnicodeError, ValueError) as exc:
        log(f"warning: the parse cache {store.root} was not updated: {exc}")
