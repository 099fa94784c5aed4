"""Build the dense artifact: node vectors (with reuse from a previous index) and an optional ANN index."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from codenib.core import artifact
from codenib.compiler.build_parse import nodes_of
from codenib.compiler.state import Previous
from codenib.core.store_backend import StoreBackend
from codenib.core.store_layout import read_nodes, read_vectors
from codenib.compiler.vector_store import VectorStore
from codenib.engines.embed import Encoder
from codenib.engines.models import ModelSpec
from codenib.engines.vectors import query_matrix, search_matrix
from codenib.core.errors import BadInputError, IndexFormatError
from codenib.core.tokens import split_identifier
from codenib.core.types import Node, plain_qualname
from codenib.core.vector_entry import file_groups

if TYPE_CHECKING:
    import pyarrow as pa

ANN_KINDS = ("flat", "hnsw")
#: HNSW graph degree: 32 is faiss's usual recall/memory balance for 384-d vectors.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
#: efSearch used at query time (stored in the manifest so loading matches the measurement).
HNSW_EF_SEARCH = 256
#: Queries sampled to measure an approximate index's recall@100 against exact search.
ANN_RECALL_SAMPLE = 200
HNSW_FILE = "hnsw.faiss"
NAME_VECTORS_FILE = "name_vectors.npy"
#: Weight of the name field in dense scores (cos_body + w * cos_name). Identifier names
#: describe behaviour in words the encoder knows; on the dev sets the name field added
#: +0.02 (click) and +0.09 (jinja2) RR@10 to semantic queries at 0.5.
NAME_WEIGHT = 0.5


def build_dense(nodes: Sequence[Node], folder: Path, options, log: Callable[[str], None],
                previous: Previous | None = None, store_root: "Path | StoreBackend | None" = None) -> dict:
    """Encode node texts (reusing the unchanged vectors of `previous`, the loaded
    `options.reuse`, and those the per-file store at `store_root` (a folder or a backend)
    holds for a file's exact texts) and write `vectors.npy` under `folder`; the files encoded now go into the
    store."""
    if options.ann not in ANN_KINDS:
        raise BadInputError(f"unknown --ann {options.ann!r}", fix=f"use one of: {', '.join(ANN_KINDS)}")
    spec = ModelSpec.for_model(options.model, options.max_seq_length)
    encoder = Encoder(spec, options.device, options.batch_size, backend=options.encoder, log=log)
    fingerprint = _fingerprint(spec, encoder)
    body_texts = [n.text for n in nodes]
    name_texts = [name_text(n) for n in nodes]
    old = _reusable_vectors(previous, fingerprint, encoder.dimension, log) if previous is not None else {}
    store = VectorStore(store_root, fingerprint, encoder.dimension) if store_root is not None else None
    groups = file_groups([n.file for n in nodes])
    stored = _stored_vectors(store, groups, body_texts, name_texts, old) if store is not None else set()
    (vectors, todo), (name_vectors, name_todo) = _encode_fields(encoder, fingerprint, [body_texts, name_texts],
                                                                old, options.progress)
    if store is not None:
        _store_vectors(store, groups, stored, body_texts, name_texts, vectors, name_vectors, log)
    stats = encoder.last_stats
    if stats:
        log(f"dense: {encoder.backend.name} encoded {stats['unique']} distinct texts of {stats['texts']} "
            f"in {stats['batches']} batches ({100 * stats['padding_share']:.1f}% padding)")
    reused = len(nodes) - len(todo)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "vectors.npy", vectors, allow_pickle=False)
    np.save(folder / NAME_VECTORS_FILE, name_vectors, allow_pickle=False)
    info = {
        **spec.to_dict(),
        "max_seq_length": encoder.max_seq_length,
        "dimension": encoder.dimension,
        "encoder": encoder.describe(),
        "fingerprint": fingerprint,
        "encoded": len(todo),
        "reused": reused,
        "files_from_store": len(stored),
        "name_field": {"file": NAME_VECTORS_FILE, "weight": NAME_WEIGHT, "encoded": len(name_todo)},
        "ann": options.ann,
        "ann_recall_at_100": None,
        "hnsw_ef_search": None,
    }
    if previous is not None:
        log(f"dense: reused {reused} vectors from {options.reuse}, encoded {len(todo)}")
    if options.ann == "hnsw":
        info["ann_recall_at_100"] = _build_hnsw(search_matrix(vectors, name_vectors, NAME_WEIGHT),
                                                vectors, folder / HNSW_FILE)
        info["hnsw_ef_search"] = HNSW_EF_SEARCH
        log(f"dense: HNSW recall@100 against exact search = {info['ann_recall_at_100']:.3f}")
    return info


def store_vectors_of(index_dir: Path, nodes: "pa.Table", store_root: "Path | StoreBackend",
                     log: Callable[[str], None]) -> dict[str, str] | None:
    """File -> the name of its vector entry in the per-file store, for an index whose vectors
    are to be read from the store (`codenib index-set --layout store`); an entry the store
    lacks is put first from the index's own vectors, so the index reads back the same rows.
    None (the index keeps its `dense/`) when it has no vectors with a name field, or its
    vectors do not match its nodes.

    Raises:
        OSError: the store cannot be written.
    """
    manifest = artifact.read_manifest(index_dir, verify=False)
    model = manifest.get("model") or {}
    name_field = model.get("name_field") or {}
    body_path = index_dir / artifact.VECTORS_FILE
    name_path = index_dir / artifact.DENSE_DIR / str(name_field.get("file", NAME_VECTORS_FILE))
    if not model.get("fingerprint") or not name_field or not body_path.is_file() or not name_path.is_file():
        return None
    body = np.load(body_path, allow_pickle=False, mmap_mode="r")
    names = np.load(name_path, allow_pickle=False, mmap_mode="r")
    dim = int(model["dimension"])
    if body.shape != (nodes.num_rows, dim) or names.shape != body.shape:
        log(f"{index_dir}: its vectors do not match its nodes; they stay in its dense/ folder")
        return None
    store = VectorStore(store_root, model["fingerprint"], dim)
    rows_of = file_groups(nodes.column("file").to_pylist())
    texts = nodes.column("text").to_pylist()
    all_nodes = nodes_of(nodes)
    out: dict[str, str] = {}
    for rel, rows in rows_of.items():
        bodies, titles = [texts[r] for r in rows], [name_text(all_nodes[r]) for r in rows]
        own = np.asarray(body[rows]), np.asarray(names[rows])
        if store.get(bodies, titles) is None:
            store.put(bodies, titles, *own)     # a damaged entry stays (a store writes a name once)
        if _same(store.get(bodies, titles), own):
            out[rel] = store.name(bodies, titles)
            continue
        # The same texts encoded in another batch can differ in the last bits (the encoder's
        # padding), or the entry is damaged: the index's own rows go under their bytes' digest.
        exact = store.put_exact(*own)
        if not _same(store.read(exact, len(rows)), own):
            log(f"{index_dir}: the store holds no readable copy of {rel}'s vectors; they stay in its dense/ folder")
            return None
        out[rel] = exact
    return out


def _same(stored: "tuple[np.ndarray, np.ndarray] | None", own: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether a store entry's (body, name) vectors are bit-equal to the index's own."""
    return stored is not None and all(np.array_equal(a, b) for a, b in zip(stored, own))


def name_text(node: Node) -> str:
    """The name field of a node: its qualified name in words, then its signature.

    `ProgressBar.format_eta` -> "progress bar format eta def format_eta(self) -> str".
    """
    if node.kind == "file":
        return node.file
    words = " ".join(p.lower() for p in split_identifier(plain_qualname(node.qualname).replace(".", "_")))
    return f"{words} {node.signature}".strip()


def _encode_fields(encoder: Encoder, fingerprint: str, fields: list[Sequence[str]], old: dict[str, np.ndarray],
                   progress: bool) -> list[tuple[np.ndarray, list[int]]]:
    """Vectors of each field's texts, reusing any whose (model, text) key is in `old`.

    The texts of every field are encoded in one call, so the encoder sorts them all by
    length together (short name texts batch with each other) and encodes a text that
    occurs in several places once. Returns each field's vectors and the rows encoded.
    """
    out: list[tuple[np.ndarray, list[int]]] = []
    pending: list[str] = []
    for texts in fields:
        vectors = np.zeros((len(texts), encoder.dimension), dtype=np.float32)
        todo = []
        for i, text in enumerate(texts):
            vec = old.get(_text_key(fingerprint, text))
            if vec is None:
                todo.append(i)
            else:
                vectors[i] = vec
        pending.extend(texts[i] for i in todo)
        out.append((vectors, todo))
    if pending:
        encoded = encoder.encode_documents(pending, progress=progress)
        at = 0
        for vectors, todo in out:
            vectors[todo] = encoded[at:at + len(todo)]
            at += len(todo)
    return out


def _stored_vectors(store: VectorStore, groups: dict[str, list[int]], bodies: Sequence[str],
                    names: Sequence[str], old: dict[str, np.ndarray]) -> set[str]:
    """Add to `old` the store's vectors of every file it holds (by exact texts); return
    those files."""
    found = set()
    for rel, rows in groups.items():
        entry = store.get([bodies[r] for r in rows], [names[r] for r in rows])
        if entry is None:
            continue
        found.add(rel)
        for field, vectors in zip((bodies, names), entry):
            for r, vec in zip(rows, vectors):
                old.setdefault(_text_key(store.fingerprint, field[r]), vec)
    return found


def _store_vectors(store: VectorStore, groups: dict[str, list[int]], stored: set[str], bodies: Sequence[str],
                   names: Sequence[str], vectors: np.ndarray, name_vectors: np.ndarray, log) -> None:
    """Put every file the store lacked (best effort: a store that cannot be written is skipped)."""
    try:
        for rel, rows in groups.items():
            if rel not in stored:
                store.put([bodies[r] for r in rows], [names[r] for r in rows], vectors[rows], name_vectors[rows])
    except OSError as exc:
        log(f"warning: the vector store {store.root} was not updated: {exc}")


def _fingerprint(spec: ModelSpec, encoder: Encoder) -> str:
    """Vectors are reusable only under the same model, prompt, truncation and encoder backend
    (torch's fingerprint is unchanged from before backends, so older indexes stay reusable)."""
    parts: list = [spec.name, spec.document_prompt, encoder.max_seq_length, encoder.dimension]
    if encoder.backend.name != "torch":
        parts.append(encoder.backend.name)
    data = json.dumps(parts)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _text_key(fingerprint: str, text: str) -> str:
    return hashlib.sha256((fingerprint + "\0" + text).encode("utf-8", "surrogatepass")).hexdigest()


def _reusable_vectors(previous: Previous, fingerprint: str, dim: int, log) -> dict[str, np.ndarray]:
    """The old index's vectors by (model, text) key; its manifest and nodes come loaded with
    `previous` (verified once by the build), read here only when `previous` lacks them."""
    old_dir = previous.path
    manifest = previous.manifest if previous.manifest is not None else artifact.read_manifest(old_dir, verify=True)
    model = manifest.get("model") or {}
    if model.get("fingerprint") != fingerprint:
        log(f"dense: {old_dir} was built with another model or settings "
            f"({model.get('name', 'no dense vectors')}); nothing to reuse")
        return {}
    table = previous.nodes if previous.nodes is not None else read_nodes(old_dir, manifest)
    texts = table.column("text").to_pylist()
    out: dict[str, np.ndarray] = {}
    fields = [(artifact.VECTORS_FILE, texts)]
    stored = artifact.vectors_in_store(manifest)
    if stored or (old_dir / artifact.DENSE_DIR / NAME_VECTORS_FILE).is_file():
        old_nodes = [Node(**{k: v for k, v in row.items() if k != "decorators"}) for row in table.to_pylist()]
        fields.append((f"{artifact.DENSE_DIR}/{NAME_VECTORS_FILE}", [name_text(n) for n in old_nodes]))
    # A store-layout index's vectors are its files' entries in the per-file store.
    arrays = None
    if stored:
        try:
            arrays = read_vectors(old_dir, manifest, table.column("file").to_pylist())
        except IndexFormatError as exc:
            log(f"dense: the vectors of {old_dir} are not reusable ({exc}); they are encoded again")
            return {}
    for field, (rel, field_texts) in enumerate(fields):
        vectors = arrays[field] if arrays is not None else np.load(old_dir / rel, allow_pickle=False, mmap_mode="r")
        if vectors.shape != (len(field_texts), dim):
            source = f"{old_dir}'s vectors in the per-file store" if arrays is not None else old_dir / rel
            log(f"dense: {source} has shape {vectors.shape}, expected ({len(field_texts)}, {dim}); not reused")
            continue
        for row, t in enumerate(field_texts):
            out[_text_key(fingerprint, t)] = np.array(vectors[row])
    return out


def _build_hnsw(matrix: np.ndarray, body: np.ndarray, path: Path) -> float:
    """Build and save an HNSW index over search-matrix rows; return its recall@100 against
    exact search, for sample queries made of nodes' own body vectors."""
    import faiss

    dim = matrix.shape[1]
    index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    index.add(matrix)
    index.hnsw.efSearch = HNSW_EF_SEARCH
    faiss.write_index(index, str(path))
    n = matrix.shape[0]
    k = min(100, n)
    rng = np.random.default_rng(0)
    picked = body[rng.choice(n, size=min(ANN_RECALL_SAMPLE, n), replace=False)]
    sample = query_matrix(picked, dim)
    exact = np.argsort(-(sample @ matrix.T), axis=1, kind="stable")[:, :k]
    _, approx = index.search(sample, k)
    hits = sum(len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approx, exact))
    return hits / (len(sample) * k)
