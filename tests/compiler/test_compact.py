"""`compact_index`: an index rewritten in the store layout loads and searches as it did."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

from codenib.compiler.compact import compact_index
from codenib.core.artifact import read_manifest
from codenib.core.errors import BadInputError
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
    assert sorted(p.name for p in folder.iterdir()) == ["dense", "edges.parquet", "manifest.json",
                                                        "store_files.parquet"]
    manifest = read_manifest(folder, verify=True)
    assert manifest["layout"]["files"] == len(files)
    assert manifest["layout"]["dropped"]["nodes.parquet"] == (fixture_index_dir / "nodes.parquet").stat().st_size
    assert not compact_index(folder, store, print)      # already in the store layout

    a, b = load_index(fixture_index_dir, device="cpu"), load_index(folder, device="cpu")
    assert a.nodes == b.nodes and a.texts() == b.texts()
    assert a.graph.index_of == b.graph.index_of
    for x, y in zip(a.sparse.search(QUERIES, 10), b.sparse.search(QUERIES, 10)):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(a.file_sparse.search(QUERIES, 5), b.file_sparse.search(QUERIES, 5)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.dense.vectors, b.dense.vectors)


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
