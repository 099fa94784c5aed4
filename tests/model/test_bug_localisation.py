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
    # Only the file-node feature, rewarded: a file node must come first (the defaults put
    # the function of the traceback's last frame first).
    r = _run(bug_index, text, localise_weights=LocaliseWeights({"n_is_file": 1.0, "n_bm25": 0.01}))
    assert "::" not in r.candidates[0].node_id
    assert "::" in _run(bug_index, text).candidates[0].node_id


def test_library_code_first_even_when_weights_reward_tests(bug_index):
    """Weights that reward test files cannot put an unnamed test file above library code;
    a report whose title is about the tests puts it first."""
    text = bug_repo.TRACEBACK_REPORT + LONG_TAIL
    weights = LocaliseWeights({"f_test": 1.0, "n_bm25": 0.01})
    files = _files(_run(bug_index, text, localise_weights=weights))
    assert files[0] != "tests/test_cart.py" and files.index("tests/test_cart.py") == len(files) - 1
    about_tests = "test_cart fails: the tests for coupons are broken\n" + text.split("\n", 1)[1]
    assert _files(_run(bug_index, about_tests, localise_weights=weights))[0] == "tests/test_cart.py"


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
