"""Build the dense artifact: node vectors (with reuse from a previous index) and an optional ANN index."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pyarrow.parquet as pq

from codenib import artifact
from codenib.compiler.embed import Encoder, ModelSpec
from codenib.errors import BadInputError
from codenib.types import Node

ANN_KINDS = ("flat", "hnsw")
#: HNSW graph degree: 32 is faiss's usual recall/memory balance for 384-d vectors.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
#: efSearch used at query time (stored in the manifest so loading matches the measurement).
HNSW_EF_SEARCH = 256
#: Queries sampled to measure an approximate index's recall@100 against exact search.
ANN_RECALL_SAMPLE = 200
HNSW_FILE = "hnsw.faiss"


def build_dense(nodes: Sequence[Node], folder: Path, options, log: Callable[[str], None]) -> dict:
    """Encode node texts (reusing unchanged vectors) and write `vectors.npy` under `folder`."""
    if options.ann not in ANN_KINDS:
        raise BadInputError(f"unknown --ann {options.ann!r}", fix=f"use one of: {', '.join(ANN_KINDS)}")
    spec = ModelSpec.for_model(options.model, options.max_seq_length)
    encoder = Encoder(spec, options.device, options.batch_size)
    fingerprint = _fingerprint(spec, encoder)
    keys = [_text_key(fingerprint, n.text) for n in nodes]
    vectors = np.zeros((len(nodes), encoder.dimension), dtype=np.float32)
    reused = 0
    todo = list(range(len(nodes)))
    if options.reuse is not None:
        old = _reusable_vectors(Path(options.reuse), fingerprint, encoder.dimension, log)
        todo = []
        for i, key in enumerate(keys):
            vec = old.get(key)
            if vec is None:
                todo.append(i)
            else:
                vectors[i] = vec
                reused += 1
    if todo:
        vectors[todo] = encoder.encode_documents([nodes[i].text for i in todo], progress=options.progress)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "vectors.npy", vectors, allow_pickle=False)
    info = {
        **spec.to_dict(),
        "max_seq_length": encoder.max_seq_length,
        "dimension": encoder.dimension,
        "fingerprint": fingerprint,
        "encoded": len(todo),
        "reused": reused,
        "ann": options.ann,
        "ann_recall_at_100": None,
        "hnsw_ef_search": None,
    }
    if options.reuse is not None:
        log(f"dense: reused {reused} vectors from {options.reuse}, encoded {len(todo)}")
    if options.ann == "hnsw":
        info["ann_recall_at_100"] = _build_hnsw(vectors, folder / HNSW_FILE)
        info["hnsw_ef_search"] = HNSW_EF_SEARCH
        log(f"dense: HNSW recall@100 against exact search = {info['ann_recall_at_100']:.3f}")
    return info


def _fingerprint(spec: ModelSpec, encoder: Encoder) -> str:
    """Vectors are reusable only under the same model, prompt and truncation."""
    data = json.dumps([spec.name, spec.document_prompt, encoder.max_seq_length, encoder.dimension])
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _text_key(fingerprint: str, text: str) -> str:
    return hashlib.sha256((fingerprint + "\0" + text).encode("utf-8", "surrogatepass")).hexdigest()


def _reusable_vectors(old_dir: Path, fingerprint: str, dim: int, log) -> dict[str, np.ndarray]:
    manifest = artifact.read_manifest(old_dir, verify=True)
    model = manifest.get("model") or {}
    if model.get("fingerprint") != fingerprint:
        log(f"dense: {old_dir} was built with another model or settings "
            f"({model.get('name', 'no dense vectors')}); nothing to reuse")
        return {}
    vectors = np.load(old_dir / artifact.VECTORS_FILE, allow_pickle=False, mmap_mode="r")
    texts = pq.read_table(old_dir / artifact.NODES_FILE, columns=["text"]).column("text").to_pylist()
    if vectors.shape != (len(texts), dim):
        log(f"dense: {old_dir} vectors have shape {vectors.shape}, expected ({len(texts)}, {dim}); "
            "nothing reused")
        return {}
    return {_text_key(fingerprint, t): vectors[i] for i, t in enumerate(texts)}


def _build_hnsw(vectors: np.ndarray, path: Path) -> float:
    """Build and save an HNSW index; return its recall@100 against exact search."""
    import faiss

    dim = vectors.shape[1]
    index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    index.add(vectors)
    index.hnsw.efSearch = HNSW_EF_SEARCH
    faiss.write_index(index, str(path))
    n = vectors.shape[0]
    k = min(100, n)
    rng = np.random.default_rng(0)
    sample = vectors[rng.choice(n, size=min(ANN_RECALL_SAMPLE, n), replace=False)]
    exact = np.argsort(-(sample @ vectors.T), axis=1, kind="stable")[:, :k]
    _, approx = index.search(sample, k)
    hits = sum(len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approx, exact))
    return hits / (len(sample) * k)
