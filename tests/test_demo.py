"""`codenib demo --out D` replaces only what an earlier demo wrote into D."""

import shutil

import pytest

from codenib.commands.cli import main
from tests.batch.test_sink import tables


def _results_folder(out):
    from codenib.batch.sink import ParquetSink

    sink = ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1)
    sink.open()
    sink.commit(0, *tables("q0"))
    sink.finalize()
    sink.close()


def _report_folder(out, tmp_path):
    from tests.eval.conftest import write_qrels, write_results

    results = write_results(tmp_path / "run", {("q1", "fast_lexical"): ["a.py::f"]})
    qrels = write_qrels(tmp_path / "qrels.parquet", [{"qid": "q1", "node_id": "a.py::f", "relevance": 1}])
    assert main(["eval", "--results", str(results), "--qrels", str(qrels), "--out", str(out), "--no-plots"]) == 0


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def no_build(monkeypatch):
    """The refusal comes before any work: a demo that starts building fails the test at once."""
    def refuse(*args, **kwargs):
        raise AssertionError("the demo started building despite a foreign file")

    monkeypatch.setattr("codenib.compiler.build.build_index", refuse)


@pytest.mark.parametrize("foreign", ["results/thesis.txt", "results/_staging/draft.txt", "index/NOTES.txt",
                                     "report/notes.md", "README.txt"])
def test_a_demo_folder_holding_a_users_file_is_refused_untouched(tmp_path, sparse_only_index_dir, no_build,
                                                                 foreign, capsys):
    demo = tmp_path / "demo"
    shutil.copytree(sparse_only_index_dir, demo / "index")
    _results_folder(demo / "results")
    _report_folder(demo / "report", tmp_path)
    (demo / foreign).parent.mkdir(parents=True, exist_ok=True)
    (demo / foreign).write_text("mine")
    capsys.readouterr()
    before = _snapshot(demo)
    assert main(["demo", "--out", str(demo), "--no-dense", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert foreign.rsplit("/", 1)[-1] in err and "--force" in err
    assert _snapshot(demo) == before


def test_a_folder_that_is_not_a_demo_is_refused_without_force(tmp_path, no_build, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / "thesis.txt").write_text("mine")
    assert main(["demo", "--out", str(other), "--no-dense", "--quiet", "--force"]) == 2
    assert "not a CodeNib demo folder" in capsys.readouterr().err
    assert (other / "thesis.txt").read_text() == "mine"


def test_an_earlier_demos_folder_goes_on_and_force_deletes_only_the_foreign_files(tmp_path, sparse_only_index_dir,
                                                                                  no_build):
    from codenib.commands.demo import check_demo_dir

    demo = tmp_path / "demo"
    shutil.copytree(sparse_only_index_dir, demo / "index")
    _results_folder(demo / "results")
    _report_folder(demo / "report", tmp_path)
    assert check_demo_dir(demo, force=False) == []
    (demo / "results" / "thesis.txt").write_text("mine")
    (demo / "notes").mkdir()
    assert check_demo_dir(demo, force=True) == ["notes/", "results/thesis.txt"]
    ours = _snapshot(demo)
    with pytest.raises(AssertionError, match="started building"):   # went on to the build
        main(["demo", "--out", str(demo), "--no-dense", "--quiet", "--force"])
    assert not (demo / "notes").exists() and not (demo / "results" / "thesis.txt").exists()
    assert _snapshot(demo) == {k: v for k, v in ours.items() if k != "results/thesis.txt"}


def test_every_judged_node_of_the_demo_is_a_node_of_the_sample_it_indexes():
    """The bundled judgments name nodes of the bundled sample (CodeNib's own source, walked and
    parsed as the demo's index build does): a definition that moves or is renamed fails here,
    instead of quietly lowering the demo's scores."""
    from codenib.commands.demo import data_file, sample_repository
    from codenib.compiler.lang.python_parse import parse_file
    from codenib.compiler.walk import walk_repository
    from codenib.core.specs import read_jsonl
    from codenib.eval.qrels import read_qrels

    files = {f.rel_path: f for f in walk_repository(sample_repository())[0]}
    qrels = read_qrels(data_file("demo_qrels.txt")).nodes
    queries = {rec["qid"] for rec in read_jsonl(data_file("demo_queries.jsonl"))}
    assert set(qrels) == queries                     # every query judged, no judgment of another
    judged = sorted({nid for nodes in qrels.values() for nid in nodes})
    ids = {n.node_id for path in {nid.split("::", 1)[0] for nid in judged} if path in files
           for n in parse_file(files[path]).nodes}
    missing = [nid for nid in judged if nid not in ids]
    assert not missing, f"codenib/data/demo_qrels.txt judges ids that are no node of the sample: {missing}"
