"""Verbatim search over node texts (`codenib.index.literal`)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from codenib.index.literal import TextScan


def test_rows_holding_a_string_verbatim_each_once_in_row_order():
    scan = TextScan.from_texts(["a --flag b --flag", None, "x", "--flag"])
    assert len(scan) == 4
    assert scan.rows_containing("--flag", 10) == [0, 3]
    assert scan.rows_containing("--flags", 10) == []
    assert scan.rows_containing("--Flag", 10) == []


def test_a_match_never_spans_two_nodes():
    scan = TextScan.from_texts(["ab", "cd", "b\0c"])
    assert scan.rows_containing("bc", 10) == []
    assert scan.rows_containing("b c", 10) == [2]   # a separator inside a text reads as a space
    assert scan.rows_containing("b\0c", 10) is None


def test_a_string_too_common_or_empty_is_none():
    scan = TextScan.from_texts(["x = 1"] * 5)
    assert scan.rows_containing("x = 1", 4) is None
    assert scan.rows_containing("x = 1", 5) == [0, 1, 2, 3, 4]
    assert scan.rows_containing("", 5) is None


@given(st.lists(st.text(alphabet="ab -\n", max_size=12), max_size=8), st.text(alphabet="ab -", min_size=1, max_size=3))
def test_rows_are_those_whose_text_contains_the_string(texts, s):
    assert TextScan.from_texts(texts).rows_containing(s, len(texts)) == [i for i, t in enumerate(texts) if s in t]


def test_rows_are_found_past_multibyte_and_astral_characters():
    # Offsets are UTF-8 bytes: a match after an emoji or an accent still maps to its own row.
    scan = TextScan.from_texts(["caf\u00e9 --flag", "\U0001f601", "x \U0001f601 --flag", "\ud800 --flag"])
    assert scan.rows_containing("--flag", 10) == [0, 2, 3]
    assert scan.rows_containing("\U0001f601", 10) == [1, 2]
    assert scan.rows_containing("\u00e9 --", 10) == [0]
    assert scan.rows_containing("\ud800", 10) == [3]     # a lone surrogate matches itself


@given(st.lists(st.text(alphabet="ab \u00e9\U0001f601\n", max_size=12), max_size=8),
       st.text(alphabet="ab \u00e9\U0001f601", min_size=1, max_size=3))
def test_multibyte_rows_are_those_whose_text_contains_the_string(texts, s):
    assert TextScan.from_texts(texts).rows_containing(s, len(texts)) == [i for i, t in enumerate(texts) if s in t]
