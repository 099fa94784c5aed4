"""BM25 from term counts: the documents' counts over a sorted vocabulary (`DocTerms`), and
the score arrays bm25s computes from them, with the same arithmetic as bm25s's own `index`
(lucene idf and term-frequency weights, float64 then rounded to float32).

The compiler saves these arrays in an index (`codenib.compiler.sparse`); an index in the
store layout computes them again when it is loaded, from the per-file store's counts. Both
give the same arrays from the same counts, whatever the order the counts came in.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from codenib.engines.arrays import ranges
from codenib.engines.bm25 import import_bm25s

#: Lucene BM25 with the usual k1/b: code nodes vary widely in length, so b stays at 0.75.
BM25_METHOD = "lucene"
BM25_K1 = 1.2
BM25_B = 0.75

#: Files of `DocTerms.save` (next to each other in one folder).
TERMS_VOCAB_FILE = "terms_vocab.json"
TERMS_PTR_FILE = "terms_ptr.npy"
TERMS_IDS_FILE = "terms_ids.npy"
TERMS_COUNTS_FILE = "terms_counts.npy"


@dataclass(frozen=True, slots=True)
class DocTerms:
    """Term counts of every document (row i = nodes row i) over a sorted vocabulary.

    Document i's terms are `ids[ptr[i]:ptr[i + 1]]` (ascending) with their `counts`.
    """

    vocab: list[str]
    ptr: np.ndarray      # int64, one more than documents
    ids: np.ndarray      # int32 into vocab
    counts: np.ndarray   # int32

    @property
    def num_docs(self) -> int:
        return len(self.ptr) - 1

    def counts_of(self, row: int) -> Counter:
        """Document `row`'s term counts."""
        a, b = int(self.ptr[row]), int(self.ptr[row + 1])
        return Counter({self.vocab[t]: int(n) for t, n in zip(self.ids[a:b], self.counts[a:b])})

    def save(self, folder: Path) -> None:
        """Write the counts under `folder` (plain .npy and JSON, nothing pickled)."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / TERMS_VOCAB_FILE).write_text(json.dumps(self.vocab, ensure_ascii=False), encoding="utf-8")
        np.save(folder / TERMS_PTR_FILE, self.ptr, allow_pickle=False)
        np.save(folder / TERMS_IDS_FILE, self.ids, allow_pickle=False)
        np.save(folder / TERMS_COUNTS_FILE, self.counts, allow_pickle=False)

    @classmethod
    def load(cls, folder: Path) -> "DocTerms":
        """Read what `save` wrote (raises OSError or ValueError when it is not there or bad)."""
        vocab = json.loads((folder / TERMS_VOCAB_FILE).read_text(encoding="utf-8"))
        ptr = np.load(folder / TERMS_PTR_FILE, allow_pickle=False)
        ids = np.load(folder / TERMS_IDS_FILE, allow_pickle=False)
        counts = np.load(folder / TERMS_COUNTS_FILE, allow_pickle=False)
        if not (isinstance(vocab, list) and len(ids) == len(counts) == (ptr[-1] if len(ptr) else -1)):
            raise ValueError(f"inconsistent term counts in {folder}")
        return cls(vocab, ptr, ids, counts)


def assemble_terms(rows: Sequence[Counter | int], old: DocTerms | None = None) -> DocTerms:
    """Term counts of documents given as new counts, or as a row of `old` to reuse.

    The result depends only on each document's counts, never on which came from `old`.
    """
    kept = np.array([r for r in rows if isinstance(r, (int, np.integer))], dtype=np.int64)
    terms: set[str] = set()
    for r in rows:
        if not isinstance(r, (int, np.integer)):
            terms.update(r)
    used_old = np.zeros(0, dtype=np.int64)
    if len(kept):
        if old is None:     # a caller's bug, not user input: rows can only name an earlier index's documents
            raise ValueError("assemble_terms: rows name documents of an earlier index but `old` is None")
        starts, ends = old.ptr[kept], old.ptr[kept + 1]
        used_old = np.unique(old.ids[ranges(starts, ends)])
        terms.update(old.vocab[i] for i in used_old)
    vocab = sorted(terms)
    index = {t: i for i, t in enumerate(vocab)}
    lengths = np.array([len(r) if not isinstance(r, (int, np.integer)) else int(old.ptr[r + 1] - old.ptr[r])
                        for r in rows], dtype=np.int64)
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    ids = np.empty(int(ptr[-1]), dtype=np.int32)
    counts = np.empty(int(ptr[-1]), dtype=np.int32)
    is_old = np.array([isinstance(r, (int, np.integer)) for r in rows], dtype=bool)
    if len(kept):
        remap = np.full(len(old.vocab), -1, dtype=np.int32)
        remap[used_old] = [index[old.vocab[i]] for i in used_old]
        src = ranges(old.ptr[kept], old.ptr[kept + 1])
        dst = ranges(ptr[:-1][is_old], ptr[1:][is_old])
        # Both vocabularies are sorted, so the remap keeps each document's ids ascending.
        ids[dst] = remap[old.ids[src]]
        counts[dst] = old.counts[src]
    for i in np.flatnonzero(~is_old):
        pairs = sorted((index[t], n) for t, n in rows[i].items())
        ids[ptr[i]:ptr[i + 1]] = [p[0] for p in pairs]
        counts[ptr[i]:ptr[i + 1]] = [p[1] for p in pairs]
    return DocTerms(vocab, ptr, ids, counts)


def terms_from_pairs(docs: Sequence[Sequence[Sequence]]) -> DocTerms:
    """Term counts of documents given as (term, count) pairs: what `assemble_terms` makes of
    the same counts, without a `Counter` per document (a store-layout index's load)."""
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    ptr = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    terms = [pair[0] for d in docs for pair in d]
    vocab = sorted(set(terms))
    index = {t: i for i, t in enumerate(vocab)}
    ids = np.fromiter(map(index.__getitem__, terms), dtype=np.int32, count=len(terms))
    counts = np.fromiter((pair[1] for d in docs for pair in d), dtype=np.int32, count=len(terms))
    # Each document's ids must ascend: pairs sorted by term do (the store writes them so).
    rising = np.diff(ids) > 0
    starts = np.zeros(len(ids), dtype=bool)
    starts[ptr[1:-1][ptr[1:-1] < len(ids)]] = True
    if not np.all(rising | starts[1:]):
        return assemble_terms([Counter(dict(d)) for d in docs])
    return DocTerms(vocab, ptr, ids, counts)


def bm25_retriever(terms: DocTerms):
    """A bm25s retriever holding the index of `terms` (what `bm25s.BM25.index` builds from
    the same documents, with this vocabulary order), in memory."""
    bm25s = import_bm25s()
    retriever = bm25s.BM25(method=BM25_METHOD, k1=BM25_K1, b=BM25_B, backend="numpy")
    retriever.scores = bm25_scores(terms)
    vocab = {t: i for i, t in enumerate(terms.vocab)}
    if "" not in vocab:
        vocab[""] = len(vocab)    # as bm25s adds it: the empty query token
    retriever.vocab_dict = vocab
    retriever.nonoccurrence_array = None
    return retriever


def bm25_scores(terms: DocTerms) -> dict:
    """The CSC score arrays bm25s builds for these documents (method lucene).

    bm25s computes, per document d of length l_d and term t with frequency tf:
    idf(t) = log(1 + (N - df + 0.5) / (df + 0.5)) in float32, then
    idf * tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf) in float64, stored as float32.
    """
    n_docs, n_vocab = terms.num_docs, len(terms.vocab)
    entries = np.diff(terms.ptr)
    total = np.concatenate([[0], np.cumsum(terms.counts, dtype=np.int64)])
    doc_len = total[terms.ptr[1:]] - total[terms.ptr[:-1]]    # tokens per document
    l_avg = doc_len.mean() if n_docs else np.float64(0.0)
    df = np.bincount(terms.ids, minlength=n_vocab)
    idf = np.zeros(n_vocab, dtype=np.float32)
    for t, f in enumerate(df.tolist()):
        if f:
            idf[t] = math.log(1 + (n_docs - f + 0.5) / (f + 0.5))
    rows = np.repeat(np.arange(n_docs, dtype=np.int32), entries)
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = BM25_K1 * ((1 - BM25_B) + BM25_B * doc_len.astype(np.float64) / l_avg)
    tf = terms.counts.astype(np.float32).astype(np.float64)
    scores = (idf[terms.ids].astype(np.float64) * (tf / (norm[rows] + tf))).astype(np.float32)
    order = np.argsort(terms.ids, kind="stable")    # rows ascending within each term
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return {"data": scores[order], "indices": rows[order], "indptr": indptr, "num_docs": n_docs}


def file_terms(terms: DocTerms, kinds: Sequence[str], files: Sequence[str], starts: Sequence[int],
               ends: Sequence[int]) -> DocTerms:
    """Whole-file documents: one per file node, in node order, counting the file node's terms
    and those of the file's outermost definitions (whose texts do not overlap: an inner
    definition's text is its parent's, folded or not).

    Derived from the node counts alone, so an incremental build gives the same documents."""
    doc_of = np.full(len(kinds), -1, dtype=np.int64)
    file_doc: dict[str, int] = {}
    for r, (kind, f) in enumerate(zip(kinds, files)):
        if kind == "file":
            doc_of[r] = file_doc[f] = len(file_doc)
    last_end: dict[str, int] = {}
    for r in sorted((r for r, k in enumerate(kinds) if k != "file"),
                    key=lambda r: (files[r], starts[r], -ends[r], r)):
        f = files[r]
        if f in file_doc and starts[r] > last_end.get(f, 0):
            doc_of[r] = file_doc[f]
            last_end[f] = ends[r]
    entries = np.diff(terms.ptr)
    docs = np.repeat(doc_of, entries)
    keep = docs >= 0
    n_vocab = max(len(terms.vocab), 1)
    keys, inverse = np.unique(docs[keep] * n_vocab + terms.ids[keep], return_inverse=True)
    counts = np.bincount(inverse, weights=terms.counts[keep], minlength=len(keys)).astype(np.int32)
    doc_ids = keys // n_vocab
    ptr = np.zeros(len(file_doc) + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc_ids, minlength=len(file_doc)), out=ptr[1:])
    return DocTerms(terms.vocab, ptr, (keys % n_vocab).astype(np.int32), counts)
