#!/usr/bin/env python
"""Benchmark incremental builds: N successive snapshots, each built in full and with --reuse.

Not a test. Indexes N successive snapshots of a real repository (first-parent commits of a
bare git mirror, default pytest's, `--commits-apart` apart; or, with `--synthetic`,
successive edits of `--modify-fraction` of --corpus's files), each one in full, with
`--reuse` of the previous snapshot's index and with the per-file parse store only, in fresh
processes, alternating which goes first. It prints each stage's time and the ratio, checks
that the indexes are byte-identical (every file but the manifest), the peak memory of the
builds, and the first build's parse stage against raw `ast.parse` on the same files; it
ends with one table: metric | ours | baseline | ratio | target | pass/fail.

    python scripts/bench_incremental.py --snapshots 6                 # pytest history, ~2 min
    python scripts/bench_incremental.py --snapshots 4 --synthetic     # sympy, 3% edits, ~10 min
    python scripts/bench_incremental.py --snapshots 3 --dense         # vectors too (CPU: slow)
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchkit import Row, finish, log, out, render_table, run_isolated
from editkit import DEFAULT_MODIFY_FRACTION, changed_files, copy_files, modify_files
from indexkit import (print_header, STAGES, add_common_args, add_encoder_args, build_in_child, resolve_batch_size,
                      resolve_corpus, same_index, workspace)

#: Snapshots unless --snapshots says otherwise.
DEFAULT_SNAPSHOTS = 6
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


def bench_snapshots(work: Path, args: argparse.Namespace) -> list[Row]:
    """Full and incremental builds of successive snapshots; rows for the final table."""
    from codenib.compiler.build_options import BuildOptions

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
    out(render_table(head, table[1:]))
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


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark full against incremental (--reuse) builds of successive snapshots; "
                    "ends with a table.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p, "--synthetic: a source folder, or the name of an installed package whose sources to edit")
    p.add_argument("--snapshots", type=int, default=DEFAULT_SNAPSHOTS, help="successive snapshots to index (>= 2)")
    p.add_argument("--git", type=Path, default=DEFAULT_GIT, help="bare git repository the snapshots come from")
    p.add_argument("--commits-apart", type=int, default=DEFAULT_COMMITS_APART,
                   help="first-parent commits between two snapshots")
    p.add_argument("--synthetic", action="store_true",
                   help="snapshots are successive synthetic edits of --corpus (--modify-fraction of its files)")
    p.add_argument("--modify-fraction", type=float, default=DEFAULT_MODIFY_FRACTION,
                   help="--synthetic: share of files each snapshot edits")
    p.add_argument("--dense", action="store_true", help="build dense vectors too")
    add_encoder_args(p)
    args = p.parse_args(argv)
    if args.snapshots < 2:
        p.error("--snapshots needs at least 2 snapshots")
    return resolve_batch_size(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with workspace(args) as work:
        print_header("incremental build benchmark", None, work)
        rows = bench_snapshots(work, args)
        return finish(rows, "ratio = speed-up (full build time / incremental build time; our parse "
                      "throughput / raw ast.parse)", args.strict)


if __name__ == "__main__":
    sys.exit(main())
