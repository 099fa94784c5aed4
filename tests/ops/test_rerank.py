"""Embedding rerank: persisted vectors equal online encoding; only the head is reordered."""

import numpy as np

from codenib.model.pipelines import rerank_context
from codenib.ops.rerank import EmbeddingRerankParams, RerankContext, embedding_rerank, embedding_rerank_batch
from codenib.ops.retrieve import RetrieveContext, from_node_ids

IDS = ["pkg/base.py::Base", "pkg/core.py::Engine.start", "pkg/util.py::helper", "pkg/util.py::slugify",
       "pkg/util.py::Store.put", "scripts/tool.py::main"]


def test_persisted_vectors_equal_online_encoding(fixture_index):
    cands = from_node_ids(IDS, [6, 5, 4, 3, 2, 1], "sparse", RetrieveContext(fixture_index))
    persisted = rerank_context(fixture_index)
    online = RerankContext(persisted.encode_queries, persisted.encode_documents, persisted.texts,
                           persisted.row_of, vectors=None)
    params = EmbeddingRerankParams(top_n=6)
    a = embedding_rerank(cands, "lowercase a slug", params, persisted)
    b = embedding_rerank(cands, "lowercase a slug", params, online)
    assert [c.node_id for c in a] == [c.node_id for c in b]
    np.testing.assert_allclose([c.score for c in a], [c.score for c in b], atol=1e-5)
    assert a[0].node_id == "pkg/util.py::slugify" and a[0].source == "rerank:embedding"


def test_only_the_head_moves_and_scores_stay_sorted(fixture_index):
    cands = from_node_ids(IDS, [6, 5, 4, 3, 2, 1], "sparse", RetrieveContext(fixture_index))
    out = embedding_rerank(cands, "lowercase a slug", EmbeddingRerankParams(top_n=4), rerank_context(fixture_index))
    assert sorted(c.node_id for c in out[:4]) == sorted(IDS[:4])
    assert [c.node_id for c in out[4:]] == IDS[4:]
    scores = [c.score for c in out]
    assert scores == sorted(scores, reverse=True)
    # alpha = 0 keeps the incoming order.
    same = embedding_rerank(cands, "anything", EmbeddingRerankParams(top_n=6, alpha=0.0), rerank_context(fixture_index))
    assert [c.node_id for c in same] == IDS


def test_batch_equals_one_by_one(fixture_index):
    ctx = rerank_context(fixture_index)
    lists = [from_node_ids(IDS, [1] * 6, "t", RetrieveContext(fixture_index)),
             from_node_ids(IDS[::-1], [1] * 6, "t", RetrieveContext(fixture_index))]
    queries = ["lowercase a slug", "start the engine"]
    batch = embedding_rerank_batch(lists, queries, EmbeddingRerankParams(top_n=6), ctx)
    for lst, q, got in zip(lists, queries, batch):
        assert got == embedding_rerank(lst, q, EmbeddingRerankParams(top_n=6), ctx)
