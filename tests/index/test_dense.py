"""Dense search equals brute force; bad artifacts and models are named."""

import numpy as np
import pytest

from codenib.engines.embed import Encoder
from codenib.engines.models import ModelSpec
from codenib.core.errors import IndexFormatError, ModelLoadError
from codenib.index.dense import DenseIndex
from codenib.index.loaded import load_index


def random_unit(n, d, seed):
    x = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("backend", ["numpy", "faiss", "torch"])
def test_search_equals_brute_force(backend):
    vecs = random_unit(500, 32, 0)
    names = random_unit(500, 32, 1)
    q = random_unit(7, 32, 2)
    index = DenseIndex(vecs, backend=backend, name_vectors=names, name_weight=0.5)
    rows, scores = index.search(q, k=20)
    brute = q @ vecs.T + 0.5 * (q @ names.T)
    for i in range(len(q)):
        expected = np.lexsort((np.arange(500), -brute[i]))[:20]
        assert rows[i].tolist() == expected.tolist()
        np.testing.assert_allclose(scores[i], brute[i][expected], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "faiss", "torch"])
def test_ties_at_the_cut_break_by_row(backend):
    vecs = np.zeros((300, 4), dtype=np.float32)
    vecs[:, 0] = 1.0                     # 300 identical vectors: every score ties
    vecs[7] = [0.0, 1.0, 0.0, 0.0]       # one that scores lower
    rows, scores = DenseIndex(vecs, backend=backend).search(np.array([[1, 0, 0, 0]], dtype=np.float32), k=5)
    assert rows[0].tolist() == [0, 1, 2, 3, 4]
    rows, _ = DenseIndex(vecs, backend=backend).search(np.array([[1, 0, 0, 0]], dtype=np.float32), k=300)
    assert rows[0].tolist()[-1] == 7 and rows[0].tolist()[:8] == [0, 1, 2, 3, 4, 5, 6, 8]


def test_default_model_loads_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = Encoder(ModelSpec.for_model(None), device="cpu")
    v = enc.encode_queries(["open a file", "open a file", "parse json"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert float(v[0] @ v[1]) > 0.999 and float(v[0] @ v[2]) < 0.9


def test_missing_model_path_is_bad_input(tmp_path):
    with pytest.raises(ModelLoadError, match="does not exist"):
        Encoder(ModelSpec.for_model(str(tmp_path / "no-such-model")), device="cpu")
    with pytest.raises(ModelLoadError, match="offline"):
        Encoder(ModelSpec.for_model("some-org/model-never-downloaded"), device="cpu")


def test_vector_rows_must_match_nodes(fixture_index_dir, tmp_path):
    import shutil

    copy = tmp_path / "idx"
    shutil.copytree(fixture_index_dir, copy)
    vecs = np.load(copy / "dense" / "vectors.npy")
    np.save(copy / "dense" / "vectors.npy", vecs[:-1])
    with pytest.raises(IndexFormatError, match="vectors.npy"):
        load_index(copy)  # checksum first
    with pytest.raises(IndexFormatError, match="expected 23 rows"):
        load_index(copy, verify=False)


def test_index_search_finds_the_described_function(fixture_index):
    q = fixture_index.encode_queries(["lowercase text into a slug"])
    rows, _ = fixture_index.dense.search(q, k=3)
    assert "pkg/util.py::slugify" in [fixture_index.nodes.node_id[r] for r in rows[0]]
