"""GPU paths give the CPU's results: encoder, dense search, and an index built on CUDA.

Slow tier, and skipped where torch sees no GPU: `pytest -m slow tests/index/test_gpu.py`.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from codenib.engines.embed import Encoder  # noqa: E402
from codenib.engines.models import ModelSpec  # noqa: E402
from codenib.index.dense import DenseIndex  # noqa: E402
from codenib.index.loaded import load_index  # noqa: E402

QUERIES = ["lowercase text into a slug", "open a file", "where is the config parsed and validated",
           "x", "retry a request with exponential backoff when the server is busy"]


def unit(n, d, seed):
    x = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_torch_on_cuda_equals_numpy_on_the_cpu():
    vecs, names, q = unit(20_000, 64, 0), unit(20_000, 64, 1), unit(300, 64, 2)
    gpu = DenseIndex(vecs, backend="auto", device="cuda", name_vectors=names, name_weight=0.5)
    assert gpu.backend == "torch"
    cpu = DenseIndex(vecs, backend="numpy", name_vectors=names, name_weight=0.5)
    (rg, sg), (rc, sc) = gpu.search(q, 50), cpu.search(q, 50)
    np.testing.assert_allclose(sg, sc, atol=1e-5)
    for i in range(len(q)):  # same rows, up to near-ties (float error) at the cut
        cut = min(sg[i, -1], sc[i, -1]) + 1e-5
        assert set(rg[i][sg[i] > cut]) <= set(rc[i]) and set(rc[i][sc[i] > cut]) <= set(rg[i])
    assert (rg == rc).all(axis=1).mean() > 0.95


def test_ties_break_by_row_on_cuda():
    vecs = np.zeros((3000, 8), dtype=np.float32)
    vecs[:, 0] = 1.0
    vecs[5] = [0, 1, 0, 0, 0, 0, 0, 0]
    rows, _ = DenseIndex(vecs, device="cuda").search(np.eye(8, dtype=np.float32)[:1], k=10)
    assert rows[0].tolist() == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]


def test_encoder_on_cuda_matches_the_cpu():
    spec = ModelSpec.for_model(None)
    gpu, cpu = Encoder(spec, "cuda"), Encoder(spec, "cpu")
    assert gpu.batch_size == 256 and cpu.batch_size == 32
    a, b = gpu.encode_documents(QUERIES), cpu.encode_documents(QUERIES)
    cos = np.sum(a * b, axis=1)
    assert cos.min() > 0.9999 and np.abs(a - b).max() < 2e-3


def test_query_vectors_on_cuda_do_not_depend_on_the_batch():
    enc = Encoder(ModelSpec.for_model(None), "cuda")
    together = enc.encode_queries(QUERIES * 7)
    for i, q in enumerate(QUERIES):
        alone = enc.encode_queries([q])[0]
        assert np.array_equal(alone, together[i]), q
        assert np.array_equal(alone, together[i + len(QUERIES) * 3]), q


def test_index_built_on_cuda_searches_like_the_cpu_index(fixture_repo, fixture_index_dir, tmp_path):
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions

    out = tmp_path / "cuda"
    build_index(fixture_repo, out, BuildOptions(progress=False, device="cuda"))
    gpu, cpu = load_index(out, device="auto"), load_index(fixture_index_dir, device="cpu")
    assert gpu.device == "cuda" and gpu.dense.backend == "torch"
    np.testing.assert_allclose(gpu.dense.vectors, cpu.dense.vectors, atol=2e-3)
    (rg, sg), (rc, sc) = gpu.dense.search(gpu.encode_queries(QUERIES), 5), cpu.dense.search(cpu.encode_queries(QUERIES), 5)
    np.testing.assert_allclose(sg, sc, atol=1e-4)
    assert [gpu.nodes.node_id[r] for r in rg[:, 0]] == [cpu.nodes.node_id[r] for r in rc[:, 0]]


def test_bm25s_does_not_take_the_gpu_when_jax_is_installed():
    import subprocess
    import sys

    pytest.importorskip("jax")
    probe = ("import torch; torch.cuda.init(); from codenib.engines.bm25 import import_bm25s; "
             "import_bm25s(); free, total = torch.cuda.mem_get_info(); print(free / total)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip().splitlines()[-1]) > 0.9
