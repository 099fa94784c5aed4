"""Build the BM25 index (bm25s) over node texts with the code-aware tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from codenib.engines.bm25 import import_bm25s
from codenib.tokens import Tokenizer, TokenizerConfig

#: Lucene BM25 with the usual k1/b: code nodes vary widely in length, so b stays at 0.75.
BM25_METHOD = "lucene"
BM25_K1 = 1.2
BM25_B = 0.75


def build_sparse(texts: Sequence[str], config: TokenizerConfig, folder: Path) -> None:
    """Tokenize `texts` (row i = nodes row i) and save a bm25s index under `folder`."""
    bm25s = import_bm25s()
    tokens = Tokenizer(config).tokenize_many(texts)
    retriever = bm25s.BM25(method=BM25_METHOD, k1=BM25_K1, b=BM25_B, backend="numpy")
    retriever.index(tokens, show_progress=False)
    folder.mkdir(parents=True, exist_ok=True)
    retriever.save(str(folder), allow_pickle=False, show_progress=False)
