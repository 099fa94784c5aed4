"""`SparseIndex`: batch BM25 search over a saved bm25s index (loaded without pickle)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from codenib.engines.bm25 import import_bm25s, kernel_threads, topk_kernel
from codenib.engines.bm25_terms import DocTerms, bm25_retriever
from codenib.core.errors import IndexFormatError
from codenib.core.tokens import Tokenizer, TokenizerConfig

#: Batches at least this large use numba's parallel kernel (threads); smaller ones run serially.
PARALLEL_MIN_BATCH = 256


class SparseIndex:
    """BM25 over node texts; row i is nodes row i. Every search is a batch."""

    def __init__(self, retriever, tokenizer: Tokenizer):
        self.retriever = retriever
        self.tokenizer = tokenizer
        self.num_docs = int(retriever.scores["num_docs"])
        self._vocab = retriever.vocab_dict

    @classmethod
    def load(cls, folder: str | Path, tokenizer: TokenizerConfig, warmup: bool = True) -> "SparseIndex":
        """Load `folder` (bm25s arrays + vocabulary) with `allow_pickle=False`."""
        bm25s = import_bm25s()
        folder = Path(folder)
        try:
            retriever = bm25s.BM25.load(str(folder), allow_pickle=False, mmap=False,
                                        show_progress=False, backend="numpy")
        except (OSError, ValueError, KeyError) as exc:
            raise IndexFormatError(f"cannot load the BM25 index: {exc}", path=str(folder),
                                   fix="rebuild the index with `codenib index`") from exc
        index = cls(retriever, Tokenizer(tokenizer))
        if warmup:
            index._warm()
        return index

    @classmethod
    def from_terms(cls, terms: DocTerms, tokenizer: TokenizerConfig, warmup: bool = True) -> "SparseIndex":
        """The BM25 index of documents already counted, computed in memory (what `load` reads
        back from the folder the compiler saves of the same counts)."""
        index = cls(bm25_retriever(terms), Tokenizer(tokenizer))
        if warmup:
            index._warm()
        return index

    def tokenize(self, queries: Sequence[str]) -> list[list[str]]:
        return self.tokenizer.tokenize_many(queries)

    def search(self, queries: Sequence[str], k: int, n_threads: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and scores for each query text; -1 / 0 pad rows with no match."""
        return self.search_tokens(self.tokenize(queries), k, n_threads)

    def search_tokens(self, query_tokens: Sequence[Sequence[str]], k: int,
                      n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Like `search`, for already tokenized queries (what raw bm25s takes)."""
        nq = len(query_tokens)
        k = max(0, min(k, self.num_docs))
        if nq == 0 or k == 0:
            return np.zeros((nq, k), dtype=np.int64), np.zeros((nq, k), dtype=np.float32)
        s = self.retriever.scores
        n_terms = len(s["indptr"]) - 1
        vocab = self._vocab
        ids = [[i for i in (vocab.get(t) for t in toks) if i is not None and i < n_terms]
               for toks in query_tokens]
        pointers = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum([len(q) for q in ids], out=pointers[1:])
        flat = np.fromiter((t for q in ids for t in q), dtype=np.int64, count=int(pointers[-1]))
        # A query with no indexed term has an empty slice: the kernel leaves its row at -1 / 0.
        parallel = (n_threads or 1) > 1 or (n_threads is None and nq >= PARALLEL_MIN_BATCH)
        return topk_kernel(parallel)(flat, pointers, k, s["data"], s["indptr"], s["indices"],
                                     int(s["num_docs"]), kernel_threads() if parallel else 1)

    def _warm(self) -> None:
        """Load (or compile) the top-k kernel with one search."""
        if len(self.retriever.scores["indptr"]) > 1:
            self.search_tokens([[next(iter(self._vocab))]], 1, n_threads=1)
