"""`compact_index`: an index rewritten in the store layout loads and searches as it did."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from codenib.compiler.compact import compact_index
from codenib.core.artifact import read_manifest
from codenib.core.errors import BadInputError, IndexFormatError
from codenib.core.storage import StorageConfig
from codenib.core.store_backend import LocalBackend, ObjectBackend
from codenib.index.loaded import load_index

QUERIES = ["parse the configuration", "who calls load_config", "class that caches files"]


def test_an_index_with_vectors_compacted_into_an_empty_store_puts_its_entries_and_searches_the_same(
        fixture_index_dir, tmp_path):
    folder = tmp_path / "idx"
    shutil.copytree(fixture_index_dir, folder)
    store = LocalBackend(tmp_path / "store")
    files = sorted({f for f, k in zip(*pq.read_table(folder / "nodes.parquet", columns=["file", "kind"])
                                      .to_pydict().values()) if k == "file"})
    assert compact_index(folder, store, print)
    # Built without a shared store: every file's entry was put from the index's own nodes and counts.
    assert len(list((tmp_path / "store").rglob("*.json.gz"))) == len(files)
    # ... and so were its vectors: one entry per file, under the model's fingerprint.
    fingerprint = read_manifest(fixture_index_dir)["model"]["fingerprint"]
    assert len(list((tmp_path / "store" / "vectors" / "v1" / fingerprint).rglob("*.npy"))) == len(files)
    assert sorted(p.name for p in folder.iterdir()) == ["edges.parquet", "manifest.json", "store_files.parquet"]
    manifest = read_manifest(folder, verify=True)
    assert manifest["layout"]["files"] == len(files) and manifest["layout"]["vectors"] == "store"
    assert manifest["layout"]["dropped"]["nodes.parquet"] == (fixture_index_dir / "nodes.parquet").stat().st_size
    assert manifest["layout"]["dropped"]["dense/vectors.npy"] == (fixture_index_dir / "dense/vectors.npy").stat().st_size
    assert not compact_index(folder, store, print)      # already in the store layout

    a, b = load_index(fixture_index_dir, device="cpu"), load_index(folder, device="cpu")
    assert a.nodes == b.nodes and a.texts() == b.texts()
    assert a.graph.index_of == b.graph.index_of
    for x, y in zip(a.sparse.search(QUERIES, 10), b.sparse.search(QUERIES, 10)):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(a.file_sparse.search(QUERIES, 5), b.file_sparse.search(QUERIES, 5)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.dense.vectors, b.dense.vectors)
    np.testing.assert_array_equal(a.dense.name_vectors, b.dense.name_vectors)
    probe = a.dense.vectors[[0, 3, 7]]
    for x, y in zip(a.dense.search(probe, 10), b.dense.search(probe, 10)):
        np.testing.assert_array_equal(x, y)


def test_two_snapshots_holding_a_file_version_share_its_vector_entry(fixture_index_dir, tmp_path):
    store = LocalBackend(tmp_path / "store")
    for name in ("one", "two"):
        shutil.copytree(fixture_index_dir, tmp_path / name)
        assert compact_index(tmp_path / name, store, print)
    one, two = (pq.read_table(tmp_path / n / "store_files.parquet").to_pydict() for n in ("one", "two"))
    assert one == two and all(one["vectors"])
    entries = list((tmp_path / "store" / "vectors").rglob("*.npy"))
    assert {e.name for e in entries} == {Path(v).name for v in one["vectors"]}


def test_a_missing_or_damaged_vector_entry_is_an_index_format_error_naming_the_file(fixture_index_dir, tmp_path):
    folder = tmp_path / "idx"
    shutil.copytree(fixture_index_dir, folder)
    assert compact_index(folder, LocalBackend(tmp_path / "store"), print)
    listing = pq.read_table(folder / "store_files.parquet").to_pydict()
    rel, entry = listing["file"][0], listing["vectors"][0]
    load_index(folder, device="cpu")    # whole, it loads
    path = tmp_path / "store" / entry
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(IndexFormatError, match=f"no readable vectors for {rel}.*damaged"):
        load_index(folder, device="cpu")
    path.unlink()
    with pytest.raises(IndexFormatError, match=f"no readable vectors for {rel}.*missing"):
        load_index(folder, device="cpu")
    # Without its vectors it still loads for BM25 and the graph.
    assert load_index(folder, dense=False, device="cpu").dense is None


def test_a_reuse_of_a_compacted_index_takes_its_vectors_and_builds_the_rest_afresh(
        fixture_repo, fixture_index_dir, tmp_path):
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions

    folder = tmp_path / "idx"
    shutil.copytree(fixture_index_dir, folder)
    assert compact_index(folder, LocalBackend(tmp_path / "store"), print)
    said: list[str] = []
    summary = build_index(fixture_repo, tmp_path / "again", BuildOptions(
        progress=False, device="cpu", encoder="torch", reuse=folder, use_cache=False), log=said.append)
    assert any("is in the store layout" in line for line in said)
    assert summary.dense["encoded"] == 0 and summary.dense["reused"] == summary.manifest["counts"]["nodes"]
    assert pq.read_table(tmp_path / "again" / "nodes.parquet").equals(pq.read_table(fixture_index_dir / "nodes.parquet"))


def test_an_object_store_is_refused(fixture_index_dir, tmp_path):
    folder = tmp_path / "idx"
    shutil.copytree(fixture_index_dir, folder)
    with pytest.raises(BadInputError, match="needs a local per-file store"):
        compact_index(folder, ObjectBackend("s3://bucket/store", StorageConfig()), print)
    assert (folder / "nodes.parquet").is_file()


def _first_file_texts(fixture_index_dir, tmp_path):
    """A copy of the fixture index, its first file, that file's rows, their (body, name)
    texts, and the vector store the copy will be compacted over."""
    from codenib.compiler.build_parse import nodes_of
    from codenib.compiler.dense import name_text
    from codenib.compiler.vector_store import VectorStore

    folder = tmp_path / "idx"
    shutil.copytree(fixture_index_dir, folder)
    table = pq.read_table(folder / "nodes.parquet")
    rel = table.column("file")[0].as_py()
    rows = [r for r, f in enumerate(table.column("file").to_pylist()) if f == rel]
    nodes = nodes_of(table)
    model = read_manifest(folder)["model"]
    store = VectorStore(LocalBackend(tmp_path / "store"), model["fingerprint"], model["dimension"])
    return folder, rel, rows, ([nodes[r].text for r in rows], [name_text(nodes[r]) for r in rows]), store


def test_a_file_whose_stored_vectors_differ_in_the_last_bits_keeps_its_own_under_their_bytes(
        fixture_index_dir, tmp_path):
    folder, rel, rows, texts, store = _first_file_texts(fixture_index_dir, tmp_path)
    whole = load_index(fixture_index_dir, device="cpu")
    # Another build encoded the same texts in another batch: the last bits differ.
    store.put(*texts, whole.dense.vectors[rows] + np.float32(3e-8), whole.dense.name_vectors[rows])
    assert compact_index(folder, LocalBackend(tmp_path / "store"), print)
    listing = pq.read_table(folder / "store_files.parquet").to_pydict()
    picked = dict(zip(listing["file"], listing["vectors"]))
    assert "/exact/" in picked[rel] and not any("/exact/" in v for f, v in picked.items() if f != rel)
    np.testing.assert_array_equal(load_index(folder, device="cpu").dense.vectors, whole.dense.vectors)


def test_a_damaged_entry_of_the_same_texts_is_never_named_the_index_keeps_its_own_rows(fixture_index_dir, tmp_path):
    folder, rel, _, texts, store = _first_file_texts(fixture_index_dir, tmp_path)
    name = store.name(*texts)
    (tmp_path / "store" / name).parent.mkdir(parents=True)
    (tmp_path / "store" / name).write_bytes(b"garbage")      # a store writes a name once: it stays
    assert compact_index(folder, LocalBackend(tmp_path / "store"), print)
    picked = dict(zip(*pq.read_table(folder / "store_files.parquet", columns=["file", "vectors"]).to_pydict().values()))
    assert "/exact/" in picked[rel]
    np.testing.assert_array_equal(load_index(folder, device="cpu").dense.vectors,
                                  load_index(fixture_index_dir, device="cpu").dense.vectors)
