"""BM25 engine: importing bm25s safely, and CodeNib's batch top-k kernel (`bm25_kernel`)."""

from __future__ import annotations

import os
import sys
import threading
from types import ModuleType
from typing import Callable

_KERNELS: dict[bool, Callable] = {}
_KERNEL_LOCK = threading.Lock()


def import_bm25s() -> ModuleType:
    """Import bm25s without letting it start JAX on a GPU.

    When JAX is installed, importing bm25s runs a JAX op, and JAX then takes 75% of the GPU's
    memory beside our torch encoder (seen on an H200 node). bm25s uses JAX only for a top-k
    that CodeNib never calls, so JAX is kept on the CPU unless the user named a platform.
    """
    if "bm25s" not in sys.modules and "jax" not in sys.modules:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import bm25s

    return bm25s


def topk_kernel(parallel: bool) -> Callable:
    """CodeNib's batch top-k kernel (`bm25_kernel`), imported on first use: numba is heavy.

    It scores exactly as bm25s does, keeps the top k by (score desc, row asc) without extra
    candidates or a re-sort, and is compiled with numba's on-disk cache.
    """
    with _KERNEL_LOCK:
        if parallel not in _KERNELS:
            from codenib.engines import bm25_kernel

            _KERNELS[parallel] = bm25_kernel.topk_parallel if parallel else bm25_kernel.topk_serial
        return _KERNELS[parallel]


def kernel_threads() -> int:
    """Scratch rows for the parallel kernel: numba's thread ids run up to its pool size
    (NUMBA_NUM_THREADS), whatever set_num_threads currently masks."""
    from numba import config

    return int(config.NUMBA_NUM_THREADS)
