"""`SparseIndex`: batch BM25 search over a saved bm25s index (loaded without pickle)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from codenib.errors import IndexFormatError
from codenib.tokens import Tokenizer, TokenizerConfig

#: Extra candidates fetched past k so that ties at the cut are broken by node id, not by heap order.
TIE_SLACK = 16
#: Batches at least this large use numba's parallel kernel (threads); smaller ones run serially.
PARALLEL_MIN_BATCH = 256

_KERNELS: dict[bool, object] = {}
_KERNEL_LOCK = threading.Lock()


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
        import bm25s

        folder = Path(folder)
        try:
            retriever = bm25s.BM25.load(str(folder), allow_pickle=False, mmap=False,
                                        show_progress=False, backend="numpy")
        except (OSError, ValueError, KeyError) as exc:
            raise IndexFormatError(f"cannot load the BM25 index: {exc}", path=str(folder),
                                   fix="rebuild the index with `codenib index`") from exc
        index = cls(retriever, Tokenizer(tokenizer))
        if warmup and len(retriever.scores["indptr"]) > 1:
            index._kernel_search([[0]], 1, parallel=False)  # loads (or compiles) the kernel
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
        n_terms = len(self.retriever.scores["indptr"]) - 1
        ids = [[i for i in (self._vocab.get(t) for t in toks) if i is not None and i < n_terms]
               for toks in query_tokens]
        rows = np.full((nq, k), -1, dtype=np.int64)
        scores = np.zeros((nq, k), dtype=np.float32)
        # A query with no indexed term matches nothing; the kernel never sees it.
        live = [i for i, q in enumerate(ids) if q]
        if live:
            fetch = min(self.num_docs, k + TIE_SLACK)
            parallel = (n_threads or 1) > 1 or (n_threads is None and len(live) >= PARALLEL_MIN_BATCH)
            got_scores, got_rows = self._kernel_search([ids[i] for i in live], fetch, parallel)
            rows[live], scores[live] = _order(got_rows, got_scores, k)
        return rows, scores

    def _kernel_search(self, ids: list[list[int]], k: int, parallel: bool):
        s = self.retriever.scores
        int_dtype = np.dtype(self.retriever.int_dtype)
        pointers = np.cumsum([0] + [len(q) for q in ids]).astype(int_dtype)
        flat = np.concatenate([np.asarray(q, dtype=int_dtype) for q in ids])
        return _kernel(parallel)(
            query_tokens_ids_flat=flat, query_pointers=pointers, k=k, sorted=True,
            dtype=np.dtype(self.retriever.dtype), int_dtype=int_dtype,
            data=s["data"], indptr=s["indptr"], indices=s["indices"], num_docs=s["num_docs"],
            nonoccurrence_array=None, weight_mask=None,
        )


def _kernel(parallel: bool):
    """bm25s's own retrieval kernel, compiled with numba's on-disk cache.

    bm25s compiles it without `cache=True`, which costs ~6 s in every new process (each
    Ray actor, each CLI call); with the cache it loads in a fraction of a second.
    """
    with _KERNEL_LOCK:
        if parallel not in _KERNELS:
            from numba import njit
            from bm25s.numba import retrieve_utils

            fn = retrieve_utils._retrieve_internal_jitted
            _KERNELS[parallel] = (njit(parallel=True, cache=True)(fn) if parallel
                                  else njit(nogil=True, cache=True)(fn))
        return _KERNELS[parallel]


def _order(rows: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row by score descending, then row index (= node id order); drop zero scores."""
    rows = rows.astype(np.int64, copy=False)
    out_rows = np.full((rows.shape[0], k), -1, dtype=np.int64)
    out_scores = np.zeros((rows.shape[0], k), dtype=np.float32)
    for i in range(rows.shape[0]):
        order = np.lexsort((rows[i], -scores[i]))[:k]
        r, sc = rows[i][order], scores[i][order]
        keep = sc > 0
        n = int(keep.sum())
        out_rows[i, :n] = r[keep]
        out_scores[i, :n] = sc[keep]
    return out_rows, out_scores
