"""Reading bug reports: mentions with spans, resolved against a real index's symbol table."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.model.reports.report import about_tests, read_report, resolve_mentions
from tests.model import bug_repo


def _priors(index, text):
    return resolve_mentions(read_report(text), index.symbols, index.nodes)


def test_traceback_frames_keep_spans_lines_and_functions():
    rep = read_report(bug_repo.TRACEBACK_REPORT)
    frames = [m for m in rep.mentions if m.kind == "frame"]
    assert [(m.text.rsplit("/", 1)[-1], m.line, m.function) for m in frames] == [
        ("app.py", 12, None), ("cart.py", 19, "total"), ("pricing.py", 12, "round_cents")]
    for m in frames:
        assert bug_repo.TRACEBACK_REPORT[m.start:m.end].startswith('File "')
    assert rep.title == "Cart total is off by a cent with a coupon"
    assert "Traceback" not in rep.prose and "loses a cent" in rep.prose


def test_site_packages_frame_resolves_to_the_repository_node_holding_the_line(bug_index):
    priors = _priors(bug_index, bug_repo.TRACEBACK_REPORT)
    frames = {(p.file, bug_index.nodes.node_id[p.row] if p.row is not None else None)
              for p in priors if p.mention.kind == "frame"}
    # app.py is the user's own file: not in the index, so no prior.
    assert frames == {("src/shop/cart.py", "src/shop/cart.py::Cart.total"),
                      ("src/shop/pricing.py", "src/shop/pricing.py::round_cents")}


def test_backticked_class_method_resolves_to_one_node_with_full_confidence(bug_index):
    priors = [p for p in _priors(bug_index, bug_repo.BACKTICK_REPORT) if p.mention.kind == "backtick"]
    assert {bug_index.nodes.node_id[p.row] for p in priors} == {"src/shop/cart.py::Cart.add"}
    assert all(p.confidence == pytest.approx(0.6) for p in priors)


def test_path_mentions_resolve_by_suffix(bug_index):
    priors = [p for p in _priors(bug_index, bug_repo.PATH_REPORT) if p.mention.kind == "path"]
    assert {p.file for p in priors} == {"src/shop/pricing.py"}
    lined = [p for p in priors if p.mention.line == 12]
    assert lined and bug_index.nodes.node_id[lined[0].row] == "src/shop/pricing.py::round_cents"


def test_a_name_defined_twice_becomes_two_weaker_priors(bug_index):
    priors = [p for p in _priors(bug_index, bug_repo.AMBIGUOUS_REPORT) if p.mention.text == "validate"]
    ids = {bug_index.nodes.node_id[p.row] for p in priors}
    assert ids == {"src/shop/pricing.py::Coupon.validate", "src/shop/report.py::validate"}
    assert all(p.confidence == pytest.approx(0.6 / 2) for p in priors)


def test_a_report_without_identifiers_has_no_priors(bug_index):
    rep = read_report(bug_repo.NO_IDENTIFIER_REPORT)
    assert [m for m in rep.mentions if m.kind != "identifier"] == []
    assert _priors(bug_index, bug_repo.NO_IDENTIFIER_REPORT) == []


def test_huge_logs_are_cut_and_capped():
    text = "Crash in `Cart.add`\n" + ("ERROR src/shop/cart.py:14 some_logged_value=1\n" * 8000)
    rep = read_report(text)
    assert len(text) > 200_000 and rep.truncated
    assert len(rep.mentions) <= 400


def test_about_tests_reads_the_title_only():
    assert not about_tests(read_report(bug_repo.TRACEBACK_REPORT + "\n  File \"tests/test_x.py\", line 1"))
    assert about_tests(read_report("The test suite fails on Windows\n\nsee log"))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_reads_without_error_and_spans_point_into_it(text):
    rep = read_report(text)
    for m in rep.mentions:
        assert 0 <= m.start < m.end <= len(text)


def test_paths_of_every_read_language_are_path_mentions_with_their_lines():
    text = ("thread 'main' panicked at src/main.rs:42:5 while printing\n"
            "at com.fasterxml.jackson.core.json.ReaderBasedJsonParser._parseNumber(ReaderBasedJsonParser.java:123)\n"
            "goroutine 7 [running]: grpc.(*ClientConn).Close clientconn.go:301 and include/fmt/format.h, "
            "src/plugin/isoWeek/index.js, src/ui/App.tsx and jv.c look involved (e.g. not i.e. this).")
    paths = [(m.text, m.line) for m in read_report(text).mentions if m.kind == "path"]
    assert paths == [("src/main.rs", 42), ("ReaderBasedJsonParser.java", 123), ("clientconn.go", 301),
                     ("include/fmt/format.h", None), ("src/plugin/isoWeek/index.js", None),
                     ("src/ui/App.tsx", None), ("jv.c", None)]


def test_the_innermost_cpython_frame_is_the_strongest_mention_evidence(bug_index):
    """The traceback runs through cart.py into pricing.round_cents: the innermost frame's file
    carries more mention evidence than the outer frame's (each frame once weighed the same)."""
    from codenib.model.localise import FEATURES, features
    from codenib.model.localise_inputs import file_rows_of, inputs_for

    rep = read_report(bug_repo.TRACEBACK_REPORT)
    ids = bug_index.nodes.node_id
    frames = {ids[p.row]: p.confidence for p in _priors(bug_index, bug_repo.TRACEBACK_REPORT)
              if p.mention.kind == "frame"}
    assert frames == {"src/shop/pricing.py::round_cents": pytest.approx(1.0),
                      "src/shop/cart.py::Cart.total": pytest.approx(0.5)}
    table = features(inputs_for(rep, {}, bug_index), bug_index.nodes, bug_index.graph, file_rows_of(bug_index.nodes))
    f_mention = {ids[r]: x[FEATURES.index("f_mention")] for r, x in zip(table.rows, table.X)}
    assert f_mention["src/shop/pricing.py"] > f_mention["src/shop/cart.py"] > 0


def test_quoted_strings_that_are_more_than_a_name_are_literals_once_in_text_order():
    text = ("pytest `--collect-only` needs a shortcut; don't say it's slow.\n"
            "Malformed option description '[enable=]PATTERN', should look like \"opt\", \"-opt args\"\n"
            "see `add_marker()` and `Session.perform_collect`, and '--collect-only' again, 'x y'")
    assert read_report(text).literals == ("--collect-only", "[enable=]PATTERN", "-opt args")
    assert read_report("nothing quoted here").literals == ()


def test_an_installed_package_listing_leaves_the_text_searched_but_not_the_mentions():
    listing = "".join(f"pkg{i}-name      1.{i}.0\r\n" for i in range(4)) + "frozen==2.0\n"
    text = f"xfail marker ignored\n```\n$ pip list\n{listing}```\nSee `skipping.py`.\n"
    report = read_report(text)
    assert report.body == "xfail marker ignored\n```\n$ pip list\n```\nSee `skipping.py`.\n"
    assert "pkg0" not in report.words and "frozen" not in report.words
    assert [m.text for m in report.mentions if m.kind == "path"] == ["skipping.py"]
    # Two version-like lines are no listing: the text stays whole.
    short = "crash in 3.2\nfoo   1.0\nbar   2.0\n"
    assert read_report(short).body == short
