"""Encoder backends: agreement with sentence-transformers (the bar of issue 17, on a small
sample), the export cache, `auto`, the manifest record and the refusal of a mismatch."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from codenib.core.artifact import sha256_file
from codenib.engines import backends as backends_mod
from codenib.engines import calibrate
from codenib.engines.export import cache, exported, recipes
from codenib.engines.backends import BACKENDS, TextTokenizer, get_backend
from codenib.engines.embed import Encoder
from codenib.engines.models import ModelSpec
from codenib.core.errors import BadInputError, EncoderMismatchError, MissingDependencyError
from codenib.core.progress import Progress

SPEC = ModelSpec.for_model(None)
QUERIES = ["who calls run_engine?", "lowercase text into a slug", "open a file",
           "format the eta of a progress bar in seconds", "Engine.run"]
EXPORTED = [b for b in ("onnx", "onnx-int8", "openvino") if BACKENDS[b].available()]


@pytest.fixture(scope="module")
def sample(fixture_index_dir):
    """Node texts of the fixture index (code of several lengths), long text past the limit."""
    texts = pq.read_table(fixture_index_dir / "nodes.parquet", columns=["text"]).column("text").to_pylist()
    return texts + ["def f(x):\n    return x\n" * 200]


@pytest.fixture(scope="module")
def torch_encoder():
    return Encoder(SPEC, "cpu", backend="torch")


@pytest.fixture(scope="module")
def reference(torch_encoder, sample):
    """sentence-transformers' own encode (its batching), the vectors every backend must match."""
    return torch_encoder._encode(list(sample), False), torch_encoder._encode(list(QUERIES), False)


@pytest.mark.parametrize("name", ["torch", *EXPORTED])
def test_backend_agrees_with_sentence_transformers(name, sample, reference):
    enc = Encoder(SPEC, "cpu", backend=name)
    docs, queries = enc.encode_documents(sample), enc.encode_queries(QUERIES)
    bar = get_backend(name).min_cosine
    assert docs.shape == reference[0].shape and docs.dtype == np.float32
    assert (docs * reference[0]).sum(1).min() >= bar
    # Queries: onnx-int8 encodes them with its fp32 export, so every backend meets fp32's bar.
    assert (queries * reference[1]).sum(1).min() >= 0.9999


@pytest.mark.parametrize("name", ["torch", *EXPORTED])
def test_query_vectors_do_not_depend_on_their_batch(name):
    enc = Encoder(SPEC, "cpu", backend=name)
    together = enc.encode_queries(QUERIES * 4)
    for i, q in enumerate(QUERIES):
        assert np.array_equal(enc.encode_queries([q])[0], together[i])


@pytest.mark.parametrize("name", EXPORTED)
def test_graph_backends_encode_each_query_in_a_call_of_its_own(name, monkeypatch):
    """One query per call, padded to its own length bucket: a lone query is not filled to
    `batch_size` rows (32 queries' work for one), and two queries make two calls."""
    enc = Encoder(SPEC, "cpu", backend=name)
    runner = enc.query_runner
    shapes = []

    def spy(ids, mask):
        shapes.append(ids.shape)
        return runner(ids, mask)

    monkeypatch.setattr(Encoder, "query_runner", property(lambda self: spy))
    enc.encode_queries(["open a file"])
    enc.encode_queries(["open a file", "format the eta of a progress bar in seconds"])
    assert shapes == [(1, 16), (1, 16), (1, 16)]


def test_identical_texts_are_encoded_once_and_scattered_back(torch_encoder):
    texts = ["open a file", "parse json", "open a file", "x" * 40, "parse json"]
    vectors = torch_encoder.encode_documents(texts)
    stats = torch_encoder.last_stats
    assert stats["texts"] == 5 and stats["unique"] == 3
    assert np.array_equal(vectors[0], vectors[2]) and np.array_equal(vectors[1], vectors[4])
    alone = torch_encoder.encode_documents(["parse json"])[0]
    assert float(alone @ vectors[1]) > 0.99999


def test_tokenizer_matches_the_models_own_tokenizer(torch_encoder, sample):
    hf = torch_encoder.model.tokenizer(list(sample), truncation=True, max_length=256)["input_ids"]
    assert TextTokenizer(torch_encoder.model.tokenizer.backend_tokenizer, 256).ids(sample) == hf
    assert max(len(r) for r in hf) == 256  # the long text is cut at the model's limit


@pytest.mark.skipif("onnx" not in EXPORTED, reason="onnxruntime is not installed")
def test_exports_are_cached_by_content_hash(monkeypatch):
    first = exported.exported_model(SPEC, "onnx")
    meta = json.loads((first.folder / cache.META_FILE).read_text())
    assert meta["key"] == first.key and meta["onnx_sha256"] == cache.file_digests([first.onnx_path])[0]
    assert first.folder.parent == cache.encoders_dir() and first.key[:16] in first.folder.name

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(exported, "_make", no_export)
    assert exported.exported_model(SPEC, "onnx").folder == first.folder
    # A different recipe setting is a different key (and folder).
    other = exported._key(recipes.RECIPES["onnx"].__class__("onnx", 0.9999, parent="graph", settings="other"),
                          meta["source_sha256"])
    assert other != first.key


def test_a_damaged_export_is_not_used(tmp_path):
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / cache.ONNX_FILE).write_bytes(b"onnx")
    (folder / cache.TOKENIZER_FILE).write_text("{}")
    meta = {"key": "k", "onnx_size": 4, "onnx_sha256": sha256_file(folder / cache.ONNX_FILE),
            "max_seq_length": 256, "dimension": 384}
    (folder / cache.META_FILE).write_text(json.dumps(meta))
    assert exported._read_export(folder, "onnx", "k") is not None
    assert exported._read_export(folder, "onnx", "other key") is None
    (folder / cache.ONNX_FILE).write_bytes(b"ONNX")   # same size, other bytes
    assert exported._read_export(folder, "onnx", "k") is None


def test_unknown_and_missing_backends_say_what_to_do(monkeypatch):
    with pytest.raises(BadInputError, match="onnx-int8"):
        get_backend("tensorrt")
    monkeypatch.setattr(backends_mod.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDependencyError, match="pip install"):
        Encoder(SPEC, "cpu", backend="openvino")


def test_auto_picks_the_fastest_backend_that_passes_and_remembers_it(monkeypatch):
    measured = {"torch": (10.0, 1.0), "onnx": (14.0, 0.99999), "onnx-int8": (30.0, 0.995),
                "openvino": (20.0, 0.999)}
    calls = []

    def fake(spec, candidates, log, encoder):
        assert encoder is Encoder
        calls.append(candidates)
        table = {n: {"texts_per_s": measured[n][0], "min_cosine": measured[n][1],
                     "passes": measured[n][1] >= get_backend(n).min_cosine} for n in candidates}
        passing = [n for n in table if table[n]["passes"]]
        return {"choice": max(passing, key=lambda n: table[n]["texts_per_s"]), "backends": table}

    monkeypatch.setattr(calibrate, "calibrate", fake)
    monkeypatch.setattr(calibrate, "_cpu_signature", lambda: "test-cpu-signature")
    logs: list[str] = []
    monkeypatch.setattr(backends_mod.EncoderBackend, "available", lambda self: True)
    # openvino is faster but fails its bar; onnx-int8 is not auto's to pick (dev-set overlap).
    assert calibrate.choose_backend(SPEC, "cpu", logs.append, encoder=Encoder) == "onnx"
    assert calibrate.choose_backend(SPEC, "cpu", logs.append, encoder=Encoder) == "onnx"
    assert calls == [["torch", "onnx", "openvino"]] and any("FAILS the bar" in line for line in logs)
    assert calibrate.choose_backend(SPEC, "cuda", logs.append, encoder=Encoder) == "torch"


def test_index_records_its_encoder_and_refuses_a_mismatch(fixture_repo, tmp_path, capsys):
    from codenib.commands.cli import main
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions
    from codenib.index.loaded import check_encoder, load_index

    backend = EXPORTED[0] if EXPORTED else "torch"
    summary = build_index(fixture_repo, tmp_path / "i", BuildOptions(progress=False, device="cpu", encoder=backend))
    recorded = summary.manifest["model"]["encoder"]
    assert recorded["backend"] == backend
    index = load_index(tmp_path / "i")
    assert index.encoder_backend == backend and index.encoder().backend.name == backend
    other = "torch" if backend != "torch" else "onnx"
    with pytest.raises(EncoderMismatchError, match=f"encoded by the {backend} encoder"):
        check_encoder(index.manifest, other, index.path)
    check_encoder(index.manifest, None, index.path)
    assert main(["query", str(tmp_path / "i"), "open a file", "--encoder", other]) == 2
    assert "rebuild the index with --encoder" in capsys.readouterr().err


def test_progress_prints_lines_at_an_interval_where_there_is_no_terminal():
    now = [0.0]
    out = io.StringIO()
    bar = Progress("encode", 100, "texts", stream=out, interval=10.0, clock=lambda: now[0])
    assert bar.mode == "lines"
    for _ in range(10):
        now[0] += 3.0
        bar.update(10)
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3   # at 12 s and 24 s (10 s apart at least), then the final line
    assert lines[0] == "[progress] encode: 40/100 texts (40%), 3.3 texts/s, ETA 18s"
    assert lines[-1].startswith("[progress] encode: done 100/100 texts in 30.0s")
    assert Progress("x", 5, enabled=False, stream=out).mode == "off"


def test_device_cuda_without_a_gpu_names_the_device_fix(fixture_index_dir, sparse_only_index_dir, tmp_path, capsys):
    """torch's own failure is an AssertionError from deep in the model load; an index without
    vectors never uses the device, and runs whatever --device says."""
    import torch

    from codenib.commands.cli import main
    from codenib.engines.models import require_device

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(BadInputError, match=r"--device cuda, but this machine has no CUDA device.*fix: pass "
                                            r"--device cpu"):
        require_device("cuda")
    require_device("cpu")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "start the engine"}\n')
    base = ["run", "--queries", str(queries), "--device", "cuda", "--quiet"]
    assert main(base + ["--index", str(fixture_index_dir), "--out", str(tmp_path / "dense")]) == 2
    # In this process the device check says it; where a Ray is already up (the job then runs on
    # it), the placement check does (issue 13's GPU resource message).
    err = capsys.readouterr().err
    assert "--device cuda, but this machine has no CUDA device" in err or "has resource 'GPU'" in err, err
    assert not (tmp_path / "dense").exists()
    assert main(base + ["--index", str(sparse_only_index_dir), "--out", str(tmp_path / "sparse")]) == 0
