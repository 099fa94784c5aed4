"""Build the BM25 index (bm25s) over node texts with the code-aware tokenizer."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Sequence

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
