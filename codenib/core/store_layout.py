"""Indexes in the store layout: a snapshot's nodes, BM25 counts and vectors read back from the per-file store.

`codenib index-set --layout store` keeps, per snapshot, only what is the snapshot's own: the
edges (the resolved graph), the manifest, and `store_files.parquet`, which names for each file
the per-file store's entry of its version (`codenib.core.file_entry`: its nodes and their term
counts). nodes.parquet, `sparse/`, `sparse_files/` and `incr/` are not written: the nodes are
the entries' nodes sorted by node id, and the BM25 arrays are computed again from the counts
when the index is loaded, so every search gives what the full folder gives. An index built
with vectors leaves out `dense/vectors.npy` and `dense/name_vectors.npy` too: its
`store_files.parquet` names each file's vector entry (`codenib.core.vector_entry`), and the
rows are put back in node order on load (an HNSW graph, when built, stays in `dense/`). The
manifest says

    "layout": {"kind": "store", "store": "../.codenib-store", "files": 905, "vectors": "store",
               "dropped": {"nodes.parquet": 2712409, "sparse/data.csc.index.npy": ..., ...}}

(the store's folder relative to the index folder when it can be, else absolute; `vectors`
only when they went to the store). The entry
names are recorded, not recomputed, so a later CodeNib whose readers key entries otherwise
still finds them. A store entry missing or damaged is an `IndexFormatError` naming it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codenib.core import artifact
from codenib.core.errors import IndexFormatError
from codenib.core.file_entry import decode_rows
from codenib.core.gcpause import collector_paused
from codenib.core.store_backend import LocalBackend
from codenib.core.types import NODES_SCHEMA
from codenib.core.vector_entry import decode_vectors, file_groups

_KIND, _SHA256 = NODES_SCHEMA.names.index("kind"), NODES_SCHEMA.names.index("content_sha256")
#: `store_files.parquet`: one row per file of the snapshot, sorted by path; `vectors` names the
#: file's vector entry when the index's vectors went to the store (null otherwise, and absent
#: from indexes compacted before vectors could go there).
STORE_FILES_SCHEMA = pa.schema([("file", pa.string()), ("content_sha256", pa.string()), ("entry", pa.string()),
                                ("vectors", pa.string())])


def layout_entry(index_dir: Path, store_root: Path, files: int, dropped: dict[str, int],
                 vectors: bool = False) -> dict[str, Any]:
    """The manifest's `layout` value for an index at `index_dir` over the store at `store_root`;
    `dropped`: the sizes of the full layout's artifacts it does not hold (what a loaded copy
    weighs, for the actors' memory budgets); `vectors`: its vectors are read from the store's
    vector entries (`store_files.parquet`'s `vectors` column)."""
    store = Path(os.path.abspath(store_root))
    here = Path(os.path.abspath(index_dir))
    try:
        shown = os.path.relpath(store, here) if store.anchor == here.anchor else str(store)
    except ValueError:      # another drive
        shown = str(store)
    entry = {"kind": artifact.STORE_LAYOUT, "store": Path(shown).as_posix(), "files": files, "dropped": dropped}
    if vectors:
        entry["vectors"] = artifact.STORE_LAYOUT
    return entry


def store_root(index_dir: Path, manifest: dict[str, Any]) -> Path:
    """The per-file store's folder of a store-layout index (relative paths from the index)."""
    where = Path(manifest[artifact.LAYOUT_KEY]["store"])
    return where if where.is_absolute() else Path(index_dir) / where


def read_nodes(index_dir: str | os.PathLike, manifest: dict[str, Any],
               columns: Sequence[str] | None = None) -> pa.Table:
    """The nodes table of an index in either layout (the named columns, or all)."""
    index_dir = Path(index_dir)
    if not artifact.is_store_layout(manifest):
        path = index_dir / artifact.NODES_FILE
        try:
            with pq.ParquetFile(path) as fh:
                return fh.read(columns=list(columns) if columns is not None else None)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
            raise IndexFormatError(f"cannot read {path.name}: {exc}", path=str(path),
                                   fix="rebuild the index with `codenib index`") from exc
    table, _ = read_nodes_and_terms(index_dir, manifest)
    return table.select(list(columns)) if columns is not None else table


def read_nodes_and_terms(index_dir: str | os.PathLike, manifest: dict[str, Any]) -> tuple[pa.Table, list[list]]:
    """A store-layout index's nodes table (sorted by node id, as a build writes it) and the
    term counts of each row ((term, count) pairs sorted by term), read from its files' store
    entries.

    Raises:
        IndexFormatError: an entry missing, damaged, or of other bytes than the file's.
    """
    index_dir = Path(index_dir)
    fix = (f"build the snapshot again (`codenib index-set` rebuilds what is missing); its store "
           f"{manifest.get(artifact.LAYOUT_KEY, {}).get('store')!r} was moved, pruned or damaged")
    files = pq.ParquetFile(index_dir / artifact.STORE_FILES_FILE).read().to_pydict()
    backend = LocalBackend(store_root(index_dir, manifest))
    rows: list[list] = []
    terms: list[list] = []
    with collector_paused():    # the entries' many small lists hold no cycles
        for rel, sha, name in zip(files["file"], files["content_sha256"], files["entry"]):
            _append_entry(backend, rel, sha, name, rows, terms, fix)
    try:
        table = pa.table({n: list(col) for n, col in zip(NODES_SCHEMA.names, zip(*rows))} if rows else
                         {n: [] for n in NODES_SCHEMA.names}, schema=NODES_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise IndexFormatError(f"a store entry of this index holds malformed nodes: {exc}",
                               path=str(index_dir / artifact.STORE_FILES_FILE), fix=fix) from exc
    order = pc.sort_indices(table, sort_keys=[("node_id", "ascending")])
    table = table.take(order).combine_chunks()
    expected = manifest.get("counts", {}).get("nodes")
    if expected is not None and expected != table.num_rows:
        raise IndexFormatError(f"the store entries hold {table.num_rows} nodes, the manifest says {expected}",
                               path=str(index_dir / artifact.STORE_FILES_FILE), fix=fix)
    return table, [terms[i] for i in order.to_numpy()]


def read_vectors(index_dir: str | os.PathLike, manifest: dict[str, Any],
                 files: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """A store-layout index's (body, name) vectors from its files' vector entries, row i for
    nodes row i; `files`: the nodes table's `file` column (sorted by node id, as loaded).

    Raises:
        IndexFormatError: an entry missing, damaged, or of another shape than the file's nodes.
    """
    index_dir = Path(index_dir)
    listing = index_dir / artifact.STORE_FILES_FILE
    fix = (f"build the snapshot again (`codenib index-set` rebuilds what is missing); its store "
           f"{manifest.get(artifact.LAYOUT_KEY, {}).get('store')!r} was moved, pruned or damaged")
    with pq.ParquetFile(listing) as fh:
        if "vectors" not in fh.schema_arrow.names:
            raise IndexFormatError("the manifest says the vectors are in the store, but store_files.parquet "
                                   "names no vector entries", path=str(listing), fix=fix)
        names = fh.read(columns=["file", "vectors"]).to_pydict()
    dimension = int(manifest["model"]["dimension"])
    rows = file_groups(files)
    body = np.zeros((len(files), dimension), dtype=np.float32)
    name = np.zeros((len(files), dimension), dtype=np.float32)
    backend = LocalBackend(store_root(index_dir, manifest))
    for rel, entry in zip(names["file"], names["vectors"]):
        picked = rows.pop(rel, None)
        if picked is None:
            continue
        raw = backend.read(entry) if entry else None
        vectors = decode_vectors(raw, len(picked), dimension) if raw is not None else None
        if vectors is None:
            raise IndexFormatError(f"the per-file store has no readable vectors for {rel} "
                                   f"({'damaged or of another shape' if raw is not None else 'missing'})",
                                   path=backend.shown(entry or ""), fix=fix)
        body[picked], name[picked] = vectors
    if rows:
        raise IndexFormatError(f"store_files.parquet names no vectors for {len(rows)} file(s) of the nodes, "
                               f"e.g. {min(rows)}", path=str(listing), fix=fix)
    return body, name


# --- private helpers ---------------------------------------------------------------------------

def _append_entry(backend: LocalBackend, rel: str, sha: str, name: str, rows: list, terms: list, fix: str) -> None:
    """Add the nodes and term counts of `rel`'s store entry to `rows` and `terms`."""
    raw = backend.read(name)
    entry = decode_rows(raw, rel) if raw is not None else None
    if entry is None:
        raise IndexFormatError(f"the per-file store has no readable entry for {rel} "
                               f"({'damaged' if raw is not None else 'missing'})",
                               path=backend.shown(name), fix=fix)
    shas = {row[_SHA256] for row in entry[0] if row[_KIND] == "file"}
    if shas != {sha}:
        raise IndexFormatError(f"the store entry of {rel} is of other bytes ({sorted(shas)}) than the "
                               f"snapshot's ({sha})", path=backend.shown(name), fix=fix)
    rows.extend(entry[0])
    terms.extend(entry[1])
