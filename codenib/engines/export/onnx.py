"""The sentence-transformers model exported as one ONNX graph from its local weights, and the
check of a fresh export against the model itself."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np

from codenib.engines.export.cache import ONNX_FILE, TOKENIZER_FILE
from codenib.engines.models import ModelSpec, load_sentence_transformer
from codenib.core.errors import CodeNibError, MissingDependencyError

#: ONNX opset of the TorchScript exporter (onnxruntime 1.17+ and OpenVINO read it).
OPSET = 17

#: Texts every fresh export is checked on against sentence-transformers (lengths differ so
#: that batches carry padding, which is where a wrong attention mask would show).
CHECK_TEXTS = (
    "def parse_args(argv=None): return parser.parse_args(argv)",
    "who calls build_index?",
    "class Session:\n    \"\"\"A requests session that keeps cookies and connection pools.\"\"\"\n"
    "    def request(self, method, url, params=None, data=None, headers=None, timeout=None):\n"
    "        prep = self.prepare_request(Request(method, url, headers, data, params))\n"
    "        return self.send(prep, timeout=timeout)",
    "format eta def format_eta(self) -> str",
)


class EncoderExportError(CodeNibError):
    """An encoder could not be exported, or its export disagrees with the model."""


def torch_model(spec):
    """The sentence-transformers model on the CPU, at its own truncation (exports do not
    depend on --max-seq-length: the runtime truncates)."""
    return load_sentence_transformer(ModelSpec(spec.name), "cpu")


def write_onnx(model, path: Path) -> None:
    """The whole sentence-transformers pipeline (transformer, pooling, normalisation) as one
    ONNX graph with inputs input_ids and attention_mask [batch, tokens] (int64)."""
    try:
        import onnx  # noqa: F401 - the exporter needs it
        import torch
    except ImportError as exc:
        raise MissingDependencyError("onnx", "onnx", "exporting the encoder to ONNX") from exc

    class SentenceGraph(torch.nn.Module):
        def __init__(self, st):
            super().__init__()
            self.st = st

        def forward(self, input_ids, attention_mask):
            return self.st({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]

    # Traced on a padded batch: the exported graph must apply the attention mask.
    sample = model.tokenizer(list(CHECK_TEXTS[:2]), padding=True, return_tensors="pt")
    args = (sample["input_ids"].long(), sample["attention_mask"].long())
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
            "sentence_embedding": {0: "batch"}}
    transformer = getattr(model[0], "auto_model", None)
    previous = getattr(getattr(transformer, "config", None), "_attn_implementation", None)
    try:
        # Eager attention exports as the MatMul/Softmax pattern that onnxruntime fuses into
        # one Attention op (the SDPA export does not fuse); the vectors are the same.
        if previous not in (None, "eager") and hasattr(transformer, "set_attn_implementation"):
            transformer.set_attn_implementation("eager")
        with warnings.catch_warnings(), torch.no_grad():
            # The TorchScript exporter: dynamic axes without onnxscript (the dynamo exporter's
            # extra dependency); torch warns that it is the legacy path.
            warnings.simplefilter("ignore")
            torch.onnx.export(SentenceGraph(model.cpu()).eval(), args, str(path), dynamo=False, opset_version=OPSET,
                              input_names=["input_ids", "attention_mask"], output_names=["sentence_embedding"],
                              dynamic_axes=axes, do_constant_folding=True)
    except Exception as exc:  # noqa: BLE001 - the exporter raises many types
        raise EncoderExportError(f"could not export the model to ONNX: {type(exc).__name__}: {exc}",
                                 fix="use --encoder torch for this model") from exc
    finally:
        if previous not in (None, "eager") and hasattr(transformer, "set_attn_implementation"):
            transformer.set_attn_implementation(previous)


def architecture(model) -> dict[str, int]:
    """Attention heads and hidden size, which the fusions need."""
    config = model[0].auto_model.config
    return {"num_heads": int(config.num_attention_heads), "hidden_size": int(config.hidden_size)}


def save_tokenizer(model, path: Path) -> None:
    backend = getattr(model.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise EncoderExportError("the model has no fast (Rust) tokenizer, which the ONNX backends use",
                                 fix="use --encoder torch for this model")
    backend.save(str(path))


def check_export(model, folder: Path) -> float:
    """Worst per-text cosine of the fresh export against sentence-transformers on CHECK_TEXTS,
    encoded together (padded) and one by one."""
    from codenib.engines.backends import OnnxRuntimeRunner, TextTokenizer

    ref = model.encode(list(CHECK_TEXTS), convert_to_numpy=True, normalize_embeddings=True)
    tok = TextTokenizer(folder / TOKENIZER_FILE, int(model.max_seq_length))
    runner = OnnxRuntimeRunner(folder / ONNX_FILE, threads=os.cpu_count() or 1)
    ids, mask = tok.batch(tok.ids(list(CHECK_TEXTS)))
    together = _normalise(runner(ids, mask))
    alone = np.vstack([_normalise(runner(*tok.batch(tok.ids([t])))) for t in CHECK_TEXTS])
    return float(min((together * ref).sum(1).min(), (alone * ref).sum(1).min()))


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
