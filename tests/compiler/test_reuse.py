"""`--reuse`: vectors of unchanged nodes are reused, and the result equals a full build."""

import shutil

import numpy as np
import pyarrow.parquet as pq

from codenib.compiler.build import build_index

from codenib.compiler.build_options import BuildOptions
from codenib.index.loaded import load_index

OPTS = BuildOptions(progress=False, device="cpu", encoder="torch")


def test_reuse_equals_a_full_build(fixture_repo, fixture_index_dir, tmp_path):
    repo2 = tmp_path / "repo2"
    shutil.copytree(fixture_repo, repo2)
    util = repo2 / "pkg" / "util.py"
    util.write_text(util.read_text().replace("return text.lower()", "return text.lower().strip()"))
    (repo2 / "pkg" / "extra.py").write_text("def added():\n    return 42\n")

    logs: list[str] = []
    reused = build_index(repo2, tmp_path / "reused", BuildOptions(progress=False, device="cpu", encoder="torch",
                                                                  reuse=fixture_index_dir), log=logs.append)
    build_index(repo2, tmp_path / "full", OPTS)

    # Changed: slugify (its body), the util.py file node (its text holds the def signatures
    # only, so unchanged), and the new file and function.
    assert reused.dense["reused"] == 23 - 1
    assert reused.dense["encoded"] == 1 + 2
    assert any("reused 22 vectors" in line for line in logs)
    for name in ("nodes.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "reused" / name).equals(pq.read_table(tmp_path / "full" / name))
    a, b = load_index(tmp_path / "reused"), load_index(tmp_path / "full")
    np.testing.assert_allclose(a.dense.vectors, b.dense.vectors, atol=1e-5)
    np.testing.assert_allclose(a.dense.name_vectors, b.dense.name_vectors, atol=1e-5)


def test_reuse_from_an_index_without_vectors_encodes_everything(fixture_repo, sparse_only_index_dir, tmp_path):
    logs: list[str] = []
    summary = build_index(fixture_repo, tmp_path / "i", BuildOptions(progress=False, device="cpu", encoder="torch",
                                                                     reuse=sparse_only_index_dir), log=logs.append)
    assert summary.dense["reused"] == 0 and summary.dense["encoded"] == 23
    assert any("nothing to reuse" in line for line in logs)


def test_reuse_reads_and_verifies_the_old_index_once(fixture_repo, fixture_index_dir, tmp_path, monkeypatch):
    """The old index's manifest is verified (every file hashed) and its nodes table read once:
    the dense stage takes them from the loaded `Previous` instead of opening the index again."""
    from codenib.core import artifact
    from codenib.compiler import dense, state

    old = fixture_index_dir.resolve()
    verified: list = []
    nodes_reads: list = []
    real_manifest, real_read, real_read_nodes = artifact.read_manifest, state._read, dense.read_nodes

    def read_manifest(path, *args, **kwargs):
        if kwargs.get("verify") and os_path(path) == old:
            verified.append(path)
        return real_manifest(path, *args, **kwargs)

    def count_nodes(real):
        def read(path, *args, **kwargs):
            if os_path(path) == old / "nodes.parquet":
                nodes_reads.append(path)
            return real(path, *args, **kwargs)
        return read

    monkeypatch.setattr(artifact, "read_manifest", read_manifest)
    monkeypatch.setattr(state, "_read", count_nodes(real_read))
    def dense_nodes(folder, *args, **kwargs):
        if os_path(folder) == old:
            nodes_reads.append(folder)
        return real_read_nodes(folder, *args, **kwargs)

    monkeypatch.setattr(dense, "read_nodes", dense_nodes)
    reused = build_index(fixture_repo, tmp_path / "reused", BuildOptions(
        progress=False, device="cpu", encoder="torch", reuse=fixture_index_dir))
    assert len(verified) == 1 and len(nodes_reads) == 1
    assert reused.dense["reused"] == 23 and reused.dense["encoded"] == 0
    a, b = load_index(tmp_path / "reused"), load_index(fixture_index_dir)
    np.testing.assert_allclose(a.dense.vectors, b.dense.vectors, atol=1e-5)
    np.testing.assert_allclose(a.dense.name_vectors, b.dense.name_vectors, atol=1e-5)


def os_path(path):
    from pathlib import Path

    return Path(path).resolve()
