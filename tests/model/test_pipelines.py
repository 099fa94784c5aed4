"""Each pipeline mode end to end on the fixture index."""

import pytest

from codenib.model.pipelines import DenseGraphExpandRerankPipeline, SparseSeededGraphRetrievePipeline
from tests.retrieval import Retrieval

QUERIES = [
    "where is run_engine defined",
    "who calls Engine.prepare?",
    "what does Engine.start call?",
    "Turn the given text into a lowercase slug.",
    "",
]


def ids(result, n=5):
    return [c.node_id for c in result.candidates[:n]]


def test_auto_mode_end_to_end(fixture_index):
    pipe = Retrieval(fixture_index)
    results = pipe.run(QUERIES, k=10)
    assert [r.plan for r in results] == ["fast_lexical", "structural_graph", "structural_graph", "semantic", "none"]
    assert ids(results[0], 1) == ["pkg/core.py::run_engine"]
    assert set(ids(results[1], 2)) == {"pkg/core.py::Engine.start", "pkg/core.py::run_engine.inner"}
    assert set(ids(results[2], 4)) == {"pkg/core.py::Engine.prepare", "pkg/util.py::helper",
                                       "pkg/util.py::Store.put", "pkg/util.py::slugify"}
    assert "pkg/util.py::slugify" in ids(results[3], 3)
    assert results[4].error == "empty query text" and results[4].candidates == ()
    # The trace records signals, budget, capabilities and plan.
    trace = results[1].trace
    assert trace["plan"] == "structural_graph" and trace["budget"] == "balanced"
    assert trace["capabilities"]["graph"] is True and trace["signals"]["direction"] == "incoming"
    assert trace["detail"]["targets"] == ["pkg/core.py::Engine.prepare"]
    for r in results[:4]:
        scores = [c.score for c in r.candidates]
        assert scores == sorted(scores, reverse=True)
        assert len(r.candidates) == len({c.node_id for c in r.candidates})


@pytest.mark.parametrize("mode,plan", [("sparse", "fast_lexical"), ("dense", "semantic"),
                                       ("hybrid", "hybrid_fusion"), ("graph", "structural_graph")])
def test_fixed_modes(fixture_index, mode, plan):
    pipe = Retrieval(fixture_index, retrieval_mode=mode)
    results = pipe.run(QUERIES[:4], k=5)
    assert all(r.plan == plan for r in results)
    assert all(r.candidates for r in results)
    assert all(r.trace["mode"] == mode for r in results)


def test_embedding_rerank_and_budgets(fixture_index):
    for budget in ("fast", "balanced", "thorough"):
        pipe = Retrieval(fixture_index, budget=budget, rerank="embedding")
        res = pipe.run(["lowercase text into a slug", "who calls Engine.prepare?"], k=5)
        assert "pkg/util.py::slugify" in ids(res[0], 3)
        assert res[0].trace["detail"]["plan"]["rerank"] == "embedding"


def test_index_without_dense_vectors_still_answers(sparse_only_index):
    pipe = Retrieval(sparse_only_index)
    results = pipe.run(QUERIES[:4], k=5)
    assert results[3].plan == "fast_lexical"
    assert "no dense" in " ".join(results[3].trace["reasons"])
    assert all(r.candidates for r in results)


def test_sparse_seeded_graph_pipeline_bfs_and_ppr(fixture_index):
    for method in ("bfs", "ppr"):
        pipe = SparseSeededGraphRetrievePipeline(fixture_index, method=method, hops=2)
        out = pipe.run(["Engine start"], k=10)[0]
        got = [c.node_id for c in out]
        assert any(g.startswith("pkg/core.py::Engine") for g in got[:3])
        assert "pkg/util.py::slugify" in got  # reached through the graph from Engine.start


def test_dense_graph_expand_pipeline(fixture_index):
    pipe = DenseGraphExpandRerankPipeline(fixture_index)
    out = pipe.run(["lowercase text into a slug"], k=10)[0]
    got = [c.node_id for c in out]
    assert "pkg/util.py::slugify" in got[:3]
    assert "pkg/util.py::helper" in got  # the caller of slugify, one hop away
    scores = [c.score for c in out]
    assert scores == sorted(scores, reverse=True)


def test_long_report_uses_its_paths_and_keywords(fixture_index):
    report = ("Store loses items after upgrade\n\n" + "We see this in production every night. " * 30
              + '\nTraceback (most recent call last):\n  File "/venv/site-packages/pkg/core.py", line 19, in start\n'
              '  File "/venv/site-packages/pkg/util.py", line 14, in put\nTypeError: bad item\n')
    res = Retrieval(fixture_index, retrieval_mode="hybrid").run([report], k=10)[0]
    assert res.plan == "hybrid_fusion"
    detail = res.trace["detail"]
    assert detail["mentioned_files"] == ["pkg/core.py", "pkg/util.py"]
    assert len(detail["fusion_weights"]) == 4  # sparse, dense, file prior, symbols
    assert "pkg/util.py::Store.put" in [c.node_id for c in res.candidates[:3]]
    # auto sends a long report to files-first localisation, which reads the frames too.
    auto = Retrieval(fixture_index).run([report], k=10)[0]
    assert auto.plan == "bug_localisation"
    assert auto.trace["detail"]["runs"] == ["bm25", "file_bm25", "file_prose", "prose", "title"]   # no dense run (see BugLocalisation)
    assert "pkg/util.py::Store.put" in [c.node_id for c in auto.candidates[:3]]
