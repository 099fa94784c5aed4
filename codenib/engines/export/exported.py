"""Encoder models exported from the model's own local weights: ONNX (fp32) and ONNX with
int8 weights, made on first use and cached by content hash. Nothing is downloaded.

The cache lives next to the model caches (`~/.cache/codenib/encoders`, or
`$CODENIB_CACHE_DIR/encoders`): one folder per (model files, recipe, tool versions), named
by the sha256 of those, holding `model.onnx`, the model's `tokenizer.json` and
`export.json` (what was exported, how, its checksum and the agreement measured against
sentence-transformers when it was made). A second process that needs the same export
waits on a lock instead of exporting it again.

The parts live beside this module in `codenib.engines.export`: `cache` (cache folders, model
folder, digests), `recipes` (how each backend's file is made) and `onnx` (the torch -> ONNX
export and its check).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from codenib.core.artifact import sha256_file
from codenib.engines.export.cache import (
    META_FILE,
    ONNX_FILE,
    TOKENIZER_FILE,
    encoders_dir,
    file_digests,
    local_model_folder,
    locked,
    slug,
    source_digest,
)
from codenib.engines.export.onnx import (
    OPSET,
    EncoderExportError,
    architecture,
    check_export,
    save_tokenizer,
    torch_model,
    write_onnx,
)
from codenib.engines.export.recipes import RECIPES, Recipe
from codenib.engines.models import model_dimension

#: The public names of encoder exports, wherever they are defined.
__all__ = ["EXPORT_FORMAT", "ExportedModel", "Logger", "exported_model"]

#: Bump when the export itself changes: every cached export is then made again.
EXPORT_FORMAT = 1

Logger = Callable[[str], None]


@dataclass(frozen=True)
class ExportedModel:
    """One cached export: what the runtime backends load."""

    folder: Path
    recipe: str
    key: str
    max_seq_length: int
    dimension: int
    meta: dict[str, Any]

    @property
    def onnx_path(self) -> Path:
        return self.folder / ONNX_FILE

    @property
    def tokenizer_path(self) -> Path:
        return self.folder / TOKENIZER_FILE

    def describe(self) -> dict[str, Any]:
        """What the index manifest records about this export."""
        return {"export_key": self.key, "onnx_sha256": self.meta.get("onnx_sha256"),
                "source_sha256": self.meta.get("source_sha256"), "versions": self.meta.get("versions"),
                "check_min_cosine": self.meta.get("check_min_cosine")}


def exported_model(spec, recipe_name: str, log: Logger | None = None) -> ExportedModel:
    """The cached export of `spec`'s model for a recipe, made now if there is none.

    Raises:
        ModelLoadError: the model's files cannot be found locally.
        MissingDependencyError: onnx / onnxruntime are not installed.
        EncoderExportError: the export failed, or disagrees with sentence-transformers.
    """
    log = log or _stderr
    recipe = RECIPES[recipe_name]
    folder = local_model_folder(spec.name)
    key = _key(recipe, source_digest(folder))
    dest = encoders_dir() / f"{slug(spec.name)}-{recipe.name}-{key[:16]}"
    found = _read_export(dest, recipe.name, key)
    if found is not None:
        return found
    root = encoders_dir()
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / f".lock-{key[:16]}"):
        found = _read_export(dest, recipe.name, key)   # another process may have made it meanwhile
        if found is not None:
            return found
        return _make(spec, recipe, key, folder, dest, log)


# --- private ------------------------------------------------------------------------------------

def _key(recipe: Recipe, source: str) -> str:
    parts: dict[str, Any] = {"format": EXPORT_FORMAT, "recipe": recipe.name, "settings": recipe.settings,
                             "opset": OPSET, "source": source, "versions": _versions(recipe.packages)}
    if recipe.parent:
        parts["parent"] = _key(RECIPES[recipe.parent], source)
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _versions(packages: tuple[str, ...]) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "missing"
    return out


def _read_export(dest: Path, recipe: str, key: str) -> ExportedModel | None:
    """A complete export in `dest` whose model file still has its recorded checksum."""
    try:
        meta = json.loads((dest / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if meta.get("key") != key or not (dest / ONNX_FILE).is_file() or not (dest / TOKENIZER_FILE).is_file():
        return None
    stat = (dest / ONNX_FILE).stat()
    if stat.st_size != meta.get("onnx_size") or file_digests([dest / ONNX_FILE])[0] != meta.get("onnx_sha256"):
        return None   # damaged: made again
    return ExportedModel(dest, recipe, key, int(meta["max_seq_length"]), int(meta["dimension"]), meta)


def _make(spec, recipe: Recipe, key: str, source_folder: Path, dest: Path, log: Logger) -> ExportedModel:
    t0 = time.perf_counter()
    staging = dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:8]}.tmp")
    staging.mkdir(parents=True)
    try:
        model = torch_model(spec)
        if recipe.parent is None:
            log(f"encoder: exporting {spec.name} to ONNX from its local weights "
                f"(once; cached in {dest.parent})")
            write_onnx(model, staging / ONNX_FILE)
        else:
            parent = exported_model(spec, recipe.parent, log)
            log(f"encoder: making the {recipe.name} model from the {recipe.parent} export "
                f"(once; cached in {dest.parent})")
            recipe.derive(parent.onnx_path, staging / ONNX_FILE, architecture(model))
        save_tokenizer(model, staging / TOKENIZER_FILE)
        min_cos = check_export(model, staging)
        if min_cos < recipe.min_cosine:
            raise EncoderExportError(
                f"the {recipe.name} export of {spec.name} disagrees with sentence-transformers "
                f"(worst cosine {min_cos:.5f} < {recipe.min_cosine})",
                fix="use --encoder torch for this model")
        onnx_path = staging / ONNX_FILE
        meta = {"format": EXPORT_FORMAT, "key": key, "model": spec.name, "recipe": recipe.name,
                "settings": recipe.settings, "source_folder": str(source_folder),
                "source_sha256": source_digest(source_folder),
                "versions": _versions(("torch", "onnx", "onnxruntime", "sentence-transformers")),
                "max_seq_length": int(model.max_seq_length), "dimension": model_dimension(model),
                "onnx_sha256": sha256_file(onnx_path), "onnx_size": onnx_path.stat().st_size,
                "check_min_cosine": round(float(min_cos), 7), "seconds": round(time.perf_counter() - t0, 1),
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        (staging / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log(f"encoder: {recipe.name} model ready in {meta['seconds']:.1f}s (worst cosine to torch on the check "
        f"texts {min_cos:.5f})")
    return ExportedModel(dest, recipe.name, key, meta["max_seq_length"], meta["dimension"], meta)


def _stderr(message: str) -> None:
    import sys

    print(message, file=sys.stderr, flush=True)
