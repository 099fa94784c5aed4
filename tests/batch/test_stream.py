"""The driver streams the query set (issue 13, item 4): record batches are validated in one
pass and read again while the job runs; shards, plans and results equal those of the
in-memory path, whatever the batch size."""

import json
import shutil
import sys
from functools import partial

import pyarrow.parquet as pq
import pytest

from codenib.batch import scan as scan_module
from codenib.batch.driver import RunOptions, run_job, stream_shards
from codenib.model.planner import plan_options, plan_rows
from codenib.batch.queries import read_query_set
from codenib.batch.scan import scan_query_set
from codenib.core.errors import BadInputError
from codenib.core.results import read_results
from tests.batch.conftest import write_queries

#: Rows per record batch in these tests: 11 queries make three batches (4, 4, 3).
BATCH = 4


def _rows():
    """q0..q10 alternating indexes a and b; q5 (second batch) has no text, q6 (second batch)
    names an index that does not exist."""
    rows = [{"qid": f"q{i}", "query": f"where is slugify defined {i}", "index": "a" if i % 2 == 0 else "b"}
            for i in range(11)]
    rows[5]["query"] = "   "
    rows[6]["index"] = "nope"
    return rows


@pytest.fixture()
def root(tmp_path, sparse_only_index_dir):
    """Two indexes, a and b, under one root (copies of the sparse-only fixture index)."""
    root = tmp_path / "indexes"
    for name in ("a", "b"):
        shutil.copytree(sparse_only_index_dir, root / name)
    return root


def _planner(root):
    from codenib.core.artifact import read_manifest
    from codenib.index.loaded import capabilities_of

    caps = {str((root / n).resolve()): capabilities_of(read_manifest(root / n)) for n in ("a", "b")}
    return partial(plan_rows, options=plan_options("balanced"), capabilities=caps, symbols={})


# Hand-computed: grouped by index name (a, b, nope), input order within each, cut every 2.
EXPECTED_SHARDS = [(0, "a", ["q0", "q2"]), (1, "a", ["q4", "q8"]), (2, "a", ["q10"]),
                   (3, "b", ["q1", "q3"]), (4, "b", ["q5", "q7"]), (5, "b", ["q9"]), (6, "nope", ["q6"])]


def test_streamed_shards_equal_the_in_memory_shards(tmp_path, root):
    path = write_queries(tmp_path / "q.parquet", _rows())
    plan = _planner(root)
    whole = read_query_set(path, index_root=root)
    expected = [s for s in whole.shards(2)]
    expected_rows = {r.qid: r for r in plan(list(whole.rows))}
    with scan_query_set(path, index_root=root, batch_rows=BATCH) as scan:
        assert scan.count == 11 and scan.digest == whole.digest and scan.warnings == whole.warnings
        layout = scan.layout(2)
        streamed = list(stream_shards(scan, layout, layout.shards, frozenset(), plan=plan))
        # A shard is yielded once its last row arrived: q6 (nope) and q7 (b, 2nd) in batch 2 first.
        assert [s.shard_id for s in streamed] == [0, 3, 6, 4, 1, 5, 2]
        streamed.sort(key=lambda s: s.shard_id)
        assert [(s.shard_id, s.index, [r.qid for r in s.rows]) for s in streamed] == EXPECTED_SHARDS
        assert [(s.shard_id, s.index, [r.qid for r in s.rows]) for s in expected] == EXPECTED_SHARDS
        for s in streamed:
            assert list(s.rows) == [expected_rows[r.qid] for r in s.rows]
        rows = {r.qid: r for s in streamed for r in s.rows}
        assert rows["q5"].error == "empty query text" and not rows["q5"].plans
        assert rows["q6"].error.startswith("index 'nope' not found") and not rows["q6"].plans
        assert rows["q7"].error is None and rows["q7"].plans
        # Committed shards are skipped: their rows are read, never planned.
        calls = []
        counting = lambda rows: calls.append(len(rows)) or plan(rows)   # noqa: E731
        rest = list(stream_shards(scan, layout, layout.shards, frozenset({0, 3, 4}), plan=counting))
        assert [s.shard_id for s in rest] == [6, 1, 5, 2] and sum(calls) == 11 - 6


def _in_process(monkeypatch):
    """Keep the job in this process even when another test of the session started Ray."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if "ray" in sys.modules:
        monkeypatch.setattr(sys.modules["ray"], "is_initialized", lambda: False)


def test_a_job_over_several_batches_writes_what_one_batch_writes(tmp_path, root, monkeypatch):
    _in_process(monkeypatch)
    path = write_queries(tmp_path / "q.parquet", _rows())
    opts = dict(queries=str(path), index_root=str(root), shard_size=2, progress=False, mode="sparse", k=5)
    one = run_job(RunOptions(out=str(tmp_path / "one"), **opts), log=lambda m: None)
    monkeypatch.setattr(scan_module, "BATCH_ROWS", BATCH)
    logs: list[str] = []
    many = run_job(RunOptions(out=str(tmp_path / "many"), **opts), log=logs.append)
    assert many.runner != "ray" and many.shards == 7 and many.queries == 11
    assert many.errors == one.errors == 2 and many.plans == one.plans == {"fast_lexical": 9, "none": 2}   # error rows: plan "none"
    plans_one = pq.read_table(tmp_path / "one" / "plans.parquet")
    plans_many = pq.read_table(tmp_path / "many" / "plans.parquet")
    assert plans_many.schema.equals(plans_one.schema, check_metadata=False)
    # Every column but the measured latency is the same, row for row.
    same = [c for c in plans_one.column_names if c != "latency_ms"]
    assert plans_many.select(same).equals(plans_one.select(same))
    # plans.parquet in shard order: a's queries, b's, then nope's; the bad rows recorded per row.
    assert plans_many.column("qid").to_pylist() == [q for _, _, qids in EXPECTED_SHARDS for q in qids]
    errors = dict(zip(plans_many.column("qid").to_pylist(), plans_many.column("error").to_pylist()))
    assert errors["q5"] == "empty query text" and "index 'nope' not found" in errors["q6"]
    assert sum(1 for e in errors.values() if e) == 2
    assert read_results(tmp_path / "many").equals(read_results(tmp_path / "one"))
    assert set(read_results(tmp_path / "many").column("qid").to_pylist()) == set(errors) - {"q5", "q6"}
    # The same run id (the streamed digest is the in-memory one), and a re-run does nothing.
    assert many.run_id == one.run_id
    again = run_job(RunOptions(out=str(tmp_path / "many"), **opts), log=logs.append)
    assert again.shards_run == 0 and again.shards_resumed == 7
    assert any("already complete" in line for line in logs)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_duplicate_qid_across_batches_is_rejected(tmp_path, sparse_only_index_dir, suffix):
    rows = [{"qid": f"q{i}", "query": "x"} for i in range(9)]
    rows[6]["qid"] = "q1"      # row 7, in the second batch; q1 is row 2, in the first
    path = tmp_path / f"q{suffix}"
    if suffix == ".parquet":
        write_queries(path, rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(BadInputError, match=r"duplicate qid\(s\): 'q1' \(rows 2 and 7\)") as err:
        scan_query_set(path, index=sparse_only_index_dir, batch_rows=BATCH)
    assert str(path) in str(err.value) and "make every `qid` unique" in str(err.value)


def test_qids_whose_hashes_collide_are_not_duplicates(tmp_path, sparse_only_index_dir, monkeypatch):
    # Every qid gets the same hash: only the second look at the rows can tell them apart.
    monkeypatch.setattr(scan_module, "_qid_hash", lambda qid: 7)
    rows = [{"qid": f"q{i}", "query": "x"} for i in range(9)]
    path = write_queries(tmp_path / "q.parquet", rows)
    with scan_query_set(path, index=sparse_only_index_dir, batch_rows=BATCH) as scan:
        assert scan.count == 9
    rows[8]["qid"] = "q3"
    write_queries(path, rows)
    with pytest.raises(BadInputError, match=r"duplicate qid\(s\): 'q3' \(rows 4 and 9\)"):
        scan_query_set(path, index=sparse_only_index_dir, batch_rows=BATCH)


def test_row_numbers_of_whole_file_problems_count_across_batches(tmp_path, sparse_only_index_dir):
    rows = [{"qid": f"q{i}", "query": "x", "mode": "sparse"} for i in range(30)]
    for i in (1, 5, 9, 13, 17, 21, 25, 26, 27, 28, 29):   # 11 bad rows over all batches
        rows[i]["mode"] = "fuzzy"
    rows[6]["qid"] = ""        # an empty qid is reported before an invalid mode
    path = write_queries(tmp_path / "q.parquet", rows)
    with pytest.raises(BadInputError, match=r"empty or missing qid in row\(s\) 7\b"):
        scan_query_set(path, index=sparse_only_index_dir, batch_rows=BATCH)
    rows[6]["qid"] = "q6"
    write_queries(path, rows)
    with pytest.raises(BadInputError, match=r"invalid `mode` in row\(s\) 2, 6, 10, 14, 18, 22, 26, 27, 28, 29 "
                                            r"and 1 more"):
        scan_query_set(path, index=sparse_only_index_dir, batch_rows=BATCH)
