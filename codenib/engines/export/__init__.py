"""Encoder models exported from the model's own local weights (ONNX, ONNX int8), made on first
use and cached by content hash (`exported_model`).

`exported`: the cached export, made when absent; `cache`: the cache folders, the model's local
folder and the digests of its files; `recipes`: how each backend's file is made; `onnx`: the
torch -> ONNX export and its check.
"""

from codenib.engines.export.cache import cache_root, encoders_dir
from codenib.engines.export.exported import EXPORT_FORMAT, ExportedModel, exported_model
from codenib.engines.export.onnx import EncoderExportError
from codenib.engines.export.recipes import RECIPES, Recipe

__all__ = ["EXPORT_FORMAT", "EncoderExportError", "ExportedModel", "RECIPES", "Recipe", "cache_root", "encoders_dir",
           "exported_model"]
