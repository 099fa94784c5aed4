"""Build the BM25 index (bm25s format) over node texts with the code-aware tokenizer.

Tokenizing is the expensive part; the score arrays are cheap. So the index is built from
each node's term counts (`codenib.engines.bm25_terms.DocTerms`), which a later build reuses
for unchanged nodes: only new texts are tokenized, and the arrays are computed again from the
counts (`bm25_scores`). The vocabulary is sorted, so the same texts give the same files
whatever the build order or hash seed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from codenib.engines.bm25_terms import DocTerms, assemble_terms, bm25_retriever
from codenib.core.tokens import Tokenizer, TokenizerConfig


def count_terms(texts: Sequence[str], config: TokenizerConfig) -> list[Counter]:
    """The term counts of each text."""
    tokenizer = Tokenizer(config)
    return [Counter(tokenizer.tokenize(t)) for t in texts]


def write_bm25(terms: DocTerms, folder: Path) -> None:
    """Save the bm25s index of `terms` under `folder` (what `bm25s.BM25.index` computes
    from the same documents, with this vocabulary order)."""
    folder.mkdir(parents=True, exist_ok=True)
    bm25_retriever(terms).save(str(folder), allow_pickle=False, show_progress=False)


def build_sparse(texts: Sequence[str], config: TokenizerConfig, folder: Path) -> DocTerms:
    """Tokenize `texts` (row i = nodes row i) and save a bm25s index under `folder`."""
    return build_sparse_from_terms(assemble_terms(count_terms(texts, config)), folder)


def build_sparse_from_terms(terms: DocTerms, folder: Path) -> DocTerms:
    """Save the bm25s index of documents already counted (what the build calls)."""
    write_bm25(terms, folder)
    return terms
