"""`codenib index --history`: ancestry, hunk mapping, reuse, validation, and the unchanged
index without it. The repositories are real git repositories made with pygit2."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codenib.core import artifact
from codenib.commands.cli import main
from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.compiler.history import HistorySpec, read_history, resolve
from codenib.core.errors import BadInputError, IndexFormatError
from tests.git_history import archive, git_commit

A1 = "def f():\n    return 1\n\n\ndef g():\n    return 2\n\n\nclass K:\n    def m(self):\n        pass\n"
A2 = A1.replace("return 1", "return 10")
A3 = "def f():\n    return 10\n\n\nclass K:\n    def m(self):\n        return 0\n"


@pytest.fixture()
def git_repo(tmp_path):
    """c1 - c2 - c3 on the main line, `other` branching at c2, and a merge c4 of both.

    The work tree (what is indexed) holds c3's files; c4 and the branch come after them."""
    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"a.py": A1}, "initial", 1_000, [])
    c2 = git_commit(repo, {"a.py": A2}, "Fix crash in f (issue #3)", 2_000, [c1])
    c3 = git_commit(repo, {"a.py": A3, "README.txt": "hello\n"}, "refactor m, drop g", 3_000, [c2])
    other = git_commit(repo, {"a.py": A2, "README.txt": None, "b.py": "def h():\n    return 3\n"},
                       "other branch adds h", 2_500, [c2], ref="refs/heads/other")
    c4 = git_commit(repo, {"a.py": A3, "README.txt": "hello\n"}, "Merge other", 4_000, [c3, other])
    (root / "b.py").unlink()    # the work tree indexed: c3's files
    return {"root": root, "repo": repo, "c1": str(c1), "c2": str(c2), "c3": str(c3),
            "other": str(other), "c4": str(c4)}


def _tables(index_dir: Path) -> tuple[list[dict], list[dict]]:
    folder = index_dir / artifact.HISTORY_DIR
    return (pq.read_table(folder / "commits.parquet").to_pylist(),
            pq.read_table(folder / "changes.parquet").to_pylist())


def _build(repo_root: Path, out: Path, history: HistorySpec | None, reuse: Path | None = None) -> dict:
    return build_index(repo_root, out, BuildOptions(dense=False, progress=False, use_cache=False, jobs=1,
                                                    history=history, reuse=reuse)).manifest


def test_only_ancestors_of_rev_reach_the_index(git_repo, tmp_path):
    """Indexed at c2: c3 (made after it) and the other branch's commit never appear."""
    gitdir = git_repo["root"] / ".git"
    _build(archive(git_repo["repo"], git_repo["c2"], tmp_path / "at-c2"), tmp_path / "idx",
           HistorySpec(gitdir, git_repo["c2"]))
    commits, changes = _tables(tmp_path / "idx")
    assert [c["id"] for c in commits] == [git_repo["c2"], git_repo["c1"]]
    later = {git_repo["c3"], git_repo["c4"], git_repo["other"]}
    assert not later & {c["commit"] for c in changes}
    assert not any("b.py" in c["file"] for c in changes)
    # The merge's ancestry holds the branch; indexed at the merge, its commit appears.
    _build(git_repo["root"], tmp_path / "idx4", HistorySpec(None, git_repo["c4"]))
    ids = [c["id"] for c in _tables(tmp_path / "idx4")[0]]
    assert ids == [git_repo["c4"], git_repo["c3"], git_repo["other"], git_repo["c2"], git_repo["c1"]]


def test_hunks_map_onto_the_definitions_of_each_commit(git_repo, tmp_path):
    manifest = _build(git_repo["root"], tmp_path / "idx", HistorySpec(None, "HEAD"))
    commits, changes = _tables(tmp_path / "idx")
    by_id = {c["id"]: c for c in commits}
    assert by_id[git_repo["c2"]]["is_fix"] and not by_id[git_repo["c1"]]["is_fix"]
    assert by_id[git_repo["c4"]]["files"] == 0 and len(by_id[git_repo["c4"]]["parents"]) == 2
    assert by_id[git_repo["c3"]]["files"] == 2
    rows = {(c["commit"], c["node_id"]): (c["lines"], c["exists"]) for c in changes}
    c1, c2, c3 = git_repo["c1"], git_repo["c2"], git_repo["c3"]
    # c1 adds 11 lines: f 1-2, g 5-6, K's own line 9, K.m 10-11 (blank lines belong to none).
    assert {k[1]: v for k, v in rows.items() if k[0] == c1} == {
        "a.py": (11, True), "a.py::f": (2, True), "a.py::g": (2, False),
        "a.py::K": (1, True), "a.py::K.m": (2, True)}
    # c2 changes f's return: one line out, one in; the new side names f.
    assert {k[1]: v for k, v in rows.items() if k[0] == c2} == {"a.py": (2, True), "a.py::f": (1, True)}
    # c3 deletes g (old side: its two lines) and changes m's body (new side); README has no reader.
    assert {k[1]: v for k, v in rows.items() if k[0] == c3} == {
        "README.txt": (None, False), "a.py": (6, True), "a.py::g": (2, False), "a.py::K.m": (1, True)}
    assert not any(c["commit"] == git_repo["c4"] for c in changes)
    assert manifest["history"]["head"] == git_repo["c4"] and manifest["history"]["commits"] == 5


def test_a_file_name_that_is_not_utf8_is_recorded_by_its_readable_name(tmp_path):
    """A past commit adding `caf\\xe9.py` (Latin-1 bytes, as some repositories hold): the
    history is read (it crashed writing Parquet), the file recorded under its name decoded with
    replacement, as the walker names it, not parsed and not a node."""
    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    with open(bytes(root) + b"/caf\xe9.py", "wb") as fh:
        fh.write(b"def f():\n    return 1\n")
    c1 = git_commit(repo, {"a.py": A1}, "add a and a Latin-1 named file", 1_000, [])
    git_commit(repo, {"a.py": A2}, "change f", 2_000, [c1])
    _build(root, tmp_path / "idx", HistorySpec())
    _, changes = _tables(tmp_path / "idx")
    latin = [c for c in changes if c["file"].startswith("caf")]
    assert latin == [{"commit": str(c1), "file": "caf\ufffd.py", "node_id": "caf\ufffd.py", "lines": None,
                      "exists": False}]


def test_without_history_the_index_is_unchanged(git_repo, tmp_path):
    """Every artifact of a build without --history is byte-identical to one with it (the
    history is an addition), and the manifest names no history."""
    plain = _build(git_repo["root"], tmp_path / "plain", None)
    with_history = _build(git_repo["root"], tmp_path / "hist", HistorySpec())
    assert "history" not in plain and not (tmp_path / "plain" / artifact.HISTORY_DIR).exists()
    extra = {k: v for k, v in with_history["artifacts"].items() if not k.startswith("history/")}
    assert extra == plain["artifacts"]
    assert set(with_history) - set(plain) == {"history"}


def test_reuse_reads_only_new_commits_and_equals_a_full_read(git_repo, tmp_path):
    gitdir = git_repo["root"] / ".git"
    _build(archive(git_repo["repo"], git_repo["c2"], tmp_path / "at-c2"), tmp_path / "old",
           HistorySpec(gitdir, git_repo["c2"]))
    manifest = _build(git_repo["root"], tmp_path / "new", HistorySpec(None, git_repo["c4"]), reuse=tmp_path / "old")
    _build(git_repo["root"], tmp_path / "full", HistorySpec(None, git_repo["c4"]))
    assert manifest["history"]["read"] == 3 and manifest["history"]["reused"] == 2
    assert _tables(tmp_path / "new") == _tables(tmp_path / "full")
    # OLD's head not an ancestor (the other branch): everything is read again.
    _build(archive(git_repo["repo"], git_repo["other"], tmp_path / "at-other"), tmp_path / "branch",
           HistorySpec(gitdir, git_repo["other"]))
    manifest = _build(git_repo["root"], tmp_path / "new2", HistorySpec(None, git_repo["c3"]),
                      reuse=tmp_path / "branch")
    assert manifest["history"]["read"] == 3 and manifest["history"]["reused"] == 0


def test_loader_checks_the_history_checksums(git_repo, tmp_path):
    _build(git_repo["root"], tmp_path / "idx", HistorySpec())
    artifact.read_manifest(tmp_path / "idx", verify=True)
    path = tmp_path / "idx" / artifact.HISTORY_DIR / "changes.parquet"
    path.write_bytes(path.read_bytes()[:-1] + b"x")
    with pytest.raises(IndexFormatError, match="changes.parquet"):
        artifact.read_manifest(tmp_path / "idx", verify=True)
    (tmp_path / "idx" / artifact.HISTORY_DIR / "extra.parquet").write_bytes(b"")
    with pytest.raises(IndexFormatError, match="extra.parquet"):
        artifact.read_manifest(tmp_path / "idx", verify=False)


@pytest.mark.parametrize("spec, expected", [
    ("", HistorySpec(None, "HEAD")), ("@v1", HistorySpec(None, "v1")),
    ("/m/repo", HistorySpec(Path("/m/repo"), "HEAD")), ("/m/repo@abc", HistorySpec(Path("/m/repo"), "abc")),
])
def test_history_spec_parsing(spec, expected):
    assert HistorySpec.parse(spec) == expected


def test_bad_history_input_exits_2(git_repo, tmp_path, capsys):
    root = git_repo["root"]
    tree = str(git_repo["repo"].revparse_single("HEAD").tree.id)
    cases = [
        (str(root), str(tmp_path / "nope") + "@HEAD", "does not exist"),
        (str(root), "@no-such-rev", "not known"),
        (str(root), f"@{tree}", "not a commit"),
        (str(root), str(tmp_path) + "@HEAD", "not a git repository"),
    ]
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / "a.py").write_text(A3)
    cases.append((str(archive), "", "MIRROR@BASE"))
    for repo_arg, history, needle in cases:
        code = main(["index", repo_arg, "--out", str(tmp_path / "out"), "--no-dense", "--quiet",
                     "--no-cache", "--history", history])
        err = capsys.readouterr().err
        assert code == 2, (history, err)
        assert needle in err and "fix:" in err
        assert not (tmp_path / "out").exists()
    # A git-archive checkout indexed with MIRROR@BASE reads the mirror's history.
    code = main(["index", str(archive), "--out", str(tmp_path / "out"), "--no-dense", "--quiet",
                 "--no-cache", "--history", f"{root / '.git'}@{git_repo['c3']}"])
    assert code == 0
    assert [c["id"] for c in _tables(tmp_path / "out")[0]][0] == git_repo["c3"]


# --- incremental equals full, on random linear histories ------------------------------------

_BODIES = st.lists(st.sampled_from(["f", "g", "h", "k"]), min_size=0, max_size=4, unique=True)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(_BODIES, st.integers(0, 3), st.booleans()), min_size=2, max_size=6),
       data=st.data())
def test_incremental_history_equals_full(tmp_path_factory, steps, data):
    """Any split of a linear history: reading up to the split, then the rest with the first
    as `previous`, gives the tables of one full read."""
    root = tmp_path_factory.mktemp("prop")
    repo = pygit2.init_repository(str(root / "repo"), initial_head="main")
    parents: list = []
    heads = []
    for i, (names, ret, fix) in enumerate(steps):
        text = "".join(f"def {n}():\n    return {ret + j}\n\n" for j, n in enumerate(names))
        message = ("fix: " if fix else "change ") + " ".join(names)
        files = {"m.py": text}
        if i % 3 != 2:
            files["n/o.py"] = f"x = {i}\n"
        elif (root / "repo" / "n/o.py").exists():
            files["n/o.py"] = None      # deleted now and then
        oid = git_commit(repo, files, message, 1_000 + i * 10, parents)
        parents = [oid]
        heads.append(str(oid))
    split = data.draw(st.integers(0, len(heads) - 1))
    node_ids = {"m.py", "m.py::f", "m.py::k"}
    gitdir = root / "repo" / ".git"

    def read(rev, previous=None):
        return read_history(resolve(HistorySpec(gitdir, rev), root / "repo"), node_ids, previous,
                            lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)

    first = read(heads[split])
    old = root / "old"
    old.mkdir()
    from codenib.compiler.history import manifest_entry, write_history

    write_history(old, first)
    (old / "manifest.json").write_text(json.dumps({"history": manifest_entry(first)}))
    incremental = read(heads[-1], old)
    full = read(heads[-1])
    assert incremental.info["read"] == len(heads) - 1 - split
    assert incremental.commits.equals(full.commits) and incremental.changes.equals(full.changes)
    assert full.commits.num_rows == len(heads)


def test_unknown_rev_is_bad_input(git_repo):
    with pytest.raises(BadInputError, match="not known"):
        resolve(HistorySpec(None, "nope"), git_repo["root"])


def test_a_few_hundred_commits_are_cut_into_chunks_that_read_the_same(tmp_path, monkeypatch):
    """A later snapshot's ~100 new commits keep two workers busy (more than one chunk), and
    however the commits are cut the tables are the same (Python, C and Go files)."""
    from codenib.compiler import history as hist

    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    parents: list = []
    for i in range(110):
        files = {"m.py": "".join(f"def f{j}():\n    return {i if j == i % 4 else 0}\n\n" for j in range(4)),
                 "src/c.c": "".join(f"int g{j}(void) {{\n  return {i if j == i % 3 else 0};\n}}\n" for j in range(3))}
        if i % 5 == 0:
            files["p/q.go"] = f"package p\n\nfunc H() int {{\n\treturn {i}\n}}\n"
        parents = [git_commit(repo, files, f"change {i}" + (" fix #1" if i % 7 == 0 else ""), 1_000 + i, parents)]
    source = resolve(HistorySpec(root / ".git", "HEAD"), root)
    seen: list[int] = []

    def chunked(fn, chunks):
        seen.append(len(chunks))
        return [fn(c) for c in chunks]

    cut = read_history(source, {"m.py::f1"}, None, chunked, lambda msg: None)
    monkeypatch.setattr(hist, "COMMITS_PER_CHUNK", 10_000)
    whole = read_history(source, {"m.py::f1"}, None, chunked, lambda msg: None)
    assert seen == [3, 1]
    assert cut.commits.equals(whole.commits) and cut.changes.equals(whole.changes)
    ids = set(cut.changes.column("node_id").to_pylist())
    assert {"m.py::f0", "m.py::f3", "src/c.c::g0", "src/c.c::g2", "p/q.go::H"} <= ids


def _add_and_drop_repo(root: Path) -> Path:
    """110 commits that alternately add and drop a function of m.py and c.c (every other
    diff a pure deletion, whose old side is the blob the commit before wrote)."""
    repo = pygit2.init_repository(str(root), initial_head="main")
    parents: list = []
    for i in range(110):
        n = 3 + i % 2
        files = {"m.py": f"X = {i}\n\n" + "".join(f"def f{j}():\n    return {j}\n\n" for j in range(n)),
                 "src/c.c": f"int x = {i};\n" + "".join(f"int g{j}(void) {{\n  return {j};\n}}\n" for j in range(n))}
        parents = [git_commit(repo, files, f"change {i}", 1_000 + i, parents)]
    return root


def test_consecutive_chunks_parse_each_blob_once(tmp_path, monkeypatch):
    """Chunks read one after another in a process share its parsed blobs: the old side of
    a chunk's first pure deletion, written by the next chunk's last commit, is parsed once
    (each chunk parsed it again before), and the tables are those of one chunk."""
    from codenib.compiler import history as hist
    from codenib.compiler.history import commits as history_commits

    root = _add_and_drop_repo(tmp_path / "repo")
    source = resolve(HistorySpec(root / ".git", "HEAD"), root)
    parsed: Counter = Counter()
    outlined = history_commits._outlined_spans

    def counting_outlined(repo, reader, path, raw, key, cache):
        parsed[(path, raw)] += 1
        return outlined(repo, reader, path, raw, key, cache)

    monkeypatch.setattr(history_commits, "_outlined_spans", counting_outlined)
    cut = read_history(source, set(), None, lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)
    twice = sorted(path for (path, _), n in parsed.items() if n > 1)
    assert parsed and not twice, twice
    monkeypatch.setattr(hist, "COMMITS_PER_CHUNK", 10_000)
    whole = read_history(source, set(), None, lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)
    assert cut.commits.equals(whole.commits) and cut.changes.equals(whole.changes)
    blobs = history_commits._CACHE["blobs"]
    assert not blobs.parsed and not blobs.diffs and not blobs.latest, \
        "a read keeps no parsed blobs in the process after it"


@pytest.mark.parametrize("reader", ["python", "c"])
def test_outlines_derived_from_neighbouring_versions_give_the_tables_of_full_parses(tmp_path, monkeypatch, reader):
    """A version next to one already outlined is outlined from the diff between them
    (`PythonReader.derive` re-parses the touched statements only; a tree-sitter reader's
    `SweepReader.derive` reparses its neighbour's tree edited by the hunks): the tables equal
    those of a read that parses every version in full, and most versions were derived."""
    from codenib.compiler.lang.python import PythonReader
    from codenib.compiler.lang.sweep_reader import SweepReader

    cls, prefix = {"python": (PythonReader, "m.py::"), "c": (SweepReader, "src/c.c::")}[reader]
    root = _add_and_drop_repo(tmp_path / "repo")
    source = resolve(HistorySpec(root / ".git", "HEAD"), root)
    derived: list[bool] = []
    derive = cls.derive

    def counting(self, base, path, raw, hunks):
        got = derive(self, base, path, raw, hunks)
        derived.append(got is not None)
        return got

    monkeypatch.setattr(cls, "derive", counting)
    fast = read_history(source, set(), None, lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)
    assert sum(derived) >= 100, f"{sum(derived)} of 110 versions derived"
    monkeypatch.setattr(cls, "derive", lambda self, base, path, raw, hunks: None)
    full = read_history(source, set(), None, lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)
    assert fast.commits.equals(full.commits) and fast.changes.equals(full.changes)
    assert pc.sum(pc.starts_with(fast.changes["node_id"], prefix)).as_py() > 100


def test_outlines_past_the_memory_bound_are_dropped_and_the_tables_stay(tmp_path, monkeypatch):
    """With room for no tree (`OUTLINE_BYTES` 1), every tree-sitter version is parsed in
    full, no outline stays cached, and the tables are the same."""
    from codenib.compiler.history import commits as history_commits
    from codenib.compiler.lang.sweep_reader import SweepReader

    root = _add_and_drop_repo(tmp_path / "repo")
    source = resolve(HistorySpec(root / ".git", "HEAD"), root)
    want = read_history(source, set(), None, lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)
    derived: list[bool] = []
    derive = SweepReader.derive

    def counting(self, base, path, raw, hunks):
        derived.append(True)
        return derive(self, base, path, raw, hunks)

    def read_chunk_then_look(chunk):
        got = history_commits.read_chunk(chunk)
        blobs = history_commits._CACHE["blobs"]
        held.append((blobs.held_bytes, [k for k, v in blobs.parsed.items() if v[2] is not None and k in blobs.held]))
        return got

    held: list = []
    monkeypatch.setattr(SweepReader, "derive", counting)
    monkeypatch.setattr(history_commits, "OUTLINE_BYTES", 1)
    got = read_history(source, set(), None, lambda fn, chunks: [read_chunk_then_look(c) for c in chunks],
                       lambda msg: None)
    assert got.commits.equals(want.commits) and got.changes.equals(want.changes)
    assert not derived and held and all(n == 0 and not keys for n, keys in held)


def test_worker_runs_read_the_same_tables(tmp_path):
    """Two worker processes taking runs of chunks (`Workers.map_runs`) give the tables of a
    read in this process."""
    from codenib.compiler.workers import Workers

    root = _add_and_drop_repo(tmp_path / "repo")
    source = resolve(HistorySpec(root / ".git", "HEAD"), root)
    here = read_history(source, {"m.py::f1"}, None, lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)
    with Workers(2) as workers:
        pooled = read_history(source, {"m.py::f1"}, None,
                              lambda fn, chunks: workers.map_runs(fn, chunks, "history", "chunk", False),
                              lambda msg: None)
    assert here.commits.equals(pooled.commits) and here.changes.equals(pooled.changes)
    assert here.changes.num_rows > 110


def _chunk_and_pid(chunk):
    import os
    import time as _time

    _time.sleep(0.002 * chunk[1])     # uneven chunks: a worker done early takes half a run left
    return chunk[0], os.getpid()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17])
def test_map_runs_gives_each_chunk_once_in_order(n):
    """`map_runs`: every chunk's result once, in chunk order, however the runs are split."""
    from codenib.compiler.workers import Workers

    chunks = [(i, (n - i) % 5) for i in range(n)]
    with Workers(2) as workers:
        out = workers.map_runs(_chunk_and_pid, chunks, "test", "chunk", False)
    assert [r[0] for r in out] == list(range(n))


def test_blobs_are_parsed_without_the_cycle_collector(tmp_path, monkeypatch):
    """History's parses run with the cycle collector paused (its passes over the parse's
    short-lived nodes took a third of the CPU), and it runs again after the read."""
    import gc

    from codenib.compiler.lang import sweep_reader

    root = _add_and_drop_repo(tmp_path / "repo")
    source = resolve(HistorySpec(root / ".git", "HEAD"), root)
    collecting: list[bool] = []
    spans = sweep_reader.tree_spans

    def watching(reader, path, raw, old_tree=None):
        collecting.append(gc.isenabled())
        return spans(reader, path, raw, old_tree)

    monkeypatch.setattr(sweep_reader, "tree_spans", watching)
    assert gc.isenabled()
    read_history(source, set(), None, lambda fn, chunks: [fn(c) for c in chunks], lambda msg: None)
    assert collecting and not any(collecting)
    assert gc.isenabled()


# --- incomplete repositories: missing objects, shallow clones, `::` paths -------------------

def _loose_object(root: Path, oid: str) -> Path:
    return root / ".git" / "objects" / oid[:2] / oid[2:]


def test_a_missing_blob_is_counted_and_the_rest_is_read(tmp_path, monkeypatch, capsys):
    """A blob left out (as in a partial clone) made `--history` exit 1 with a PicklingError
    around pygit2.NotFoundError raised in a worker; now the history is read from what is
    there, the file rows that needed the blob have `lines` null, and the manifest names it."""
    from codenib.compiler import history as hist

    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"a.py": A1, "b.py": "def h():\n    return 1\n"}, "initial", 1_000, [])
    c2 = git_commit(repo, {"a.py": A2}, "change f", 2_000, [c1])
    c3 = git_commit(repo, {"a.py": A3}, "drop g", 3_000, [c2])
    gone = str(repo[c1].tree["a.py"].id)
    _loose_object(root, gone).unlink()      # pygit2 writes loose objects: one file per object
    monkeypatch.setattr(hist, "COMMITS_PER_CHUNK", 1)   # three chunks, read by two workers
    code = main(["index", str(root), "--out", str(tmp_path / "idx"), "--no-dense", "--quiet", "--no-cache",
                 "--jobs", "2", "--history"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "1 object(s) missing" in err and gone in err
    entry = json.loads((tmp_path / "idx" / "manifest.json").read_text())["history"]
    assert entry["missing"] == {"count": 1, "first": [{"id": gone, "path": "a.py", "commit": str(c2)}]}
    _, changes = _tables(tmp_path / "idx")
    rows = {(c["commit"], c["node_id"]): c["lines"] for c in changes}
    assert rows[(str(c1), "a.py")] is None and rows[(str(c2), "a.py")] is None
    assert rows[(str(c1), "b.py")] == 2 and rows[(str(c1), "b.py::h")] == 2
    assert rows[(str(c3), "a.py::g")] == 2      # c3's sides are both there: read as before
    assert not any(k[0] in (str(c1), str(c2)) and "::" in k[1] and k[1].startswith("a.py") for k in rows)


def test_a_shallow_boundary_is_recorded_without_changes(tmp_path, capsys):
    """A shallow clone's boundary commit was read as a root changing every file it holds;
    now it is said on the log, named in the manifest, and has no change rows (its row keeps
    the parent its object names)."""
    import shutil
    import subprocess

    git = shutil.which("git")
    assert git, "these tests need the git command (a real shallow clone)"
    full = tmp_path / "full"
    repo = pygit2.init_repository(str(full), initial_head="main")
    parents: list = []
    for i in range(4):
        parents = [git_commit(repo, {"a.py": A1.replace("return 1", f"return {i}"),
                                     "b.py": f"def h():\n    return {i}\n", "c.py": "X = 1\n"},
                              f"change {i}", 1_000 + i, parents)]
    ids = [str(c.id) for c in repo.walk(parents[0])]       # newest first
    clone = tmp_path / "clone"
    subprocess.run([git, "clone", "-q", "--depth", "2", f"file://{full}", str(clone)], check=True)
    assert pygit2.Repository(str(clone)).is_shallow
    code = main(["index", str(clone), "--out", str(tmp_path / "idx"), "--no-dense", "--quiet", "--no-cache",
                 "--history"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "shallow clone" in err and ids[1][:12] in err
    entry = json.loads((tmp_path / "idx" / "manifest.json").read_text())["history"]
    assert entry["shallow"] == {"count": 1, "boundary": [ids[1]]}
    commits, changes = _tables(tmp_path / "idx")
    assert [c["id"] for c in commits] == ids[:2]
    assert commits[1]["parents"] == [ids[2]] and commits[1]["files"] == 0
    assert {c["commit"] for c in changes} == {ids[0]}


def test_paths_holding_the_id_separator_get_no_history_rows(tmp_path):
    """The walk skips `a::b.py` (ids split at the first `::`); the history gave it rows
    such as `a::b.py::f`, which no node can have."""
    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"a.py": A1, "x::y.py": "def f():\n    return 1\n"}, "initial", 1_000, [])
    git_commit(repo, {"x::y.py": "def f():\n    return 2\n"}, "change f", 2_000, [c1])
    _build(root, tmp_path / "idx", HistorySpec())
    _, changes = _tables(tmp_path / "idx")
    assert changes and not [c["node_id"] for c in changes if c["file"].count("::") or "x::y" in c["node_id"]]


# --- REV must be the snapshot ---------------------------------------------------------------

def test_a_revision_after_the_snapshot_is_refused(git_repo, tmp_path, capsys):
    """An archive of c2 indexed with `--history MIRROR@main` stored c3 and c4 (made after
    it) and their definitions; now it exits 2 naming the first file that differs and the fix,
    and the commit the archive was made from is read."""
    gitdir = git_repo["root"] / ".git"
    snap = archive(git_repo["repo"], git_repo["c2"], tmp_path / "snap")
    code = main(["index", str(snap), "--out", str(tmp_path / "out"), "--no-dense", "--quiet", "--no-cache",
                 "--history", f"{gitdir}@main"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "indexed file a.py differs" in err and "fix: pass the commit the checkout was made from" in err
    assert not (tmp_path / "out").exists()
    # A file of the snapshot that the revision lacks is refused too.
    (snap / "extra.py").write_text("X = 1\n")
    code = main(["index", str(snap), "--out", str(tmp_path / "out"), "--no-dense", "--quiet", "--no-cache",
                 "--history", f"{gitdir}@{git_repo['c2']}"])
    assert code == 2 and "indexed file extra.py is not in its tree" in capsys.readouterr().err
    (snap / "extra.py").unlink()
    code = main(["index", str(snap), "--out", str(tmp_path / "out"), "--no-dense", "--quiet", "--no-cache",
                 "--history", f"{gitdir}@{git_repo['c2']}"])
    assert code == 0
    assert [c["id"] for c in _tables(tmp_path / "out")[0]] == [git_repo["c2"], git_repo["c1"]]


def test_a_clone_that_git_converted_on_checkout_is_the_snapshot(tmp_path, capsys):
    """`.gitattributes` with `eol=crlf` and `working-tree-encoding` (sphinx since 2025): git
    writes those files with CRLF line ends and in that encoding, so their bytes are not the
    blobs'. A clean clone was refused as "not the snapshot"; now it is read, and a real edit
    to such a file is still refused."""
    import shutil
    import subprocess

    git = shutil.which("git")
    assert git, "this test needs the git command (a real checkout with its filters)"
    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    cyrillic = 'X = "\u0425"\n\n\ndef f():\n    return X\n'
    git_commit(repo, {".gitattributes": "dos.py text eol=crlf\nenc.py working-tree-encoding=windows-1251\n",
                      "dos.py": "def g():\n    return 1\n", "enc.py": cyrillic, "a.py": A1}, "initial", 1_000, [])
    clone = tmp_path / "clone"
    subprocess.run([git, "clone", "-q", f"file://{root}", str(clone)], check=True)
    assert (clone / "dos.py").read_bytes() == b"def g():\r\n    return 1\r\n"
    assert (clone / "enc.py").read_bytes() == cyrillic.encode("windows-1251")
    code = main(["index", str(clone), "--out", str(tmp_path / "out"), "--no-dense", "--quiet", "--no-cache",
                 "--history"])
    assert code == 0, capsys.readouterr().err
    assert [c["message"] for c in _tables(tmp_path / "out")[0]] == ["initial"]
    (clone / "enc.py").write_bytes(cyrillic.replace("return X", "return 2").encode("windows-1251"))
    code = main(["index", str(clone), "--out", str(tmp_path / "out2"), "--no-dense", "--quiet", "--no-cache",
                 "--history"])
    assert code == 2 and "indexed file enc.py differs" in capsys.readouterr().err


def test_a_clone_at_base_refuses_a_later_revision_with_the_same_files(tmp_path, capsys):
    """A clone checked out at BASE with `--history @main`, where main's later commit changed
    no indexed file: the manifest said head = the later commit while git_commit = BASE; now
    a revision that is not HEAD nor an ancestor of it exits 2, and an ancestor is read."""
    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"a.py": A1}, "initial", 1_000, [])
    c2 = git_commit(repo, {"notes.txt": "base\n"}, "notes", 2_000, [c1])
    later = git_commit(repo, {"notes.txt": "later\n"}, "later notes", 3_000, [c2])
    repo.create_branch("base", repo[c2])
    repo.checkout("refs/heads/base")
    assert repo.head.target == c2 and (root / "notes.txt").read_text() == "base\n"
    code = main(["index", str(root), "--out", str(tmp_path / "out"), "--no-dense", "--quiet", "--no-cache",
                 "--history", "@main"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert str(later)[:12] in err and "not the checked-out commit" in err and "fix:" in err
    assert not (tmp_path / "out").exists()
    manifest = _build(root, tmp_path / "ok", HistorySpec(None, str(c1)))     # an ancestor: its files match
    assert manifest["history"]["head"] == str(c1) and manifest["git_commit"] == str(c2)


def test_a_missing_tree_or_commit_is_named(tmp_path, capsys):
    """A past commit's tree left out: that commit and its child get no change rows and the
    manifest names the tree; a past commit itself left out: exit 2 naming the fix (both were
    pygit2 tracebacks, exit 1)."""
    root = tmp_path / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"a.py": A1}, "initial", 1_000, [])
    c2 = git_commit(repo, {"b.py": "def h():\n    return 1\n"}, "add b", 2_000, [c1])
    c3 = git_commit(repo, {"a.py": A2}, "change f", 3_000, [c2])
    tree = str(repo[c1].tree_id)
    _loose_object(root, tree).unlink()
    manifest = _build(root, tmp_path / "idx", HistorySpec())
    assert manifest["history"]["missing"] == {"count": 1, "first": [{"id": tree, "path": "", "commit": str(c2)}]}
    commits, changes = _tables(tmp_path / "idx")
    assert [c["files"] for c in commits] == [1, 0, 0]
    assert {c["commit"] for c in changes} == {str(c3)}
    _loose_object(root, str(c1)).unlink()
    code = main(["index", str(root), "--out", str(tmp_path / "idx2"), "--no-dense", "--quiet", "--no-cache",
                 "--history"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot be walked" in err and "fix: fetch the repository's missing commits" in err


def test_one_blob_under_two_grammars_is_read_by_each_paths_grammar(tmp_path):
    """The same bytes as `a.ts` and as `b.tsx` read differently (`<any>y` is a cast in
    TypeScript, an element in TSX): the parsed-blob cache keys on how a path is read, so the
    lines of each file land on the definitions its own grammar finds, not on those of the
    other path's parse (the newest commits are read first: `b.tsx`'s version is parsed
    before `a.ts`'s)."""
    from codenib.compiler.lang import reader_of

    src = "function f() {\n  const x = <any>y;\n  return x;\n}\n\nfunction g() {\n  return 1;\n}\n"
    repo = pygit2.init_repository(str(tmp_path / "repo"), initial_head="main")
    c1 = git_commit(repo, {"a.ts": src}, "add a.ts", 1_000, [])
    c2 = git_commit(repo, {"b.tsx": src}, "copy it as b.tsx", 2_000, [c1])
    c3 = git_commit(repo, {"b.tsx": src.replace("  return 1;\n", "")}, "drop a line of b.tsx", 3_000, [c2])
    raw = src.encode()
    tsx = {n: (s, e) for n, s, e in reader_of("b.tsx", raw).spans("b.tsx", raw)}
    ts = {n.replace("a.ts", "b.tsx"): (s, e) for n, s, e in reader_of("a.ts", raw).spans("a.ts", raw)}
    assert tsx != ts, "the two grammars must read these bytes differently"
    _build(tmp_path / "repo", tmp_path / "idx", HistorySpec(None, "HEAD"))
    _, changes = _tables(tmp_path / "idx")
    first = {c["node_id"] for c in changes if c["commit"] == str(c1)}
    added = {c["node_id"] for c in changes if c["commit"] == str(c2)}
    deleted = {c["node_id"] for c in changes if c["commit"] == str(c3)}
    assert first == {"a.ts", *(n.replace("b.tsx", "a.ts") for n in ts)}, first
    assert added == {"b.tsx", *tsx}, added
    assert deleted == {"b.tsx", *(n for n, (s, e) in tsx.items() if s <= 7 <= e)}, deleted


@pytest.mark.parametrize("a, b", [("a.ts", "b.tsx"), ("src/.ts", "src/.tsx")])
def test_the_blob_cache_tells_apart_paths_read_by_two_grammars(a, b):
    """`_read_as` keys apart two names whose grammars differ, a hidden `.tsx` file (TSX to
    its reader) included, and keeps one key for one suffix."""
    from codenib.compiler.history.commits import _read_as

    assert _read_as(a, "typescript") != _read_as(b, "typescript")
    assert _read_as("x/a.ts", "typescript") == _read_as("y/b.ts", "typescript")
