"""Normalization, dedup and weighted RRF (node and file level)."""

from hypothesis import given, settings, strategies as st
from ranx import Run, fuse

from codenib.ops.retrieve import (
    QueriedNode,
    dedup,
    from_node_ids,
    nodes_by_file_rank,
    rrf_fuse,
    rrf_fuse_files,
    to_queried_nodes,
)


def qn(node_id: str, score: float = 1.0, source: str = "t", content: str | None = None) -> QueriedNode:
    return QueriedNode(node_id, node_id.split("::")[0], "function", node_id.rsplit(".", 1)[-1], 1, 2,
                       score, source, content)


def run_of(ids, source="t"):
    return tuple(qn(i, 1.0 / (r + 1), source) for r, i in enumerate(ids))


def test_rrf_hand_computed():
    a = run_of(["a.py::x", "a.py::y", "b.py::z"])
    b = run_of(["b.py::z", "a.py::x"])
    fused = rrf_fuse([a, b], weights=[1.0, 2.0], k=60)
    scores = {c.node_id: c.score for c in fused}
    assert scores["a.py::x"] == 1 / 61 + 2 / 62
    assert scores["b.py::z"] == 1 / 63 + 2 / 61
    assert scores["a.py::y"] == 1 / 62
    assert [c.node_id for c in fused] == ["b.py::z", "a.py::x", "a.py::y"]
    assert all(c.source == "fusion" for c in fused)


ids = st.lists(st.sampled_from([f"f{i % 4}.py::n{i}" for i in range(12)]), min_size=1, max_size=10, unique=True)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(ids, st.integers(min_value=1, max_value=3)), min_size=2, max_size=4))
def test_weighted_rrf_agrees_with_ranx(runs_and_weights):
    """Integer weight w equals the run repeated w times in ranx's (unweighted) RRF."""
    runs = [run_of(r) for r, _ in runs_and_weights]
    weights = [float(w) for _, w in runs_and_weights]
    ours = {c.node_id: c.score for c in rrf_fuse(runs, weights, k=60)}
    ranx_runs = []
    for (r, w) in runs_and_weights:
        for _ in range(w):
            ranx_runs.append(Run({"q": {d: float(len(r) - i) for i, d in enumerate(r)}}))
    theirs = fuse(ranx_runs, norm=None, method="rrf", params={"k": 60}).to_dict()["q"]
    assert set(ours) == set(theirs)
    for d, s in ours.items():
        assert abs(s - theirs[d]) < 1e-9


@settings(max_examples=40, deadline=None)
@given(st.lists(ids, min_size=2, max_size=4), st.randoms())
def test_fusion_does_not_depend_on_the_order_of_equal_weight_runs(id_lists, rnd):
    runs = [run_of(r) for r in id_lists]
    shuffled = list(runs)
    rnd.shuffle(shuffled)
    assert rrf_fuse(runs) == rrf_fuse(shuffled)
    assert rrf_fuse_files(runs) == rrf_fuse_files(shuffled)


def test_ties_break_by_node_id():
    fused = rrf_fuse([run_of(["b.py::q"]), run_of(["a.py::q"])])
    assert [c.node_id for c in fused] == ["a.py::q", "b.py::q"]


def test_dedup_keeps_first_copy_and_carries_later_content():
    cands = [qn("a.py::x", 3.0, "dense"), qn("a.py::y", 2.0), qn("a.py::x", 1.0, "sparse", content="def x(): ...")]
    out = dedup(cands)
    assert [c.node_id for c in out] == ["a.py::x", "a.py::y"]
    assert out[0].source == "dense" and out[0].score == 3.0 and out[0].content == "def x(): ..."
    assert cands[0].content is None  # input untouched


def test_file_fusion_counts_each_branch_once_per_file():
    a = run_of(["a.py::x", "a.py::y", "b.py::z"])   # a.py rank 1, b.py rank 2 in this branch
    b = run_of(["b.py::z", "b.py::w"])              # b.py rank 1
    files = rrf_fuse_files([a, b], k=60)
    scores = {f.file: f.score for f in files}
    assert scores == {"a.py": 1 / 61, "b.py": 1 / 62 + 1 / 61}
    assert [f.file for f in files] == ["b.py", "a.py"]
    ordered = nodes_by_file_rank(files, [a, b])
    assert [c.node_id for c in ordered] == ["b.py::z", "b.py::w", "a.py::x", "a.py::y"]
    assert [c.score for c in ordered] == sorted((c.score for c in ordered), reverse=True)


def test_file_fusion_uses_relative_paths_so_checkouts_fuse():
    # Node ids hold relative paths only, so the same file from two checkouts is one file.
    files = rrf_fuse_files([run_of(["src/m.py::f"]), run_of(["src/m.py"])])
    assert [f.file for f in files] == ["src/m.py"]


def test_to_queried_nodes_normalizes_engine_rows(fixture_index):
    from codenib.ops.retrieve import RetrieveContext

    ctx = RetrieveContext(fixture_index)
    row = fixture_index.row_of["pkg/util.py::helper"]
    out = to_queried_nodes([row, -1, 10**6], [2.5, 0.0, 1.0], "sparse", ctx)
    assert len(out) == 1
    c = out[0]
    assert (c.node_id, c.file, c.kind, c.name, c.start_line, c.end_line, c.score, c.source) == (
        "pkg/util.py::helper", "pkg/util.py", "function", "helper", 4, 5, 2.5, "sparse")
    assert from_node_ids(["nope.py::x", "pkg/util.py::helper"], [1, 2], "graph", ctx)[0].score == 2
