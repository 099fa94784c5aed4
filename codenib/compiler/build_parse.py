"""The build's parse stage: every file read once, the files an earlier index holds unchanged,
the rest parsed (in worker processes when there are many), and the nodes table."""

from __future__ import annotations

import contextlib
import gc
from typing import Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from codenib.core.gcpause import collector_paused
from codenib.compiler.lang import reader_of
from codenib.compiler.lang.facts import ForeignFacts
from codenib.compiler.lang.python_graph import KEEP_TREES_BYTES
from codenib.compiler.lang.reader import FileRead
from codenib.compiler.walk import SourceFile
from codenib.compiler.workers import CHUNKS_PER_WORKER, balanced_chunks, Workers
from codenib.core.types import NODES_SCHEMA, Node, nodes_to_table

#: Parse in worker processes from this many files to parse (below, starting them costs more).
PARALLEL_MIN_FILES = 200


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while parsing and resolving (`collector_paused`).

    Those stages allocate millions of small objects and free them by reference counting;
    with the collector on, its full passes over the growing heap cost as much as the
    parsing itself (measured: `ast.parse` alone runs about twice as fast without it).
    """
    with collector_paused():
        yield


def read_sources(files: Sequence[SourceFile], read: Callable[[SourceFile], bytes] | None = None
                 ) -> tuple[dict[str, bytes | None], dict[str, str]]:
    """The bytes of every file, read once by `read` (default: from its path on disk; None
    and the reason when unreadable)."""
    sources: dict[str, bytes | None] = {}
    errors: dict[str, str] = {}
    for f in files:
        try:
            sources[f.rel_path] = read(f) if read is not None else f.abs_path.read_bytes()
        except OSError as exc:
            sources[f.rel_path] = None
            errors[f.rel_path] = f"unreadable: {exc.strerror}"
    return sources, errors


def unchanged_files(previous, shas: dict[str, str], read_errors: dict[str, str]) -> set[str]:
    """Files whose nodes the earlier index holds for the same bytes (by its file nodes; none
    when its state is not reusable)."""
    if previous is None or previous.files is None:
        return set()
    old = _previous_file_shas(previous)
    return {rel for rel, sha in shas.items()
            if rel not in read_errors and rel in old and old[rel] == sha}


def _previous_file_shas(previous) -> dict[str, str]:
    """Content sha256 of each file of the earlier index."""
    files = _file_rows(previous.nodes, ["file", "content_sha256"])
    return dict(zip(files.column("file").to_pylist(), files.column("content_sha256").to_pylist()))


def _file_rows(nodes: pa.Table, columns: list[str]) -> pa.Table:
    """`columns` of the file nodes (selected first: filtering the whole table copies every
    node's text, 0.08 s a call on sphinx)."""
    table = nodes.select(["kind", *columns])
    return table.filter(pc.equal(table.column("kind"), "file"))


def _previous_files(previous) -> set[str]:
    """Every file of the earlier index."""
    return set(_previous_file_shas(previous))


def parse_files(rels: list[str], sources: dict[str, bytes | None], read_errors: dict[str, str],
                 workers: "Workers", progress: bool
                 ) -> tuple[dict[str, list[Node]], dict[str, FileRead], dict[str, ForeignFacts]]:
    """The nodes of each file in `rels`, read by its language's reader (`codenib.compiler.lang`)
    in worker processes when there are many, and the facts of those whose reads have facts.

    Parsed here, the first reads without facts are returned too (up to `KEEP_TREES_BYTES` of
    source): their graph stage reads those files again, and takes these reads instead.
    """
    items = [(rel, sources[rel], read_errors.get(rel)) for rel in rels]
    if workers.size > 1 and len(items) >= PARALLEL_MIN_FILES:
        chunks = balanced_chunks(items, workers.size * CHUNKS_PER_WORKER, lambda it: len(it[1] or b""))
        results = workers.map(_parse_chunk, chunks, desc="parse", unit="chunk", progress=progress)
        return ({rel: nodes for chunk in results for rel, nodes, _ in chunk}, {},
                {rel: facts for chunk in results for rel, _, facts in chunk if facts is not None})
    from codenib.core.progress import Progress

    nodes: dict[str, list[Node]] = {}
    trees: dict[str, FileRead] = {}
    facts: dict[str, ForeignFacts] = {}
    budget = KEEP_TREES_BYTES
    with Progress("parse", len(items), "files", enabled=progress) as bar:
        for rel, raw, error in items:
            pf = _parse_one(rel, raw, error)
            nodes[rel] = pf.nodes
            if pf.facts is not None:
                facts[rel] = pf.facts
            elif raw is not None and len(raw) <= budget:
                budget -= len(raw)
                pf.nodes = []
                trees[rel] = pf
            bar.update(1)
    return nodes, trees, facts


def _parse_chunk(items) -> list[tuple[str, list[Node], ForeignFacts | None]]:
    """Worker task: (rel, bytes, read error) -> (rel, nodes, facts or None)."""
    gc.disable()    # in a worker process: nothing else runs there
    out = []
    for rel, raw, error in items:
        pf = _parse_one(rel, raw, error)
        out.append((rel, pf.nodes, pf.facts))
    return out


def _parse_one(rel: str, raw: bytes | None, error: str | None) -> FileRead:
    """A file read by its language's reader."""
    reader = reader_of(rel, raw)
    return reader.unreadable(rel, error) if raw is None else reader.read(rel, raw)


def node_table(parsed: dict[str, list[Node]], previous, kept: set[str]) -> tuple[pa.Table, list]:
    """nodes.parquet's table, sorted by node id, and each row's origin: the row of the
    earlier index it was taken from (an int), or None for a node parsed now."""
    new_nodes = [n for nodes in parsed.values() for n in nodes]
    if not new_nodes and previous is not None and kept == _previous_files(previous):
        table = previous.nodes.cast(NODES_SCHEMA).combine_chunks()    # the same files, unchanged
        return table, list(range(table.num_rows))
    parts = [nodes_to_table(new_nodes)]
    origin: list = [None] * len(new_nodes)
    if kept:
        old = previous.nodes
        rows = pc.indices_nonzero(pc.is_in(old.column("file"), value_set=pa.array(sorted(kept)))).to_numpy()
        parts.append(old.take(rows).cast(NODES_SCHEMA))
        origin.extend(rows.tolist())
    table = pa.concat_tables(parts)
    order = pc.sort_indices(table, sort_keys=[("node_id", "ascending")])
    table = table.take(order).combine_chunks()
    return table, [origin[i] for i in order.to_numpy()]


def file_facts(nodes: pa.Table) -> dict[str, tuple[str, bool, str | None]]:
    """Per file: content sha256, whether it parsed, and its parse error (from file nodes)."""
    files = _file_rows(nodes, ["file", "content_sha256", "parse_error"])
    return {rel: (sha, err is None, err) for rel, sha, err in zip(
        files.column("file").to_pylist(), files.column("content_sha256").to_pylist(),
        files.column("parse_error").to_pylist())}


def nodes_of(table: pa.Table) -> list[Node]:
    """`Node` records of a nodes table (what the dense stage encodes)."""
    cols = table.to_pydict()
    names = NODES_SCHEMA.names
    return [Node(**{name: (tuple(cols[name][i] or ()) if name == "decorators" else cols[name][i])
                    for name in names}) for i in range(table.num_rows)]
