"""One-hop expansion honours every cap and edge-type rule on the fixture graph."""

import pytest

from codenib.core.errors import BadInputError
from codenib.ops.expand import ExpandParams, expand_graph_neighbors, load_span_content
from codenib.ops.retrieve import RetrieveContext, from_node_ids


@pytest.fixture(scope="module")
def ctx(sparse_only_index):
    return RetrieveContext(sparse_only_index)


def seeds(ctx, *ids):
    return from_node_ids(ids, [1.0] * len(ids), "seed", ctx)


def test_callers_and_callees_are_interleaved_by_count_then_id(ctx):
    out = expand_graph_neighbors(seeds(ctx, "pkg/core.py::Engine.prepare"),
                           ExpandParams(direction="both", edge_types=("calls",), per_seed=10), ctx)
    # callers: Engine.start, run_engine.inner; callees: Base.setup
    assert [c.node_id for c in out] == ["pkg/core.py::Engine.prepare", "pkg/core.py::Engine.start",
                                        "pkg/base.py::Base.setup", "pkg/core.py::run_engine.inner"]
    assert [c.source for c in out[1:]] == ["graph"] * 3
    assert all(c.score == 0.5 for c in out[1:])


def test_per_seed_and_total_caps(ctx):
    s = seeds(ctx, "pkg/core.py::Engine.start", "pkg/core.py::run_engine")
    out = expand_graph_neighbors(s, ExpandParams(direction="callees", edge_types=("calls",), per_seed=2, total=3), ctx)
    new = [c.node_id for c in out[2:]]
    assert len(new) == 3
    # Engine.start's callees by id: Engine.prepare, Store.put, helper, slugify -> first two.
    assert new[:2] == ["pkg/core.py::Engine.prepare", "pkg/util.py::Store.put"]
    out = expand_graph_neighbors(s, ExpandParams(direction="callees", edge_types=("calls",), per_seed=0), ctx)
    assert len(out) == 2


def test_containment_is_outside_the_dependency_budget(ctx):
    s = seeds(ctx, "pkg/core.py::Engine.prepare")
    out = expand_graph_neighbors(s, ExpandParams(direction="callers", edge_types=("calls",), per_seed=1,
                                           include_contains=True, contains_per_seed=1), ctx)
    assert [(c.node_id, c.source) for c in out[1:]] == [("pkg/core.py::Engine.start", "graph"),
                                                        ("pkg/core.py::Engine", "graph:contains")]
    out = expand_graph_neighbors(s, ExpandParams(direction="callers", edge_types=("calls",), total=0,
                                           include_contains=True), ctx)
    assert [c.source for c in out[1:]] == ["graph:contains"]


def test_edge_type_filter_and_no_duplicates(ctx):
    s = seeds(ctx, "pkg/core.py::Engine", "pkg/base.py::Base")
    out = expand_graph_neighbors(s, ExpandParams(direction="both", edge_types=("inherits",)), ctx)
    assert [c.node_id for c in out] == ["pkg/core.py::Engine", "pkg/base.py::Base"]  # each other's neighbour
    out = expand_graph_neighbors(s, ExpandParams(direction="callers", edge_types=("references",)), ctx)
    assert len(out) == len({c.node_id for c in out})


def test_input_is_not_mutated_and_bad_params_are_named(ctx):
    s = seeds(ctx, "pkg/util.py::slugify")
    before = list(s)
    expand_graph_neighbors(s, ExpandParams(), ctx)
    assert list(s) == before
    with pytest.raises(BadInputError, match="callers, callees, both"):
        ExpandParams(direction="up")
    with pytest.raises(BadInputError, match="include_contains"):
        ExpandParams(edge_types=("contains",))


def test_span_content_is_read_inside_the_root_only(ctx, fixture_repo, tmp_path):
    from codenib.index.source import SourceReader

    reader = SourceReader(fixture_repo)
    out = load_span_content(seeds(ctx, "pkg/util.py::slugify"), ctx, reader)
    assert out[0].content == "def slugify(text):\n    return text.lower()\n"
    assert reader.read_span("../../etc/passwd", 1, 1) is None
    (tmp_path / "outside.py").write_text("secret = 1\n")
    link = fixture_repo / "link_out.py"
    link.symlink_to(tmp_path / "outside.py")
    try:
        assert SourceReader(fixture_repo).read_span("link_out.py", 1, 1) is None
    finally:
        link.unlink()
    # Without a reader, the indexed text is the content.
    assert "def slugify" in load_span_content(seeds(ctx, "pkg/util.py::slugify"), ctx)[0].content
