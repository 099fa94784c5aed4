"""`codenib index`: artifacts, atomicity, bad input and the closing summary."""

import json
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from codenib.core import artifact
from codenib.commands.cli import main
from codenib.compiler import build as build_module
from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.compiler.lang.python_parse import parse_file
from codenib.compiler.lang.python_resolve import build_edges
from codenib.compiler.walk import walk_repository
from codenib.core.errors import BadInputError, IndexFormatError
from codenib.index.loaded import load_index
from codenib.core.types import EDGES_SCHEMA, NODES_SCHEMA, file_of

NO_DENSE = BuildOptions(dense=False, progress=False)


@pytest.fixture(scope="module")
def sparse_index(fixture_repo, tmp_path_factory):
    out = tmp_path_factory.mktemp("idx") / "fixture"
    build_index(fixture_repo, out, NO_DENSE)
    return out


def test_artifacts_follow_the_design(sparse_index):
    nodes = pq.read_table(sparse_index / "nodes.parquet")
    edges = pq.read_table(sparse_index / "edges.parquet")
    assert nodes.schema.names == NODES_SCHEMA.names
    assert edges.schema.names == EDGES_SCHEMA.names
    ids = nodes.column("node_id").to_pylist()
    assert ids == sorted(ids)  # row order = node id order = tie-break order
    manifest = json.loads((sparse_index / "manifest.json").read_text())
    assert manifest["format"] == "codenib-index" and manifest["format_version"] == 1
    assert manifest["counts"]["nodes"] == len(ids) == 23
    assert manifest["counts"]["nodes_by_kind"] == {"file": 5, "class": 3, "function": 7, "method": 8}
    assert manifest["model"] is None
    assert set(manifest["artifacts"]) >= {"nodes.parquet", "edges.parquet", "sparse/vocab.index.json"}
    assert manifest["tokenizer"]["stemmer"] == "english"


def test_edges_of_the_two_pass_build_are_those_of_build_edges(fixture_repo, sparse_index):
    # The build lets each file's tree go after pass 1 and parses it again for pass 2.
    files, _ = walk_repository(fixture_repo)
    expected = [(e.src, e.dst, e.type, e.count) for e in build_edges([parse_file(f) for f in files])]
    edges = pq.read_table(sparse_index / "edges.parquet").to_pylist()
    assert [(e["src"], e["dst"], e["type"], e["count"]) for e in edges] == expected


def test_every_stage_sees_the_bytes_read_once_even_if_a_file_changes_meanwhile(tmp_path, monkeypatch):
    # The build reads each file once and parses, resolves and tokenizes those bytes: an
    # edit during the build cannot give nodes of one version and edges of another.
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("def f():\n    return g()\n\ndef g():\n    return 1\n")
    real = build_module.read_sources

    def read_then_edit(files, read_file=None):
        read = real(files, read_file)
        (repo / "a.py").write_text("def h():\n    return 2\n")
        return read

    monkeypatch.setattr(build_module, "read_sources", read_then_edit)
    build_index(repo, tmp_path / "idx", NO_DENSE)
    nodes = pq.read_table(tmp_path / "idx" / "nodes.parquet").column("node_id").to_pylist()
    edges = pq.read_table(tmp_path / "idx" / "edges.parquet").to_pylist()
    assert nodes == ["a.py", "a.py::f", "a.py::g"]
    assert {"src": "a.py::f", "dst": "a.py::g", "type": "calls", "count": 1} in edges


def test_loaded_graph_answers_typed_neighbour_queries(sparse_index):
    index = load_index(sparse_index)
    g = index.graph
    assert g.predecessors("pkg/core.py::Engine.prepare", ["calls"]) == [
        "pkg/core.py::Engine.start", "pkg/core.py::run_engine.inner"]
    assert g.successors("pkg/core.py::Engine", ["inherits"]) == ["pkg/base.py::Base"]
    assert "pkg/core.py::Engine.start" in g.successors("pkg/core.py::Engine", ["contains"])
    assert g.successors("pkg/core.py::Engine", ["calls"]) == []
    caps = index.capabilities()
    assert (caps.dense, caps.sparse, caps.graph) == (False, True, True)


def test_igraph_view_holds_every_edge_with_its_type_and_count(sparse_index):
    g = load_index(sparse_index).graph
    view = g.graph
    assert (view.vcount(), view.ecount()) == (g.num_nodes, g.num_edges)
    assert view.is_directed()
    by_type = {t: sum(1 for e in view.es if e["type"] == t) for t in g.edge_counts()}
    assert by_type == g.edge_counts()
    start, prepare = g.index_of["pkg/core.py::Engine.start"], g.index_of["pkg/core.py::Engine.prepare"]
    (edge,) = [e for e in view.es.select(_source=start, _target=prepare) if e["type"] == "calls"]
    assert edge["count"] >= 1
    assert view.neighbors(prepare, mode="in") and start in view.neighbors(prepare, mode="in")


def test_rebuild_replaces_an_existing_index(fixture_repo, sparse_index):
    before = json.loads((sparse_index / "manifest.json").read_text())["created"]
    build_index(fixture_repo, sparse_index, NO_DENSE)
    load_index(sparse_index)
    assert (sparse_index / "manifest.json").is_file()
    assert not list(sparse_index.parent.glob(".fixture.*"))  # no staging or old folders left
    assert before  # the created stamp existed before the rebuild


def test_corrupted_artifact_is_named(fixture_repo, tmp_path):
    out = tmp_path / "idx"
    build_index(fixture_repo, out, NO_DENSE)
    with open(out / "edges.parquet", "r+b") as fh:
        fh.seek(10)
        fh.write(b"XXXX")
    with pytest.raises(IndexFormatError, match="edges.parquet.*checksum"):
        load_index(out)
    build_index(fixture_repo, out, NO_DENSE)
    (out / "nodes.parquet").unlink()
    with pytest.raises(IndexFormatError, match="nodes.parquet.*missing"):
        load_index(out)


def test_other_format_version_is_refused(fixture_repo, tmp_path):
    out = tmp_path / "idx"
    build_index(fixture_repo, out, NO_DENSE)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["format_version"] = 99
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="format version 99"):
        load_index(out)


def test_bad_inputs_exit_2_and_write_nothing(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["index", str(tmp_path / "missing"), "--out", str(tmp_path / "o1"), "--no-dense"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["index", str(empty), "--out", str(tmp_path / "o2"), "--no-dense"]) == 2
    assert "no source files" in capsys.readouterr().err
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.txt").write_text("do not delete")
    (empty / "a.py").write_text("x = 1\n")
    assert main(["index", str(empty), "--out", str(precious), "--no-dense"]) == 2
    err = capsys.readouterr().err
    assert "not a CodeNib index" in err and "write to another folder (--out" in err
    assert (precious / "thesis.txt").read_text() == "do not delete"
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()


def test_broken_files_are_indexed_with_parse_errors_and_the_build_goes_on(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "good.py").write_text("def ok():\n    return 1\n")
    (repo / "py2.py").write_text('print "old"\n')
    (repo / "latin.py").write_bytes(b"s = '\xe9'\n")
    (repo / "nul.py").write_bytes(b"x = 1\x00\n")
    assert main(["index", str(repo), "--out", str(tmp_path / "idx"), "--no-dense", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "3 with parse errors" in err and "warning: py2.py" in err
    nodes = pq.read_table(tmp_path / "idx" / "nodes.parquet").to_pylist()
    errors = {n["node_id"]: n["parse_error"] for n in nodes if n["parse_error"]}
    assert set(errors) == {"py2.py", "latin.py", "nul.py"}
    assert "good.py::ok" in [n["node_id"] for n in nodes]


def test_interrupted_build_leaves_no_loadable_index(fixture_repo, tmp_path):
    """Kill a build midway (after the first artifact is staged): nothing loads as an index."""
    out = tmp_path / "killed"
    # With dense vectors the build spends seconds loading the model after staging the
    # node table: that is where it is killed.
    proc = subprocess.Popen([sys.executable, "-m", "codenib.commands.cli", "index", str(fixture_repo),
                             "--out", str(out), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        staged = []
        while time.time() < deadline and not staged:
            staged = list(tmp_path.glob(".killed.staging-*/nodes.parquet"))
            time.sleep(0.05)
        assert staged, "the build never staged nodes.parquet"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()
    staging = staged[0].parent
    with pytest.raises(IndexFormatError, match="no manifest.json"):
        artifact.read_manifest(staging)
    # The next build clears the dead build's staging folder and succeeds.
    build_index(fixture_repo, out, NO_DENSE)
    assert not staging.exists()
    load_index(out)


def test_failed_build_keeps_the_previous_index(fixture_repo, tmp_path, monkeypatch):
    out = tmp_path / "idx"
    build_index(fixture_repo, out, NO_DENSE)
    before = (out / "manifest.json").read_text()

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("codenib.compiler.sparse.build_sparse_from_terms", boom)
    with pytest.raises(RuntimeError):
        build_index(fixture_repo, out, NO_DENSE)
    assert (out / "manifest.json").read_text() == before
    assert not list(tmp_path.glob(".idx.staging-*"))
    load_index(out)


def test_index_command_prints_summary(fixture_repo, tmp_path, capsys):
    assert main(["index", str(fixture_repo), "--out", str(tmp_path / "i"), "--no-dense", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "files      5" in err and "calls 18" in err and "files/s" in err


def test_reuse_of_a_non_index_is_bad_input(fixture_repo, tmp_path):
    with pytest.raises(BadInputError, match="no manifest.json"):
        build_index(fixture_repo, tmp_path / "o", BuildOptions(dense=False, reuse=tmp_path, progress=False))


def test_rebuild_over_an_index_holding_a_users_file_touches_nothing(fixture_repo, tmp_path, capsys):
    out = tmp_path / "idx"
    build_index(fixture_repo, out, NO_DENSE)
    (out / "NOTES.txt").write_text("why this index exists")
    (out / "sparse" / "mine.txt").write_text("mine too")
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert main(["index", str(fixture_repo), "--out", str(out), "--no-dense", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "NOTES.txt" in err and "--force" in err and "another --out" in err
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not list(tmp_path.glob(".idx.*"))   # nothing staged either
    # --force replaces the folder, the files CodeNib did not write included.
    assert main(["index", str(fixture_repo), "--out", str(out), "--no-dense", "--quiet", "--force"]) == 0
    assert not (out / "NOTES.txt").exists() and not (out / "sparse" / "mine.txt").exists()
    load_index(out)


def test_skipped_files_are_named_on_stderr_and_in_the_manifest(tmp_path, capsys):
    # Issue 27 item 9: a repository of one large file said only "no Python files found".
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "big.py").write_bytes(b"x = 1\n" * 200)     # 1,200 bytes
    argv = ["index", str(repo), "--no-dense", "--quiet", "--no-cache", "--max-file-bytes", "1000"]
    assert main(argv + ["--out", str(tmp_path / "o1")]) == 2
    err = capsys.readouterr().err
    assert "warning: big.py: skipped: larger than 1000 bytes (1200 bytes; see --max-file-bytes)" in err
    assert "1 skipped, named above" in err and "pass --max-file-bytes N" in err
    assert not (tmp_path / "o1").exists()
    (repo / "small.py").write_text("def f():\n    return 1\n")
    assert main(argv + ["--out", str(tmp_path / "o2")]) == 0
    assert "warning: big.py: skipped" in capsys.readouterr().err
    manifest = json.loads((tmp_path / "o2" / "manifest.json").read_text())
    assert manifest["skipped_files"] == [{"path": "big.py", "reason": "larger than 1000 bytes (1200 bytes; "
                                                                       "see --max-file-bytes)"}]
    assert manifest["max_file_bytes"] == 1000
    argv[argv.index("1000")] = "2000"
    assert main(argv + ["--out", str(tmp_path / "o3")]) == 0
    assert "warning:" not in capsys.readouterr().err
    assert json.loads((tmp_path / "o3" / "manifest.json").read_text())["skipped_files"] == []
    assert main(argv[:-1] + ["0", "--out", str(tmp_path / "o4")]) == 2
    assert "--max-file-bytes must be at least 1" in capsys.readouterr().err


def test_a_file_named_like_a_node_id_is_skipped_and_ids_stay_unique(tmp_path, capsys):
    # Issue 27 item 11: `x.py` defining `C.py` beside a file named `x.py::C.py` gave two
    # nodes the id `x.py::C.py`.
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "x.py").write_text("class C:\n    def py(self):\n        return 1\n")
    (repo / "x.py::C.py").write_text("def g():\n    return 2\n")
    logs: list[str] = []
    build_index(repo, tmp_path / "idx", NO_DENSE, log=logs.append)
    assert "warning: x.py::C.py: skipped: path contains '::', which separates a node id's file from its name" \
        in logs
    nodes = pq.read_table(tmp_path / "idx" / "nodes.parquet")
    ids = nodes.column("node_id").to_pylist()
    assert ids == ["x.py", "x.py::C", "x.py::C.py"]
    # The id parser agrees with the file column: the part before the first `::`.
    assert [file_of(i) for i in ids] == nodes.column("file").to_pylist() == ["x.py"] * 3
    assert load_index(tmp_path / "idx").row_of == {i: k for k, i in enumerate(ids)}


def test_ann_without_vectors_is_named_in_a_warning(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("def f():\n    return 1\n")
    assert main(["index", str(repo), "--out", str(tmp_path / "o"), "--no-dense", "--ann", "hnsw", "--quiet"]) == 0
    assert "warning: --ann hnsw has no effect with --no-dense" in capsys.readouterr().err
    assert main(["index", str(repo), "--out", str(tmp_path / "o2"), "--no-dense", "--quiet"]) == 0
    assert "--ann" not in capsys.readouterr().err
