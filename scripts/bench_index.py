#!/usr/bin/env python
"""Benchmark CodeNib's index build and search against the raw libraries it wraps.

Not a test. One run over a real corpus (default: the installed `sympy` sources, ~39,000
nodes) prints, side by side:

* batch BM25 search: `SparseIndex.search_tokens` vs raw `bm25s` (numba) vs `rank_bm25`;
* dense search: `DenseIndex` (numpy and faiss backends) vs raw faiss `IndexFlatIP`;
* encoding: `Encoder.encode_documents` vs a raw `SentenceTransformer.encode` call;
* build time by stage (parse, graph, sparse, dense), peak memory and, with `--reuse`, the
  rebuild of a "second commit" that reuses the vectors of unchanged nodes;

and ends with one table: metric | ours | baseline | ratio | target | pass/fail. Every ratio
is a speed-up (higher is better): ours/baseline for throughputs, baseline/ours for times.

    python scripts/bench_index.py                 # 6-12 minutes on 2 CPU cores
    python scripts/bench_index.py --reuse         # + the second-commit rebuild (1-3 minutes)
    python scripts/bench_index.py --full --reuse  # dense over every node (+30-75 minutes)

`--snapshots N` is a mode of its own: it indexes N successive snapshots of a real repository
(first-parent commits of a bare git mirror, default pytest's, `--commits-apart` apart; or,
with `--synthetic`, successive edits of `--modify-fraction` of --corpus's files), each one
in full and with `--reuse` of the previous snapshot's index, in fresh processes, alternating
which goes first. It prints each stage's time and the ratio, checks that the two indexes are
byte-identical (every file but the manifest), the peak memory of both builds, and the
first build's parse stage against raw `ast.parse` on the same files:

    python scripts/bench_index.py --snapshots 6                      # pytest history, ~2 min
    python scripts/bench_index.py --snapshots 4 --synthetic          # sympy, 3% edits, ~10 min
    python scripts/bench_index.py --snapshots 3 --dense              # vectors too (CPU: slow)

`--far-apart` is another: two snapshots of --corpus, the second with half its files
rewritten (bodies changed, every other top-level name renamed with its uses), the second
built fresh and with `--reuse` of the first's index; it prints each stage side by side with
the ratio, what the reuse build chose for its graph stage, and whether the indexes are equal:

    python scripts/bench_index.py --far-apart --far-rounds 2         # sympy, ~6 min
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import multiprocessing
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

#: The largest pure-Python package in CodeNib's own environment (~1,500 files, ~39,000 nodes).
DEFAULT_CORPUS = "sympy"
#: The issue asks for a corpus of at least this many nodes; smaller ones are flagged.
MIN_NODES = 20_000
#: Enough queries that one BM25 batch takes about a second (stable timing on 2 cores).
DEFAULT_QUERIES = 5_000
#: rank_bm25 scores every document in Python (~20-50 queries/s at 39k nodes).
DEFAULT_RANK_BM25_QUERIES = 100
#: Dense queries: encoding them takes 4-40 s on 2 cores; searching them ~1-2 s a round.
DEFAULT_DENSE_QUERIES = 1_000
#: Nodes encoded for the dense stage unless --full. MiniLM encodes 9-25 sympy node texts/s on
#: 2 shared cores (they average ~240 tokens, a quarter hit the 256 cap), so 1.5-4 minutes.
DEFAULT_DENSE_SAMPLE = 2_000
#: Texts for the encoder comparison: each side encodes them once (40 s-2 min each on 2 cores).
DEFAULT_ENCODE_SAMPLE = 1_000
#: Without --full, the second-commit test builds a file sample of about this many nodes.
DEFAULT_REUSE_NODES = 1_000
#: The encoder comparison alternates sides over this many chunks so drift hits both equally.
ENCODE_CHUNKS = 4
#: Result depth of the batch job (`codenib run -k 100`).
DEFAULT_K = 100
#: Timed rounds per search comparison; the best round counts (noise only ever adds time).
DEFAULT_REPEATS = 5
#: A "second commit" edits this share of the files, and at least this many.
DEFAULT_MODIFY_FRACTION = 0.03
MIN_MODIFIED_FILES = 2
#: Share of identifier queries; the rest are docstring first sentences.
IDENTIFIER_FRACTION = 0.3
#: `--snapshots` reads this bare git mirror unless --git says otherwise (fetched for the
#: SWE-bench dev set; see ../shared/eval/swebench-dev/README.md).
DEFAULT_GIT = Path(__file__).resolve().parent.parent.parent / ".mirror" / "pytest-dev+pytest" / "repo"
#: First-parent commits between two snapshots: about 3% of pytest's files change per 3.
DEFAULT_COMMITS_APART = 3
#: The issue's target: a snapshot with ~3% of files changed costs under 10% of a full build
#: (dense excluded), under 15% with dense vectors.
SNAPSHOT_TARGET = 10.0
SNAPSHOT_DENSE_TARGET = 1 / 0.15
#: The first build's parse stage must reach this share of raw `ast.parse` throughput.
PARSE_TARGET = 0.5
#: Scores this close count as ties when top-k lists are compared.
TIE_ATOL = 1e-5
#: `--far-apart`: the second snapshot rewrites this share of the files (SWE-bench snapshots of
#: sympy a few releases apart differ in about half).
DEFAULT_FAR_FRACTION = 0.5
#: `--far-apart`: reuse must cost no more than a fresh build (within noise: 0.9x).
FAR_APART_TARGET = 0.9
#: Per-dimension noise that turns a real vector into a synthetic neighbour (cosine ~0.85).
SYNTHETIC_NOISE = 0.03
#: The issue's targets, as minimum speed-ups against the raw library.
BM25_TARGET = 0.90
DENSE_TARGET = 0.90
ENCODE_TARGET = 0.95
#: Ours must at least match the naive pure-Python BM25.
RANK_BM25_TARGET = 1.0

_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress line on stderr, with the time since start."""
    print(f"[bench {time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def out(msg: str = "") -> None:
    """A result line on stdout."""
    print(msg, flush=True)


def peak_rss_mb() -> float:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- the table ----------------------------------------------------------------------------------

@dataclass(slots=True)
class Row:
    """One line of the final table."""

    metric: str
    ours: str
    baseline: str = "-"
    ratio: float | None = None
    target: float | None = None
    status: str | None = None      # overrides the ratio-vs-target verdict

    def verdict(self) -> str:
        if self.status is not None:
            return self.status
        if self.target is None or self.ratio is None:
            return "info"
        return "pass" if self.ratio >= self.target else "FAIL"


def render_table(rows: Sequence[Row]) -> str:
    """Fixed-width table: metric | ours | baseline | ratio | target | pass/fail."""
    head = ("metric", "ours", "baseline", "ratio", "target", "pass/fail")
    cells = [head] + [
        (r.metric, r.ours, r.baseline, "-" if r.ratio is None else f"{r.ratio:.2f}x",
         "-" if r.target is None else f">= {r.target:.2f}x", r.verdict())
        for r in rows
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = [" | ".join(c[i].ljust(widths[i]) for i in range(len(head))) for c in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def qps(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} q/s" if seconds > 0 else "inf"


@dataclass(frozen=True, slots=True)
class Timing:
    """Wall times of one function over interleaved rounds."""

    times: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    def speedup_over(self, baseline: "Timing") -> float:
        """Median over rounds of baseline time / our time: each round's pair ran back to back,
        so load from other processes that lasts longer than a round cancels out."""
        return float(np.median([b / o for b, o in zip(baseline.times, self.times)]))


def timed_rounds(fns: dict[str, Callable[[], Any]], repeats: int, desc: str) -> dict[str, Timing]:
    """Time each function once per round for `repeats` rounds; each round rotates the order."""
    from tqdm import tqdm

    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in tqdm(range(repeats), desc=desc, unit="round", file=sys.stderr, leave=False):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    return {name: Timing(tuple(ts)) for name, ts in times.items()}


def describe(t: Timing, n: int) -> str:
    return f"median {t.median:.3f} s ({qps(n, t.median)}), best {t.best:.3f} s ({qps(n, t.best)})"


def exact_order(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The contract's top-k of one full score vector: score descending, then row ascending."""
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return order.astype(np.int64), scores[order]


def contract_ordered(rows: np.ndarray, scores: np.ndarray) -> bool:
    """True when a result list runs by score descending and, among equal scores, row ascending."""
    valid = rows >= 0
    r, s = rows[valid], scores[valid]
    return bool(np.all((s[:-1] > s[1:]) | ((s[:-1] == s[1:]) & (r[:-1] < r[1:]))))


def load_note(when: str) -> str | None:
    """A warning when other processes keep the CPUs busy (the timings then wobble)."""
    try:
        load1 = float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    cpus = multiprocessing.cpu_count()
    if load1 < 0.5 * cpus:
        return None
    return (f"WARNING: load average {load1:.1f} on {cpus} CPUs {when}: other processes compete for the "
            "CPUs; ratios are medians of back-to-back pairs, absolute rates are low")


def topk_agreement(rows_a: np.ndarray, scores_a: np.ndarray, rows_b: np.ndarray,
                   scores_b: np.ndarray) -> tuple[int, float]:
    """Queries whose top-k lists agree up to ties, and the largest score difference.

    Two lists agree when their scores match within TIE_ATOL position by position and every
    row scoring clearly above the k-th score (so not tied at the cut) in one list appears in
    the other. (Comparing the two above-cut sets instead miscounts a row whose score lands
    on either side of the cut by a last-bit difference.)
    """
    same = 0
    worst = 0.0
    for ra, sa, rb, sb in zip(rows_a, scores_a, rows_b, scores_b):
        va, vb = ra >= 0, rb >= 0
        if va.sum() != vb.sum():
            continue
        sa, sb, ra, rb = sa[va], sb[vb], ra[va], rb[vb]
        diff = float(np.max(np.abs(sa - sb))) if len(sa) else 0.0
        worst = max(worst, diff)
        if diff > TIE_ATOL:
            continue
        if len(sa) == 0:
            same += 1
            continue
        cut = min(sa[-1], sb[-1]) + TIE_ATOL
        if set(ra[sa > cut].tolist()) <= set(rb.tolist()) and set(rb[sb > cut].tolist()) <= set(ra.tolist()):
            same += 1
    return same, worst


# --- corpus, build ------------------------------------------------------------------------------

def resolve_corpus(spec: str) -> Path:
    """A folder, or the source folder of an installed package of that name."""
    path = Path(spec)
    if path.is_dir():
        return path.resolve()
    found = importlib.util.find_spec(spec)
    if found is None or not found.submodule_search_locations:
        raise SystemExit(f"bench: --corpus {spec!r} is neither a folder nor an installed package")
    return Path(list(found.submodule_search_locations)[0]).resolve()


def build_in_child(repo: str, out_dir: str, options: Any, trace_memory: bool,
                   raw_parse: bool = False) -> dict[str, Any]:
    """Run `build_index` and report its stage times, counts and peak memory (runs in a child).

    With `raw_parse`, first time plain `ast.parse` over the same files in this process
    (collector on, as Python runs, and off), so both are measured at the same moment.
    """
    import tracemalloc

    raw = {gc_on: raw_parse_here(repo, gc_on) for gc_on in (True, False)} if raw_parse else None

    t0 = time.perf_counter()
    from codenib.compiler.build import build_index

    # Modules the stages import on first use: loading them is process start-up, the same for
    # a full and an incremental build, and is reported apart from the stage times.
    import codenib.compiler.graph  # noqa: F401
    import codenib.compiler.sparse  # noqa: F401
    import pyarrow.acero  # noqa: F401
    import pyarrow.compute  # noqa: F401
    import tqdm  # noqa: F401
    from codenib.engines.bm25 import import_bm25s

    import_bm25s()
    imports = time.perf_counter() - t0
    if trace_memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    summary = build_index(repo, out_dir, options)
    wall = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if trace_memory else None
    return {
        "seconds": dict(summary.seconds),
        "imports": imports,
        "raw_parse": raw,
        "cache": summary.manifest.get("cache"),
        "reuse": summary.reuse,
        "wall": wall,
        "files": summary.files,
        "nodes": sum(summary.nodes_by_kind.values()),
        "nodes_by_kind": dict(summary.nodes_by_kind),
        "edges": sum(summary.edges_by_type.values()),
        "parse_errors": len(summary.parse_errors),
        "dense": summary.dense,
        "peak_rss_mb": peak_rss_mb(),
        # CPU seconds of the whole process and its workers: on a loaded machine wall time
        # mostly measures the other processes.
        "cpu_s": sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                     for f in ("ru_utime", "ru_stime")),
        # The largest worker process the build started (parse, tokenize), if any.
        "peak_rss_workers_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "tracemalloc_peak_mb": traced,
    }


def run_isolated(fn: Callable[..., Any], *args: Any) -> Any:
    """Run `fn(*args)` in a fresh process, so its peak memory is its own."""
    ctx = multiprocessing.get_context("spawn")  # fork after torch/faiss threads start can hang
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(fn, *args).result()


def read_nodes(index_dir: Path) -> list[dict[str, Any]]:
    """Rows of nodes.parquet as dicts (row i = sparse doc i = vector row i)."""
    import pyarrow.parquet as pq

    return pq.read_table(index_dir / "nodes.parquet").to_pylist()


def to_node(row: dict[str, Any]):
    """A `Node` back from its nodes.parquet row."""
    from codenib.types import Node

    return Node(**{**row, "decorators": tuple(row.get("decorators") or ())})


def stage_row(name: str, seconds: float, nodes: int, note: str = "") -> Row:
    return Row(f"build: {name}{note}", f"{seconds:,.1f} s ({nodes / seconds:,.0f} nodes/s)"
               if seconds > 0 else "0 s")


# --- queries ------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]`'\"])\.(\s|$)")


def first_sentence(doc: str) -> str | None:
    """The docstring's first sentence, if it reads like a query (3-40 words of prose)."""
    para = doc.strip().split("\n\n")[0]
    para = " ".join(para.split())
    match = _SENTENCE_END.search(para)
    sentence = para[:match.start()] if match else para
    words = sentence.split()
    if not 3 <= len(words) <= 40 or sentence.startswith((">>>", "..")):
        return None
    if sum(w.isalpha() for w in words) < 3:
        return None
    return sentence


def sample_queries(nodes: Sequence[dict[str, Any]], n: int, seed: int) -> tuple[list[str], int, int]:
    """Docstring first sentences and identifiers drawn from the corpus (deterministic)."""
    sentences = sorted({s for s in (first_sentence(r["docstring"] or "") for r in nodes) if s})
    identifiers = sorted({r["name"] for r in nodes
                          if r["kind"] != "file" and not (r["name"].startswith("__") and r["name"].endswith("__"))})
    rng = random.Random(seed)
    n_id = min(len(identifiers), round(n * IDENTIFIER_FRACTION))
    n_doc = min(len(sentences), n - n_id)
    queries = rng.sample(sentences, n_doc) + rng.sample(identifiers, n_id)
    rng.shuffle(queries)
    return queries, n_doc, n_id


# --- sparse -------------------------------------------------------------------------------------

def bench_sparse(index_dir: Path, manifest: dict[str, Any], texts: Sequence[str], queries: list[str],
                 sparse_build_s: float | None, args: argparse.Namespace) -> list[Row]:
    """Batch BM25: ours vs raw bm25s (numba) vs rank_bm25's BM25Okapi."""
    import bm25s
    from rank_bm25 import BM25Okapi
    from tqdm import tqdm

    from codenib.compiler.sparse import BM25_B, BM25_K1
    from codenib.index.sparse import SparseIndex
    from codenib.tokens import TokenizerConfig

    k = args.k
    out("\n== BM25 (sparse) ==")
    t0 = time.perf_counter()
    ours = SparseIndex.load(index_dir / "sparse", TokenizerConfig.from_dict(manifest.get("tokenizer", {})))
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    qtok = ours.tokenize(queries)
    tok_s = time.perf_counter() - t0
    raw = bm25s.BM25.load(str(index_dir / "sparse"), allow_pickle=False, mmap=False, backend="numba")
    log("warming up raw bm25s (numba compiles its kernels on first call)")
    t0 = time.perf_counter()
    raw.retrieve(qtok[:64], k=k, n_threads=-1, show_progress=False)
    raw_warm_s = time.perf_counter() - t0
    warm = qtok[:512]  # >= PARALLEL_MIN_BATCH: ours runs its parallel kernel once before timing
    ours.search_tokens(warm, k)
    raw.retrieve(warm, k=k, n_threads=-1, show_progress=False)

    log(f"timing {len(qtok)} BM25 queries, k={k}, {args.repeats} rounds")
    timing = timed_rounds({
        "ours": lambda: ours.search_tokens(qtok, k),
        "bm25s": lambda: raw.retrieve(qtok, k=k, n_threads=-1, show_progress=False),
    }, args.repeats, "bm25")
    r_ours, s_ours = ours.search_tokens(qtok, k)
    res = raw.retrieve(qtok, k=k, n_threads=-1, show_progress=False)
    r_raw = np.where(res.scores > 0, res.documents, -1).astype(np.int64)
    s_raw = np.where(res.scores > 0, res.scores, 0).astype(np.float32)
    same, worst = topk_agreement(r_ours, s_ours, r_raw, s_raw)
    empty = sum(1 for q in qtok if not any(t in ours._vocab for t in q))

    # Exact order (ties broken by row = node id): check every query whose k-th and (k+1)-th
    # scores tie, where the cut has to choose, plus a random sample, against a full sort.
    log("checking exact top-k order against full score vectors")
    more = raw.retrieve(qtok, k=min(k + 1, ours.num_docs), n_threads=-1, show_progress=False).scores
    tied = np.flatnonzero((more[:, -1] == more[:, k - 1]) & (more[:, k - 1] > 0)) if more.shape[1] > k \
        else np.zeros(0, dtype=np.int64)
    sample = np.random.default_rng(args.seed).choice(len(qtok), size=min(200, len(qtok)), replace=False)
    check = np.union1d(tied, sample)
    wrong = 0
    for qi in check:
        ids = raw.get_tokens_ids(qtok[qi])
        full = raw.get_scores_from_ids(ids).astype(np.float32) if ids else np.zeros(ours.num_docs, np.float32)
        rows, sc = exact_order(full, k)
        rows = np.where(sc > 0, rows, -1)
        wrong += not np.array_equal(rows, r_ours[qi])

    out(f"index: {ours.num_docs:,} docs, {len(ours._vocab):,} terms; load {load_s:.2f} s "
        f"(raw bm25s numba warm-up {raw_warm_s:.1f} s)")
    out(f"queries: {len(qtok):,} tokenized in {tok_s:.2f} s ({qps(len(qtok), tok_s)}), "
        f"{np.mean([len(q) for q in qtok]):.1f} tokens each, {empty} with no indexed term; k={k}")
    out(f"ours  SparseIndex.search_tokens: {describe(timing['ours'], len(qtok))}")
    out(f"raw   bm25s.BM25.retrieve(numba, n_threads=-1): {describe(timing['bm25s'], len(qtok))}")
    out(f"speed-up ours vs raw (median of {args.repeats} back-to-back pairs): "
        f"{timing['ours'].speedup_over(timing['bm25s']):.2f}x")
    out(f"top-{k} identical to raw bm25s (ties allowed): {same}/{len(qtok)}; max score diff {worst:.2e}")
    out(f"exact order (score desc, then row) vs a full sort: {len(check) - wrong}/{len(check)} right "
        f"({len(tied)} queries tie across the cut at k={k}, + {len(sample)} random)")

    n_naive = min(args.rank_bm25_queries, len(qtok))
    log(f"rank_bm25: tokenizing {len(texts):,} node texts and building BM25Okapi")
    t0 = time.perf_counter()
    corpus_tokens = ours.tokenizer.tokenize_many(texts)
    okapi = BM25Okapi(corpus_tokens, k1=BM25_K1, b=BM25_B)
    okapi_build_s = time.perf_counter() - t0
    del corpus_tokens
    t0 = time.perf_counter()
    okapi_top = []
    for q in tqdm(qtok[:n_naive], desc="rank_bm25", unit="q", file=sys.stderr, leave=False):
        scores = okapi.get_scores(q)
        top = np.argpartition(-scores, k - 1)[:k]
        okapi_top.append(top[np.argsort(-scores[top], kind="stable")])
    okapi_s = time.perf_counter() - t0
    del okapi
    overlap = np.mean([len(set(a.tolist()) & set(b[b >= 0].tolist())) / k
                       for a, b in zip(okapi_top, r_ours[:n_naive])]) if n_naive else 0.0
    out(f"naive rank_bm25.BM25Okapi.get_scores + top-{k}: {n_naive} queries in {okapi_s:.2f} s  "
        f"{qps(n_naive, okapi_s)}; index build (tokenize + BM25Okapi) {okapi_build_s:.1f} s; "
        f"top-{k} overlap with ours {overlap:.0%} (Okapi idf differs from Lucene's)")

    ours_qps = len(qtok) / timing["ours"].median
    rows = [
        Row(f"BM25 batch search, {len(qtok):,} q, k={k}", qps(len(qtok), timing["ours"].median),
            f"{qps(len(qtok), timing['bm25s'].median)} (bm25s numba)",
            timing["ours"].speedup_over(timing["bm25s"]), BM25_TARGET),
        Row(f"BM25 top-{k} identical to bm25s (ties allowed)", f"{same}/{len(qtok)}", "-", None, None,
            "pass" if same == len(qtok) else "FAIL"),
        Row(f"BM25 top-{k} exact tie order (row asc)", f"{len(check) - wrong}/{len(check)}", "full sort", None, None,
            "pass" if wrong == 0 else "FAIL"),
        Row(f"BM25 vs naive ({n_naive} q for rank_bm25)", qps(len(qtok), timing["ours"].median),
            f"{qps(n_naive, okapi_s)} (rank_bm25)", ours_qps / (n_naive / okapi_s) if n_naive else None,
            RANK_BM25_TARGET),
    ]
    if sparse_build_s:
        rows.append(Row("BM25 index build (tokenize+index)", f"{sparse_build_s:.1f} s",
                        f"{okapi_build_s:.1f} s (rank_bm25)", okapi_build_s / sparse_build_s))
    return rows


# --- dense: model, build sample, encoder ----------------------------------------------------------

def bench_encode(encoder: Any, texts: list[str], args: argparse.Namespace) -> list[Row]:
    """`Encoder.encode_documents` vs a raw `SentenceTransformer.encode` on the same texts."""
    from sentence_transformers import SentenceTransformer
    from tqdm import tqdm

    from codenib.engines.embed import model_path

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
            t0 = time.perf_counter()
            got[name].append(np.asarray(fn(chunk), dtype=np.float32))
            per_chunk[name].append(time.perf_counter() - t0)
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


@dataclass(frozen=True, slots=True)
class DenseFields:
    """Node vectors as the dense stage wrote them: body, optional name field and its weight."""

    vectors: np.ndarray
    name_vectors: np.ndarray | None
    name_weight: float

    @classmethod
    def load(cls, folder: Path, info: dict[str, Any] | None) -> "DenseFields":
        name = (info or {}).get("name_field")
        return cls(np.load(folder / "vectors.npy", allow_pickle=False),
                   np.load(folder / name["file"], allow_pickle=False) if name else None,
                   float(name["weight"]) if name else 0.0)

    def describe(self) -> str:
        if self.name_vectors is None:
            return f"body vectors, dim {self.vectors.shape[1]}"
        return (f"body + {self.name_weight:g} x name field, search dim "
                f"{self.vectors.shape[1] + self.name_vectors.shape[1]}")


def build_dense_sample(nodes: Sequence[dict[str, Any]], work: Path, args: argparse.Namespace
                       ) -> tuple[np.ndarray, DenseFields, float]:
    """Run the dense stage (`build_dense`) over a node sample; return rows, vectors, seconds."""
    from codenib.compiler.build import BuildOptions
    from codenib.compiler.dense import build_dense

    rng = np.random.default_rng(args.seed)
    m = min(args.dense_sample, len(nodes))
    rows = np.sort(rng.choice(len(nodes), size=m, replace=False))
    sample = [to_node(nodes[i]) for i in rows]
    folder = work / "dense-sample"
    log(f"dense stage over a {m:,}-node sample")
    t0 = time.perf_counter()
    info = build_dense(sample, folder, BuildOptions(device=args.device, batch_size=args.batch_size), log)
    seconds = time.perf_counter() - t0
    return rows, DenseFields.load(folder, info), seconds


def synthetic_corpus(n: int, rows: np.ndarray, sample: DenseFields, seed: int) -> DenseFields:
    """n unit vectors per field: the real sample at its rows, noisy copies of it everywhere else."""
    rng = np.random.default_rng(seed)
    others = np.setdiff1d(np.arange(n), rows)
    parent = np.arange(len(others)) % len(rows)

    def widen(vectors: np.ndarray) -> np.ndarray:
        out_v = np.empty((n, vectors.shape[1]), dtype=np.float32)
        fake = vectors[parent] + SYNTHETIC_NOISE * rng.standard_normal((len(others), vectors.shape[1]),
                                                                       dtype=np.float32)
        fake /= np.linalg.norm(fake, axis=1, keepdims=True)
        out_v[others] = fake
        out_v[rows] = vectors
        return out_v

    names = widen(sample.name_vectors) if sample.name_vectors is not None else None
    return DenseFields(widen(sample.vectors), names, sample.name_weight)


# --- dense search -------------------------------------------------------------------------------

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


# --- second commit (reuse) ----------------------------------------------------------------------

def edit_source(text: str, i: int, rng: random.Random) -> str:
    """A small commit to one file: a statement added to one function, maybe a new function."""
    lines = text.split("\n")
    edited = None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    funcs = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             and f.body and f.body[0].lineno > f.lineno and f.end_lineno] if tree else []
    rng.shuffle(funcs)
    for f in funcs[:5]:
        first = f.body[0]
        indent = lines[first.lineno - 1][:first.col_offset]
        if indent.strip():
            continue
        eol = "\r" if lines[f.end_lineno - 1].endswith("\r") else ""
        new = lines[:f.end_lineno] + [f"{indent}_bench_edit_{i} = {i}  # benchmark edit{eol}"] + lines[f.end_lineno:]
        candidate = "\n".join(new)
        try:
            ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
        edited = candidate
        break
    if edited is None or i % 2 == 0:
        base = edited if edited is not None else text
        base += "" if base.endswith("\n") else "\n"
        edited = (base + f"\n\ndef _bench_added_{i}(value):\n"
                  f'    """Added by the benchmark\'s second commit."""\n    return value + {i}\n')
    return edited


def modify_files(root: Path, rel_paths: Sequence[str], fraction: float, seed: int) -> list[str]:
    """Edit `fraction` of the files under `root` in place (deterministic); return their paths."""
    rng = random.Random(seed)
    count = min(len(rel_paths), max(MIN_MODIFIED_FILES, round(fraction * len(rel_paths))))
    chosen = sorted(rng.sample(sorted(rel_paths), count))
    for i, rel in enumerate(chosen):
        path = root / rel
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            text = fh.read()
        with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
            fh.write(edit_source(text, i, rng))
    return chosen


def rewrite_source(text: str, i: int) -> str:
    """A release's worth of change to one file: every function's body gains a statement, and
    every other top-level function or class is renamed (with its uses in the file), so that
    callers elsewhere read changed bindings too. Returns `text` unchanged if it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    lines = text.split("\n")
    funcs = sorted((f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and f.body and f.body[0].lineno > f.lineno and f.end_lineno), key=lambda f: -f.end_lineno)
    for f in funcs:   # bottom up: earlier line numbers stay valid
        first = f.body[0]
        indent = lines[first.lineno - 1][:first.col_offset]
        if indent.strip():
            continue
        eol = "\r" if lines[f.end_lineno - 1].endswith("\r") else ""
        lines.insert(f.end_lineno, f"{indent}_bench_rewrite_{i} = {i}  # benchmark rewrite{eol}")
    edited = "\n".join(lines)
    top = [d.name for d in tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    renamed = edited
    for name in top[::2]:
        renamed = re.sub(rf"\b{re.escape(name)}\b", f"{name}_r{i}", renamed)
    for candidate in (renamed, edited):
        try:
            ast.parse(candidate)
            return candidate
        except (SyntaxError, ValueError):
            continue
    return text


def rewrite_files(root: Path, rel_paths: Sequence[str], fraction: float, seed: int) -> list[str]:
    """`rewrite_source` applied to `fraction` of the files under `root` (deterministic); the
    paths of those that changed."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(sorted(rel_paths), min(len(rel_paths), round(fraction * len(rel_paths)))))
    changed = []
    for i, rel in enumerate(chosen):
        path = root / rel
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            text = fh.read()
        new = rewrite_source(text, i)
        if new != text:
            with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
                fh.write(new)
            changed.append(rel)
    return changed


def copy_files(src_root: Path, rel_paths: Sequence[str], dst_root: Path) -> None:
    for rel in rel_paths:
        dst = dst_root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src_root / rel, dst)


def bench_reuse(corpus: Path, nodes: Sequence[dict[str, Any]], first_index: Path | None,
                first_build: dict[str, Any] | None, work: Path, args: argparse.Namespace) -> list[Row]:
    """Rebuild a modified copy of the corpus with `BuildOptions(reuse=first_index)`."""
    import pyarrow.parquet as pq

    from codenib.compiler.build import BuildOptions
    from codenib.compiler.walk import walk_repository

    out("\n== second commit (reuse) ==")
    options = BuildOptions(device=args.device, batch_size=args.batch_size, progress=True)
    all_files = [f.rel_path for f in walk_repository(corpus)[0]]
    if first_index is None:  # default: a file sample of about --reuse-nodes nodes, built with dense
        per_file: dict[str, int] = {}
        for r in nodes:
            per_file[r["file"]] = per_file.get(r["file"], 0) + 1
        rng = random.Random(args.seed)
        order = sorted(all_files)
        rng.shuffle(order)
        files, total = [], 0
        for rel in order:
            if total >= args.reuse_nodes:
                break
            files.append(rel)
            total += per_file.get(rel, 1)
        v1_src = work / "commit1"
        copy_files(corpus, files, v1_src)
        first_index = work / "index-commit1"
        log(f"second commit: first build of a {len(files)}-file sample ({total:,} nodes) with dense")
        first_build = run_isolated(build_in_child, str(v1_src), str(first_index), options, False)
        scope = f"{len(files)}-file sample of the corpus ({first_build['nodes']:,} nodes)"
    else:
        files, v1_src = all_files, corpus
        scope = f"the whole corpus ({first_build['nodes']:,} nodes)"
    v2_src = work / "commit2"
    copy_files(v1_src, files, v2_src)
    edited = modify_files(v2_src, files, args.modify_fraction, args.seed)
    log(f"second commit: {len(edited)} files edited; rebuilding with reuse={first_index}")
    second = run_isolated(build_in_child, str(v2_src), str(work / "index-commit2"),
                          replace(options, reuse=first_index), False)
    d2 = second["dense"]
    old_fields, new_fields = field_texts(first_index, d2), field_texts(work / "index-commit2", d2)
    known = set().union(*old_fields.values())  # the build reuses any vector whose text it has seen
    changed = {name: sum(1 for t in texts if t not in known) for name, texts in new_fields.items()}
    encoded = {"body": d2["encoded"], **({"name": d2["name_field"]["encoded"]} if "name" in new_fields else {})}
    t1, t2 = sum(first_build["seconds"].values()), sum(second["seconds"].values())
    out(f"scope: {scope}; edited {len(edited)} of {len(files)} files ({len(edited) / len(files):.1%})")
    for tag, b in (("first build ", first_build), ("second build", second)):
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in b["seconds"].items())
        out(f"{tag}: {sum(b['seconds'].values()):.1f} s ({stages}); dense encoded {b['dense']['encoded']:,}, "
            f"reused {b['dense']['reused']:,}; peak RSS {b['peak_rss_mb']:,.0f} MB")
    for name in changed:
        out(f"{name} field: {changed[name]} nodes with a new text; encoded in the second build: {encoded[name]}")
    return [
        Row("reuse: second-commit build total", f"{t2:.1f} s", f"{t1:.1f} s (first build)", t1 / t2),
        Row("reuse: second-commit dense stage", f"{second['seconds']['dense']:.1f} s",
            f"{first_build['seconds']['dense']:.1f} s (first build)",
            first_build["seconds"]["dense"] / second["seconds"]["dense"]),
        Row("reuse: encoded " + " + ".join(encoded) + f" texts ({d2['reused']:,} reused)",
            " + ".join(f"{v:,}" for v in encoded.values()),
            " + ".join(f"{v:,}" for v in changed.values()) + " new texts", None, None,
            "pass" if encoded == changed else "FAIL"),
    ]


def field_texts(index_dir: Path, dense_info: dict[str, Any]) -> dict[str, list[str]]:
    """The texts each dense field encodes for an index (body, and name when built)."""
    rows = read_nodes(index_dir)
    texts = {"body": [r["text"] for r in rows]}
    if dense_info.get("name_field"):
        from codenib.compiler.dense import name_text

        texts["name"] = [name_text(to_node(r)) for r in rows]
    return texts


# --- successive snapshots (incremental builds) ---------------------------------------------------

STAGES = ("parse", "graph", "sparse", "dense")


def raw_parse_here(repo: str, gc_enabled: bool) -> dict[str, Any]:
    """`ast.parse` of every file `codenib index` would read, in this process (seconds)."""
    import gc

    from codenib.compiler.walk import walk_repository

    files, _ = walk_repository(repo)
    raws = [f.abs_path.read_bytes() for f in files]
    was = gc.isenabled()
    if not gc_enabled:
        gc.disable()
    try:
        t0 = time.perf_counter()
        for f, raw in zip(files, raws):
            try:
                ast.parse(raw, filename=f.rel_path)
            except (SyntaxError, ValueError):
                pass
        return {"seconds": time.perf_counter() - t0, "files": len(files)}
    finally:
        if was:
            gc.enable()


def git_snapshots(git_dir: Path, n: int, apart: int) -> list[str]:
    """The last `n` commits `apart` first-parent commits apart, oldest first."""
    import subprocess

    out = subprocess.run(["git", "--git-dir", str(git_dir), "rev-list", "--first-parent", "HEAD"],
                         check=True, capture_output=True, text=True).stdout.split()
    picked = out[::apart][:n]
    if len(picked) < n:
        raise SystemExit(f"bench: {git_dir} has only {len(out)} first-parent commits")
    return list(reversed(picked))


def checkout(git_dir: Path, commit: str, dst: Path) -> None:
    """The tree of `commit` written under `dst` (git archive | tar)."""
    import subprocess

    dst.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dst)], input=archive, check=True)


def changed_files(a: Path | None, b: Path) -> tuple[int, int, float]:
    """Python files of snapshot `b` new or different from snapshot `a` (and deleted ones),
    all of b's files, and the share of b's source bytes in the changed files."""
    from codenib.compiler.walk import walk_repository

    new = {f.rel_path: f.abs_path.read_bytes() for f in walk_repository(b)[0]}
    total = sum(map(len, new.values())) or 1
    if a is None:
        return len(new), len(new), 1.0
    old = {f.rel_path: f.abs_path.read_bytes() for f in walk_repository(a)[0]}
    changed = [rel for rel, raw in new.items() if old.get(rel) != raw]
    deleted = set(old) - set(new)
    return len(changed) + len(deleted), len(new), sum(len(new[r]) for r in changed) / total


def same_index(a: Path, b: Path) -> list[str]:
    """Files (all but the manifest) that differ between two index folders. Vectors count as
    the same within float error (TIE_ATOL): reused ones were encoded in other batches."""
    names = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    names |= {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    names.discard("manifest.json")

    def same(n: str) -> bool:
        if not ((a / n).is_file() and (b / n).is_file()):
            return False
        if (a / n).read_bytes() == (b / n).read_bytes():
            return True
        if n.startswith("dense/") and n.endswith(".npy"):
            x, y = np.load(a / n, allow_pickle=False), np.load(b / n, allow_pickle=False)
            return x.shape == y.shape and bool(np.allclose(x, y, atol=TIE_ATOL))
        return False

    return sorted(n for n in names if not same(n))


def bench_snapshots(work: Path, args: argparse.Namespace) -> list[Row]:
    """Full and incremental builds of successive snapshots; rows for the final table."""
    from codenib.compiler.build import BuildOptions

    options = BuildOptions(dense=args.dense, device=args.device, batch_size=args.batch_size, progress=False)
    sources = []
    if args.synthetic:
        corpus = resolve_corpus(args.corpus)
        from codenib.compiler.walk import walk_repository

        rels = [f.rel_path for f in walk_repository(corpus)[0]]
        label = f"{corpus.name}, synthetic edits of {args.modify_fraction:.0%} of the files per snapshot"
        for i in range(args.snapshots):
            dst = work / f"src-{i}" / corpus.name      # same folder name: the root is a package
            if i == 0:
                copy_files(corpus, rels, dst)
            else:
                shutil.copytree(sources[-1][1], dst)
                modify_files(dst, rels, args.modify_fraction, args.seed + i)
            sources.append((f"edit {i}" if i else "original", dst))
    else:
        git_dir = args.git.resolve()
        if not (git_dir / "HEAD").is_file():
            raise SystemExit(f"bench: no git repository at {git_dir}; pass --git or --synthetic")
        commits = git_snapshots(git_dir, args.snapshots, args.commits_apart)
        label = f"{git_dir}, {args.commits_apart} first-parent commits apart"
        for i, commit in enumerate(commits):
            dst = work / f"src-{i}" / "repo"
            checkout(git_dir, commit, dst)
            sources.append((commit[:10], dst))
    out(f"\n== snapshots: {label} ==")
    out("full: a fresh build; incremental: --reuse of the previous snapshot's index (no parse store); "
        "store only: no --reuse, the per-file parse store that earlier snapshots filled")
    results = []
    previous: Path | None = None
    store = work / "store"
    for i, (tag, src) in enumerate(sources):
        changed, total, share = changed_files(sources[i - 1][1] if i else None, src)
        full_dir, inc_dir, store_dir = work / f"full-{i}", work / f"inc-{i}", work / f"store-{i}"
        jobs = [("full", full_dir, replace(options, use_cache=False))]
        if previous is not None:
            jobs.append(("incremental", inc_dir, replace(options, reuse=previous, use_cache=False)))
        if not args.dense:   # with vectors, a third build per snapshot costs too long on CPUs
            jobs.append(("store only", store_dir, replace(options, cache=store)))
        if i % 2:
            jobs.reverse()       # alternate the order: drifting load hits every kind of build
        done = {}
        for name, dst, opts in jobs:
            log(f"snapshot {i} ({tag}): {name} build")
            done[name] = run_isolated(build_in_child, str(src), str(dst), opts, False, i == 0 and name == "full")
        diff = same_index(full_dir, inc_dir) if previous is not None else []
        if store_dir.exists():
            diff += [f"store only: {d}" for d in same_index(full_dir, store_dir)]
        results.append({"i": i, "tag": tag, "changed": changed, "files": total, "share": share, "diff": diff,
                        **done})
        previous = inc_dir if previous is not None else full_dir
    return snapshot_report(results, args)


def snapshot_report(results: list[dict[str, Any]], args: argparse.Namespace) -> list[Row]:
    """Print the per-snapshot table and return the summary rows."""
    stages = [st for st in STAGES if st in results[0]["full"]["seconds"]]
    head = ["#", "snapshot", "changed files (bytes)", "build"] + stages + ["total", "wall", "peak RSS",
                                                                          "reused", "identical"]
    table = [head]
    ratios: dict[str, list[float]] = {"incremental": [], "store only": []}
    stage_ratios: dict[str, list[float]] = {st: [] for st in stages}
    for r in results:
        for name in ("full", "incremental", "store only"):
            b = r.get(name)
            if b is None:
                continue
            secs = b["seconds"]
            total = sum(secs.get(st, 0.0) for st in stages)
            reused = b.get("reuse") or {}
            note = (f"{reused.get('files_kept', 0)} files kept, {reused.get('units_resolved', 0)} defs resolved"
                    if reused else "-")
            if name == "store only" and b.get("cache"):
                note = f"{b['cache']['files_found']} files from the store"
            same = "-" if name == "full" else (
                "yes" if not [d for d in r["diff"] if d.startswith("store only: ") == (name == "store only")]
                else "NO")
            table.append([str(r["i"]), r["tag"], f"{r['changed']}/{r['files']} ({r['share']:.1%})", name]
                         + [f"{secs.get(st, 0.0):.2f}" for st in stages]
                         + [f"{total:.2f}", f"{b['wall']:.2f}", f"{b['peak_rss_mb']:,.0f} MB", note, same])
            if name != "full" and r["i"] > 0:
                full = r["full"]["seconds"]
                ratios[name].append(total / sum(full.get(st, 0.0) for st in stages))
                if name == "incremental":
                    for st in stages:
                        if full.get(st):
                            stage_ratios[st].append(secs.get(st, 0.0) / full[st])
    widths = [max(len(row[c]) for row in table) for c in range(len(head))]
    for k, row in enumerate(table):
        out(" | ".join(cell.ljust(widths[c]) for c, cell in enumerate(row)))
        if k == 0:
            out("-+-".join("-" * w for w in widths))
    out("stage times exclude loading Python modules (the same in every build process); 'store only' "
        "also spends the time to fill the store, not counted here.")
    rows: list[Row] = []
    for name, values in ratios.items():
        if not values:
            continue
        med = float(np.median(values))
        out(f"{name} / full, all stages: median {med:.1%} (min {min(values):.1%}, max {max(values):.1%}) "
            f"over {len(values)} snapshots")
        target = (SNAPSHOT_DENSE_TARGET if args.dense else SNAPSHOT_TARGET) if name == "incremental" else None
        rows.append(Row(f"snapshots: {name} build, all stages{' (dense included)' if args.dense else ''}",
                        f"{med:.1%} of a full build (median of {len(values)})",
                        "full build of the same snapshot", 1 / med, target))
    for st, v in stage_ratios.items():
        if v:
            rows.append(Row(f"snapshots: incremental {st} stage", f"{np.median(v):.1%} of full", "full build",
                            1 / float(np.median(v))))
    identical = all(not r["diff"] for r in results)
    rows.append(Row("snapshots: incremental and store-only indexes byte-identical to full (all but manifest)",
                    "yes" if identical else "NO: " + "; ".join(d for r in results for d in r["diff"])[:200],
                    status="pass" if identical else "FAIL"))
    for name in ("full", "incremental", "store only"):
        peaks = [r[name]["peak_rss_mb"] for r in results if name in r]
        workers = [r[name]["peak_rss_workers_mb"] for r in results if name in r]
        if peaks:
            rows.append(Row(f"snapshots: peak RSS of a {name} build (max)", f"{max(peaks):,.0f} MB"
                            + (f" (+ each of its worker processes: {max(workers):,.0f} MB)" if max(workers) else "")))
    first = results[0]["full"]
    ours = first["nodes"] / first["seconds"]["parse"]
    for gc_on, label in ((True, "gc on, as Python runs"), (False, "gc off")):
        base = first["nodes"] / first["raw_parse"][gc_on]["seconds"]
        rows.append(Row(f"first build: parse stage vs raw ast.parse ({label})", f"{ours:,.0f} nodes/s",
                        f"{base:,.0f} nodes/s (same process, just before)", ours / base,
                        PARSE_TARGET if gc_on else None))
    return rows


# --- far-apart snapshots (when reuse must not cost more than a fresh build) -------------------------

def bench_far_apart(work: Path, args: argparse.Namespace) -> list[Row]:
    """Two snapshots of --corpus, the second with a release's worth of change to
    --far-fraction of its files (`rewrite_files`): the second built fresh and with --reuse of
    the first's index, alternately first, --far-rounds times; stage times side by side."""
    from codenib.compiler.build import BuildOptions
    from codenib.compiler.walk import walk_repository

    corpus = resolve_corpus(args.corpus)
    rels = [f.rel_path for f in walk_repository(corpus)[0]]
    a, b = work / "far-a" / corpus.name, work / "far-b" / corpus.name    # same name: the root is a package
    copy_files(corpus, rels, a)
    copy_files(corpus, rels, b)
    edited = rewrite_files(b, rels, args.far_fraction, args.seed)
    changed, total, share = changed_files(a, b)
    options = BuildOptions(dense=False, device=args.device, progress=False, use_cache=False)
    out(f"\n== far-apart snapshots: {corpus.name}, {len(edited)} of {len(rels)} files rewritten "
        f"({changed}/{total} changed, {share:.0%} of the bytes) ==")
    log("far apart: fresh build of the first snapshot")
    run_isolated(build_in_child, str(a), str(work / "far-index-a"), options, False)
    runs: dict[str, list[dict[str, Any]]] = {"fresh": [], "reuse": []}
    for r in range(args.far_rounds):
        jobs = [("fresh", options), ("reuse", replace(options, reuse=work / "far-index-a"))]
        if r % 2:
            jobs.reverse()      # drifting load hits both kinds of build
        for name, opts in jobs:
            log(f"far apart: round {r + 1}, {name} build of the second snapshot")
            runs[name].append(run_isolated(build_in_child, str(b), str(work / f"far-{name}-{r}"), opts, False))
    diff = same_index(work / "far-fresh-0", work / "far-reuse-0")
    stages = [st for st in STAGES if st in runs["fresh"][0]["seconds"]]
    med = {name: {st: float(np.median([x["seconds"].get(st, 0.0) for x in xs])) for st in stages}
           for name, xs in runs.items()}
    out(f"{'stage':<8} | {'fresh':>8} | {'reuse':>8} | reuse/fresh   (median of {args.far_rounds} round(s))")
    for st in stages + ["total"]:
        f = sum(med["fresh"].values()) if st == "total" else med["fresh"][st]
        u = sum(med["reuse"].values()) if st == "total" else med["reuse"][st]
        out(f"{st:<8} | {f:8.2f} | {u:8.2f} | {u / f if f else float('nan'):.2f}")
    cpu = {name: float(np.median([x["cpu_s"] for x in xs])) for name, xs in runs.items()}
    out(f"{'CPU':<8} | {cpu['fresh']:8.2f} | {cpu['reuse']:8.2f} | {cpu['reuse'] / cpu['fresh']:.2f}   "
        "(user + system seconds of the build process and its workers, module imports included)")
    info = runs["reuse"][0]["reuse"] or {}
    out(f"reuse chose: {info.get('graph')}; {info.get('files_kept')} files kept, "
        f"{info.get('units_resolved')} definitions resolved")
    f_total, u_total = sum(med["fresh"].values()), sum(med["reuse"].values())
    return [
        Row("far apart: reuse build, all stages", f"{u_total:.1f} s", f"{f_total:.1f} s (fresh build)",
            f_total / u_total, FAR_APART_TARGET),
        Row("far apart: reuse build, CPU seconds", f"{cpu['reuse']:.1f} s", f"{cpu['fresh']:.1f} s (fresh build)",
            cpu["fresh"] / cpu["reuse"], FAR_APART_TARGET),
        Row("far apart: reuse index identical to fresh (all but manifest)", "yes" if not diff else "NO: "
            + "; ".join(diff)[:200], status="pass" if not diff else "FAIL"),
    ]


# --- main ---------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark CodeNib's build, BM25, dense search and encoder against raw bm25s, "
                    "rank_bm25, faiss and sentence-transformers on one real corpus; ends with a table.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", default=DEFAULT_CORPUS,
                   help="a source folder, or the name of an installed package whose sources to index")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where indexes and copies go (default: a temporary folder, removed at the end)")
    p.add_argument("--index", type=Path, default=None,
                   help="an existing index of --corpus: skip the build (stage times from its manifest)")
    p.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help="BM25 queries sampled from the corpus")
    p.add_argument("--rank-bm25-queries", type=int, default=DEFAULT_RANK_BM25_QUERIES,
                   help="queries for the slow rank_bm25 baseline")
    p.add_argument("--dense-queries", type=int, default=DEFAULT_DENSE_QUERIES, help="encoded queries for dense search")
    p.add_argument("--dense-sample", type=int, default=DEFAULT_DENSE_SAMPLE,
                   help="nodes encoded for the dense stage; the full-corpus time is extrapolated")
    p.add_argument("--full", action="store_true",
                   help="build dense vectors for every node (no extrapolation; 30-75 min for 39k "
                        "nodes on 2 cores)")
    p.add_argument("--encode-sample", type=int, default=DEFAULT_ENCODE_SAMPLE,
                   help="node texts for the encoder comparison")
    p.add_argument("--reuse", action="store_true",
                   help="also time a second-commit rebuild that reuses unchanged vectors")
    p.add_argument("--reuse-nodes", type=int, default=DEFAULT_REUSE_NODES,
                   help="without --full: size of the file sample the second-commit test builds")
    p.add_argument("--modify-fraction", type=float, default=DEFAULT_MODIFY_FRACTION,
                   help="share of files the second commit edits")
    p.add_argument("-k", type=int, default=DEFAULT_K, help="results per query")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="timed rounds per search comparison")
    p.add_argument("--batch-size", type=int, default=None, help="encoder batch size (default: CodeNib's)")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"), help="encoder device")
    p.add_argument("--tracemalloc", action="store_true",
                   help="trace Python allocations of the build (slower; reports their peak)")
    p.add_argument("--snapshots", type=int, default=0,
                   help="index N successive snapshots in full and incrementally (a mode of its own)")
    p.add_argument("--git", type=Path, default=DEFAULT_GIT, help="bare git repository the snapshots come from")
    p.add_argument("--commits-apart", type=int, default=DEFAULT_COMMITS_APART,
                   help="first-parent commits between two snapshots")
    p.add_argument("--synthetic", action="store_true",
                   help="snapshots are successive synthetic edits of --corpus (--modify-fraction of its files)")
    p.add_argument("--dense", action="store_true", help="--snapshots: build dense vectors too")
    p.add_argument("--far-apart", action="store_true",
                   help="a mode of its own: fresh vs --reuse builds of two far-apart snapshots of --corpus")
    p.add_argument("--far-fraction", type=float, default=DEFAULT_FAR_FRACTION,
                   help="--far-apart: share of the files the second snapshot rewrites")
    p.add_argument("--far-rounds", type=int, default=1, help="--far-apart: fresh/reuse pairs, alternating order")
    p.add_argument("--seed", type=int, default=0, help="seed of every sample")
    p.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed")
    args = p.parse_args(argv)
    if args.batch_size is None:
        from codenib.engines.embed import default_batch_size, resolve_device

        args.batch_size = default_batch_size(resolve_device(args.device))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus = resolve_corpus(args.corpus)
    temp = args.workdir is None
    work = Path(tempfile.mkdtemp(prefix="codenib-bench-")) if temp else args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    memory: list[tuple[str, float]] = []
    try:
        from codenib.compiler.build import BuildOptions

        out(f"CodeNib index benchmark: corpus {corpus}")
        out(f"python {sys.version.split()[0]}, {multiprocessing.cpu_count()} CPUs; work dir {work}")
        note = load_note("before the run")
        if note:
            out(note)
        if args.far_apart:
            rows = bench_far_apart(work, args)
            out("\n== summary: ratio = speed-up (fresh build time / reuse build time) ==")
            out(render_table(rows))
            out(f"\ntotal benchmark time {time.perf_counter() - _T0:.0f} s")
            return 1 if args.strict and any(r.verdict() == "FAIL" for r in rows) else 0
        if args.snapshots:
            if args.snapshots < 2:
                raise SystemExit("bench: --snapshots needs at least 2 snapshots")
            rows = bench_snapshots(work, args)
            out(f"\n== summary: ratio = speed-up (full build time / incremental build time; our parse "
                f"throughput / raw ast.parse) ==")
            out(render_table(rows))
            out(f"\ntotal benchmark time {time.perf_counter() - _T0:.0f} s")
            return 1 if args.strict and any(r.verdict() == "FAIL" for r in rows) else 0

        # 1. build (in a child process: its peak memory is the build's alone)
        out("\n== build ==")
        build: dict[str, Any] | None = None
        if args.index is not None:
            index_dir = args.index.resolve()
            manifest = json.loads((index_dir / "manifest.json").read_text())
            seconds = dict(manifest.get("build_seconds", {}))
            n_nodes = manifest["counts"]["nodes"]
            out(f"using the existing index {index_dir} ({n_nodes:,} nodes); stage times from its manifest")
        else:
            index_dir = work / "index"
            log(f"building the index of {corpus} (dense: {'all nodes' if args.full else 'sampled later'})")
            options = BuildOptions(dense=args.full, device=args.device, batch_size=args.batch_size)
            build = run_isolated(build_in_child, str(corpus), str(index_dir), options, args.tracemalloc)
            manifest = json.loads((index_dir / "manifest.json").read_text())
            seconds, n_nodes = build["seconds"], build["nodes"]
            out(f"{build['files']:,} files, {n_nodes:,} nodes {build['nodes_by_kind']}, {build['edges']:,} edges, "
                f"{build['parse_errors']} parse errors; build_index {build['wall']:.1f} s; "
                f"peak RSS {build['peak_rss_mb']:,.0f} MB"
                + (f"; tracemalloc peak {build['tracemalloc_peak_mb']:,.0f} MB" if args.tracemalloc else ""))
        if n_nodes < MIN_NODES:
            out(f"WARNING: {n_nodes:,} nodes is below the {MIN_NODES:,} this benchmark is meant for")
        nodes = read_nodes(index_dir)
        texts = [r["text"] for r in nodes]
        memory.append(("after build + reading nodes", peak_rss_mb()))

        # 2. queries drawn from the corpus
        queries, n_doc, n_id = sample_queries(nodes, args.queries, args.seed)
        out(f"queries: {len(queries):,} ({n_doc:,} docstring first sentences, {n_id:,} identifiers; "
            f"seed {args.seed}), e.g. {queries[:3]}")

        # 3. BM25
        rows += bench_sparse(index_dir, manifest, texts, queries, seconds.get("sparse"), args)
        memory.append(("after BM25 benchmarks", peak_rss_mb()))

        # 4. encoder: model load, dense stage, encode comparison, query encoding
        from codenib.engines.embed import Encoder, ModelSpec

        out("\n== dense stage ==")
        t0 = time.perf_counter()
        encoder = Encoder(ModelSpec.for_model(None), args.device, args.batch_size)
        load_s = time.perf_counter() - t0
        out(f"model {encoder.spec.name} (dim {encoder.dimension}) loaded in {load_s:.1f} s on {encoder.device}")
        if args.full:
            fields = DenseFields.load(index_dir / "dense", manifest.get("model"))
            dense_s, dense_note, label = seconds["dense"], "", f"real vectors of all {n_nodes:,} nodes"
            out(f"dense stage over all {n_nodes:,} nodes ({fields.describe()}): {dense_s:.1f} s "
                "(measured, includes model load)")
        else:
            sample_rows, sample_fields, sample_s = build_dense_sample(nodes, work, args)
            per_node = sample_s / len(sample_rows)
            dense_s = load_s + per_node * n_nodes
            dense_note = f" (EXTRAPOLATED from {len(sample_rows):,}-node sample)"
            out(f"dense stage over a {len(sample_rows):,}-node sample ({sample_fields.describe()}): "
                f"{sample_s:.1f} s ({len(sample_rows) / sample_s:.1f} nodes/s)")
            out(f"EXTRAPOLATED dense stage for all {n_nodes:,} nodes: {load_s:.1f} s model load + "
                f"{per_node * 1000:.1f} ms x {n_nodes:,} nodes = {dense_s:,.0f} s (use --full to measure)")
            fields = synthetic_corpus(n_nodes, sample_rows, sample_fields, args.seed)
            label = (f"{len(sample_rows):,} real + {n_nodes - len(sample_rows):,} SYNTHETIC noisy copies "
                     "of them; use --full for real vectors of every node")
        rng = np.random.default_rng(args.seed + 1)
        enc_rows = rng.choice(len(texts), size=min(args.encode_sample, len(texts)), replace=False)
        rows += bench_encode(encoder, [texts[i] for i in enc_rows], args)
        dq = queries[:args.dense_queries]
        t0 = time.perf_counter()
        query_vectors = encoder.encode_queries(dq)
        qenc_s = time.perf_counter() - t0
        out(f"query encoding: {len(dq):,} queries in {qenc_s:.1f} s ({len(dq) / qenc_s:.0f} q/s)")
        rows.append(Row(f"encode queries, {len(dq):,}", f"{len(dq) / qenc_s:.0f} q/s"))
        memory.append(("after encoding", peak_rss_mb()))

        # 5. dense search
        rows += bench_dense_search(fields, query_vectors, label, args)
        memory.append(("after dense search", peak_rss_mb()))

        # 6. build stages
        stage_rows = [stage_row(name, seconds[name], n_nodes) for name in ("parse", "graph", "sparse")
                      if name in seconds]
        stage_rows.append(stage_row("dense", dense_s, n_nodes, dense_note))
        total = sum(seconds.get(s, 0.0) for s in ("parse", "graph", "sparse")) + dense_s
        stage_rows.append(stage_row("total", total, n_nodes, " (dense extrapolated)" if dense_note else ""))
        if build is not None:
            stage_rows.append(Row("build: peak RSS (build process)", f"{build['peak_rss_mb']:,.0f} MB"
                                  + (" (dense stage not run)" if not args.full else "")))

        # 7. second commit
        reuse_rows: list[Row] = []
        if args.reuse:
            if args.full and args.index is None:
                reuse_rows = bench_reuse(corpus, nodes, index_dir, build, work, args)
            else:
                reuse_rows = bench_reuse(corpus, nodes, None, None, work, args)

        memory.append(("end", peak_rss_mb()))
        out("\n== memory (peak RSS of the benchmark process, cumulative) ==")
        for tag, mb in memory:
            out(f"{tag:>28}: {mb:,.0f} MB")
        out(f"index on disk: " + ", ".join(
            f"{p.name} {sum(f.stat().st_size for f in p.rglob('*')) / 2**20:.1f} MB" if p.is_dir()
            else f"{p.name} {p.stat().st_size / 2**20:.1f} MB" for p in sorted(index_dir.iterdir())))
        rows = rows + stage_rows + reuse_rows
        rows.append(Row("peak RSS (benchmark process)", f"{memory[-1][1]:,.0f} MB"))

        out(f"\n== summary: {corpus.name}, {n_nodes:,} nodes, k={args.k}; ratio = speed-up "
            f"(ours/baseline throughput, baseline/ours time) ==")
        out(render_table(rows))
        note = load_note("at the end")
        out(f"\ntotal benchmark time {time.perf_counter() - _T0:.0f} s" + (f"\n{note}" if note else ""))
        return 1 if args.strict and any(r.verdict() == "FAIL" for r in rows) else 0
    finally:
        if temp:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
