"""BM25 from term counts: the arrays bm25s itself builds, reuse of unchanged documents."""

from collections import Counter

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.compiler.sparse import build_sparse, count_terms, write_bm25
from codenib.engines.bm25_terms import BM25_B, BM25_K1, DocTerms, assemble_terms, bm25_scores
from codenib.index.sparse import SparseIndex
from codenib.core.tokens import TokenizerConfig

WORDS = ["parse", "token", "graph", "node", "edge", "index", "query", "score", "vector", "file"]
docs_strategy = st.lists(st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join), min_size=1, max_size=25)
CFG = TokenizerConfig(stemmer=None)


def raw_bm25s_arrays(token_lists: list[list[str]], vocab: list[str]) -> dict:
    """What bm25s builds from the same token ids (its own `index`, not ours)."""
    index = {t: i for i, t in enumerate(vocab)}
    retriever = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B, backend="numpy")
    retriever.index(([[index[t] for t in toks] for toks in token_lists], dict(index)), show_progress=False)
    return retriever.scores


@settings(max_examples=40, deadline=None)
@given(docs=docs_strategy)
def test_score_arrays_equal_those_bm25s_builds(docs):
    counts = count_terms(docs, CFG)
    terms = assemble_terms(counts)
    tokens = [[t for t, n in c.items() for _ in range(n)] for c in counts]
    if not terms.vocab:
        return   # bm25s cannot index a corpus without a single token
    ours, raw = bm25_scores(terms), raw_bm25s_arrays(tokens, terms.vocab)
    assert ours["num_docs"] == raw["num_docs"]
    for name in ("data", "indices", "indptr"):
        assert ours[name].dtype == raw[name].dtype, name
        np.testing.assert_array_equal(ours[name], raw[name], err_msg=name)


@settings(max_examples=40, deadline=None)
@given(old_docs=docs_strategy, new_docs=docs_strategy, data=st.data())
def test_reused_rows_give_the_counts_of_a_fresh_count(old_docs, new_docs, data):
    old = assemble_terms(count_terms(old_docs, CFG))
    # Each new document is either reused from an old row or counted afresh.
    rows, texts = [], []
    for text in new_docs:
        if text in old_docs and data.draw(st.booleans()):
            rows.append(old_docs.index(text))
        else:
            rows.append(count_terms([text], CFG)[0])
        texts.append(text)
    reused = assemble_terms(rows, old)
    fresh = assemble_terms(count_terms(texts, CFG))
    assert reused.vocab == fresh.vocab
    for name in ("ptr", "ids", "counts"):
        np.testing.assert_array_equal(getattr(reused, name), getattr(fresh, name), err_msg=name)


def test_the_saved_index_loads_and_ranks_like_raw_bm25s(tmp_path):
    docs = ["parse the token graph", "graph node edge", "index query score", "vector file parse parse", ""]
    cfg = TokenizerConfig()
    terms = build_sparse(docs, cfg, tmp_path / "sparse")
    index = SparseIndex.load(tmp_path / "sparse", cfg)
    raw = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B)
    raw.index(index.tokenize(docs), show_progress=False)
    for query in ["parse graph", "score", "vector parse"]:
        rows, scores = index.search([query], 4)
        raw_scores = raw.get_scores(index.tokenize([query])[0])
        assert np.allclose(scores[0][scores[0] > 0], np.sort(raw_scores[raw_scores > 0])[::-1], atol=1e-6)
    terms.save(tmp_path / "terms")
    again = DocTerms.load(tmp_path / "terms")
    assert again.vocab == terms.vocab and np.array_equal(again.ids, terms.ids)


def test_the_same_texts_give_the_same_files_in_any_order(tmp_path):
    docs = ["alpha beta", "gamma delta alpha", "beta beta epsilon"]
    write_bm25(assemble_terms(count_terms(docs, CFG)), tmp_path / "a")
    rows = [Counter(c) for c in count_terms(docs, CFG)]
    write_bm25(assemble_terms(list(reversed(rows[::-1]))), tmp_path / "b")
    for f in sorted(p.name for p in (tmp_path / "a").iterdir()):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_terms_that_do_not_fit_are_refused(tmp_path):
    terms = assemble_terms(count_terms(["a b"], CFG))
    terms.save(tmp_path)
    np.save(tmp_path / "terms_ids.npy", np.zeros(5, dtype=np.int32))
    with pytest.raises(ValueError, match="inconsistent"):
        DocTerms.load(tmp_path)


def test_whole_file_documents_count_the_file_and_its_outermost_definitions_once():
    from codenib.engines.bm25_terms import file_terms

    # a.py: file, class C (2-9) holding method m (3-4, inside C: not counted again), f (11-12);
    # b.py: file and g. Rows are deliberately out of file order.
    texts = ["a outline", "b outline", "class c body m", "m body", "f body", "g body"]
    kinds = ["file", "file", "class", "function", "function", "function"]
    files = ["a.py", "b.py", "a.py", "a.py", "a.py", "b.py"]
    starts, ends = [1, 1, 2, 3, 11, 1], [12, 5, 9, 4, 12, 5]
    terms = assemble_terms(count_terms(texts, CFG))
    docs = file_terms(terms, kinds, files, starts, ends)
    assert docs.num_docs == 2                       # one per file node, in node order
    counts = count_terms(texts, CFG)
    assert docs.counts_of(0) == counts[0] + counts[2] + counts[4]     # not m's row 3
    assert docs.counts_of(0)["bodi" if "bodi" in docs.vocab else "body"] == 2
    assert docs.counts_of(1) == counts[1] + counts[5]
