"""The per-file vector store: one entry per file's exact texts under one model, shared by builds."""

import numpy as np
import pyarrow.parquet as pq

from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.compiler.vector_store import VectorStore
from codenib.core.vector_entry import file_groups
from codenib.index.loaded import load_index


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, dim), dtype=np.float32)


def test_same_texts_find_the_same_entry(tmp_path):
    store = VectorStore(tmp_path, "fp", 4)
    body, name = _vectors(2, 4, 0), _vectors(2, 4, 1)
    store.put(["def f(): pass", "def g(): pass"], ["f", "g"], body, name)
    got = VectorStore(tmp_path, "fp", 4).get(["def f(): pass", "def g(): pass"], ["f", "g"])
    assert got is not None
    np.testing.assert_array_equal(got[0], body)
    np.testing.assert_array_equal(got[1], name)


def test_other_texts_order_model_or_width_find_nothing(tmp_path):
    VectorStore(tmp_path, "fp", 4).put(["a", "b"], ["x", "y"], _vectors(2, 4, 0), _vectors(2, 4, 1))
    assert VectorStore(tmp_path, "fp", 4).get(["a", "B"], ["x", "y"]) is None       # one text differs
    assert VectorStore(tmp_path, "fp", 4).get(["b", "a"], ["y", "x"]) is None       # another order
    assert VectorStore(tmp_path, "other", 4).get(["a", "b"], ["x", "y"]) is None    # another model
    assert VectorStore(tmp_path, "fp", 8).get(["a", "b"], ["x", "y"]) is None       # another width
    # Moving a text from the bodies to the names is another key, not the same bytes in a row.
    VectorStore(tmp_path, "fp", 4).put(["a"], ["b"], _vectors(1, 4, 2), _vectors(1, 4, 3))
    assert VectorStore(tmp_path, "fp", 4).get(["a", "b"], []) is None


def test_a_damaged_entry_is_not_trusted(tmp_path):
    store = VectorStore(tmp_path, "fp", 4)
    store.put(["a"], ["x"], _vectors(1, 4, 0), _vectors(1, 4, 1))
    (entry,) = [p for p in tmp_path.rglob("*.npy")]
    entry.write_bytes(entry.read_bytes()[:40])
    assert store.get(["a"], ["x"]) is None


def test_file_groups_keep_row_order():
    assert file_groups(["a.py", "a.py", "b.py", "a.py"]) == {"a.py": [0, 1, 3], "b.py": [2]}


def test_a_second_index_encodes_nothing_its_store_holds(fixture_repo, tmp_path):
    """Two indexes of one repository with no `--reuse` between them: the second takes every
    vector from the store the first filled, and its vectors equal the first's."""
    store = tmp_path / "store"
    first = build_index(fixture_repo, tmp_path / "one", BuildOptions(progress=False, device="cpu", encoder="torch",
                                                                    cache=store))
    second = build_index(fixture_repo, tmp_path / "two", BuildOptions(progress=False, device="cpu", encoder="torch",
                                                                     cache=store))
    n_files = len(set(pq.read_table(tmp_path / "one" / "nodes.parquet").column("file").to_pylist()))
    assert first.dense["encoded"] == 23 and first.dense["files_from_store"] == 0
    assert second.dense["encoded"] == 0 and second.dense["files_from_store"] == n_files
    a, b = load_index(tmp_path / "one"), load_index(tmp_path / "two")
    np.testing.assert_array_equal(a.dense.vectors, b.dense.vectors)
    np.testing.assert_array_equal(a.dense.name_vectors, b.dense.name_vectors)
