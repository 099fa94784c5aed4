"""The build's options and its logger type: the bottom of `codenib.compiler`'s build modules,
which all take them (`build`, `build_cache`, `build_terms`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from codenib.compiler.history import HistorySpec
from codenib.core.store_backend import StoreBackend
from codenib.compiler.walk import MAX_FILE_BYTES
from codenib.core.tokens import TokenizerConfig

#: Where a build writes its progress lines.
Logger = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """What the `index` command builds; the defaults are the offline defaults."""

    model: str | None = None            # None: the packaged all-MiniLM-L6-v2
    dense: bool = True
    device: str = "auto"
    encoder: str = "auto"               # torch | onnx | onnx-int8 | openvino | auto (codenib.engines.backends)
    reuse: Path | None = None           # an earlier index of the repository: unchanged files,
                                        # edges, BM25 counts and vectors are reused from it
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    ann: str = "flat"                   # flat (exact) | hnsw
    batch_size: int | None = None     # None: 32 on the CPU, 256 on CUDA
    max_seq_length: int | None = None
    progress: bool = True
    force: bool = False                 # replace an index folder that also holds others' files
    jobs: int | None = None             # worker processes for parsing and tokenizing; None: CPUs
    cache: "Path | StoreBackend | None" = None  # per-file store (nodes, term counts, vectors) shared
                                        # by indexes: a folder, or a backend (codenib.compiler.
                                        # store_backend: also s3://); None: `.codenib-cache`
                                        # next to the output folder
    use_cache: bool = True
    history: HistorySpec | None = None    # --history: read the commits up to a revision
                                        # (codenib.compiler.history); None: no history/
    max_file_bytes: int = MAX_FILE_BYTES  # larger source files are skipped, each named on the log
