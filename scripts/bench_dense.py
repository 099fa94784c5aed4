#!/usr/bin/env python
"""Benchmark CodeNib's encoder and dense search against sentence-transformers and raw faiss.

Not a test. Builds the index of a real corpus (default: the installed `sympy` sources, ~39,000
nodes; or reads --index), runs the dense stage over a node sample (or, with --full, builds
vectors for every node) and prints, side by side:

* encoding: `Encoder.encode_documents` vs a raw `SentenceTransformer.encode` call, over
  interleaved chunks;
* query encoding throughput;
* dense search: `DenseIndex` (numpy and faiss backends) vs raw faiss `IndexFlatIP`, over the
  sample's vectors widened to the corpus with noisy copies (or the real vectors with --full);

and ends with one table: metric | ours | baseline | ratio | target | pass/fail.

    python scripts/bench_dense.py                 # 4-8 minutes on 2 CPU cores
    python scripts/bench_dense.py --full          # real vectors of every node (+30-75 minutes)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchkit import Row, Timing, describe, finish, log, out, peak_rss_mb, qps, timed, timed_rounds
from indexkit import (print_header, DEFAULT_DENSE_SAMPLE, DEFAULT_K, DEFAULT_REPEATS, DenseFields, add_common_args,
                      add_encoder_args, build_dense_sample, contract_ordered, draw_queries, exact_order,
                      prepare_index, read_nodes, resolve_batch_size, resolve_corpus, synthetic_corpus,
                      topk_agreement, workspace)

#: Queries drawn from the corpus; the first --dense-queries of them are encoded.
DEFAULT_QUERIES = 5_000
#: Dense queries: encoding them takes 4-40 s on 2 cores; searching them ~1-2 s a round.
DEFAULT_DENSE_QUERIES = 1_000
#: Texts for the encoder comparison: each side encodes them once (40 s-2 min each on 2 cores).
DEFAULT_ENCODE_SAMPLE = 1_000
#: The encoder comparison alternates sides over this many chunks so drift hits both equally.
ENCODE_CHUNKS = 4
#: The issue's targets, as minimum speed-ups against the raw library.
DENSE_TARGET = 0.90
ENCODE_TARGET = 0.95


def compare_encoders(encoder: Any, texts: list[str], args: argparse.Namespace) -> list[Row]:
    """`Encoder.encode_documents` vs a raw `SentenceTransformer.encode` on the same texts."""
    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    from codenib.engines.models import model_path

    out("\n== encoder ==")
    raw = SentenceTransformer(model_path(encoder.spec.name), device=encoder.device, local_files_only=True)
    raw.max_seq_length = encoder.max_seq_length
    bs = encoder.batch_size
    raw_encode = lambda chunk: raw.encode(chunk, batch_size=bs, convert_to_numpy=True,  # noqa: E731
                                          normalize_embeddings=True, show_progress_bar=False)
    encoder.encode_documents(texts[:bs])
    raw_encode(texts[:bs])
    chunks = [texts[i::ENCODE_CHUNKS] for i in range(ENCODE_CHUNKS)]
    per_chunk: dict[str, list[float]] = {"ours": [], "raw": []}
    got: dict[str, list[np.ndarray]] = {"ours": [], "raw": []}
    for i, chunk in enumerate(tqdm(chunks, desc="encode ours/raw", unit="chunk", file=sys.stderr, leave=False)):
        sides = [("raw", raw_encode), ("ours", encoder.encode_documents)]
        for name, fn in (sides if i % 2 == 0 else sides[::-1]):
            vectors, seconds = timed(lambda: fn(chunk))
            got[name].append(np.asarray(vectors, dtype=np.float32))
            per_chunk[name].append(seconds)
    t = {name: sum(ts) for name, ts in per_chunk.items()}
    speedup = Timing(tuple(per_chunk["ours"])).speedup_over(Timing(tuple(per_chunk["raw"])))
    diff = float(np.max(np.abs(np.vstack(got["ours"]) - np.vstack(got["raw"]))))
    n = len(texts)
    out(f"{n:,} node texts, batch {bs}, max_seq_length {encoder.max_seq_length}, device {encoder.device}, "
        f"{ENCODE_CHUNKS} interleaved chunks")
    out(f"ours  Encoder.encode_documents: {t['ours']:.1f} s  {n / t['ours']:.1f} texts/s")
    out(f"raw   SentenceTransformer.encode: {t['raw']:.1f} s  {n / t['raw']:.1f} texts/s; "
        f"max |ours - raw| = {diff:.1e}")
    out(f"speed-up ours vs raw (median of {ENCODE_CHUNKS} back-to-back chunk pairs): {speedup:.2f}x")
    return [Row(f"encode documents, {n:,} texts, batch {bs}", f"{n / t['ours']:.1f} texts/s",
                f"{n / t['raw']:.1f} texts/s (SentenceTransformer)", speedup, ENCODE_TARGET)]


def bench_dense_search(fields: DenseFields, queries: np.ndarray, label: str,
                       args: argparse.Namespace) -> list[Row]:
    """`DenseIndex` numpy and faiss backends vs a raw faiss `IndexFlatIP` on the same vectors.

    The index searches the matrix `load_index` builds ([body | w * name] rows when the index
    has a name field); raw faiss gets that same matrix and the same [q | q] queries.
    """
    import faiss

    from codenib.engines.vectors import query_matrix, search_matrix
    from codenib.index.dense import DenseIndex

    k = args.k
    out("\n== dense search ==")
    matrix = search_matrix(fields.vectors, fields.name_vectors, fields.name_weight)
    raw_queries = query_matrix(queries, matrix.shape[1])
    n, d = matrix.shape
    ours_np, ours_fx = (DenseIndex(fields.vectors, backend=b, name_vectors=fields.name_vectors,
                                   name_weight=fields.name_weight) for b in ("numpy", "faiss"))
    raw = faiss.IndexFlatIP(d)
    raw.add(matrix)
    for fn in (ours_np.search, ours_fx.search):
        fn(queries[:64], k)  # builds ours' lazy faiss index; warms caches
    raw.search(raw_queries[:64], k)
    nq = len(queries)
    log(f"timing {nq} dense queries over {n:,} x {d}, k={k}, {args.repeats} rounds")
    timing = timed_rounds({
        "numpy": lambda: ours_np.search(queries, k),
        "faiss": lambda: ours_fx.search(queries, k),
        "raw": lambda: raw.search(query_matrix(queries, d), k),
    }, args.repeats, "dense")
    raw_s, raw_r = raw.search(raw_queries, k)
    agree, exact = {}, {}
    sample = np.random.default_rng(args.seed).choice(nq, size=min(200, nq), replace=False)
    full = raw_queries[sample] @ matrix.T
    for name, index in (("numpy", ours_np), ("faiss", ours_fx)):
        r, s = index.search(queries, k)
        agree[name] = topk_agreement(r, s, raw_r.astype(np.int64), raw_s)
        # Float sums differ in the last bits between BLAS calls, so the full-sort reference
        # decides membership up to TIE_ATOL; the tie order is checked on our own scores.
        ref = [exact_order(full[j], k) for j in range(len(sample))]
        ref_rows = np.array([x[0] for x in ref])
        ref_scores = np.array([x[1] for x in ref], dtype=np.float32)
        agreed = topk_agreement(r[sample], s[sample], ref_rows, ref_scores)[0]
        exact[name] = min(agreed, sum(contract_ordered(r[qi], s[qi]) for qi in sample))
    out(f"{n:,} x {d} search matrix ({fields.describe()}; {label}); {nq:,} encoded queries; k={k}; "
        f"faiss omp threads {faiss.omp_get_max_threads()}")
    for name, title in (("numpy", "ours  DenseIndex(backend='numpy')"), ("faiss", "ours  DenseIndex(backend='faiss')")):
        out(f"{title}: {describe(timing[name], nq)}; speed-up vs raw "
            f"{timing[name].speedup_over(timing['raw']):.2f}x")
        out(f"      top-{k} identical to raw faiss (ties allowed) {agree[name][0]}/{nq}, max score diff "
            f"{agree[name][1]:.1e}; vs a full sort (score desc, ties by row) {exact[name]}/{len(sample)}")
    out(f"raw   faiss.IndexFlatIP.search: {describe(timing['raw'], nq)}")
    rows = []
    for name in ("numpy", "faiss"):
        rows.append(Row(f"dense search {name}, {nq:,} q, k={k}", qps(nq, timing[name].median),
                        f"{qps(nq, timing['raw'].median)} (faiss IndexFlatIP)",
                        timing[name].speedup_over(timing["raw"]), DENSE_TARGET))
    same_all = all(a[0] == nq for a in agree.values()) and all(e == len(sample) for e in exact.values())
    rows.append(Row(f"dense top-{k} = faiss / = full sort", " / ".join(
        f"{x} {agree[x][0]}/{nq}, {exact[x]}/{len(sample)}" for x in agree), "-", None, None,
        "pass" if same_all else "FAIL"))
    return rows


def dense_stage(built: Any, nodes: list[dict[str, Any]], work: Path, args: argparse.Namespace
                ) -> tuple[Any, DenseFields, str]:
    """Load the encoder and get the vectors to search: every node's (--full) or a sample's,
    widened to the corpus with synthetic neighbours. Returns the encoder, fields and label."""
    from codenib.engines.embed import Encoder
    from codenib.engines.models import ModelSpec

    out("\n== dense stage ==")
    encoder, load_s = timed(lambda: Encoder(ModelSpec.for_model(None), args.device, args.batch_size))
    out(f"model {encoder.spec.name} (dim {encoder.dimension}) loaded in {load_s:.1f} s "
        f"on {encoder.device}")
    n_nodes = built.n_nodes
    if args.full:
        fields = DenseFields.load(built.index_dir / "dense", built.manifest.get("model"))
        out(f"dense stage over all {n_nodes:,} nodes ({fields.describe()}): {built.seconds['dense']:.1f} s "
            "(measured, includes model load)")
        return encoder, fields, f"real vectors of all {n_nodes:,} nodes"
    sample_rows, sample_fields, sample_s = build_dense_sample(nodes, work, args)
    out(f"dense stage over a {len(sample_rows):,}-node sample ({sample_fields.describe()}): "
        f"{sample_s:.1f} s ({len(sample_rows) / sample_s:.1f} nodes/s)")
    return encoder, synthetic_corpus(n_nodes, sample_rows, sample_fields, args.seed), (
        f"{len(sample_rows):,} real + {n_nodes - len(sample_rows):,} SYNTHETIC noisy copies "
        "of them; use --full for real vectors of every node")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark CodeNib's encoder and dense search against sentence-transformers and raw "
                    "faiss on one real corpus; ends with a table.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p)
    p.add_argument("--index", type=Path, default=None,
                   help="an existing index of --corpus: skip the build (with --full it must have vectors)")
    p.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help="queries sampled from the corpus")
    p.add_argument("--dense-queries", type=int, default=DEFAULT_DENSE_QUERIES, help="encoded queries for dense search")
    p.add_argument("--dense-sample", type=int, default=DEFAULT_DENSE_SAMPLE,
                   help="nodes encoded for the dense stage; the rest of the corpus gets synthetic vectors")
    p.add_argument("--full", action="store_true",
                   help="build dense vectors for every node (30-75 min for 39k nodes on 2 cores)")
    p.add_argument("--encode-sample", type=int, default=DEFAULT_ENCODE_SAMPLE,
                   help="node texts for the encoder comparison")
    p.add_argument("-k", type=int, default=DEFAULT_K, help="results per query")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="timed rounds per search comparison")
    add_encoder_args(p)
    return resolve_batch_size(p.parse_args(argv))


def main(argv: Sequence[str] | None = None) -> int:
    from codenib.compiler.build_options import BuildOptions

    args = parse_args(argv)
    corpus = resolve_corpus(args.corpus)
    with workspace(args) as work:
        print_header("dense benchmark", corpus, work)
        options = BuildOptions(dense=args.full, device=args.device, batch_size=args.batch_size)
        built = prepare_index(corpus, work, args.index, options,
                              note=f" (dense: {'all nodes' if args.full else 'sampled later'})")
        nodes = read_nodes(built.index_dir)
        texts = [r["text"] for r in nodes]
        queries = draw_queries(nodes, args.queries, args.seed)
        encoder, fields, label = dense_stage(built, nodes, work, args)
        rng = np.random.default_rng(args.seed + 1)
        enc_rows = rng.choice(len(texts), size=min(args.encode_sample, len(texts)), replace=False)
        rows = compare_encoders(encoder, [texts[i] for i in enc_rows], args)
        dq = queries[:args.dense_queries]
        query_vectors, qenc_s = timed(lambda: encoder.encode_queries(dq))
        out(f"query encoding: {len(dq):,} queries in {qenc_s:.1f} s ({len(dq) / qenc_s:.0f} q/s)")
        rows.append(Row(f"encode queries, {len(dq):,}", f"{len(dq) / qenc_s:.0f} q/s"))
        rows += bench_dense_search(fields, query_vectors, label, args)
        rows.append(Row("peak RSS (benchmark process)", f"{peak_rss_mb():,.0f} MB"))
        return finish(rows, f"{corpus.name}, {built.n_nodes:,} nodes, k={args.k}; ratio = speed-up "
                      "(ours/baseline throughput, baseline/ours time)", args.strict, end_note=True)


if __name__ == "__main__":
    sys.exit(main())
