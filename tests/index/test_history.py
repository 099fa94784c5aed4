"""`codenib.index.history.History` on a literal history with hand-computed expectations."""

from __future__ import annotations

import pyarrow as pa
import pytest

from codenib.index.history import History

DAY = 86_400
HEAD = 1_000 * DAY

# c1: a fix a year before the head touching a.py (f) and b.py (h);
# c2: the head's own commit touching a.py (f, g); c3: a merge (no changes);
# c4: two years back, touching a.py, b.py, c.py and gone.py (no longer in the index).
COMMITS = pa.table({
    "id": ["c2", "c3", "c1", "c4"],
    "time": [HEAD, HEAD - 10, HEAD - 365 * DAY, HEAD - 730 * DAY],
    "message": ["parser rewrite for speed", "Merge branch parser", "Fix crash when parser sees tabs",
                "initial import of the tokenizer"],
    "parents": [["c3"], ["c1", "x"], ["c4"], []],
    "is_fix": [False, False, True, False],
    "files": [1, 0, 2, 4],
})
CHANGES = pa.table({
    "commit": ["c2", "c2", "c2", "c1", "c1", "c1", "c1", "c4", "c4", "c4", "c4"],
    "file": ["a.py", "a.py", "a.py", "a.py", "a.py", "b.py", "b.py", "a.py", "b.py", "c.py", "gone.py"],
    "node_id": ["a.py", "a.py::f", "a.py::g", "a.py", "a.py::f", "b.py", "b.py::h", "a.py", "b.py", "c.py",
                "gone.py"],
    "lines": pa.array([5, 3, 2, 4, 4, 1, 1, 10, 10, 10, 10], pa.int32()),
    "exists": [True, True, True, True, True, True, True, True, True, True, False],
})


@pytest.fixture(scope="module")
def history():
    return History(COMMITS, CHANGES, HEAD)


def test_change_proneness_decays_by_half_life(history):
    ev = history.change_proneness(half_life_days=365)
    # a.py: c2 (weight 1) + c1 (0.5) + c4 (0.25); the merge changed nothing.
    assert ev.files == pytest.approx({"a.py": 1.75, "b.py": 0.75, "c.py": 0.25})
    assert ev.nodes == pytest.approx({"a.py::f": 1.5, "a.py::g": 1.0, "b.py::h": 0.5})
    fixes = history.change_proneness(half_life_days=365, fix_only=True)
    assert fixes.files == pytest.approx({"a.py": 0.5, "b.py": 0.5})
    assert fixes.nodes == pytest.approx({"a.py::f": 0.5, "b.py::h": 0.5})
    assert history.change_proneness(365, existing=False).files["gone.py"] == pytest.approx(0.25)


def test_similar_changes_weigh_like_buglocator(history):
    matches = history.similar_commits("crash in the parser with tabs")
    ids = [cid for cid, _ in matches]
    assert ids[0] == "c1" and "c3" not in ids     # the merge changed nothing: not searchable
    score = dict(matches)
    ev = history.similar_changes("crash in the parser with tabs")
    # c1 changed 2 files and 2 nodes; c2 (also matching "parser") 1 file and 2 nodes.
    assert ev.files == pytest.approx({"a.py": score["c1"] / 2 + score["c2"], "b.py": score["c1"] / 2})
    assert ev.nodes == pytest.approx({"a.py::f": score["c1"] / 2 + score["c2"] / 2,
                                      "b.py::h": score["c1"] / 2, "a.py::g": score["c2"] / 2})
    assert history.similar_changes("zebra").files == {}


def test_co_changes_spread_each_commits_recency_over_its_pairs(history):
    files = history.co_changes("file", half_life_days=365).to_pylist()
    got = {(r["src"], r["dst"]): (r["count"], r["weight"]) for r in files}
    # c1 (recency 0.5): {a, b} -> 0.5; c4 (0.25): {a, b, c} (gone.py no longer exists) -> 0.25 / 2.
    ab, rest = (2, pytest.approx(0.625)), (1, pytest.approx(0.125))
    assert got == {("a.py", "b.py"): ab, ("b.py", "a.py"): ab, ("a.py", "c.py"): rest, ("c.py", "a.py"): rest,
                   ("b.py", "c.py"): rest, ("c.py", "b.py"): rest}
    assert [(r["src"], r["dst"]) for r in files][:2] == [("a.py", "b.py"), ("a.py", "c.py")]   # heaviest first
    assert {r["type"] for r in files} == {"co_changed"}
    nodes = {(r["src"], r["dst"]): r["weight"] for r in history.co_changes("node", half_life_days=365).to_pylist()}
    assert nodes == {("a.py::f", "a.py::g"): pytest.approx(1.0), ("a.py::g", "a.py::f"): pytest.approx(1.0),
                     ("a.py::f", "b.py::h"): pytest.approx(0.5), ("b.py::h", "a.py::f"): pytest.approx(0.5)}
    capped = history.co_changes("file", max_members=2).to_pylist()
    assert [(r["src"], r["dst"]) for r in capped] == [("a.py", "b.py"), ("b.py", "a.py")]
    # Fan-out 1: each keeps its heaviest partner; c's two partners tie and go by id.
    one = history.co_changes("file", half_life_days=365, fanout=1).to_pylist()
    assert [(r["src"], r["dst"]) for r in one] == [("a.py", "b.py"), ("b.py", "a.py"), ("c.py", "a.py")]


def test_loaded_from_an_index(tmp_path):
    """Through an index folder: checksums verified, None without a history."""
    import pygit2

    from codenib.compiler.build import build_index

    from codenib.compiler.build_options import BuildOptions
    from codenib.compiler.history import HistorySpec
    from codenib.index.loaded import load_index

    repo = pygit2.init_repository(str(tmp_path / "r"), initial_head="main")
    (tmp_path / "r" / "a.py").write_text("def f():\n    return 1\n")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("t", "t@example.org", 5_000, 0)
    repo.create_commit("HEAD", sig, sig, "Fix the frobnicator", repo.index.write_tree(), [])
    for name, history in (("with", HistorySpec()), ("without", None)):
        build_index(tmp_path / "r", tmp_path / name,
                    BuildOptions(dense=False, progress=False, use_cache=False, jobs=1, history=history))
    loaded = load_index(tmp_path / "with").history
    assert len(loaded) == 1 and loaded.similar_changes("frobnicator").nodes.keys() == {"a.py::f"}
    assert History.load(tmp_path / "without") is None
    assert History.load(tmp_path / "with").ids == loaded.ids
