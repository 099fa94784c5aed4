"""`load_index`: an index folder -> a `LoadedIndex` (nodes, graph, sparse, dense, capabilities)."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from codenib.core import artifact
from codenib.engines.embed import Encoder
from codenib.engines.models import ModelSpec
from codenib.core.errors import EncoderMismatchError, IndexFormatError
from codenib.index.dense import DenseIndex
from codenib.index.graph import CodeGraph
from codenib.index.literal import TextScan
from codenib.index.sparse import SparseIndex
from codenib.index.symbols import SymbolIndex
from codenib.core.store_layout import read_nodes, read_nodes_and_terms, read_vectors
from codenib.core.tokens import TokenizerConfig
from codenib.core.types import EDGES_SCHEMA
from codenib.engines.bm25_terms import DocTerms, file_terms, terms_from_pairs


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a loaded index (and the runtime around it) can do; the planner reads this."""

    dense: bool
    sparse: bool
    graph: bool
    embedding_rerank: bool
    llm_rerank: bool = False
    history: bool = False    # built with --history: past changes are evidence
    fitted_history: bool = False   # built with --fit-weights: its own weights for history signals

    def to_dict(self) -> dict[str, bool]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Capabilities":
        return cls(**{k: bool(data.get(k, False)) for k in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class NodeTable:
    """Column lists of nodes.parquet (row i everywhere = vertex i = vector row i)."""

    node_id: list[str]
    kind: list[str]
    file: list[str]
    qualname: list[str]
    name: list[str]
    start_line: list[int]
    end_line: list[int]
    signature: list[str]
    parse_error: list[str | None]

    def __len__(self) -> int:
        return len(self.node_id)


class LoadedIndex:
    """Every searchable part of one index folder, loaded once and shared read-only."""

    def __init__(self, path: Path, manifest: dict, nodes: NodeTable, graph: CodeGraph,
                 sparse: SparseIndex | None, dense: DenseIndex | None, device: str,
                 stored: "_StoredParts | None" = None):
        self.path = path
        self.manifest = manifest
        self.nodes = nodes
        self.graph = graph
        self.sparse = sparse
        self.dense = dense
        self.device = device
        self.row_of: dict[str, int] = graph.index_of
        self._encoder: Encoder | None = None
        self._texts: list[str] | None = None
        self._symbols: SymbolIndex | None = None
        self._stored = stored       # a store-layout index's parts read back from the store
        self._lock = threading.Lock()

    @property
    def history(self):
        """The index's `history/` as a `codenib.index.history.History` (None when built
        without `--history`); loaded on first use."""
        with self._lock:
            if not hasattr(self, "_history"):
                from codenib.index.history import History

                self._history = History.load(self.path, self.manifest)
            return self._history

    @property
    def file_sparse(self) -> "FileSparse | None":
        """BM25 over whole files (`sparse_files/`; None for an index built before it);
        loaded on first use."""
        with self._lock:
            if not hasattr(self, "_file_sparse"):
                self._file_sparse = (FileSparse.from_terms(self._stored.terms, self.manifest, self.nodes)
                                     if self._stored is not None else
                                     FileSparse.load(self.path, self.manifest, self.nodes))
            return self._file_sparse

    @property
    def name(self) -> str:
        return self.manifest.get("source_root_name") or self.path.name

    @property
    def borrowed_files(self) -> dict[str, str]:
        """Generated and vendored files (path -> why; `codenib.compiler.borrowed`): empty for
        an index built before the marks."""
        return self.manifest.get("borrowed_files") or {}

    @property
    def model_spec(self) -> ModelSpec | None:
        model = self.manifest.get("model")
        if not model:
            return None
        return ModelSpec(model["name"], model.get("query_prompt", ""), model.get("document_prompt", ""),
                         model.get("max_seq_length"))

    def capabilities(self, llm_configured: bool = False) -> Capabilities:
        """From the manifest, so a partially loaded index (one actor's part) reports the same."""
        return capabilities_of(self.manifest, llm_configured)

    @property
    def encoder_backend(self) -> str | None:
        """The backend that encoded this index's vectors (indexes from before backends: torch)."""
        return encoder_backend_of(self.manifest)

    def encoder(self, backend: str | None = None) -> Encoder:
        """The query encoder of this index's model and backend (loaded on first use).

        Raises:
            EncoderMismatchError: `backend` names another backend than the index's.
        """
        check_encoder(self.manifest, backend, self.path)
        with self._lock:
            if self._encoder is None:
                spec = self.model_spec
                if spec is None:
                    raise IndexFormatError("this index has no dense vectors, so no query encoder",
                                           path=str(self.path), fix="rebuild without --no-dense")
                self._encoder = Encoder(spec, self.device, backend=self.encoder_backend or "torch")
            return self._encoder

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        return self.encoder().encode_queries(list(queries))

    @property
    def symbols(self) -> SymbolIndex:
        """Exact symbol look-up (built on first use from the node table)."""
        with self._lock:
            if self._symbols is None:
                self._symbols = SymbolIndex.from_nodes(self.nodes, self.manifest.get("root_package"))
            return self._symbols

    def texts(self) -> list[str]:
        """Indexed text of every node (read on first use; large)."""
        with self._lock:
            if self._texts is None:
                if self._stored is not None:
                    self._texts = self._stored.texts.to_pylist()
                else:
                    table = pq.read_table(self.path / artifact.NODES_FILE, columns=["text"])
                    self._texts = table.column("text").to_pylist()
            return self._texts

    def text_scan(self) -> "TextScan":
        """Verbatim search over every node's text (`codenib.index.literal`), built on first use."""
        texts = self.texts()
        with self._lock:
            if not hasattr(self, "_text_scan"):
                self._text_scan = TextScan.from_texts(texts)
            return self._text_scan


class FileSparse:
    """Whole-file BM25: document i is the i-th file node (`rows[i]`, its node row)."""

    def __init__(self, sparse: SparseIndex, rows: np.ndarray):
        self.sparse = sparse
        self.rows = rows

    @classmethod
    def load(cls, path: Path, manifest: dict, nodes: NodeTable) -> "FileSparse | None":
        folder = path / artifact.FILE_SPARSE_DIR
        if not folder.is_dir():
            return None
        sparse = SparseIndex.load(folder, TokenizerConfig.from_dict(manifest.get("tokenizer", {})), warmup=False)
        rows = np.array([r for r, kind in enumerate(nodes.kind) if kind == "file"], dtype=np.int64)
        if sparse.num_docs != len(rows):
            raise IndexFormatError(f"the whole-file BM25 index holds {sparse.num_docs} documents, nodes.parquet "
                                   f"{len(rows)} files", path=str(folder),
                                   fix=f"rebuild with `codenib index REPO --out {path}`")
        return cls(sparse, rows)

    @classmethod
    def from_terms(cls, terms: DocTerms, manifest: dict, nodes: NodeTable) -> "FileSparse":
        """Whole-file BM25 computed from the node rows' term counts (a store-layout index)."""
        documents = file_terms(terms, nodes.kind, nodes.file, nodes.start_line, nodes.end_line)
        sparse = SparseIndex.from_terms(documents, TokenizerConfig.from_dict(manifest.get("tokenizer", {})),
                                        warmup=False)
        return cls(sparse, np.array([r for r, kind in enumerate(nodes.kind) if kind == "file"], dtype=np.int64))

    def search(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k files of each query as node rows of file nodes (-1 / 0 pad), with scores."""
        docs, scores = self.sparse.search(queries, k)
        rows = np.where(docs >= 0, self.rows[np.clip(docs, 0, max(len(self.rows) - 1, 0))], -1)
        return rows, scores


def load_symbols(path: str | Path) -> SymbolIndex:
    """The symbol table of an index folder, read from its node table alone (what the batch
    driver plans with, without loading the index's engines)."""
    path = Path(path)
    manifest = artifact.read_manifest(path, verify=False)
    table = read_nodes(path, manifest, ["node_id", "kind", "file", "qualname", "name"])
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    return SymbolIndex(cols["node_id"], cols["kind"], cols["file"], cols["qualname"], cols["name"],
                       manifest.get("root_package"))


def encoder_backend_of(manifest: dict) -> str | None:
    """The encoder backend recorded in a manifest (None: no dense vectors)."""
    model = manifest.get("model")
    if not model:
        return None
    return (model.get("encoder") or {}).get("backend", "torch")


def check_encoder(manifest: dict, requested: str | None, path: Path | str) -> None:
    """Refuse to encode queries with another backend than the index's vectors were made by:
    their vectors would differ (int8 by up to 1% cosine), and so would rankings.

    Raises:
        EncoderMismatchError: naming both backends and the fix.
    """
    built = encoder_backend_of(manifest)
    if requested is None or built is None or requested == built:
        return
    raise EncoderMismatchError(
        f"the index's vectors were encoded by the {built} encoder; its queries must be encoded by the "
        f"same backend, not {requested}", path=str(path),
        fix=f"leave --encoder out (queries then use {built}), or rebuild the index with --encoder {requested}")


def capabilities_of(manifest: dict, llm_configured: bool = False) -> Capabilities:
    """What an index can do, read from its manifest alone."""
    has_dense = bool(manifest.get("model"))
    edges = manifest.get("counts", {}).get("edges_by_type", {})
    has_graph = sum(v for k, v in edges.items() if k != "contains") > 0
    return Capabilities(dense=has_dense, sparse=True, graph=has_graph, embedding_rerank=has_dense,
                        llm_rerank=llm_configured, history=bool(manifest.get("history")),
                        fitted_history=bool((manifest.get("history_fit") or {}).get("fitted")))


def load_index(path: str | Path, *, verify: bool = True, dense: bool = True, sparse: bool = True,
               graph: bool = True, dense_backend: str = "auto", device: str = "auto") -> LoadedIndex:
    """Load and check an index folder (or the parts one worker needs).

    Args:
        verify: check every artifact's sha256 against the manifest.
        dense: load the vectors (an index built with --no-dense loads without them anyway).
        sparse: load the BM25 index.
        graph: build the code graph from edges.parquet (an empty graph otherwise).
        dense_backend: numpy, faiss, torch, hnsw or auto.
        device: auto (CUDA when available), cpu or cuda.

    Raises:
        IndexFormatError: naming the wrong file and how to rebuild it.
    """
    from codenib.engines.models import require_device, resolve_device

    path = Path(path)
    manifest = artifact.read_manifest(path, verify=verify)
    nodes_path = path / artifact.NODES_FILE
    edges_path = path / artifact.EDGES_FILE
    tokenizer = TokenizerConfig.from_dict(manifest.get("tokenizer", {}))
    stored = None
    if artifact.is_store_layout(manifest):
        stored = _StoredParts.read(path, manifest)
        nodes = stored.nodes
    else:
        nodes = _read_nodes(nodes_path)
    edges = _read(edges_path, EDGES_SCHEMA.names) if graph else EDGES_SCHEMA.empty_table()
    expected = manifest.get("counts", {}).get("nodes")
    if expected is not None and expected != len(nodes):
        raise IndexFormatError(f"nodes.parquet has {len(nodes)} rows, the manifest says {expected}",
                               path=str(nodes_path), fix=f"rebuild with `codenib index REPO --out {path}`")
    code_graph = CodeGraph(nodes.node_id, edges)
    sparse_index = None
    if sparse:
        sparse_index = (SparseIndex.from_terms(stored.terms, tokenizer) if stored is not None
                        else SparseIndex.load(path / artifact.SPARSE_DIR, tokenizer))
        if sparse_index.num_docs != len(nodes):
            raise IndexFormatError(f"the BM25 index holds {sparse_index.num_docs} documents, nodes.parquet "
                                   f"{len(nodes)}", path=str(path / artifact.SPARSE_DIR),
                                   fix=f"rebuild with `codenib index REPO --out {path}`")
    dense_index = None
    model = manifest.get("model")
    # Resolving `auto` imports torch (~1.6 s): sparse and graph workers leave it to the encoder.
    if (dense and model) or device != "auto":
        device = resolve_device(device)
    if dense and model:
        require_device(device)
        arrays = read_vectors(path, manifest, nodes.file) if artifact.vectors_in_store(manifest) else None
        dense_index = DenseIndex.load(path / artifact.DENSE_DIR, len(nodes), model.get("dimension"),
                                      backend=dense_backend, device=device,
                                      hnsw_ef_search=model.get("hnsw_ef_search"),
                                      name_field=model.get("name_field"), arrays=arrays)
    return LoadedIndex(path, manifest, nodes, code_graph, sparse_index, dense_index, device, stored)


def _read(path: Path, columns: list[str]):
    """The named columns of one Parquet file (ParquetFile: pq.read_table would import
    pyarrow.dataset, ~0.4 s in every worker)."""
    try:
        with pq.ParquetFile(path) as fh:
            present = set(fh.schema_arrow.names)
            missing = sorted(set(columns) - present)
            table = None if missing else fh.read(columns=columns)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise IndexFormatError(f"cannot read {path.name}: {exc}", path=str(path),
                               fix="rebuild the index with `codenib index`") from exc
    if missing:
        raise IndexFormatError(f"{path.name} lacks columns {missing}", path=str(path),
                               fix="rebuild the index with this version of codenib")
    return table


def _read_nodes(path: Path) -> NodeTable:
    return _node_table(_read(path, list(NodeTable.__dataclass_fields__)))


def _node_table(table) -> NodeTable:
    return NodeTable(**{c: table.column(c).to_pylist() for c in NodeTable.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class _StoredParts:
    """What a store-layout index reads back from the per-file store (`codenib.core.store_layout`)."""

    nodes: NodeTable
    terms: DocTerms
    texts: "pa.ChunkedArray"     # kept as Arrow until `LoadedIndex.texts` asks

    @classmethod
    def read(cls, path: Path, manifest: dict) -> "_StoredParts":
        table, pairs = read_nodes_and_terms(path, manifest)
        return cls(_node_table(table), terms_from_pairs(pairs), table.column("text"))
