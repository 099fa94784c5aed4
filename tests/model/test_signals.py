"""Query signals (what the planner reads)."""

import pytest

from codenib.model.signals import query_signals
from tests.ops.test_transform import REPORT


def test_signals():
    s = query_signals(REPORT)
    assert s.long_text and s.structural == 0 and s.semantic == 0.8
    lookup = query_signals("where is `Context.invoke` defined?")
    assert (lookup.lexical, lookup.target) == (1.0, "Context.invoke")
    callers = query_signals("who calls term_len?")
    assert (callers.direction, callers.target, callers.structural) == ("incoming", "term_len", 0.9)
    callees = query_signals("which functions does Parser.subparse call?")
    assert (callees.direction, callees.target) == ("outgoing", "Parser.subparse")
    assert query_signals("functions called by do_join").direction == "outgoing"
    assert query_signals("where is get_bucket called from?").direction == "incoming"
    prose = query_signals("Return the default stream encoding if not found.")
    assert prose.semantic == 1.0 and prose.lexical == 0 and prose.target is None
    assert query_signals("method reset").target == "reset"
    assert query_signals("tests for the lexer").about_tests
    assert not query_signals("the lexer of this environment").about_tests


@pytest.mark.parametrize("unit", ["1", "-", "-a", "a/", "_1", "`a", "thanks ", "\n", " \n", "a."])
def test_long_runs_are_read_in_linear_time(unit):
    """A query of 300,000 characters made of one repeated unit is read whole: the patterns that
    used to rescan a run from every position inside it (a run of digits in the tokenizer, of
    dashes in the courtesy stripper, "-a-a..." in the path finder, of blank lines in the clause
    splitter) took minutes to hours here."""
    from codenib.model.intent.parse import parse_intent
    from codenib.ops.transform import extract_keywords

    text = (unit * (300_000 // len(unit) + 1))[:300_000]
    # No unit holds a relation word, a file extension or an exception name.
    assert query_signals(text).structural == 0.0
    assert parse_intent(text).relation is None
    keywords = extract_keywords(text)
    assert keywords.paths == () and keywords.errors == ()


@pytest.mark.parametrize("text, report", [
    # an issue: a title, a blank line, a body (a short feature request is still a report)
    ("Add --min-depth option\n\nWe have `--max-depth` option, but there is no `--min-depth` counterpart "
     "for the search.", True),
    ("Support explicit fallback in grpclb\r\n\r\nSupport the new field from the proto definitions.", True),
    # a question, on one line or wrapped over two lines without a blank one: not a report
    ("Where is the option that limits how deep the search goes into the sub folders of the tree?", False),
    ("Where is the option that limits how deep the search goes\ninto the sub folders of the tree?", False),
    # a title and a body too short to be an issue
    ("max depth\n\nwhere is it", False),
])
def test_an_issue_shaped_text_is_a_report_whatever_its_length(text, report):
    assert query_signals(text).long_text is report


def test_a_report_in_chinese_counts_its_words_from_its_characters():
    # Title (6 characters) and body (16 + 8 characters): 30 // 2 = 15 words, 0 Latin words;
    # with an issue's shape and at least 12 words it is a report (bug_localisation).
    report = "日期解析错误\n\n输入的字符串带有时区时解析日期失败\n升级以后全部错位"
    s = query_signals(report)
    assert s.words == 15 and s.long_text
    # Four characters are two words: a short question, not a report.
    short = query_signals("解析日期")
    assert short.words == 2 and not short.long_text
    # Latin words and characters add up: 2 + 6 // 2.
    mixed = query_signals("调用 render_table 之后乱了")
    assert mixed.words == 2 + 3
