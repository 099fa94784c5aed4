"""Quoted-literal evidence: which nodes hold a report's quoted strings, their weights, and the
features they give (hand-computed on the literal node table of test_localise)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from codenib.index.literal import TextScan
from codenib.model.literals import LITERAL_MAX_FILES, Literal, literal_holders
from codenib.model.library_paths import is_library_path
from codenib.model.localise import FEATURES, features
from codenib.model.localise_inputs import LocaliseInputs
from tests.model.test_localise import FILE_ROWS, NODES


def test_a_literal_held_by_few_library_files_lifts_them_and_the_nodes_holding_it():
    texts = ["lib/a.py", "def f(): raise E('bad option %r')", "def g(): pass",
             "tests/test_a.py", "def test_f(): check('bad option', '--fast')", "lib/b.py", "def h(): '--fast'"]
    holders = literal_holders(("bad option", "--fast", "pass", "nowhere"), TextScan.from_texts(texts), NODES.file,
                              is_library_path)
    # "bad option": one library file (the test holds it too) -> 1; "--fast": lib/b.py only -> 1;
    # "pass": one library file -> 1; "nowhere": no holder, left out.
    assert holders == (Literal("bad option", (1, 4), 1.0), Literal("--fast", (4, 6), 1.0), Literal("pass", (2,), 1.0))
    table = features(LocaliseInputs({}, literals=holders[:2]), NODES, None, FILE_ROWS)
    got = {NODES.node_id[r]: (x[FEATURES.index("f_literal")], x[FEATURES.index("n_literal")])
           for r, x in zip(table.rows.tolist(), table.X)}
    # No run reached anything: the literals alone make candidates, with their file nodes; the
    # test holds both literals: log2(1 + 2).
    three = math.log2(3.0)
    want = {"lib/a.py": (1.0, 0.0), "lib/a.py::f": (1.0, 1.0), "tests/test_a.py": (three, 0.0),
            "tests/test_a.py::test_f": (three, three), "lib/b.py": (1.0, 0.0), "lib/b.py::h": (1.0, 1.0)}
    assert set(got) == set(want)
    assert all(got[k] == pytest.approx(want[k]) for k in want)
    # Literals add up at file level, each once per file, on a log scale: log2(1 + 0.5 + 0.25).
    # A node holding two literals of weight 1 scores log2(3).
    both = features(LocaliseInputs({}, literals=(Literal("x", (1,), 0.5), Literal("y", (2,), 0.25),
                                                 Literal("z", (6,), 1.0), Literal("w", (6,), 1.0))),
                    NODES, None, FILE_ROWS)
    got = {NODES.node_id[r]: (x[FEATURES.index("f_literal")], x[FEATURES.index("n_literal")])
           for r, x in zip(both.rows.tolist(), both.X)}
    assert got["lib/a.py::g"] == pytest.approx((math.log2(1.75), math.log2(1.25)))
    assert got["lib/b.py::h"] == pytest.approx((math.log2(3.0), math.log2(3.0)))


def test_a_literal_in_more_library_files_than_the_limit_is_left_out():
    n = LITERAL_MAX_FILES + 1
    nodes = SimpleNamespace(file=[f"lib/m{i}.py" for i in range(n)])
    texts = ["x = 'common'"] * n
    assert literal_holders(("common",), TextScan.from_texts(texts), nodes.file, is_library_path) == ()
    assert literal_holders(("common",), TextScan.from_texts(texts[:-1]), nodes.file, is_library_path) == (
        Literal("common", tuple(range(n - 1)), 1 / (n - 1)),)
