"""The bug-report plan end to end on a real (sparse-only) index: routing, ranking, trace, bad input."""

from __future__ import annotations

import pytest

from codenib.model.localise import LocaliseWeights
from tests.retrieval import Retrieval
from tests.model import bug_repo

LONG_TAIL = ("\n\nI expected the cart to keep every cent of the price after the coupon is applied, "
             "the way the receipt shows it, but the total comes out one cent lower each time.")


def _run(index, text, **kw):
    return Retrieval(index, **kw).run([text], 20)[0]


def _files(result):
    return list(dict.fromkeys(c.file for c in result.candidates))


def test_a_long_report_is_localised_files_first(bug_index):
    r = _run(bug_index, bug_repo.TRACEBACK_REPORT + LONG_TAIL)
    assert r.error is None and r.plan == "bug_localisation"
    # The traceback ends in pricing.round_cents; the library ranks above its test. The two
    # library files are both frames and both named by the report ("cart", "total"): with the
    # whole-file runs the fitted weights put them within 0.01 of each other, so either may lead.
    assert set(_files(r)[:2]) == {"src/shop/pricing.py", "src/shop/cart.py"}
    assert _files(r).index("tests/test_cart.py") > _files(r).index("src/shop/cart.py")
    ids = [c.node_id for c in r.candidates]
    assert ids.index("src/shop/pricing.py::round_cents") < 5
    detail = r.trace["detail"]
    assert detail["runs"] == ["bm25", "file_bm25", "file_prose", "prose", "title"]       # no dense run on a sparse-only index
    assert detail["mentions"]["frame"] == 3
    assert {p["node_id"] for p in detail["priors"] if p["kind"] == "frame"} >= {"src/shop/pricing.py::round_cents"}
    top = detail["contributions"][0]
    assert top["node_id"] == r.candidates[0].node_id
    assert sum(top["contributions"].values()) == pytest.approx(top["score"], abs=1e-3)


def test_the_weights_are_a_resource_of_the_pipeline(bug_index):
    text = bug_repo.TRACEBACK_REPORT + LONG_TAIL
    # Only the test-path feature, rewarded: the test file must come first.
    r = _run(bug_index, text, localise_weights=LocaliseWeights({"f_test": 1.0, "n_bm25": 0.01}))
    assert _files(r)[0] == "tests/test_cart.py"


@pytest.mark.parametrize("text", [
    "Traceback (most recent call last):\n" + '  File "/x/y/z.py", line 3, in f\n    g()\n' * 20 + "KeyError: 'q'",
    "it fails " * 30 + "help",   # no code at all
    "Total is wrong\n" + ("ERROR 2024-01-01 cart.py:14 total=0.26 expected=0.27\n" * 4500),
    "`validate` is wrong in several places " + "and the validate method keeps returning true " * 5,
])
def test_odd_reports_run_and_say_what_was_used(bug_index, text):
    r = _run(bug_index, text)
    assert r.error is None and r.plan == "bug_localisation"
    assert "runs" in r.trace["detail"] and "mentions" in r.trace["detail"]
    if len(text) > 100_000:
        assert r.trace["detail"]["truncated_at_chars"] == 100_000


def test_an_empty_report_is_an_error_row_not_a_crash(bug_index):
    r = _run(bug_index, "   ")
    assert r.error and r.candidates == ()
