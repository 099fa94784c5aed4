"""`codenib eval --export-trec`, read back by ir_measures' own TREC readers against the qrels in
TREC form, gives the numbers `codenib eval` gives (node level)."""

import json

import ir_measures
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codenib.commands.cli import main

from tests.eval.conftest import write_qrels, write_results

# Every default measure that ir_measures knows (Acc@k is CodeNib's own).
MEASURES = ("R@1", "R@5", "R@10", "R@100", "P@1", "P@5", "P@10", "RR@10", "nDCG@10", "AP")

RANKINGS = {
    ("q1", "fast_lexical"): ["a.py::f", "a.py::g", "b.py::h", "c.py::k"],
    ("q2", "semantic"): ["b.py::x", "c.py::y", "b.py::h", "a.py::g", "d.py::z"],
    ("q3", "hybrid_fusion"): ["e.py::u", "e.py::v"],
    ("q4", "semantic"): ["a.py::f"],                # not judged: neither side scores it
}
QRELS = [
    {"qid": "q1", "node_id": "a.py::g", "relevance": 1},
    {"qid": "q1", "node_id": "c.py::k", "relevance": 2},  # graded: nDCG weighs it double
    {"qid": "q1", "node_id": "a.py::f", "relevance": 0},  # judged, not relevant
    {"qid": "q2", "node_id": "b.py::h", "relevance": 1},
    {"qid": "q2", "node_id": "d.py::z", "relevance": 1},
    {"qid": "q2", "node_id": "f.py::never", "relevance": 1},
    {"qid": "q3", "node_id": "e.py::v", "relevance": 1},
    {"qid": "q5", "node_id": "c.py::w", "relevance": 1},  # no results: zero on both sides
]


@pytest.fixture
def case(tmp_path):
    results = write_results(tmp_path / "run", RANKINGS)
    # q2's scores tie and q3's rise with rank: the export must rewrite them, or trec_eval's
    # re-sort by score would change the ranking ir_measures reads.
    for part in sorted(results.glob("part-*.parquet")):
        t = pq.read_table(part)
        scores = [1.0 if q == "q2" else (float(r) if q == "q3" else s)
                  for q, r, s in zip(*(t.column(c).to_pylist() for c in ("qid", "rank", "score")))]
        pq.write_table(t.set_column(t.schema.get_field_index("score"), "score",
                                    pa.array(scores, pa.float64())), part)
    qrels = write_qrels(tmp_path / "qrels.parquet", QRELS)
    trec_qrels = tmp_path / "qrels.txt"
    trec_qrels.write_text("".join(f"{r['qid']} 0 {r['node_id']} {r['relevance']}\n" for r in QRELS))
    return results, qrels, trec_qrels, tmp_path


def test_exported_run_scored_by_ir_measures_matches_codenib_eval(case, capsys):
    results, qrels, trec_qrels, tmp = case
    trec = tmp / "run.trec"
    assert main(["eval", "--results", str(results), "--qrels", str(qrels), "--export-trec", str(trec),
                 "--measures", ",".join(MEASURES)]) == 0
    ours = json.loads(capsys.readouterr().out)["systems"]["run"]["node"]

    measures = [ir_measures.parse_measure(m) for m in MEASURES]
    run = list(ir_measures.read_trec_run(str(trec)))
    trec_qrels_rows = list(ir_measures.read_trec_qrels(str(trec_qrels)))
    theirs = {str(m): v for m, v in ir_measures.calc_aggregate(measures, trec_qrels_rows, run).items()}
    # Both average over the queries with a relevant judgment (q1, q2, q3, q5), a query
    # without results (q5) scoring 0, and skip the unjudged q4.
    scored = {m.query_id for m in ir_measures.iter_calc(measures, trec_qrels_rows, run)}
    assert scored == {"q1", "q2", "q3", "q5"}
    assert ours == pytest.approx(theirs, abs=1e-12)
    # Hand-computed anchors, so that agreement cannot come from both sides being wrong:
    # q1 finds g at 2 (RR 1/2), q2 finds h at 3 (1/3), q3 finds v at 2 (1/2), q5 nothing.
    assert ours["RR@10"] == pytest.approx((1 / 2 + 1 / 3 + 1 / 2 + 0) / 4)
    assert ours["R@5"] == pytest.approx((1 + 2 / 3 + 1 + 0) / 4)


def test_codenib_reads_the_trec_files_it_exports_with_the_same_numbers(case, capsys):
    results, qrels, trec_qrels, tmp = case
    trec = tmp / "run.trec"
    assert main(["eval", "--results", str(results), "--export-trec", str(trec)]) == 0
    capsys.readouterr()
    assert main(["eval", "--results", str(trec), "--qrels", str(trec_qrels),
                 "--measures", ",".join(MEASURES)]) == 0
    from_trec = json.loads(capsys.readouterr().out)["systems"]
    assert main(["eval", "--results", str(results), "--qrels", str(qrels),
                 "--measures", ",".join(MEASURES)]) == 0
    from_parquet = json.loads(capsys.readouterr().out)["systems"]
    assert next(iter(from_trec.values()))["node"] == pytest.approx(from_parquet["run"]["node"])
