#!/usr/bin/env python
"""Benchmark CodeNib's index build: stage times, peak memory and the second-commit rebuild.

Not a test. One build of a real corpus (default: the installed `sympy` sources, ~39,000
nodes) in a fresh process prints each stage's time and throughput (parse, graph, sparse and
the dense stage, extrapolated from a node sample unless --full), the build's peak memory and
the index's size on disk; with `--reuse`, the rebuild of a "second commit" (--modify-fraction
of the files edited) that reuses the vectors of unchanged nodes, against the first build. It
ends with one table: metric | ours | baseline | ratio | target | pass/fail.

    python scripts/bench_build.py                 # 3-6 minutes on 2 CPU cores
    python scripts/bench_build.py --reuse         # + the second-commit rebuild (1-3 minutes)
    python scripts/bench_build.py --full --reuse  # dense over every node (+30-75 minutes)

Search against the raw libraries is in bench_bm25.py and bench_dense.py; successive snapshots
in bench_incremental.py; far-apart snapshots in bench_far_apart.py.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from benchkit import Row, finish, log, out, peak_rss_mb, run_isolated, timed
from editkit import DEFAULT_MODIFY_FRACTION, copy_files, modify_files
from indexkit import (print_header, DEFAULT_DENSE_SAMPLE, add_common_args, add_encoder_args, build_dense_sample,
                      build_in_child, prepare_index, read_nodes, resolve_batch_size, resolve_corpus, to_node, workspace)

#: Without --full, the second-commit test builds a file sample of about this many nodes.
DEFAULT_REUSE_NODES = 1_000


def stage_row(name: str, seconds: float, nodes: int, note: str = "") -> Row:
    return Row(f"build: {name}{note}", f"{seconds:,.1f} s ({nodes / seconds:,.0f} nodes/s)"
               if seconds > 0 else "0 s")


def bench_reuse(corpus: Path, nodes: Sequence[dict[str, Any]], first_index: Path | None,
                first_build: dict[str, Any] | None, work: Path, args: argparse.Namespace) -> list[Row]:
    """Rebuild a modified copy of the corpus with `BuildOptions(reuse=first_index)`."""
    from codenib.compiler.build_options import BuildOptions
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


def dense_stage_seconds(built: Any, nodes: list[dict[str, Any]], work: Path, args: argparse.Namespace
                        ) -> tuple[float, str]:
    """The dense stage's seconds for the whole corpus: measured (--full), or the model load
    plus a node sample's time per node, extrapolated; and the note that says which."""
    from codenib.engines.embed import Encoder
    from codenib.engines.models import ModelSpec

    out("\n== dense stage ==")
    n_nodes = built.n_nodes
    if args.full:
        out(f"dense stage over all {n_nodes:,} nodes: {built.seconds['dense']:.1f} s (measured, includes model load)")
        return built.seconds["dense"], ""
    encoder, load_s = timed(lambda: Encoder(ModelSpec.for_model(None), args.device, args.batch_size))
    out(f"model {encoder.spec.name} (dim {encoder.dimension}) loaded in {load_s:.1f} s on {encoder.device}")
    sample_rows, sample_fields, sample_s = build_dense_sample(nodes, work, args)
    per_node = sample_s / len(sample_rows)
    dense_s = load_s + per_node * n_nodes
    out(f"dense stage over a {len(sample_rows):,}-node sample ({sample_fields.describe()}): "
        f"{sample_s:.1f} s ({len(sample_rows) / sample_s:.1f} nodes/s)")
    out(f"EXTRAPOLATED dense stage for all {n_nodes:,} nodes: {load_s:.1f} s model load + "
        f"{per_node * 1000:.1f} ms x {n_nodes:,} nodes = {dense_s:,.0f} s (use --full to measure)")
    return dense_s, f" (EXTRAPOLATED from {len(sample_rows):,}-node sample)"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark CodeNib's index build (stage times, memory, second-commit reuse) on one "
                    "real corpus; ends with a table.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p)
    p.add_argument("--index", type=Path, default=None,
                   help="an existing index of --corpus: skip the build (stage times from its manifest)")
    p.add_argument("--dense-sample", type=int, default=DEFAULT_DENSE_SAMPLE,
                   help="nodes encoded for the dense stage; the full-corpus time is extrapolated")
    p.add_argument("--full", action="store_true",
                   help="build dense vectors for every node (no extrapolation; 30-75 min for 39k "
                        "nodes on 2 cores)")
    p.add_argument("--reuse", action="store_true",
                   help="also time a second-commit rebuild that reuses unchanged vectors")
    p.add_argument("--reuse-nodes", type=int, default=DEFAULT_REUSE_NODES,
                   help="without --full: size of the file sample the second-commit test builds")
    p.add_argument("--modify-fraction", type=float, default=DEFAULT_MODIFY_FRACTION,
                   help="share of files the second commit edits")
    add_encoder_args(p)
    p.add_argument("--tracemalloc", action="store_true",
                   help="trace Python allocations of the build (slower; reports their peak)")
    return resolve_batch_size(p.parse_args(argv))


def main(argv: Sequence[str] | None = None) -> int:
    from codenib.compiler.build_options import BuildOptions

    args = parse_args(argv)
    corpus = resolve_corpus(args.corpus)
    memory: list[tuple[str, float]] = []
    with workspace(args) as work:
        print_header("build benchmark", corpus, work)
        options = BuildOptions(dense=args.full, device=args.device, batch_size=args.batch_size)
        built = prepare_index(corpus, work, args.index, options, args.tracemalloc,
                              note=f" (dense: {'all nodes' if args.full else 'sampled later'})")
        seconds, n_nodes, build = built.seconds, built.n_nodes, built.build
        nodes = read_nodes(built.index_dir)
        memory.append(("after build + reading nodes", peak_rss_mb()))
        dense_s, dense_note = dense_stage_seconds(built, nodes, work, args)
        memory.append(("after the dense stage", peak_rss_mb()))

        rows = [stage_row(name, seconds[name], n_nodes) for name in ("parse", "graph", "sparse") if name in seconds]
        rows.append(stage_row("dense", dense_s, n_nodes, dense_note))
        total = sum(seconds.get(s, 0.0) for s in ("parse", "graph", "sparse")) + dense_s
        rows.append(stage_row("total", total, n_nodes, " (dense extrapolated)" if dense_note else ""))
        if build is not None:
            rows.append(Row("build: peak RSS (build process)", f"{build['peak_rss_mb']:,.0f} MB"
                            + (" (dense stage not run)" if not args.full else "")))
        if args.reuse:
            if args.full and args.index is None:
                rows += bench_reuse(corpus, nodes, built.index_dir, build, work, args)
            else:
                rows += bench_reuse(corpus, nodes, None, None, work, args)

        memory.append(("end", peak_rss_mb()))
        out("\n== memory (peak RSS of the benchmark process, cumulative) ==")
        for tag, mb in memory:
            out(f"{tag:>28}: {mb:,.0f} MB")
        out("index on disk: " + ", ".join(
            f"{p.name} {sum(f.stat().st_size for f in p.rglob('*')) / 2**20:.1f} MB" if p.is_dir()
            else f"{p.name} {p.stat().st_size / 2**20:.1f} MB" for p in sorted(built.index_dir.iterdir())))
        rows.append(Row("peak RSS (benchmark process)", f"{memory[-1][1]:,.0f} MB"))
        return finish(rows, f"{corpus.name}, {n_nodes:,} nodes; ratio = speed-up (first build time / "
                      "second-commit build time)", args.strict, end_note=True)


if __name__ == "__main__":
    sys.exit(main())
