"""Encoder backends: the runtimes that turn token batches into sentence vectors.

Every backend runs the same model and yields the same vectors up to its agreement bar
(cosine to sentence-transformers' torch fp32 vector, per text): `torch` is
sentence-transformers itself (and the only one on CUDA); `onnx` and `openvino` run an fp32
ONNX export of it, `onnx-int8` a dynamically quantized one (`codenib.engines.export`).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from codenib.core.errors import BadInputError, MissingDependencyError

#: A runner maps (input_ids, attention_mask), int64 [batch, tokens], to float32 [batch, dim].
Runner = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class EncoderBackend:
    """One way of running the encoder; `recipe` names the export it loads (None: torch)."""

    name: str
    precision: str          # fp32 | int8
    min_cosine: float       # agreement bar per text against torch fp32
    module: str             # the runtime's import name
    install: str            # what `pip install` brings it
    recipe: str | None
    summary: str
    #: How query batches keep a query's vector independent of the other queries in them:
    #: `free` (it already is), `fixed` (every batch is filled to batch_size rows, one shape),
    #: `single` (one query per call). The graph backends (ONNX Runtime, OpenVINO) take `single`:
    #: filled to 32 rows, a lone report cost 32 reports' work (2 cores: 843 ms against 29 ms on
    #: ONNX Runtime, 775 against 28 on OpenVINO), and reports of many lengths one partial batch
    #: per length bucket (7.7-7.8x slower); a bulk of short queries is 1.2x faster filled
    #: (scripts/bench_encode.py --query-batching, docs/encoders.md).
    query_batches: str = "free"
    #: The export that encodes queries when it is not `recipe` (see onnx-int8).
    query_recipe: str | None = None
    #: Whether `auto` may pick it (it met the whole agreement bar in scripts/bench_encode.py).
    auto: bool = True

    @property
    def queries_by(self) -> str | None:
        return self.query_recipe or self.recipe

    def available(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    def require(self) -> None:
        """Raises MissingDependencyError naming the install when the runtime is missing."""
        if not self.available():
            raise MissingDependencyError(self.module, self.install, f"the {self.name} encoder")


#: Backends by name, in the order `auto` tries them (ties go to the earlier one).
BACKENDS: dict[str, EncoderBackend] = {
    "torch": EncoderBackend("torch", "fp32", 0.9999, "torch", "torch==2.13.0", None,
                            "sentence-transformers on torch (CPU or CUDA)"),
    "onnx": EncoderBackend("onnx", "fp32", 0.9999, "onnxruntime", "onnxruntime onnx", "onnx",
                           "ONNX Runtime, fp32 export of the same model", "single"),
    # Queries by the fp32 export: int8 activations are scaled per call, over every row, so an
    # int8 query vector would depend on its batch, and one query at a time missed the bar
    # (worst dev query 0.986 cosine); queries are short, so fp32 costs little there.
    "onnx-int8": EncoderBackend("onnx-int8", "int8", 0.99, "onnxruntime", "onnxruntime onnx", "onnx-int8",
                                "ONNX Runtime: int8 documents (dynamic quantization), fp32 queries", "single",
                                # Every text passed its bar, but jinja2's dense top-10 overlapped
                                # torch's by 0.942 (bar 0.95): an explicit choice, not auto's.
                                query_recipe="onnx", auto=False),
    "openvino": EncoderBackend("openvino", "fp32", 0.9999, "openvino", "'codenib[openvino]'", "graph",
                               "OpenVINO on the fp32 ONNX export (CPU)", "single"),
}
#: `--encoder` choices: auto picks the fastest backend that passes its bar on this machine.
ENCODERS = ("auto", *BACKENDS)


def get_backend(name: str) -> EncoderBackend:
    """The backend called `name` (not `auto`).

    Raises:
        BadInputError: an unknown name, listing the valid ones.
    """
    try:
        return BACKENDS[name]
    except KeyError:
        raise BadInputError(f"unknown encoder {name!r}", fix=f"use one of: {', '.join(ENCODERS)}") from None


def cpu_threads() -> int:
    """Cores this process may run on (the encoder uses all of them, as the torch path does)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


# --- tokenization ---------------------------------------------------------------------------------

class TextTokenizer:
    """The model's fast tokenizer, truncating at `max_length` tokens, padding left to us."""

    def __init__(self, tokenizer_or_path: Any, max_length: int):
        from tokenizers import Tokenizer

        if isinstance(tokenizer_or_path, (str, Path)):
            tok = Tokenizer.from_file(str(tokenizer_or_path))
        else:   # a `tokenizers.Tokenizer` shared with a loaded model: work on a copy
            tok = Tokenizer.from_str(tokenizer_or_path.to_str())
        pad = tok.padding
        self.pad_id = int(pad["pad_id"]) if pad else 0
        tok.no_padding()
        tok.enable_truncation(max_length)
        self.tok = tok
        self.max_length = max_length

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=True)]

    def batch(self, rows: Sequence[Sequence[int]], length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(input_ids, attention_mask) of `rows`, padded to `length` (default: the longest)."""
        length = length or max((len(r) for r in rows), default=0)
        ids = np.full((len(rows), length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
            mask[i, :len(r)] = 1
        return ids, mask


# --- runners --------------------------------------------------------------------------------------

class TorchRunner:
    """The loaded sentence-transformers model's forward pass (on its device)."""

    def __init__(self, model):
        self.model = model
        self.device = next(model.parameters()).device

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import torch

        features = {"input_ids": torch.from_numpy(ids).to(self.device),
                    "attention_mask": torch.from_numpy(mask).to(self.device)}
        with torch.inference_mode():
            out = self.model(features)["sentence_embedding"]
        return out.float().cpu().numpy()


class OnnxRuntimeRunner:
    """An ONNX Runtime CPU session over an exported model."""

    def __init__(self, path: Path, threads: int):
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingDependencyError("onnxruntime", "onnxruntime", "the onnx encoders") from exc
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # Idle pool threads sleep instead of spinning: the cores are shared with the other
        # actors of a job (and other processes), as OMP_WAIT_POLICY=PASSIVE does for torch.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]


class OpenVinoRunner:
    """OpenVINO's CPU plugin over the fp32 ONNX export, held to f32 (on CPUs with bf16 or
    AMX it would otherwise infer in bf16, far from the agreement bar)."""

    def __init__(self, path: Path, threads: int):
        try:
            import openvino as ov
        except ImportError as exc:
            raise MissingDependencyError("openvino", "'codenib[openvino]'", "the openvino encoder") from exc
        core = ov.Core()
        self.compiled = core.compile_model(str(path), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"})
        self.request = self.compiled.create_infer_request()

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = self.request.infer({"input_ids": ids, "attention_mask": mask})
        return np.array(out[self.compiled.output(0)], dtype=np.float32, copy=True)


#: How each runtime module opens an exported model.
EXPORT_RUNNERS: dict[str, Callable[[Path, int], Runner]] = {
    "onnxruntime": OnnxRuntimeRunner,
    "openvino": OpenVinoRunner,
}
