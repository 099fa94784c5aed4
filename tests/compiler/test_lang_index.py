"""A repository of every language through the real `codenib index` and `codenib query`;
a multi-language `--reuse` property: incremental builds equal fresh ones byte for byte."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codenib.commands.cli import main
from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.index.symbols import SymbolIndex
from tests.compiler.test_incremental import _assert_same_index, _write

SOURCES = Path(__file__).parent / "lang_sources"

#: Every fixture source under src/, a Python module beside them, a dependency to skip.
MIXED: dict[str, str] = {
    **{f"src/{p.name}": p.read_text() for p in sorted(SOURCES.iterdir())},
    "tools/gen.py": "def generate():\n    return render()\n\n\ndef render():\n    return 1\n",
    "web/node_modules/dep/index.js": "function vendored() {}\n",
}


def test_a_mixed_repository_indexes_every_language_and_answers_queries(tmp_path, capsys):
    repo = _write(tmp_path / "repo", MIXED)
    idx = tmp_path / "idx"
    assert main(["index", str(repo), "--out", str(idx), "--no-dense", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "languages  " in err
    for lang, files in (("javascript", 1), ("typescript", 1), ("go", 1), ("java", 2), ("rust", 1),
                        ("c", 1), ("cpp", 1), ("python", 1)):
        assert f"{lang} {files} files" in err
    assert "parse error  src/Bad.java: syntax error near line 3" in err
    nodes = pq.read_table(idx / "nodes.parquet").to_pylist()
    ids = {n["node_id"]: n for n in nodes}
    assert not any("node_modules" in i for i in ids)
    for nid in ("src/dayjs.js::Dayjs.format", "src/client.go::Client.Get", "src/printer.rs::S.fmt",
                "src/format.cpp::fmt.detail.formatter.f", "src/A.java::A.m", "src/jv.c::jv_free",
                "src/fixer.ts::Utils.Color.parse", "tools/gen.py::generate"):
        assert nid in ids, nid
    assert ids["src/Bad.java"]["parse_error"] == "syntax error near line 3"
    assert "src/Bad.java::Ok.fine" in ids
    edges = {(e["src"], e["dst"], e["type"]) for e in pq.read_table(idx / "edges.parquet").to_pylist()}
    assert ("src/dayjs.js", "src/dayjs.js::Dayjs", "contains") in edges
    assert ("src/dayjs.js::Dayjs", "src/dayjs.js::Dayjs.add", "contains") in edges
    assert ("src/client.go::Client", "src/client.go::Client.Get", "contains") in edges
    assert ("src/printer.rs::S", "src/printer.rs::S.fmt", "contains") in edges
    assert ("tools/gen.py::generate", "tools/gen.py::render", "calls") in edges     # Python's graph
    # Every definition is contained once; the edges table is sorted.
    contained = [d for s, d, t in edges if t == "contains"]
    assert sorted(contained) == sorted(i for i, n in ids.items() if n["kind"] != "file")

    assert main(["query", str(idx), "jv_free frees the parser", "--json", "-k", "5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"][0]["node_id"] == "src/jv.c::jv_free"
    assert main(["query", str(idx), "InteractivePrinter S fmt Display", "--json", "-k", "10"]) == 0
    assert "src/printer.rs::S.fmt" in [r["node_id"] for r in json.loads(capsys.readouterr().out)["results"]]

    table = pq.read_table(idx / "nodes.parquet").to_pydict()
    symbols = SymbolIndex(table["node_id"], table["kind"], table["file"], table["qualname"], table["name"])
    assert [table["node_id"][m.row] for m in symbols.lookup("Client.Get")] == [
        "src/client.go::Client.Get", "src/client.go::Client.Get#2"]
    assert symbols.files_matching("/home/me/x/src/printer.rs") == ["src/printer.rs"]


OPTS = BuildOptions(dense=False, progress=False, use_cache=False)

#: Edits of the non-Python files: a definition added, a body changed, a file broken, fixed,
#: added or deleted.
NEW_DEFS = {
    ".js": "\nexport function added(x) { return x + 1 }\n",
    ".ts": "\nexport class Added { run(): void {} }\n",
    ".go": "\nfunc (c *Client) Added() {}\n",
    ".java": "\nclass Added { void run() {} }\n",
    ".rs": "\nimpl S<u16> { fn added(&self) {} }\n",
    ".c": "\nint added(void) { return 1; }\n",
    ".cpp": "\nnamespace fmt { void added() {} }\n",
}


def _edit(files: dict[str, str], data) -> dict[str, str]:
    foreign = sorted(p for p in files if p.startswith("src/"))
    how = data.draw(st.sampled_from(["add", "body", "break", "delete", "new", "python"]), label="how")
    if how == "new":
        path = data.draw(st.sampled_from(["src/extra.go", "src/lib/extra.ts", "src/extra.hpp"]), label="path")
        return {**files, path: "int extra() { return 0; }\n" if path.endswith(".hpp") else
                NEW_DEFS[Path(path).suffix]}
    if how == "python":
        return {**files, "tools/gen.py": files["tools/gen.py"] + "\n\ndef more():\n    return generate()\n"}
    path = data.draw(st.sampled_from(foreign), label="file")
    text = files[path]
    if how == "add":
        return {**files, path: text + NEW_DEFS.get(Path(path).suffix, "\n")}
    if how == "body":
        return {**files, path: text.replace("return", "return  /* edited */", 1)}
    if how == "break":
        return {**files, path: text + "\n}}} (( broken\n" if "broken" not in text else text.replace("\n}}} (( broken\n", "")}
    return {k: v for k, v in files.items() if k != path} if len(foreign) > 1 else files


@settings(max_examples=int(os.environ.get("CODENIB_INCR_EXAMPLES", 8)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_multi_language_incremental_builds_equal_fresh_builds(data):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = dict(MIXED)
        repo = _write(tmp / "repo", files)
        build_index(repo, tmp / "idx0", OPTS)
        previous = tmp / "idx0"
        for step in range(data.draw(st.integers(1, 3), label="steps")):
            files = _edit(files, data)
            repo = _write(tmp / "repo", files)
            inc, full = tmp / f"inc{step}", tmp / f"full{step}"
            summary = build_index(repo, inc, BuildOptions(dense=False, progress=False, use_cache=False,
                                                          reuse=previous))
            build_index(repo, full, OPTS)
            _assert_same_index(inc, full)
            assert summary.reuse["files_kept"] >= len(files) - 3     # unchanged files of every language
            previous = inc


def test_an_unchanged_foreign_file_is_kept_and_a_reader_version_change_reparses(tmp_path, monkeypatch):
    repo = _write(tmp_path / "repo", MIXED)
    build_index(repo, tmp_path / "a", OPTS)
    (repo / "src" / "jv.c").write_text(MIXED["src/jv.c"] + NEW_DEFS[".c"])
    summary = build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, use_cache=False,
                                                             reuse=tmp_path / "a"))
    assert summary.reuse["files_parsed"] == 1 and summary.reuse["files_kept"] == len(MIXED) - 2
    from codenib.compiler.lang import go

    monkeypatch.setattr(go.GoReader, "version", 99)
    logged = []
    summary = build_index(repo, tmp_path / "c", BuildOptions(dense=False, progress=False, use_cache=False,
                                                             reuse=tmp_path / "b"), log=logged.append)
    assert summary.reuse["files_kept"] == 0
    assert any("reader_versions" in line for line in logged)
