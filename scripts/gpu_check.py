#!/usr/bin/env python
"""GPU vs CPU check of CodeNib's encoder and dense search: same results, and how much faster.

1. Encodes CodeNib's own source (its node texts) with the packaged MiniLM on CUDA and on the
   CPU; compares the vectors (max |diff|, cosine) and the speeds.
2. Searches a random normalised 50,000 x 384 matrix with `DenseIndex` backends torch (GPU),
   numpy (CPU) and faiss (GPU when faiss has GPU support, else CPU); checks that every top-k
   list matches numpy's up to ties, and prints the speeds side by side.

Under 3 minutes on an H200, model loads included. Without CUDA it prints
"no GPU: CPU-only comparison", runs the same checks between the CPU backends at a smaller
size, and exits 0 (1 only when a check fails).

    python scripts/gpu_check.py [--texts 512] [--queries 2000] [--vectors 50000]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

#: Scores this close count as ties when top-k lists are compared (fp32 GPU vs CPU sums differ ~1e-7).
TIE_ATOL = 1e-5
#: fp32 on either device: per-vector cosine must stay this close to 1, and entries this close.
MIN_COSINE = 0.9999
MAX_ABS_DIFF = 2e-3
#: The search size the issue asks for; ~77 MB of float32.
DEFAULT_VECTORS = 50_000
DIM = 384
K = 100
#: GPU defaults: the whole run stays well under 3 minutes on an H200 with 16 CPU cores.
GPU_TEXTS, GPU_QUERIES = 512, 2_000
#: CPU-only defaults: MiniLM encodes ~9 node texts/s on 2 cores, numpy searches ~500 q/s.
CPU_TEXTS, CPU_QUERIES = 48, 500
#: Timed rounds per search backend; the best counts.
REPEATS = 3
#: Encoder batch sizes swept on CUDA (picks codenib.engines.embed.CUDA_BATCH_SIZE).
SWEEP_BATCHES = (32, 64, 128, 256, 512)
#: Texts per sweep point: enough batches of 512 to fill the GPU several times.
SWEEP_TEXTS = 8192


def say(msg: str = "") -> None:
    print(msg, flush=True)


def best_time(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """Best wall time of `fn` over `repeats` calls (after one untimed warm-up call)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def topk_match(rows_a: np.ndarray, scores_a: np.ndarray, rows_b: np.ndarray, scores_b: np.ndarray
               ) -> tuple[int, float]:
    """Queries whose top-k agree up to ties: scores within TIE_ATOL position by position, and
    each row clearly above the cut in one list is in the other."""
    same, worst = 0, 0.0
    for ra, sa, rb, sb in zip(rows_a, scores_a, rows_b, scores_b):
        diff = float(np.max(np.abs(sa - sb))) if len(sa) else 0.0
        worst = max(worst, diff)
        cut = min(sa[-1], sb[-1]) + TIE_ATOL if len(sa) else 0.0
        if (diff <= TIE_ATOL and set(ra[sa > cut].tolist()) <= set(rb.tolist())
                and set(rb[sb > cut].tolist()) <= set(ra.tolist())):
            same += 1
    return same, worst


def environment() -> tuple[bool, bool]:
    """Print what this machine offers; return (torch sees CUDA, faiss has GPUs)."""
    import faiss
    import torch

    cuda = torch.cuda.is_available()
    try:
        faiss_gpu = hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    except Exception:  # noqa: BLE001 - CPU builds may lack the symbol
        faiss_gpu = False
    say(f"torch {torch.__version__} (CUDA build: {torch.version.cuda or 'no'}), "
        f"faiss {faiss.__version__} (GPUs: {faiss.get_num_gpus() if faiss_gpu else 0}), "
        f"float32 matmul precision {torch.get_float32_matmul_precision()!r}")
    if cuda:
        say(f"GPU: {torch.cuda.get_device_name(0)}")
    else:
        if shutil.which("nvidia-smi"):
            say("note: nvidia-smi is present but torch has no CUDA: install the CUDA build of torch")
        say("no GPU: CPU-only comparison")
    return cuda, faiss_gpu


def node_texts(limit: int) -> list[str]:
    """Indexed texts of CodeNib's own source nodes (walk + parse, nothing written)."""
    import codenib
    from codenib.compiler.lang.python_parse import parse_file
    from codenib.compiler.walk import walk_repository

    files, _ = walk_repository(Path(codenib.__file__).parent)
    texts = [n.text for f in files for n in parse_file(f).nodes]
    step = max(1, len(texts) // limit)
    return texts[::step][:limit]


#: One result line: what was checked, the measured value, pass/fail (None: information only).
Check = tuple[str, str, bool | None]


def check_encoder(texts: Sequence[str], cuda: bool) -> list[Check]:
    """Encode on the CPU (and CUDA); compare vectors and speeds."""
    from codenib.engines.embed import Encoder
    from codenib.engines.models import ModelSpec

    spec = ModelSpec.for_model(None)
    rows: list[Check] = []
    devices = ["cpu", "cuda"] if cuda else ["cpu"]
    vectors: dict[str, np.ndarray] = {}
    speed: dict[str, float] = {}
    for dev in devices:
        t0 = time.perf_counter()
        enc = Encoder(spec, dev)
        load = time.perf_counter() - t0
        enc.encode_documents(list(texts[:enc.batch_size]))  # warm-up (CUDA context, kernels)
        t0 = time.perf_counter()
        vectors[dev] = enc.encode_documents(list(texts))
        speed[dev] = len(texts) / (time.perf_counter() - t0)
        say(f"encode on {dev}: model load {load:.1f} s, {len(texts)} texts at {speed[dev]:,.1f} texts/s "
            f"(batch {enc.batch_size})")
    if not cuda:
        rows.append(("encode texts/s (cpu)", f"{speed['cpu']:,.1f}", None))
        return rows
    a, b = vectors["cpu"], vectors["cuda"]
    max_abs = float(np.max(np.abs(a - b)))
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    say(f"vectors cuda vs cpu: max |diff| {max_abs:.2e}, cosine min {cos.min():.7f} mean {cos.mean():.7f}")
    rows.append(("encode texts/s cpu | cuda", f"{speed['cpu']:,.1f} | {speed['cuda']:,.1f} "
                  f"({speed['cuda'] / speed['cpu']:.0f}x)", None))
    rows.append((f"vectors cuda vs cpu: max |diff| <= {MAX_ABS_DIFF:g}", f"{max_abs:.2e}", max_abs <= MAX_ABS_DIFF))
    rows.append((f"vectors cuda vs cpu: min cosine >= {MIN_COSINE}", f"{cos.min():.7f}",
                 bool(cos.min() >= MIN_COSINE)))
    # Retrieval over the encoded nodes with either device's vectors: does the top-10 move?
    from codenib.index.dense import DenseIndex

    k = min(10, len(a))
    ra, _ = DenseIndex(a, backend="numpy").search(a[: min(100, len(a))], k)
    rb, _ = DenseIndex(b, backend="numpy").search(b[: min(100, len(b))], k)
    overlap = np.mean([len(set(x.tolist()) & set(y.tolist())) / k for x, y in zip(ra, rb)])
    rows.append((f"node search top-{k} overlap, cpu vs cuda vectors", f"{overlap:.1%}", None))
    rows += sweep_batches(texts)
    return rows


def sweep_batches(texts: Sequence[str]) -> list[Check]:
    """CUDA encode speed per batch size over SWEEP_TEXTS node texts (repeated as needed)."""
    from codenib.engines.embed import CUDA_BATCH_SIZE, Encoder
    from codenib.engines.models import ModelSpec

    pool = (list(texts) * (SWEEP_TEXTS // max(1, len(texts)) + 1))[:SWEEP_TEXTS]
    enc = Encoder(ModelSpec.for_model(None), "cuda")
    speeds: dict[int, float] = {}
    for bs in SWEEP_BATCHES:
        enc.batch_size = bs
        enc.encode_documents(pool[: 2 * bs])  # warm-up at this shape
        t0 = time.perf_counter()
        enc.encode_documents(pool)
        speeds[bs] = len(pool) / (time.perf_counter() - t0)
        say(f"cuda encode batch {bs}: {speeds[bs]:,.0f} texts/s")
    best = max(speeds, key=speeds.__getitem__)
    return [(f"cuda encode texts/s by batch ({len(pool)} texts)",
             ", ".join(f"{bs}: {v:,.0f}" for bs, v in speeds.items()), None),
            (f"default CUDA batch {CUDA_BATCH_SIZE} within 15% of best ({best})",
             f"{speeds[CUDA_BATCH_SIZE] / speeds[best]:.0%}", speeds[CUDA_BATCH_SIZE] >= 0.85 * speeds[best])]


def check_search(n: int, nq: int, cuda: bool, faiss_gpu: bool) -> list[Check]:
    """`DenseIndex` torch / faiss vs numpy on a random normalised matrix."""
    from codenib.index.dense import DenseIndex

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[rng.choice(n, nq, replace=False)] + 0.1 * rng.standard_normal((nq, DIM), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    say(f"search: {n:,} x {DIM} random unit vectors, {nq:,} queries, k={K}")
    ref = DenseIndex(vectors, backend="numpy")
    ref_rows, ref_scores = ref.search(queries, K)
    t_ref = best_time(lambda: ref.search(queries, K))
    say(f"  numpy (cpu): {nq / t_ref:,.0f} q/s")
    rows: list[Check] = [("search q/s numpy (cpu)", f"{nq / t_ref:,.0f}", None)]
    others = [("torch", "cuda" if cuda else "cpu"), ("faiss", "gpu" if faiss_gpu else "cpu")]
    for backend, where in others:
        index = DenseIndex(vectors, backend=backend, device="cuda" if cuda else "cpu")
        got_rows, got_scores = index.search(queries, K)  # also the warm-up (moves data to the GPU)
        t = best_time(lambda: index.search(queries, K))
        same, worst = topk_match(got_rows, got_scores, ref_rows, ref_scores)
        say(f"  {backend} ({where}): {nq / t:,.0f} q/s ({t_ref / t:.1f}x numpy); top-{K} identical to numpy "
            f"{same}/{nq}, max score diff {worst:.1e}")
        rows.append((f"search q/s {backend} ({where})", f"{nq / t:,.0f} ({t_ref / t:.1f}x numpy)", None))
        rows.append((f"search top-{K} {backend} ({where}) == numpy, ties {TIE_ATOL:g}", f"{same}/{nq}", same == nq))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="GPU vs CPU parity and speed of CodeNib's encoder and dense search.")
    p.add_argument("--texts", type=int, default=None, help=f"node texts to encode (default {GPU_TEXTS} with a GPU, "
                                                           f"{CPU_TEXTS} without)")
    p.add_argument("--queries", type=int, default=None, help=f"search queries (default {GPU_QUERIES} with a GPU, "
                                                             f"{CPU_QUERIES} without)")
    p.add_argument("--vectors", type=int, default=DEFAULT_VECTORS, help="rows of the random search matrix")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    cuda, faiss_gpu = environment()
    texts = node_texts(args.texts or (GPU_TEXTS if cuda else CPU_TEXTS))
    rows = check_encoder(texts, cuda)
    rows += check_search(args.vectors, args.queries or (GPU_QUERIES if cuda else CPU_QUERIES), cuda, faiss_gpu)
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    say(f"\n{'check'.ljust(width)} | {'value'.ljust(vwidth)} | result")
    say(f"{'-' * width}-+-{'-' * vwidth}-+-------")
    for name, value, ok in rows:
        say(f"{name.ljust(width)} | {value.ljust(vwidth)} | {'info' if ok is None else 'pass' if ok else 'FAIL'}")
    failed = [r[0] for r in rows if r[2] is False]
    say(f"\n{'no GPU: CPU-only comparison; ' if not cuda else ''}"
        f"{'all checks passed' if not failed else 'FAILED: ' + ', '.join(failed)} "
        f"in {time.perf_counter() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
