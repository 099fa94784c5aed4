"""BM25 search: equal to raw bm25s, batch API, bad queries."""

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.index.sparse import SparseIndex
from codenib.core.tokens import Tokenizer, TokenizerConfig

DOCS = [
    "def parse_args(argv): parse the command line arguments",
    "class Context: holds the state of a command invocation",
    "def invoke(ctx, callback): invoke a callback with the context",
    "def format_help(ctx): format the help page of a command",
    "def echo(message): print a message to the terminal",
    "def style(text, fg): style text with ANSI colors for the terminal",
]
QUERIES = ["parse command line arguments", "print message terminal", "invoke callback", "colors",
           "zzz_not_in_vocab", "command"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from codenib.compiler.sparse import build_sparse

    folder = tmp_path_factory.mktemp("sparse")
    cfg = TokenizerConfig()
    build_sparse(DOCS, cfg, folder)
    return folder, cfg


def test_ranking_equals_raw_bm25s(built):
    folder, cfg = built
    ours = SparseIndex.load(folder, cfg)
    tok = Tokenizer(cfg)
    raw = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    raw.index([tok(d) for d in DOCS], show_progress=False)
    for q in QUERIES:
        tokens = tok(q)
        rows, scores = ours.search_tokens([tokens], k=len(DOCS))
        known = [t for t in tokens if t in raw.vocab_dict]
        if not known:
            assert (rows == -1).all()
            continue
        raw_scores = raw.get_scores(known)
        expected = [i for i in np.lexsort((np.arange(len(DOCS)), -raw_scores)) if raw_scores[i] > 0]
        got = [r for r in rows[0].tolist() if r >= 0]
        assert got == expected, q
        np.testing.assert_allclose(scores[0][: len(got)], raw_scores[expected], rtol=1e-5)


def test_batch_equals_one_by_one_and_threads_do_not_change_results(built):
    folder, cfg = built
    index = SparseIndex.load(folder, cfg)
    batch_rows, batch_scores = index.search(QUERIES, k=3)
    par_rows, par_scores = index.search(QUERIES, k=3, n_threads=2)
    for i, q in enumerate(QUERIES):
        rows, scores = index.search([q], k=3)
        assert rows[0].tolist() == batch_rows[i].tolist() == par_rows[i].tolist()
        np.testing.assert_allclose(scores[0], batch_scores[i])


def test_empty_huge_and_non_ascii_queries(built):
    folder, cfg = built
    index = SparseIndex.load(folder, cfg)
    rows, _ = index.search(["", "   ", "ünïcödé 命令 команда", "terminal " * 20000], k=4)
    assert (rows[0] == -1).all() and (rows[1] == -1).all() and (rows[2] == -1).all()
    assert set(rows[3][:2].tolist()) == {4, 5}  # the two "terminal" documents
    assert index.search([], k=3)[0].shape == (0, 3)


def test_k_larger_than_corpus_is_clamped(built):
    folder, cfg = built
    rows, scores = SparseIndex.load(folder, cfg).search(["command"], k=1000)
    assert rows.shape == (1, len(DOCS))


# Zipf-like vocabulary: common words take the dense-scan path of the kernel (postings over
# 1/8 of the corpus), rare ones the touched-documents path; short documents give many ties.
WORDS = [f"w{i}" for i in range(40)]


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    from codenib.compiler.sparse import build_sparse

    rng = np.random.default_rng(7)
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    docs = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 5)), p=weights / weights.sum()))
            for _ in range(300)]
    folder = tmp_path_factory.mktemp("sparse_tied")
    cfg = TokenizerConfig(stemmer=None)
    build_sparse(docs, cfg, folder)
    return SparseIndex.load(folder, cfg), docs


@settings(max_examples=60, deadline=None)
@given(terms=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), k=st.integers(1, 40))
def test_top_k_is_the_full_sort_by_score_then_row(tied, terms, k):
    index, _ = tied
    tokens = [index.tokenize([" ".join(terms)])[0]]
    ids = [index._vocab[t] for t in tokens[0] if t in index._vocab]
    full = np.asarray(index.retriever.get_scores_from_ids(ids), dtype=np.float32) if ids \
        else np.zeros(index.num_docs, np.float32)
    order = [i for i in np.lexsort((np.arange(len(full)), -full)) if full[i] > 0][:k]
    for threads in (1, 2):
        rows, scores = index.search_tokens(tokens * 3, k, n_threads=threads)
        for r, s in zip(rows, scores):
            got = [x for x in r.tolist() if x >= 0]
            assert got == order
            np.testing.assert_array_equal(s[: len(got)], full[order])


def test_whole_file_bm25_ranks_file_nodes_by_their_whole_content(sparse_only_index):
    files = sparse_only_index.file_sparse
    nodes = sparse_only_index.nodes
    assert files is not None
    assert [nodes.kind[r] for r in files.rows] == ["file"] * len(files.rows)
    # Each file's own definitions' names find it first: its whole text holds them, whatever
    # its outline keeps.
    checked = 0
    for path in sorted({nodes.file[r] for r in files.rows}):
        names = sorted({nodes.name[r] for r in range(len(nodes)) if nodes.file[r] == path and nodes.kind[r] != "file"})
        if len(names) < 3:
            continue
        rows, scores = files.search([" ".join(names)], 3)
        assert nodes.file[int(rows[0][0])] == path
        assert scores[0][0] > 0
        checked += 1
    assert checked >= 3


def test_a_whole_file_index_that_does_not_match_the_nodes_is_refused(sparse_only_index_dir, tmp_path):
    import shutil

    from codenib.compiler.sparse import build_sparse
    from codenib.core import artifact
    from codenib.core.errors import IndexFormatError
    from codenib.index.loaded import FileSparse, load_index

    copy = tmp_path / "idx"
    shutil.copytree(sparse_only_index_dir, copy)
    shutil.rmtree(copy / artifact.FILE_SPARSE_DIR)
    build_sparse(["one document", "two documents"], TokenizerConfig(), copy / artifact.FILE_SPARSE_DIR)
    index = load_index(sparse_only_index_dir)
    with pytest.raises(IndexFormatError, match="whole-file BM25 index holds 2 documents"):
        FileSparse.load(copy, index.manifest, index.nodes)
    shutil.rmtree(copy / artifact.FILE_SPARSE_DIR)
    assert FileSparse.load(copy, index.manifest, index.nodes) is None    # an index from before it
