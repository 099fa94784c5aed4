"""Small numpy helpers shared by the compiler's incremental stages and the BM25 term counts."""

from __future__ import annotations

import numpy as np


def ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenated `arange(s, e)` for each pair, without a Python loop."""
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(total, dtype=np.int64) + offsets
