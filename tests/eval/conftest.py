"""Builders of results folders, qrels and query sets, written with pyarrow directly."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codenib.core.types import PLANS_SCHEMA, RESULTS_SCHEMA, file_of


def write_results(folder, rankings, *, plans=None, success=True, shard_size=2, run_tag="test-run"):
    """Write a results folder like the batch job does.

    `rankings`: {(qid, plan): [node_id, ...]} best first; `plans`: list of PLANS_SCHEMA
    row dicts (missing fields are null). Rows are cut into part files of `shard_size` queries.
    """
    folder.mkdir(parents=True, exist_ok=True)
    keys = list(rankings)
    qids = sorted({q for q, _ in keys})
    shards = [qids[i:i + shard_size] for i in range(0, len(qids), shard_size)]
    for n, shard in enumerate(shards):
        rows = []
        for (qid, plan), nodes in rankings.items():
            if qid not in shard:
                continue
            for rank, node in enumerate(nodes, 1):
                rows.append({"qid": qid, "rank": rank, "node_id": node, "file": file_of(node),
                             "score": 10.0 - rank * 0.1, "plan": plan, "index": "idx/click",
                             "run_tag": run_tag})
        pq.write_table(pa.Table.from_pylist(rows, schema=RESULTS_SCHEMA), folder / f"part-{n:05d}.parquet")
    if plans is not None:
        full = [{name: row.get(name) for name in PLANS_SCHEMA.names} for row in plans]
        pq.write_table(pa.Table.from_pylist(full, schema=PLANS_SCHEMA), folder / "plans.parquet")
    (folder / "_manifest.json").write_text(json.dumps({"shards": [f"part-{n:05d}.parquet"
                                                                  for n in range(len(shards))]}))
    if success:
        (folder / "_SUCCESS").write_text("")
    return folder


def write_qrels(path, rows, *, relevance_type=pa.int64()):
    """Write qrels rows ({qid, node_id, [file], relevance}) as Parquet."""
    columns = {name: [r.get(name) for r in rows] for name in rows[0]}
    arrays = {name: pa.array(values, type=relevance_type if name == "relevance" else None)
              for name, values in columns.items()}
    pq.write_table(pa.table(arrays), path)
    return path


def write_queries(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture
def small_case(tmp_path):
    """A small auto run with plans and kinds: three judged queries, one without results."""
    rankings = {
        ("q1", "fast_lexical"): ["a.py::f", "a.py::g", "b.py::h"],
        ("q2", "semantic"): ["b.py::x", "c.py::y", "b.py::h"],
        ("q4", "semantic"): ["a.py::f"],  # not judged: ignored
    }
    plans = [{"qid": q, "plan": p, "budget": "balanced", "mode": "auto", "index": "idx/click"}
             for q, p in rankings]
    results = write_results(tmp_path / "run", rankings, plans=plans)
    qrels = write_qrels(tmp_path / "qrels.parquet", [
        {"qid": "q1", "node_id": "a.py::g", "file": "a.py", "relevance": 1},
        {"qid": "q2", "node_id": "b.py::h", "file": "b.py", "relevance": 1},
        {"qid": "q2", "node_id": "d.py::z", "file": "d.py", "relevance": 1},
        {"qid": "q3", "node_id": "c.py::w", "file": "c.py", "relevance": 1},  # no results: zero
    ])
    queries = write_queries(tmp_path / "queries.parquet", [
        {"qid": "q1", "query": "g", "kind": "lexical"},
        {"qid": "q2", "query": "who calls h", "kind": "structural"},
        {"qid": "q3", "query": "w does things", "kind": "semantic"},
        {"qid": "q4", "query": "f", "kind": "lexical"},
    ])
    return {"results": results, "qrels": qrels, "queries": queries, "tmp": tmp_path}
