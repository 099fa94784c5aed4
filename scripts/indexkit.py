"""Corpus, builds and comparisons shared by the index benchmarks (bench_build, bench_bm25,
bench_dense, bench_incremental, bench_far_apart): resolve a corpus, build an index in a
fresh process and report its stage times and memory, draw queries from its nodes, and
compare two indexes or two top-k result lists. Edits to a copy of a corpus are `editkit`'s."""

from __future__ import annotations

import argparse
import contextlib
import ast
import importlib.util
import json
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from benchkit import children_peak_rss_mb, cpu_seconds, log, out, peak_rss_mb, run_isolated

#: The largest pure-Python package in CodeNib's own environment (~1,500 files, ~39,000 nodes).
DEFAULT_CORPUS = "sympy"
#: The issue asks for a corpus of at least this many nodes; smaller ones are flagged.
MIN_NODES = 20_000
#: Result depth of the batch job (`codenib run -k 100`).
DEFAULT_K = 100
#: Timed rounds per search comparison; the best round counts (noise only ever adds time).
DEFAULT_REPEATS = 5
#: Nodes encoded for the dense stage unless --full. MiniLM encodes 9-25 sympy node texts/s on
#: 2 shared cores (they average ~240 tokens, a quarter hit the 256 cap), so 1.5-4 minutes.
DEFAULT_DENSE_SAMPLE = 2_000
#: Share of identifier queries; the rest are docstring first sentences.
IDENTIFIER_FRACTION = 0.3
#: Scores this close count as ties when top-k lists are compared.
TIE_ATOL = 1e-5
#: Per-dimension noise that turns a real vector into a synthetic neighbour (cosine ~0.85).
SYNTHETIC_NOISE = 0.03
#: The build stages, in order.
STAGES = ("parse", "graph", "sparse", "dense")


def add_common_args(p: argparse.ArgumentParser, corpus_help: str = "") -> None:
    """--corpus, --workdir, --seed and --strict, which every index benchmark takes."""
    p.add_argument("--corpus", default=DEFAULT_CORPUS,
                   help=corpus_help or "a source folder, or the name of an installed package whose sources to index")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where indexes and copies go (default: a temporary folder, removed at the end)")
    p.add_argument("--seed", type=int, default=0, help="seed of every sample")
    p.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed")


def add_encoder_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch-size", type=int, default=None, help="encoder batch size (default: CodeNib's)")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"), help="encoder device")


def resolve_batch_size(args: argparse.Namespace) -> argparse.Namespace:
    """Fill in CodeNib's default encoder batch size for --device."""
    if getattr(args, "batch_size", 0) is None:
        from codenib.engines.embed import default_batch_size
        from codenib.engines.models import resolve_device

        args.batch_size = default_batch_size(resolve_device(args.device))
    return args


def print_header(title: str, corpus: Path | None, work: Path) -> None:
    """The lines every index benchmark starts with: what it is, the corpus, the machine, the load."""
    import multiprocessing

    from benchkit import load_note, out

    out(f"CodeNib {title}" + (f": corpus {corpus}" if corpus is not None else ""))
    out(f"python {sys.version.split()[0]}, {multiprocessing.cpu_count()} CPUs; work dir {work}")
    note = load_note("before the run")
    if note:
        out(note)


@contextlib.contextmanager
def workspace(args: argparse.Namespace) -> Iterator[Path]:
    """The work folder: --workdir (kept), or a new temporary one removed when the benchmark ends."""
    import shutil
    import tempfile

    temp = args.workdir is None
    work = Path(tempfile.mkdtemp(prefix="codenib-bench-")) if temp else args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        yield work
    finally:
        if temp:
            shutil.rmtree(work, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class Built:
    """The index a benchmark measures: its folder, manifest, stage seconds and node count;
    `build` is the child's report when this run built it (None for --index)."""

    index_dir: Path
    manifest: dict[str, Any]
    seconds: dict[str, float]
    n_nodes: int
    build: dict[str, Any] | None


def prepare_index(corpus: Path, work: Path, index: Path | None, options: Any,
                  trace_memory: bool = False, note: str = "") -> Built:
    """Build the index of `corpus` in a child process (its peak memory is the build's alone),
    or read an existing one (--index); print the `== build ==` section."""
    out("\n== build ==")
    if index is not None:
        index_dir = index.resolve()
        manifest = json.loads((index_dir / "manifest.json").read_text())
        n_nodes = manifest["counts"]["nodes"]
        out(f"using the existing index {index_dir} ({n_nodes:,} nodes); stage times from its manifest")
        built = Built(index_dir, manifest, dict(manifest.get("build_seconds", {})), n_nodes, None)
    else:
        index_dir = work / "index"
        log(f"building the index of {corpus}{note}")
        build = run_isolated(build_in_child, str(corpus), str(index_dir), options, trace_memory)
        manifest = json.loads((index_dir / "manifest.json").read_text())
        out(f"{build['files']:,} files, {build['nodes']:,} nodes {build['nodes_by_kind']}, {build['edges']:,} edges, "
            f"{build['parse_errors']} parse errors; build_index {build['wall']:.1f} s; "
            f"peak RSS {build['peak_rss_mb']:,.0f} MB"
            + (f"; tracemalloc peak {build['tracemalloc_peak_mb']:,.0f} MB" if trace_memory else ""))
        built = Built(index_dir, manifest, build["seconds"], build["nodes"], build)
    if built.n_nodes < MIN_NODES:
        out(f"WARNING: {built.n_nodes:,} nodes is below the {MIN_NODES:,} this benchmark is meant for")
    return built


def draw_queries(nodes: Sequence[dict[str, Any]], n: int, seed: int) -> list[str]:
    """`sample_queries`, with the line that says what was drawn."""
    queries, n_doc, n_id = sample_queries(nodes, n, seed)
    out(f"queries: {len(queries):,} ({n_doc:,} docstring first sentences, {n_id:,} identifiers; "
        f"seed {seed}), e.g. {queries[:3]}")
    return queries


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]`'\"])\.(\s|$)")


def exact_order(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The contract's top-k of one full score vector: score descending, then row ascending."""
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return order.astype(np.int64), scores[order]


def contract_ordered(rows: np.ndarray, scores: np.ndarray) -> bool:
    """True when a result list runs by score descending and, among equal scores, row ascending."""
    valid = rows >= 0
    r, s = rows[valid], scores[valid]
    return bool(np.all((s[:-1] > s[1:]) | ((s[:-1] == s[1:]) & (r[:-1] < r[1:]))))


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
    import codenib.compiler.lang.python_graph  # noqa: F401
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
        "cpu_s": cpu_seconds(),
        # The largest worker process the build started (parse, tokenize), if any.
        "peak_rss_workers_mb": children_peak_rss_mb(),
        "tracemalloc_peak_mb": traced,
    }


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


def read_nodes(index_dir: Path) -> list[dict[str, Any]]:
    """Rows of nodes.parquet as dicts (row i = sparse doc i = vector row i)."""
    import pyarrow.parquet as pq

    return pq.read_table(index_dir / "nodes.parquet").to_pylist()


def to_node(row: dict[str, Any]):
    """A `Node` back from its nodes.parquet row."""
    from codenib.core.types import Node

    return Node(**{**row, "decorators": tuple(row.get("decorators") or ())})


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
    from codenib.compiler.build_options import BuildOptions
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

