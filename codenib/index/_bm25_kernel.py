"""Numba kernel for batch BM25 top-k over bm25s's precomputed CSC score matrix.

Imported lazily by `codenib.index.sparse` (numba is heavy). Compiled with numba's on-disk
cache, so a new process (a Ray actor, a CLI call) loads it in well under a second.

Unlike bm25s's own top-k heap, which evicts an arbitrary member of a tie group, this one
orders hits by (score descending, row ascending), so the k kept rows are exactly the
contract's, with no extra candidates and no re-sort in Python.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

#: Rows per block of the block-maximum prefilter: two AVX-512 registers of float32.
BLOCK = 32


@njit(nogil=True, cache=True, inline="always")
def _worse(s1: float, r1: int, s2: float, r2: int) -> bool:
    """True when hit (s1, r1) ranks below (s2, r2): lower score, or equal score and higher row."""
    return s1 < s2 or (s1 == s2 and r1 > r2)


@njit(nogil=True, cache=True)
def _sift_down(hs, hr, pos, n):
    """Restore the min-heap (root = worst kept hit) below `pos`."""
    s, r = hs[pos], hr[pos]
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and _worse(hs[child + 1], hr[child + 1], hs[child], hr[child]):
            child += 1
        if not _worse(hs[child], hr[child], s, r):
            break
        hs[pos], hr[pos] = hs[child], hr[child]
        pos = child
    hs[pos], hr[pos] = s, r


@njit(nogil=True, cache=True, fastmath=True)
def _block_maxima(scores, nb):
    """Maximum of each BLOCK-row block (scores are >= 0 and never NaN, so fastmath is exact)."""
    out = np.empty(nb, np.float32)
    for b in range(nb):
        m = np.float32(0.0)
        base = b * BLOCK
        for j in range(BLOCK):
            x = scores[base + j]
            m = x if x > m else m
        out[b] = m
    return out


@njit(nogil=True, cache=True)
def _one_query(terms, k, data, indptr, indices, num_docs, out_rows, out_scores):
    """Top-k rows of one query into out_rows / out_scores, best first; zero scores are left out."""
    nb = (num_docs + BLOCK - 1) // BLOCK
    scores = np.zeros(nb * BLOCK, np.float32)  # padded so that every block is full
    for t in terms:  # the same summation order as bm25s: identical float32 scores
        for j in range(indptr[t], indptr[t + 1]):
            scores[indices[j]] += data[j]
    bmax = _block_maxima(scores, nb)
    live = 0
    for b in range(nb):
        if bmax[b] > 0:
            live += 1
    # k blocks reach their k-th largest maximum, so every top-k hit scores at least that.
    floor = np.float32(0.0)
    if live > k:
        floor = np.partition(bmax, nb - k)[nb - k]
    hs = np.empty(k, np.float32)
    hr = np.empty(k, np.int64)
    n = 0
    # Rows arrive in ascending order, so an equal score never displaces a kept row, and the
    # root (lowest score, highest row among equals) is the right one to evict.
    for b in range(nb):
        if bmax[b] <= 0 or bmax[b] < floor:
            continue
        for d in range(b * BLOCK, b * BLOCK + BLOCK):
            s = scores[d]
            if s <= 0 or s < floor:
                continue
            if n < k:
                pos = n
                n += 1
                while pos > 0:
                    parent = (pos - 1) // 2
                    if not _worse(s, d, hs[parent], hr[parent]):
                        break
                    hs[pos], hr[pos] = hs[parent], hr[parent]
                    pos = parent
                hs[pos], hr[pos] = s, d
            elif s > hs[0]:
                hs[0], hr[0] = s, d
                _sift_down(hs, hr, 0, n)
    for m in range(n - 1, -1, -1):  # pop the worst into the last free slot: best first
        out_scores[m], out_rows[m] = hs[0], hr[0]
        hs[0], hr[0] = hs[m], hr[m]
        _sift_down(hs, hr, 0, m)


def _topk(flat, pointers, k, data, indptr, indices, num_docs):
    nq = len(pointers) - 1
    rows = np.full((nq, k), -1, np.int64)
    scores = np.zeros((nq, k), np.float32)
    for q in prange(nq):
        _one_query(flat[pointers[q]:pointers[q + 1]], k, data, indptr, indices, num_docs, rows[q], scores[q])
    return rows, scores


#: Batch top-k: (flat term ids, per-query pointers, k, CSC data/indptr/indices, num_docs)
#: -> (rows int64 [nq, k], scores float32 [nq, k]); -1 / 0 pad queries with fewer hits.
topk_parallel = njit(parallel=True, cache=True)(_topk)
topk_serial = njit(nogil=True, cache=True)(_topk)
