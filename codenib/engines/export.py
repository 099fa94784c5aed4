"""Encoder models exported from the model's own local weights: ONNX (fp32) and ONNX with
int8 weights, made on first use and cached by content hash. Nothing is downloaded.

The cache lives next to the model caches (`~/.cache/codenib/encoders`, or
`$CODENIB_CACHE_DIR/encoders`): one folder per (model files, recipe, tool versions), named
by the sha256 of those, holding `model.onnx`, the model's `tokenizer.json` and
`export.json` (what was exported, how, its checksum and the agreement measured against
sentence-transformers when it was made). A second process that needs the same export
waits on a lock instead of exporting it again.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from codenib.errors import CodeNibError, MissingDependencyError, ModelLoadError

#: Bump when the export itself changes: every cached export is then made again.
EXPORT_FORMAT = 1
CACHE_ENV = "CODENIB_CACHE_DIR"
ONNX_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "export.json"
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

Logger = Callable[[str], None]


class EncoderExportError(CodeNibError):
    """An encoder could not be exported, or its export disagrees with the model."""


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
    to torch fp32 (bar 0.99) for about 15% more speed."""
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


def cache_root() -> Path:
    """`$CODENIB_CACHE_DIR`, else `$XDG_CACHE_HOME/codenib`, else `~/.cache/codenib`."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "codenib"


def encoders_dir() -> Path:
    return cache_root() / "encoders"


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
    dest = encoders_dir() / f"{_slug(spec.name)}-{recipe.name}-{key[:16]}"
    found = _read_export(dest, recipe.name, key)
    if found is not None:
        return found
    root = encoders_dir()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".lock-{key[:16]}"):
        found = _read_export(dest, recipe.name, key)   # another process may have made it meanwhile
        if found is not None:
            return found
        return _make(spec, recipe, key, folder, dest, log)


def local_model_folder(name: str) -> Path:
    """The local folder of a model: the packaged default, a path, or a Hugging Face cache
    snapshot (looked up offline only)."""
    from codenib.engines.embed import model_path

    target = Path(os.path.expanduser(model_path(name)))
    if target.is_dir():
        return target
    try:
        from huggingface_hub import snapshot_download

        for repo in (name, f"sentence-transformers/{name}") if "/" not in name else (name,):
            with contextlib.suppress(Exception):
                return Path(snapshot_download(repo, local_files_only=True))
    except ImportError:  # pragma: no cover - a dependency of sentence-transformers
        pass
    raise ModelLoadError(f"the model {name!r} is not on this machine, so it cannot be exported",
                         fix="pass a local sentence-transformers folder to --model, or use --encoder torch")


def source_digest(folder: Path) -> str:
    """sha256 over the model folder's files (names and contents)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and ".cache" not in p.parts)
    h = hashlib.sha256()
    for path, digest in zip(files, file_digests(files)):
        h.update(f"{path.relative_to(folder).as_posix()}\0{digest}\n".encode())
    return h.hexdigest()


def file_digests(paths: list[Path]) -> list[str]:
    """sha256 of each file, remembered in the cache by (path, size, mtime) so that loading
    an encoder does not read 90 MB of weights again (0.2 s on 2 cores)."""
    memo_path = encoders_dir() / "digests.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    out, changed = [], False
    for path in paths:
        stat = path.stat()
        stamp = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
        if stamp not in memo:
            memo[stamp] = _sha256_file(path)
            changed = True
        out.append(memo[stamp])
    if changed:
        with contextlib.suppress(OSError):
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo_path.with_name(f".digests-{uuid.uuid4().hex}.tmp")
            tmp.write_text(json.dumps(memo, sort_keys=True))
            os.replace(tmp, memo_path)
    return out


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
        meta = json.loads((dest / META_FILE).read_text())
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
        model = _torch_model(spec)
        if recipe.parent is None:
            log(f"encoder: exporting {spec.name} to ONNX from its local weights "
                f"(once; cached in {dest.parent})")
            _export_onnx(model, staging / ONNX_FILE)
        else:
            parent = exported_model(spec, recipe.parent, log)
            log(f"encoder: making the {recipe.name} model from the {recipe.parent} export "
                f"(once; cached in {dest.parent})")
            recipe.derive(parent.onnx_path, staging / ONNX_FILE, _architecture(model))
        _save_tokenizer(model, staging / TOKENIZER_FILE)
        min_cos = _check(model, staging)
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
                "max_seq_length": int(model.max_seq_length), "dimension": _dimension(model),
                "onnx_sha256": _sha256_file(onnx_path), "onnx_size": onnx_path.stat().st_size,
                "check_min_cosine": round(float(min_cos), 7), "seconds": round(time.perf_counter() - t0, 1),
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        (staging / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True))
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log(f"encoder: {recipe.name} model ready in {meta['seconds']:.1f}s (worst cosine to torch on the check "
        f"texts {min_cos:.5f})")
    return ExportedModel(dest, recipe.name, key, meta["max_seq_length"], meta["dimension"], meta)


def _torch_model(spec):
    """The sentence-transformers model on the CPU, at its own truncation (exports do not
    depend on --max-seq-length: the runtime truncates)."""
    from codenib.engines.embed import ModelSpec, load_sentence_transformer

    return load_sentence_transformer(ModelSpec(spec.name), "cpu")


def _dimension(model) -> int:
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())


def _export_onnx(model, path: Path) -> None:
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


def _architecture(model) -> dict[str, int]:
    """Attention heads and hidden size, which the fusions need."""
    config = model[0].auto_model.config
    return {"num_heads": int(config.num_attention_heads), "hidden_size": int(config.hidden_size)}


def _save_tokenizer(model, path: Path) -> None:
    backend = getattr(model.tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise EncoderExportError("the model has no fast (Rust) tokenizer, which the ONNX backends use",
                                 fix="use --encoder torch for this model")
    backend.save(str(path))


def _check(model, folder: Path) -> float:
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


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name or name)[:60]


def _stderr(message: str) -> None:
    import sys

    print(message, file=sys.stderr, flush=True)
