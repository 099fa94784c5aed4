"""Indexes in the store layout: a snapshot's nodes and BM25 counts read back from the per-file store.

`codenib index-set --layout store` keeps, per snapshot, only what is the snapshot's own: the
edges (the resolved graph), the manifest, and `store_files.parquet`, which names for each file
the per-file store's entry of its version (`codenib.core.file_entry`: its nodes and their term
counts). nodes.parquet, `sparse/`, `sparse_files/` and `incr/` are not written: the nodes are
the entries' nodes sorted by node id, and the BM25 arrays are computed again from the counts
when the index is loaded, so every search gives what the full folder gives. The manifest says

    "layout": {"kind": "store", "store": "../.codenib-store", "files": 905,
               "dropped": {"nodes.parquet": 2712409, "sparse/data.csc.index.npy": ..., ...}}

(the store's folder relative to the index folder when it can be, else absolute). The entry
names are recorded, not recomputed, so a later CodeNib whose readers key entries otherwise
still finds them. A store entry missing or damaged is an `IndexFormatError` naming it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codenib.core import artifact
from codenib.core.errors import IndexFormatError
from codenib.core.file_entry import decode_rows
from codenib.core.gcpause import collector_paused
from codenib.core.store_backend import LocalBackend
from codenib.core.types import NODES_SCHEMA

_KIND, _SHA256 = NODES_SCHEMA.names.index("kind"), NODES_SCHEMA.names.index("content_sha256")
#: `store_files.parquet`: one row per file of the snapshot, sorted by path.
STORE_FILES_SCHEMA = pa.schema([("file", pa.string()), ("content_sha256", pa.string()), ("entry", pa.string())])


def layout_entry(index_dir: Path, store_root: Path, files: int, dropped: dict[str, int]) -> dict[str, Any]:
    """The manifest's `layout` value for an index at `index_dir` over the store at `store_root`;
    `dropped`: the sizes of the full layout's artifacts it does not hold (what a loaded copy
    weighs, for the actors' memory budgets)."""
    store = Path(os.path.abspath(store_root))
    here = Path(os.path.abspath(index_dir))
    try:
        shown = os.path.relpath(store, here) if store.anchor == here.anchor else str(store)
    except ValueError:      # another drive
        shown = str(store)
    return {"kind": artifact.STORE_LAYOUT, "store": Path(shown).as_posix(), "files": files, "dropped": dropped}


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
