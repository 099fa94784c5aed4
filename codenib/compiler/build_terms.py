"""The build's BM25 term counts: reused from an earlier index or the per-file store where the
text is the same, counted (in worker processes when there are many) for the rest."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from codenib.compiler.build_options import BuildOptions
from codenib.compiler.workers import CHUNKS_PER_WORKER, balanced_chunks, Workers
from codenib.core.tokens import TokenizerConfig

#: Count BM25 terms in worker processes from this many texts to tokenize.
PARALLEL_MIN_TEXTS = 4_000


def term_counts(nodes: pa.Table, origin: list, previous, options: BuildOptions, workers: "Workers",
                 cached: dict[str, Counter]):
    """BM25 term counts of every node row: reused for a node whose text the earlier index
    holds (same id, same text) or the store has (`cached`, by node id), counted for the rest.

    Returns them, how many texts were counted, and the counts made now by node id.
    """
    from codenib.engines.bm25_terms import assemble_terms

    old_terms = previous.terms if previous is not None else None
    rows: list = list(origin) if old_terms is not None else [None] * nodes.num_rows
    if cached:
        for i, nid in enumerate(nodes.column("node_id").to_pylist()):
            if rows[i] is None and nid in cached:
                rows[i] = cached[nid]
    todo = [i for i, r in enumerate(rows) if r is None]
    texts = nodes.column("text").take(todo).to_pylist() if todo else []
    if old_terms is not None and todo:
        # A changed file's unchanged definitions keep their text: match them by id.
        old_ids = previous.nodes.column("node_id").to_pylist()
        old_row = {nid: i for i, nid in enumerate(old_ids)}
        ids = nodes.column("node_id").take(todo).to_pylist()
        old_text = previous.nodes.column("text")
        still = []
        for i, nid, text in zip(todo, ids, texts):
            r = old_row.get(nid)
            if r is not None and old_text[r].as_py() == text:
                rows[i] = r
            else:
                still.append((i, text))
        todo, texts = [i for i, _ in still], [t for _, t in still]
    counts = _count_texts(texts, options.tokenizer, workers, options.progress)
    for i, c in zip(todo, counts):
        rows[i] = c
    ids = nodes.column("node_id").take(todo).to_pylist() if todo else []
    return assemble_terms(rows, old_terms), len(todo), dict(zip(ids, counts))


def _count_texts(texts: list[str], config: TokenizerConfig, workers: "Workers", progress: bool) -> list:
    """Term counts of each text, in worker processes when there are many."""
    from codenib.compiler.sparse import count_terms

    if workers.size <= 1 or len(texts) < PARALLEL_MIN_TEXTS:
        return count_terms(texts, config)
    chunks = balanced_chunks([(t, config) for t in texts], workers.size * CHUNKS_PER_WORKER, lambda it: len(it[0]),
                     keep_order=True)
    results = workers.map(_count_chunk, chunks, desc="tokenize", unit="chunk", progress=progress)
    return [c for chunk in results for c in chunk]


def _count_chunk(items) -> list:
    """Worker task: term counts of each text."""
    from codenib.compiler.sparse import count_terms

    return count_terms([t for t, _ in items], items[0][1]) if items else []
