"""scripts/devsets.py: Recall@k beside the strict Acc, hand-computed."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _devsets():
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module("devsets")


def test_recalls_count_the_share_of_gold_found():
    devsets = _devsets()
    ranks = {
        # files in order: a.py, b.py, c.py; named definitions: a.py::f, b.py::g
        "q1": ["a.py::f", "a.py", "b.py::g", "c.py"],
        # 21 distinct files: the gold z.py is the 21st, outside both cut-offs but one
        "q2": [f"f{i:02d}.py" for i in range(19)] + ["y.py", "z.py"],
    }
    gold_files = {"q1": {"a.py", "d.py"}, "q2": {"y.py", "z.py"}}
    gold_funcs = {"q1": {"b.py::g", "a.py::h"}}
    row = devsets.recalls(ranks, ["q1", "q2"], gold_files, gold_funcs)
    # q1: a.py of {a.py, d.py} -> 1/2 at 10 and 20; q2: y.py is 20th -> 0 at 10, 1/2 at 20.
    assert row["fileR@10"] == pytest.approx((0.5 + 0.0) / 2)
    assert row["fileR@20"] == pytest.approx((0.5 + 0.5) / 2)
    # Only q1 has function gold: b.py::g of {b.py::g, a.py::h}.
    assert row["funcR@10"] == pytest.approx(0.5)
