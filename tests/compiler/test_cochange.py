"""`co_changed` edges from a real git history (made with pygit2, indexed with --history):
weights by hand (recency over commit size), the bound on partners, and an index whose history
was read incrementally (`--reuse`) giving the edges of a full read."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from codenib.compiler.build import build_index

from codenib.compiler.build_options import BuildOptions
from codenib.compiler.history import HistorySpec
from codenib.index.history import History
from tests.git_history import git_commit

DAY = 86_400
T = 1_000 * DAY          # the head commit's time; half-life 365 days
A1 = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
A2 = A1.replace("return 1", "return 10")
A3 = A2.replace("return 2", "return 20")
B1 = "def h():\n    return 3\n"
B2 = B1.replace("3", "30")
C1 = "def k():\n    return 4\n"
D1 = "def m():\n    return 5\n"


def _build(root: Path, out: Path, reuse: Path | None = None) -> History:
    build_index(root, out, BuildOptions(dense=False, progress=False, use_cache=False, jobs=1,
                                        history=HistorySpec(), reuse=reuse))
    return History.load(out)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """c1 (two years back) adds a, b, c; c2 (a year back) changes f and h; c3 (the head) changes
    g and adds d. Indexed at c2, then at c3 in full and with --reuse of the c2 index."""
    tmp = tmp_path_factory.mktemp("cochange")
    root = tmp / "repo"
    repo = pygit2.init_repository(str(root), initial_head="main")
    c1 = git_commit(repo, {"a.py": A1, "b.py": B1, "c.py": C1}, "initial import", T - 730 * DAY, [])
    c2 = git_commit(repo, {"a.py": A2, "b.py": B2}, "f and h agree on tens", T - 365 * DAY, [c1])
    at_c2 = _build(root, tmp / "c2")
    git_commit(repo, {"a.py": A3, "d.py": D1}, "g in tens, add m", T, [c2])
    return {"c2": at_c2, "full": _build(root, tmp / "full"), "reused": _build(root, tmp / "reused", tmp / "c2")}


def _edges(history: History, level: str, **kw) -> dict[tuple[str, str], tuple[int, float]]:
    return {(r["src"], r["dst"]): (r["count"], r["weight"]) for r in history.co_changes(level, **kw).to_pylist()}


def test_file_and_function_edges_weigh_recency_over_commit_size(built):
    files = _edges(built["full"], "file")
    # c1 (recency 0.25, 3 files): 0.25 / 2 per pair; c2 (0.5, 2 files): 0.5; c3 (1, 2 files): 1.
    expect = {("a.py", "b.py"): (2, 0.125 + 0.5), ("a.py", "c.py"): (1, 0.125), ("b.py", "c.py"): (1, 0.125),
              ("a.py", "d.py"): (1, 1.0)}
    both = {**expect, **{(b, a): v for (a, b), v in expect.items()}}
    assert files.keys() == both.keys()
    for pair, (count, weight) in both.items():
        assert files[pair] == (count, pytest.approx(weight))
    assert built["full"].partners("file")["a.py"] == [("d.py", pytest.approx(1.0)), ("b.py", pytest.approx(0.625)),
                                                     ("c.py", pytest.approx(0.125))]
    nodes = _edges(built["full"], "node")
    # c1 added f, g, h, k (0.25 / 3 per pair); c2 changed f and h (0.5); c3 changed g and added m (1).
    third = 0.25 / 3
    assert nodes[("a.py::f", "b.py::h")] == (2, pytest.approx(third + 0.5))
    assert nodes[("a.py::g", "d.py::m")] == (1, pytest.approx(1.0))
    assert nodes[("c.py::k", "a.py::g")] == (1, pytest.approx(third))
    assert len(nodes) == 2 * (6 + 1)   # the six pairs of c1 (one of them again in c2) and c3's


def test_partners_are_bounded_per_node(built):
    one = _edges(built["full"], "file", fanout=1)
    assert one.keys() == {("a.py", "d.py"), ("b.py", "a.py"), ("c.py", "a.py"), ("d.py", "a.py")}


def test_history_read_with_reuse_gives_the_edges_of_a_full_read(built):
    assert len(built["reused"]) == len(built["full"]) == 3
    for level in ("file", "node"):
        assert built["reused"].co_changes(level).equals(built["full"].co_changes(level))
    # The c2 snapshot's own edges: recency is measured back from its head (c2 counts 1).
    assert _edges(built["c2"], "file")[("a.py", "b.py")] == (2, pytest.approx(0.25 + 1.0))
