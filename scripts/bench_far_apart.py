#!/usr/bin/env python
"""Benchmark --reuse between far-apart snapshots, where reuse must not cost more than a fresh build.

Not a test. Two snapshots of --corpus (default: the installed `sympy` sources), the second
with --far-fraction of its files rewritten (bodies changed, every other top-level name
renamed with its uses); the second is built fresh and with `--reuse` of the first's index,
alternately first, --far-rounds times. It prints each stage side by side with the ratio,
the CPU seconds of both, what the reuse build chose for its graph stage, and whether the
indexes are equal; it ends with one table: metric | ours | baseline | ratio | target | pass/fail.

    python scripts/bench_far_apart.py --far-rounds 2         # sympy, ~6 min
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchkit import Row, finish, log, out, render_table, run_isolated
from editkit import changed_files, copy_files, rewrite_files
from indexkit import print_header, STAGES, add_common_args, build_in_child, resolve_corpus, same_index, workspace

#: The second snapshot rewrites this share of the files (SWE-bench snapshots of sympy a few
#: releases apart differ in about half).
DEFAULT_FAR_FRACTION = 0.5
#: Reuse must cost no more than a fresh build (within noise: 0.9x).
FAR_APART_TARGET = 0.9


def bench_far_apart(work: Path, args: argparse.Namespace) -> list[Row]:
    """Two snapshots of --corpus, the second with a release's worth of change to
    --far-fraction of its files (`rewrite_files`): the second built fresh and with --reuse of
    the first's index, alternately first, --far-rounds times; stage times side by side."""
    from codenib.compiler.build_options import BuildOptions
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
    cpu = {name: float(np.median([x["cpu_s"] for x in xs])) for name, xs in runs.items()}
    table = []
    for st in stages + ["total"]:
        f = sum(med["fresh"].values()) if st == "total" else med["fresh"][st]
        u = sum(med["reuse"].values()) if st == "total" else med["reuse"][st]
        table.append((st, f"{f:.2f}", f"{u:.2f}", f"{u / f if f else float('nan'):.2f}"))
    table.append(("CPU", f"{cpu['fresh']:.2f}", f"{cpu['reuse']:.2f}", f"{cpu['reuse'] / cpu['fresh']:.2f}"))
    out(f"seconds, median of {args.far_rounds} round(s); CPU: user + system seconds of the build process and "
        "its workers, module imports included")
    out(render_table(("stage", "fresh", "reuse", "reuse/fresh"), table, right=(1, 2, 3)))
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


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark fresh against --reuse builds of two far-apart snapshots of one corpus; "
                    "ends with a table.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p)
    p.add_argument("--far-fraction", type=float, default=DEFAULT_FAR_FRACTION,
                   help="share of the files the second snapshot rewrites")
    p.add_argument("--far-rounds", type=int, default=1, help="fresh/reuse pairs, alternating order")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda"), help="encoder device")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus = resolve_corpus(args.corpus)
    with workspace(args) as work:
        print_header("far-apart reuse benchmark", corpus, work)
        rows = bench_far_apart(work, args)
        return finish(rows, "ratio = speed-up (fresh build time / reuse build time)", args.strict)


if __name__ == "__main__":
    sys.exit(main())
