"""Judgments merged from several files (a set's file and function qrels) and written back as
the rows `read_qrels` reads to the same judgments."""

import pyarrow.parquet as pq

from codenib.eval.qrels import QRELS_SCHEMA, JudgedQrels, merge_qrels, qrels_table, read_qrels

from tests.eval.conftest import write_qrels


def test_merged_judgments_keep_every_item_and_the_highest_grade(tmp_path):
    files = read_qrels(write_qrels(tmp_path / "f.parquet", [
        {"qid": "q1", "file": "a.js", "relevance": 1}, {"qid": "q1", "file": "b.js", "relevance": 1},
        {"qid": "q2", "file": "c.c", "relevance": 2}]))
    functions = read_qrels(write_qrels(tmp_path / "n.parquet", [
        {"qid": "q1", "node_id": "a.js::f", "relevance": 3}, {"qid": "q3", "node_id": "d.c::g", "relevance": 1}]))
    merged = merge_qrels([files, functions])
    assert merged.nodes == {"q1": {"a.js::f": 3}, "q3": {"d.c::g": 1}}
    # a.js is judged 1 as a file and 3 through its node: the highest grade stays.
    assert merged.files == {"q1": {"a.js": 3, "b.js": 1}, "q2": {"c.c": 2}, "q3": {"d.c": 1}}
    assert merged.source == f"{tmp_path / 'f.parquet'} + {tmp_path / 'n.parquet'}"
    assert merge_qrels([files]).nodes is None        # no part judges nodes


def test_the_written_table_reads_back_to_the_same_judgments(tmp_path):
    judged = JudgedQrels("x", nodes={"q1": {"a.js::f": 3}}, files={"q1": {"a.js": 3, "b.js": 1}, "q2": {"c.c": 2}})
    table = qrels_table(judged)
    assert table.schema == QRELS_SCHEMA
    assert table.to_pylist() == [
        {"qid": "q1", "node_id": "a.js::f", "file": "a.js", "relevance": 3},
        {"qid": "q1", "node_id": None, "file": "a.js", "relevance": 3},
        {"qid": "q1", "node_id": None, "file": "b.js", "relevance": 1},
        {"qid": "q2", "node_id": None, "file": "c.c", "relevance": 2}]
    pq.write_table(table, tmp_path / "q.parquet")
    back = read_qrels(tmp_path / "q.parquet")
    assert (back.nodes, back.files) == (judged.nodes, judged.files)
