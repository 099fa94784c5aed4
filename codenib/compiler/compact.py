"""Rewrite a built index in the store layout (`codenib.core.store_layout`).

A snapshot set shares one per-file store: every file version's nodes and term counts are
already there once. `compact_index` keeps of an index only what is its own (edges, history,
an HNSW graph, the manifest's fields) and names each file's store entry in
`store_files.parquet`; nodes.parquet, `sparse/`, `sparse_files/` and `incr/` go (about 90% of a
sphinx snapshot's 11.4 MB without vectors), and so do the vectors, whose per-file entries the
store's vector folder holds (`codenib.compiler.vector_store`). The rewrite is atomic (a staging
folder renamed over the index), and an entry the store lacks is put first, from the index's
own nodes, `incr/` counts and vectors, so the index reads back the same nodes, scores and
vectors.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.compiler.build_parse import nodes_of
from codenib.compiler.cache import FileCache
from codenib.compiler.dense import NAME_VECTORS_FILE, store_vectors_of
from codenib.compiler.state import INCR_DIR
from codenib.core import artifact
from codenib.core.errors import BadInputError
from codenib.core.file_entry import CachedFile
from codenib.core.store_backend import LocalBackend, StoreBackend
from codenib.core.store_layout import STORE_FILES_SCHEMA, layout_entry
from codenib.core.tokens import TokenizerConfig

#: What the store layout leaves out: the per-file store holds it (nodes, term counts) or it is
#: computed again on load (BM25 arrays); `incr/` serves only a `--reuse` of this very folder.
DROPPED = (artifact.NODES_FILE, artifact.SPARSE_DIR, artifact.FILE_SPARSE_DIR, INCR_DIR)
#: And the vectors, when the store's vector entries hold every file's (`dense.store_vectors_of`):
#: they are most of a snapshot with vectors (2 x nodes x dimension floats); an HNSW graph stays.
VECTOR_FILES = (artifact.VECTORS_FILE, f"{artifact.DENSE_DIR}/{NAME_VECTORS_FILE}")
#: Parquet codec of the tables the store layout writes per snapshot: they are most of what a
#: snapshot adds to the disk, and zstd level 9 takes them to 0.67x (edges) and 0.53x (the
#: entry names, hex) of snappy's size on sphinx, in a few ms.
COMPRESSION, COMPRESSION_LEVEL = "zstd", 9
#: Manifest fields `artifact.write_manifest` writes itself.
_WRITTEN = ("format", "format_version", "codenib_version", "created", "artifacts", artifact.SELF_CHECKSUM)


def compact_index(index_dir: str | os.PathLike, store: StoreBackend, log: Callable[[str], None]) -> bool:
    """Rewrite the index at `index_dir` in the store layout over `store` (a local folder's
    backend); returns False, leaving the index as it is, when it already is in that layout or
    a file of it has no bytes to key an entry by (a file that could not be read).

    Raises:
        BadInputError: `store` is on object storage (the layout reads local stores only).
    """
    index_dir = Path(index_dir)
    if not isinstance(store, LocalBackend):
        raise BadInputError(f"the store layout needs a local per-file store, not {store.shown()}",
                            fix="pass a folder as --store, or --layout full")
    manifest = artifact.read_manifest(index_dir, verify=False)
    if artifact.is_store_layout(manifest):
        return False
    # The whole table (texts too) only when vectors move or entries are to be put.
    whole = bool(manifest.get("model"))
    nodes = _read_nodes(index_dir, whole)
    cols = nodes.select(["kind", "file", "content_sha256"]).to_pydict()
    files = sorted((f, sha) for k, f, sha in zip(cols["kind"], cols["file"], cols["content_sha256"]) if k == "file")
    if any(not sha for _, sha in files):
        log(f"{index_dir}: a file without content (unreadable) keeps this index in the full layout")
        return False
    cache = FileCache(store, TokenizerConfig.from_dict(manifest.get("tokenizer", {})))
    names = [cache.entry_name(rel, sha) for rel, sha in files]
    missing = {rel for (rel, _), name in zip(files, names) if not store.has(name)}
    if missing and not whole:
        nodes = _read_nodes(index_dir, True)
    if missing and not _put_missing(index_dir, nodes, missing, dict(files), cache, log):
        return False
    vectors = store_vectors_of(index_dir, nodes, store, log) if manifest.get("model") else None
    dropped_files = set(VECTOR_FILES) if vectors is not None else set()
    with artifact.atomic_index_dir(index_dir) as staging:
        for rel in manifest["artifacts"]:
            if not _dropped(rel, dropped_files) and rel != artifact.EDGES_FILE:
                _link(index_dir / rel, staging / rel)
        edges = pq.ParquetFile(index_dir / artifact.EDGES_FILE).read()
        pq.write_table(edges, staging / artifact.EDGES_FILE, compression=COMPRESSION,
                       compression_level=COMPRESSION_LEVEL)
        pq.write_table(pa.table({"file": [f for f, _ in files], "content_sha256": [s for _, s in files],
                                 "entry": names,
                                 "vectors": [vectors.get(f) if vectors is not None else None for f, _ in files]},
                                schema=STORE_FILES_SCHEMA), staging / artifact.STORE_FILES_FILE,
                       compression=COMPRESSION, compression_level=COMPRESSION_LEVEL)
        fields = {k: v for k, v in manifest.items() if k not in _WRITTEN}
        dropped = {rel: meta["size"] for rel, meta in manifest["artifacts"].items() if _dropped(rel, dropped_files)}
        fields[artifact.LAYOUT_KEY] = layout_entry(index_dir, store.root, len(files), dropped,
                                                   vectors=vectors is not None)
        artifact.write_manifest(staging, fields)
    return True


# --- private helpers ---------------------------------------------------------------------------

def _read_nodes(index_dir: Path, whole: bool) -> pa.Table:
    """The index's nodes table: every column, or only those that key the store's entries."""
    with pq.ParquetFile(index_dir / artifact.NODES_FILE) as fh:
        return fh.read(columns=None if whole else ["kind", "file", "content_sha256"])


def _dropped(rel: str, files: set[str]) -> bool:
    """Whether the store layout leaves the artifact `rel` out (`files`: single files it also leaves)."""
    return rel.split("/", 1)[0] in DROPPED or rel in files


def _put_missing(index_dir: Path, nodes: pa.Table, missing: set[str], shas: dict[str, str], cache: FileCache,
                 log: Callable[[str], None]) -> bool:
    """Put the entries of the `missing` files from the index's nodes and `incr/` counts;
    False when the counts are not there (the index then stays as it is)."""
    from codenib.engines.bm25_terms import DocTerms

    try:
        terms = DocTerms.load(index_dir / INCR_DIR)
    except (OSError, ValueError) as exc:
        log(f"{index_dir}: no term counts to store {len(missing)} file(s) from ({exc}); kept in the full layout")
        return False
    if terms.num_docs != nodes.num_rows:
        log(f"{index_dir}: its term counts do not match its nodes; kept in the full layout")
        return False
    rows: dict[str, list[int]] = {}
    for r, f in enumerate(nodes.column("file").to_pylist()):
        if f in missing:
            rows.setdefault(f, []).append(r)
    ids = nodes.column("node_id").to_pylist()
    for rel, picked in sorted(rows.items()):
        if len({ids[r] for r in picked}) != len(picked):
            # A build takes a stored file's counts by node id (`fill_cache` refuses such a file too).
            log(f"{index_dir}: two nodes of {rel} share an id; kept in the full layout")
            return False
    for rel, picked in sorted(rows.items()):
        cache.put(rel, shas[rel], CachedFile(nodes_of(nodes.take(picked)), [terms.counts_of(r) for r in picked]))
    return True


def _link(src: Path, dst: Path) -> None:
    """`dst` as a hard link to `src` (a copy where the file system has none)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
