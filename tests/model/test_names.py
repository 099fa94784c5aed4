"""A definition's name as a report may write it: exact names and name words, hand cases."""

from __future__ import annotations

import pytest

from codenib.model.names import distinctive, name_words


@pytest.mark.parametrize("name, words", [
    ("AttributeDocumenter.add_directive_header", {"attribute", "documenter", "add", "directive", "header"}),
    ("HTTPServer.parse_URL2", {"http", "server", "parse", "url"}),     # an acronym is one word
    ("Cart.items#2", {"cart", "item"}),                                # a plural s and a repeat mark go
    ("class_", {"class"}),                                             # "ss" is not a plural
    ("io.fd", set()),                                                  # under three letters
])
def test_name_words_split_case_and_separators(name, words):
    assert name_words(name) == frozenset(words)


def test_short_and_dunder_names_are_not_distinctive():
    assert distinctive("round_cents") and distinctive("Cart")
    assert not distinctive("add") and not distinctive("__init__")
