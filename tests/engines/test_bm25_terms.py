"""`terms_from_pairs` (a store-layout index's load) gives what `assemble_terms` gives."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from codenib.engines.bm25_terms import assemble_terms, terms_from_pairs

WORDS = ["a", "b", "parse", "parser", "Zeta", "zeta", "_x", "é", "日本"]
counts = st.dictionaries(st.sampled_from(WORDS), st.integers(1, 9), max_size=6)


def _same(a, b) -> bool:
    return (a.vocab == b.vocab and np.array_equal(a.ptr, b.ptr) and np.array_equal(a.ids, b.ids)
            and np.array_equal(a.counts, b.counts) and a.ids.dtype == b.ids.dtype == np.int32)


@given(docs=st.lists(counts, max_size=20))
def test_pairs_sorted_by_term_give_the_counts_of_assemble_terms(docs):
    pairs = [sorted(d.items()) for d in docs]
    assert _same(terms_from_pairs(pairs), assemble_terms([Counter(d) for d in docs]))


@given(docs=st.lists(counts, min_size=1, max_size=20), data=st.data())
def test_pairs_in_any_order_still_give_them(docs, data):
    pairs = [data.draw(st.permutations(sorted(d.items()))) for d in docs]
    assert _same(terms_from_pairs(pairs), assemble_terms([Counter(d) for d in docs]))


def test_a_hand_counted_example():
    terms = terms_from_pairs([[("b", 2), ("parse", 1)], [], [("a", 3), ("b", 1)]])
    assert terms.vocab == ["a", "b", "parse"]
    assert terms.ptr.tolist() == [0, 2, 2, 4] and terms.ids.tolist() == [1, 2, 0, 1]
    assert terms.counts.tolist() == [2, 1, 3, 1]
