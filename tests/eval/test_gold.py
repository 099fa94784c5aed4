"""`codenib qrels`: judgments from patches over real indexes of a small git repository, with
hand-computed files and definitions; error rows for what cannot be judged."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pygit2
import pytest

from codenib.commands.cli import main
from codenib.eval.gold import NodeSpan, innermost
from codenib.eval.qrels import read_qrels
from tests.git_history import archive, git_commit

PY = """\
import os


class Store:
    def put(self, key, value):
        self.data[key] = value
        return value

    def get(self, key):
        return self.data.get(key)


def helper():
    return os.getcwd()
"""

JS = """\
function add(a, b) {
  return a + b;
}

const api = {
  sub(a, b) {
    return a - b;
  },
};
"""

#: `put`'s body changed (line 6), a line added after `get`'s return (line 10), and the JS
#: `sub` method's body (line 7); README.md is no source file and gets no judgment.
FIX = """\
diff --git a/pkg/store.py b/pkg/store.py
--- a/pkg/store.py
+++ b/pkg/store.py
@@ -5,3 +5,3 @@ class Store:
     def put(self, key, value):
-        self.data[key] = value
+        self.data[str(key)] = value
         return value
@@ -10,0 +11 @@ class Store:
+        # a comment under get
diff --git a/web/api.js b/web/api.js
--- a/web/api.js
+++ b/web/api.js
@@ -6,3 +6,3 @@ const api = {
   sub(a, b) {
-    return a - b;
+    return b - a;
   },
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-# demo
+# demo app
"""

#: The same change against a line the snapshot does not hold.
STALE = FIX.replace("-        self.data[key] = value", "-        self.data[k] = value")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """A git repository with one commit, and its index under ROOT/snap."""
    base = tmp_path_factory.mktemp("gold")
    repo = pygit2.init_repository(str(base / "repo"))
    commit = git_commit(repo, {"pkg/store.py": PY, "web/api.js": JS, "README.md": "# demo\n"}, "init", 1_700_000_000, [])
    checkout = archive(repo, str(commit), base / "checkout")
    root = base / "indexes"
    assert main(["index", str(checkout), "--out", str(root / "snap"), "--no-dense", "--quiet"]) == 0
    return {"base": base, "gitdir": base / "repo" / ".git", "rev": str(commit), "root": root}


def _queries(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_patch_judges_its_source_files_and_the_innermost_definitions(snapshot, tmp_path, capsys):
    queries = _queries(tmp_path / "q.jsonl", [{"qid": "q1", "query": "put keys as text", "index": "snap", "patch": FIX}])
    out = tmp_path / "qrels.parquet"
    assert main(["qrels", "--queries", str(queries), "--index-root", str(snapshot["root"]), "--out", str(out)]) == 0
    rows = pq.read_table(out).to_pylist()
    assert sorted((r["node_id"] or "", r["file"]) for r in rows) == sorted([
        ("", "pkg/store.py"), ("", "web/api.js"),
        ("pkg/store.py::Store.put", "pkg/store.py"), ("pkg/store.py::Store.get", "pkg/store.py"),
        ("web/api.js::sub", "web/api.js")])
    assert all(r["relevance"] == 1 and r["qid"] == "q1" for r in rows)
    judged = read_qrels(out)      # what `codenib eval` reads
    assert set(judged.files["q1"]) == {"pkg/store.py", "web/api.js"}
    assert set(judged.nodes["q1"]) == {"pkg/store.py::Store.put", "pkg/store.py::Store.get", "web/api.js::sub"}
    assert "wrote 5 judgments (2 files, 3 definitions) for 1 of 1 rows" in capsys.readouterr().err
    assert not (tmp_path / "qrels.errors.parquet").exists()


def test_swe_bench_shaped_rows_are_checked_against_their_git_objects(snapshot, tmp_path):
    mirrors = tmp_path / "mirrors"
    (mirrors / "acme+demo").mkdir(parents=True)
    (mirrors / "acme+demo" / "repo").symlink_to(snapshot["gitdir"])
    rows = [{"instance_id": "ok", "problem_statement": "x", "repo": "acme/demo", "base_commit": snapshot["rev"],
             "patch": FIX, "index": "snap"},
            {"instance_id": "stale", "problem_statement": "x", "repo": "acme/demo", "base_commit": snapshot["rev"],
             "patch": STALE, "index": "snap"},
            {"instance_id": "bad-rev", "problem_statement": "x", "repo": "acme/demo", "base_commit": "0" * 40,
             "patch": FIX, "index": "snap"},
            {"instance_id": "no-mirror", "problem_statement": "x", "repo": "acme/other", "base_commit": snapshot["rev"],
             "patch": FIX, "index": "snap"},
            {"instance_id": "no-index", "problem_statement": "x", "repo": "acme/demo", "base_commit": snapshot["rev"],
             "patch": FIX, "index": "gone"},
            {"instance_id": "no-patch", "problem_statement": "x", "repo": "acme/demo", "base_commit": snapshot["rev"],
             "patch": "", "index": "snap"}]
    queries = tmp_path / "swe.parquet"
    pq.write_table(pa.Table.from_pylist(rows), queries)
    out = tmp_path / "qrels.parquet"
    assert main(["qrels", "--queries", str(queries), "--index-root", str(snapshot["root"]), "--out", str(out),
                 "--mirror-root", str(mirrors)]) == 0
    assert set(pq.read_table(out).column("qid").to_pylist()) == {"ok"}
    errors = {r["qid"]: r["error"] for r in pq.read_table(tmp_path / "qrels.errors.parquet").to_pylist()}
    assert sorted(errors) == ["bad-rev", "no-index", "no-mirror", "no-patch", "stale"]
    assert "the patch does not apply to pkg/store.py: line 6 is '        self.data[key] = value'" in errors["stale"]
    assert "is not a commit" in errors["bad-rev"]
    assert "no git directory for repo 'acme/other'" in errors["no-mirror"]
    assert "no index 'gone'" in errors["no-index"]
    assert "no patch" in errors["no-patch"]


def test_without_git_objects_a_line_past_the_end_of_the_file_is_an_error_row(snapshot, tmp_path):
    far = "--- a/pkg/store.py\n+++ b/pkg/store.py\n@@ -90 +90 @@\n-x\n+y\n"
    queries = _queries(tmp_path / "q.jsonl", [{"qid": "far", "index": "snap", "patch": far}])
    out = tmp_path / "qrels.parquet"
    assert main(["qrels", "--queries", str(queries), "--index-root", str(snapshot["root"]), "--out", str(out)]) == 0
    assert pq.read_table(out).num_rows == 0
    (error,) = pq.read_table(tmp_path / "qrels.errors.parquet").to_pylist()
    assert "it shows line 90, and the file has 14 lines in the index" in error["error"]


@pytest.mark.parametrize("case,argv_tail,message", [
    ("no patch column", None, "lacks column(s) patch"),
    ("existing out", "exists", "would overwrite this existing file"),
    ("uri out", "s3", "writes a local path only"),
])
def test_bad_input_exits_2_and_writes_nothing(snapshot, tmp_path, capsys, case, argv_tail, message):
    rows = [{"qid": "q1", "index": "snap"}] if argv_tail is None else [{"qid": "q1", "index": "snap", "patch": FIX}]
    queries = _queries(tmp_path / "q.jsonl", rows)
    out = tmp_path / "qrels.parquet"
    if argv_tail == "exists":
        out.write_bytes(b"mine")
    target = "s3://bucket/qrels.parquet" if argv_tail == "s3" else str(out)
    assert main(["qrels", "--queries", str(queries), "--index-root", str(snapshot["root"]), "--out", target]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["q.jsonl", "qrels.parquet"] if argv_tail == "exists"
                                                          else ["q.jsonl"])
    if argv_tail == "exists":
        assert out.read_bytes() == b"mine"


def test_innermost_takes_the_smallest_span_and_breaks_ties_by_id():
    spans = [NodeSpan("f.py", "file", 1, 20), NodeSpan("f.py::A", "class", 1, 20), NodeSpan("f.py::A.m", "method", 3, 8),
             NodeSpan("f.py::A.m.inner", "function", 4, 5), NodeSpan("f.py::A.m#2", "method", 3, 8)]
    assert innermost(spans, 4) == "f.py::A.m.inner"
    assert innermost(spans, 7) == "f.py::A.m"            # two spans 3-8: the smaller id
    assert innermost(spans, 15) == "f.py::A"
    assert innermost([spans[0]], 2) is None
