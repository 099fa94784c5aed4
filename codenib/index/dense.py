"""`DenseIndex`: exact (or HNSW) inner-product search over L2-normalised node vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from codenib.engines.vectors import cut_ties, query_matrix, search_matrix, sort_rows, top_k
from codenib.core.errors import BadInputError, IndexFormatError

#: Search backends. `numpy`: BLAS matrix product + block-maximum top-k (~0.9-1.3x faiss
#: IndexFlatIP on 2 cores at 39,380 x 768, k=100); `faiss`: IndexFlatIP; `torch`: matrix
#: product and top-k on the GPU; `hnsw`: the approximate index if built.
BACKENDS = ("auto", "numpy", "faiss", "torch", "hnsw")
#: Query rows scored per matrix product (padded to exactly this many): bounds the score
#: matrix's memory and fixes the BLAS shape, so results do not depend on batch composition.
#: Each product streams the whole node matrix, so bigger blocks raise throughput (at 39,380
#: x 768 on 2 cores faiss reached ~0.83x of raw faiss at 128 rows, ~0.9x at 256, ~0.94x at
#: 512) while a lone query pays for the whole block (~0.2 s at 256): 256 balances the two.
QUERY_BLOCK = 256
#: faiss runs a slow non-BLAS scan when queries x dim < its distance_compute_blas_threshold
#: (128,000) and allocates a 4096 x 1024 buffer per call, so it gets whole batches instead.
UNBLOCKED_BACKENDS = ("hnsw",)
#: Extra candidates torch and faiss return so that ties at the cut can be ordered by row.
TIE_MARGIN = 64


class DenseIndex:
    """Row i of `vectors` is nodes row i. Results are the same whatever the backend."""

    def __init__(self, vectors: np.ndarray, backend: str = "auto", hnsw=None, device: str = "cpu",
                 name_vectors: np.ndarray | None = None, name_weight: float = 0.0):
        if backend not in BACKENDS:
            raise BadInputError(f"unknown dense backend {backend!r}", fix=f"use one of: {', '.join(BACKENDS)}")
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.dimension = int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0
        self.name_vectors = name_vectors
        self.name_weight = name_weight if name_vectors is not None else 0.0
        # Scores are cos(q, body) + w * cos(q, name): one product with [body | w*name] rows.
        self.matrix = search_matrix(self.vectors, name_vectors, self.name_weight)
        self.hnsw = hnsw
        self.backend = self._pick(backend, device)
        self._faiss = None
        self._torch = None

    @classmethod
    def load(cls, folder: str | Path, num_nodes: int, dimension: int | None = None,
             backend: str = "auto", device: str = "cpu", hnsw_ef_search: int | None = None,
             name_field: dict | None = None,
             arrays: "tuple[np.ndarray, np.ndarray] | None" = None) -> "DenseIndex":
        """Load `vectors.npy` (no pickle), checking its shape against the nodes table.

        Args:
            arrays: the (body, name) vectors read elsewhere (a store-layout index reads them
                from the per-file store); `folder` then gives only the HNSW graph, if any.
        """
        folder = Path(folder)
        # Messages name where the vectors came from: the file, or the store's entries.
        path = folder / "vectors.npy" if arrays is None else folder.parent / "store_files.parquet"
        fix = "rebuild the index with `codenib index`, or build with --no-dense"
        vectors = arrays[0] if arrays is not None else _load_npy(path, "the vectors", fix)
        if vectors.ndim != 2 or vectors.shape[0] != num_nodes:
            raise IndexFormatError(
                f"vectors have shape {vectors.shape}, expected {num_nodes} rows (one per row of "
                "nodes.parquet)", path=str(path), fix=fix)
        if dimension is not None and vectors.shape[1] != dimension:
            raise IndexFormatError(f"vectors have dimension {vectors.shape[1]}, the manifest says {dimension}",
                                   path=str(path), fix=fix)
        if vectors.dtype != np.float32:
            raise IndexFormatError(f"vectors are {vectors.dtype}, expected float32", path=str(path), fix=fix)
        name_vectors = None
        if name_field:
            name_path = folder / name_field["file"]
            name_vectors = arrays[1] if arrays is not None else _load_npy(name_path, "the name vectors", fix)
            if name_vectors.shape != vectors.shape or name_vectors.dtype != np.float32:
                raise IndexFormatError(f"name vectors have shape {name_vectors.shape} ({name_vectors.dtype}), "
                                       f"expected {vectors.shape} float32", path=str(name_path), fix=fix)
        hnsw = None
        hnsw_path = folder / "hnsw.faiss"
        if hnsw_path.is_file():
            import faiss

            hnsw = faiss.read_index(str(hnsw_path))
            if hnsw_ef_search:
                hnsw.hnsw.efSearch = hnsw_ef_search
        return cls(vectors, backend=backend, hnsw=hnsw, device=device, name_vectors=name_vectors,
                   name_weight=float(name_field["weight"]) if name_field else 0.0)

    def _pick(self, backend: str, device: str) -> str:
        if backend != "auto":
            if backend == "hnsw" and self.hnsw is None:
                raise BadInputError("the hnsw backend needs an index built with --ann hnsw",
                                    fix="rebuild with `codenib index ... --ann hnsw`, or use the numpy backend")
            return backend
        if device == "cuda":
            return "torch"
        # An index built with --ann hnsw asked for approximate search on large corpora.
        # Otherwise faiss: its BLAS and top-k beat numpy's matrix product on the CPU
        # (scripts/bench_dense.py), and with fixed blocks its results are as reproducible.
        return "hnsw" if self.hnsw is not None else "faiss"

    def search(self, query_vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and inner-product scores per query vector (ties: lower row first)."""
        q = np.ascontiguousarray(query_vectors, dtype=np.float32)
        n = self.vectors.shape[0]
        k = max(0, min(k, n))
        if q.shape[0] == 0 or k == 0:
            return np.zeros((q.shape[0], k), dtype=np.int64), np.zeros((q.shape[0], k), dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.dimension:
            raise BadInputError(f"query vectors have shape {q.shape}, expected (n, {self.dimension})",
                                fix="encode queries with the model the index was built with")
        q = query_matrix(q, self.matrix.shape[1])
        search = {"numpy": self._numpy, "faiss": self._faiss_search, "torch": self._torch_search,
                  "hnsw": self._hnsw_search}[self.backend]
        if self.backend in UNBLOCKED_BACKENDS:
            # faiss tiles queries itself; its scores may differ in the last bits with batch shape.
            return search(q, k)
        rows, scores = [], []
        for start in range(0, q.shape[0], QUERY_BLOCK):
            chunk = q[start:start + QUERY_BLOCK]
            # Always a full block: BLAS picks kernels by shape, and a fixed shape makes a
            # query's scores bit-identical whichever queries share its batch or shard.
            block = np.zeros((QUERY_BLOCK, q.shape[1]), dtype=np.float32)
            block[: len(chunk)] = chunk
            chunk_rows, chunk_scores = search(block, k, len(chunk))
            rows.append(chunk_rows)
            scores.append(chunk_scores)
        return np.vstack(rows), np.vstack(scores)

    # -- backends ----------------------------------------------------------------------------

    def _numpy(self, q: np.ndarray, k: int, valid: int):
        # top-k of the real rows only: a zero padding row ties everywhere
        return top_k((q @ self.matrix.T)[:valid], k)

    def _faiss_search(self, q: np.ndarray, k: int, valid: int):
        if self._faiss is None:
            import faiss

            # Always the BLAS path: faiss otherwise switches to a scalar scan for small
            # batches (queries x dim below this threshold), so results would depend on the block.
            faiss.cvar.distance_compute_blas_threshold = 0
            index = faiss.IndexFlatIP(self.matrix.shape[1])
            index.add(self.matrix)
            if _faiss_has_gpu(faiss):
                index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
            self._faiss = index
        n = self.matrix.shape[0]
        fetch = min(n, k + TIE_MARGIN)
        scores, rows = self._faiss.search(q, fetch)
        rows, scores = sort_rows(rows[:valid].astype(np.int64), scores[:valid])
        return cut_ties(rows, scores, k, fetch < n, lambda i: q[i:i + 1] @ self.matrix.T)

    def _torch_search(self, q: np.ndarray, k: int, valid: int):
        import torch

        if self._torch is None:
            dev = "cuda" if torch.cuda.is_available() else "cpu"
            self._torch = torch.from_numpy(self.matrix).to(dev)
        t = torch.from_numpy(q).to(self._torch.device)
        sims = (t @ self._torch.T)[:valid]
        n = sims.shape[1]
        # torch.topk breaks ties arbitrarily: fetch a margin, order it by (score, row), and
        # redo on the CPU the rare rows whose tie runs past the margin.
        fetch = min(n, k + TIE_MARGIN)
        scores, rows = torch.topk(sims, fetch, dim=1)
        rows, scores = sort_rows(rows.cpu().numpy().astype(np.int64), scores.cpu().numpy())
        return cut_ties(rows, scores, k, fetch < n, lambda i: sims[i:i + 1].cpu().numpy())

    def _hnsw_search(self, q: np.ndarray, k: int):
        scores, rows = self.hnsw.search(q, k)
        return sort_rows(rows.astype(np.int64), scores)


def _faiss_has_gpu(faiss) -> bool:
    try:
        return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    except Exception:  # noqa: BLE001 - CPU builds may lack the symbol entirely
        return False


def _load_npy(path: Path, what: str, fix: str) -> np.ndarray:
    """One `.npy` array of the index (no pickle)."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"cannot read {what}: {exc}", path=str(path), fix=fix) from exc
