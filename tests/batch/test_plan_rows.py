"""The driver plans every query once; shards carry the plans and workers execute them."""

import pickle

import pytest

from codenib.batch.query_rows import QueryRow, Shard
from codenib.model.session import RetrievalSession
from codenib.batch.worker import ShardOptions, process_shard
from codenib.core.errors import BadInputError, CodeNibError
from codenib.model.planner import plan_options, plan_rows
from tests.retrieval import Retrieval


def _rows(path):
    return (QueryRow("q1", "who calls Engine.prepare?", "ix", path),
            QueryRow("q2", "Turn the given text into a lowercase slug.", "ix", path, mode="all"),
            QueryRow("q3", "", "ix", path, error="empty query text"))


def test_rows_carry_their_plans(sparse_only_index):
    path = str(sparse_only_index.path)
    rows = plan_rows(_rows(path), plan_options("balanced"), {path: sparse_only_index.capabilities()})
    rows = pickle.loads(pickle.dumps(rows))  # shipped to the actors as data
    assert [p.mode for p in rows[0].plans] == ["auto"]
    assert rows[0].planned("auto").plan.plan == "structural_graph"
    assert [p.mode for p in rows[1].plans] == ["sparse", "dense", "hybrid", "graph", "auto"]
    # No dense vectors: the dense and hybrid modes degrade, and the trace says why.
    assert rows[1].planned("dense").plan.plan == "fast_lexical"
    assert rows[1].planned("dense").trace.reasons == ("semantic -> fast_lexical: the index has no dense vectors",)
    assert rows[2].plans == ()
    # The worker executes the carried plan: the same ranking as planning in-process.
    res, plans = process_shard(Shard(0, "ix", path, rows), RetrievalSession.of(sparse_only_index), ShardOptions(k=10))
    direct = Retrieval(sparse_only_index).search("who calls Engine.prepare?", k=10)
    assert [r["node_id"] for r in res.to_pylist() if r["qid"] == "q1"] == [c.node_id for c in direct.candidates]
    # Error rows first, then groups by (budget, mode): "all" writes each distinct plan once.
    assert plans.column("mode").to_pylist() == ["auto", "sparse", "graph", "auto", "auto"]


def test_unplanned_rows_and_bad_options_are_errors(sparse_only_index):
    path = str(sparse_only_index.path)
    with pytest.raises(CodeNibError, match="no plan for mode 'auto'"):
        process_shard(Shard(0, "ix", path, _rows(path)[:1]), RetrievalSession.of(sparse_only_index), ShardOptions())
    with pytest.raises(BadInputError, match="unknown reranker"):
        plan_options("balanced", "auto", "magic")


def test_the_driver_plans_with_each_index_symbol_table(sparse_only_index):
    from codenib.batch.driver import _symbol_tables

    path = str(sparse_only_index.path)
    # Two plain words: only the index's symbol table says they name definitions.
    rows = (QueryRow("q1", "who calls prepare or slugify", "ix", path),
            QueryRow("q2", "who calls prepare or slugify", "ix", path, mode="sparse"))
    tables = _symbol_tables(rows, "auto", {path: {}})
    assert list(tables) == [path] and tables[path].definitions("slugify") == ("name", 1)
    planned = plan_rows(rows, plan_options("balanced"), {path: sparse_only_index.capabilities()}, tables)
    auto = planned[0].planned("auto")
    assert auto.plan.plan == "structural_graph" and auto.signals.targets == ("prepare", "slugify")
    unplanned = plan_rows(rows, plan_options("balanced"), {path: sparse_only_index.capabilities()})
    assert unplanned[0].planned("auto").plan.plan != "structural_graph"
    # Rows of a fixed mode need no table.
    assert _symbol_tables(rows[1:], "auto", {path: {}}) == {}
