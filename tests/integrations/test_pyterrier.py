"""CodeNib as a real PyTerrier transformer (skipped without `codenib[pyterrier]`):
pt.Experiment over CodeNib gives the numbers `codenib eval` gives for `codenib run`."""

import json

import ir_measures
import pytest

pt = pytest.importorskip("pyterrier")
pd = pytest.importorskip("pandas")

from codenib.batch.driver import RunOptions, run_job  # noqa: E402
from codenib.commands.cli import main  # noqa: E402
from codenib.core.errors import BadInputError  # noqa: E402
from codenib.integrations.pyterrier import CodeNib, CodeNibFiles  # noqa: E402
from tests.batch.conftest import QUERIES, write_queries  # noqa: E402

# Hand-judged against tests/fixture_repo.py.
GOLD = {
    "q1": ["pkg/core.py::run_engine"],                                    # where is run_engine defined
    "q2": ["pkg/core.py::Engine.start", "pkg/core.py::run_engine.inner"],  # who calls Engine.prepare?
    "q3": ["pkg/core.py::Engine.prepare", "pkg/util.py::helper", "pkg/util.py::Store.put",
           "pkg/util.py::slugify"],                                        # what does Engine.start call?
    "q4": ["pkg/util.py::slugify"],                                        # lowercase slug
    "q5": ["pkg/util.py::Store.put"],                                      # Store an item
    "q7": ["pkg/util.py::helper", "pkg/core.py::Engine.start"],            # callers of slugify
}
MEASURES = ["RR@10", "R@10", "nDCG@10", "AP", "P@5"]
IR_MEASURES = [ir_measures.parse_measure(m) for m in MEASURES]


@pytest.fixture(scope="module")
def topics():
    return pd.DataFrame({"qid": [q["qid"] for q in QUERIES], "query": [q["query"] for q in QUERIES]})


@pytest.fixture(scope="module")
def qrels():
    return pd.DataFrame([{"qid": q, "docno": d, "label": 1} for q, docs in GOLD.items() for d in docs])


def test_a_pyterrier_frame_with_node_ids(fixture_index_dir, topics):
    out = CodeNib(str(fixture_index_dir), mode="sparse", k=5).transform(topics)
    assert list(out.columns) == ["qid", "query", "docno", "score", "rank", "file", "plan", "codenib_score"]
    q4 = out[out.qid == "q6"]          # "helper": the exact name comes first
    assert q4.iloc[0].docno == "pkg/util.py::helper" and q4.iloc[0]["rank"] == 0
    assert list(q4["rank"]) == list(range(len(q4))) and q4.score.is_monotonic_decreasing
    assert set(out.plan) == {"fast_lexical"}
    assert all(d.split("::")[0] == f for d, f in zip(out.docno, out.file))


def test_pt_experiment_agrees_with_codenib_eval(fixture_index_dir, topics, qrels, tmp_path, capsys):
    idx = str(fixture_index_dir)
    table = pt.Experiment([CodeNib(idx, mode="auto", k=20), CodeNib(idx, mode="sparse", k=20)],
                          topics, qrels, eval_metrics=IR_MEASURES, names=["auto", "sparse"])
    queries = write_queries(tmp_path / "q.parquet", QUERIES)
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text("".join(f"{q} 0 {d} 1\n" for q, docs in GOLD.items() for d in docs))
    for mode in ("auto", "sparse"):
        out = tmp_path / mode
        run_job(RunOptions(queries=str(queries), index=idx, out=str(out), mode=mode, k=20, progress=False),
                log=lambda m: None)
        capsys.readouterr()
        assert main(["eval", "--results", str(out), "--qrels", str(qrels_file), "--measures", ",".join(MEASURES)]) == 0
        ours = json.loads(capsys.readouterr().out)["systems"][mode]["node"]
        theirs = table[table.name == mode].iloc[0]
        assert {m: theirs[m] for m in MEASURES} == pytest.approx(ours, abs=1e-9), mode
    # Not a vacuous agreement: auto (graph plans for q2, q3, q7) beats plain BM25 here.
    assert table.set_index("name").loc["auto", "RR@10"] > table.set_index("name").loc["sparse", "RR@10"]
    assert not pt.java.started()  # PyTerrier's Python core only: no JVM, no Terrier download


def test_file_level_variant(fixture_index_dir, topics):
    nodes = CodeNib(str(fixture_index_dir), mode="sparse", k=10).transform(topics)
    files = CodeNibFiles(str(fixture_index_dir), mode="sparse", k=10).transform(topics)
    for qid, group in files.groupby("qid"):
        node_files = list(dict.fromkeys(nodes[nodes.qid == qid].file))
        assert list(group.docno) == node_files      # each file where its first node ranks
        assert list(group["rank"]) == list(range(len(group)))
    file_qrels = pd.DataFrame([{"qid": "q4", "docno": "pkg/util.py", "label": 1}])
    res = pt.Experiment([CodeNibFiles(str(fixture_index_dir), mode="sparse")], topics[topics.qid == "q4"],
                        file_qrels, eval_metrics=[ir_measures.RR @ 10])
    assert res.iloc[0]["RR@10"] == 1.0   # util.py holds slugify, BM25's first hit for the slug query


def test_composes_with_pyterrier_operators(fixture_index_dir, topics):
    top3 = CodeNib(str(fixture_index_dir), mode="sparse", k=10) % 3
    out = top3.transform(topics)
    assert out.groupby("qid").size().max() == 3


def test_bad_input(fixture_index_dir, topics):
    with pytest.raises(BadInputError, match="one CodeNib transformer per mode"):
        CodeNib(str(fixture_index_dir), mode="all")
    with pytest.raises(BadInputError, match="lack column"):
        CodeNib(str(fixture_index_dir), mode="sparse").transform(pd.DataFrame({"qid": ["1"]}))
