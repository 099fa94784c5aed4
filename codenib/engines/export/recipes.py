"""How each encoder backend's model file is made: exported from torch, or derived from another
recipe's file by onnxruntime's transformer fusions or by its dynamic int8 quantization."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from codenib.core.errors import MissingDependencyError


@dataclass(frozen=True)
class Recipe:
    """How one backend's model file is made: exported from torch (`parent` None) or
    derived from another recipe's file by `derive(src, dest)`."""

    name: str
    min_cosine: float            # the agreement bar, per text, against sentence-transformers fp32
    parent: str | None = None
    derive: Callable[[Path, Path, dict[str, int]], None] | None = None
    settings: str = ""           # part of the cache key: what `derive` does
    packages: tuple[str, ...] = ()   # whose versions are part of the cache key


def _fuse(src: Path, dest: Path, config: dict[str, int]) -> None:
    """onnxruntime's transformer fusions (one Attention op per layer, embedding and skip
    layer norms, bias + GELU): measured 1.2-1.3x the plain graph on 2 cores, same vectors.
    The fused ops are onnxruntime's own, so OpenVINO loads the plain graph instead."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError as exc:
        raise MissingDependencyError("onnxruntime", "onnxruntime", "the onnx encoders") from exc
    _quiet_onnxruntime()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = optimize_model(str(src), model_type="bert", num_heads=config["num_heads"],
                               hidden_size=config["hidden_size"])
    model.save_model_to_file(str(dest))


def _quantize_int8(src: Path, dest: Path, config: dict[str, int]) -> None:
    """Dynamic int8 quantization (onnxruntime) of the fused graph: int8 weights per output
    channel, activations quantized at run time, in the projections and attention. The
    feed-forward output projections (after GELU, whose outputs have the widest range) and
    the embeddings stay fp32: quantizing those too cost the worst text 0.993 -> 0.986 cosine
    to torch fp32 (bar 0.99) for about 15% more speed.

    Tried on the 2-core AVX2 machines (no VNNI) for issue 17 and not better (worst per-text
    cosine to torch fp32 on 160-300 dev node texts; this recipe: 0.990-0.993, mean 0.996):
    reduce_range (7-bit weights), same speed and within 0.001 of it, or 0.986-0.988 with the
    feed-forward outputs quantized too (every projection int8: 1.1-1.5x this recipe's speed,
    0.983-0.987); U8U8 weights, no faster, 0.991 (mean 0.994); per-tensor weights, 0.91;
    static QDQ calibrated on dev node texts, 0.68 (symmetric int8 activations) or 0.89 (uint8,
    7-bit weights); weight-only int8 (static QDQ with activations left fp32, 0.9993) and
    MatMulNBits 8 or 4 bits with int8 compute, slower than fp32; a SmoothQuant-style channel
    rescale before quantizing, 0.94-0.97; OpenVINO with NNCF int8, slower than OpenVINO fp32
    and 0.987. No single layer holds most of the error; the QKV projections (Attention) left
    fp32 as well gave 0.995 (mean 0.998) for 4-11% less speed, but jinja2's dense top-10
    overlap was still 0.949 and its semantic RR@10 0.013 below torch's."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise MissingDependencyError("onnx", "onnxruntime onnx", "the onnx-int8 encoder") from exc
    model = onnx.load(str(src), load_external_data=False)
    keep_fp32 = [n.name for n in model.graph.node if n.op_type == "MatMul" and _is_ffn_output(n.name)]
    _quiet_onnxruntime()
    quantize_dynamic(str(src), str(dest), per_channel=True, weight_type=QuantType.QInt8,
                     op_types_to_quantize=["MatMul", "Attention"], nodes_to_exclude=keep_fp32,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def _is_ffn_output(node_name: str) -> bool:
    # BERT-style names: ".../layer.N/output/dense/MatMul" (not ".../attention/output/dense/...").
    return "/output/dense/" in node_name and "/attention/" not in node_name


def _quiet_onnxruntime() -> None:
    # The quantizer and optimizer log per node, and "consider pre-processing" on every call.
    for name in ("onnxruntime", "onnxruntime.transformers", "onnxruntime.quantization", "root"):
        logging.getLogger(name).setLevel(logging.ERROR)


#: Recipes by name: `graph` is the exported ONNX graph (OpenVINO runs it); `onnx` and
#: `onnx-int8` are derived from it for onnxruntime.
RECIPES: dict[str, Recipe] = {
    "graph": Recipe("graph", 0.9999, settings="eager attention", packages=("torch", "onnx", "transformers")),
    "onnx": Recipe("onnx", 0.9999, parent="graph", derive=_fuse, settings="bert fusions",
                   packages=("onnxruntime",)),
    "onnx-int8": Recipe("onnx-int8", 0.99, parent="onnx", derive=_quantize_int8,
                        settings="dynamic int8 per channel: MatMul, Attention; ffn output fp32",
                        packages=("onnxruntime",)),
}
