"""`codenib rerank`: re-rank an earlier results folder into a new one (nightly jobs)."""

from __future__ import annotations

import argparse
import sys

from codenib.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spec", metavar="JOB_SPEC", help="a job spec with a [rerank] section; options here override it")
    p.add_argument("--results", metavar="RESULTS_DIR", help="the earlier results folder (of `codenib run`)")
    p.add_argument("--out", metavar="NEW_RESULTS_DIR", help="the new results folder (resumed when it holds this job)")
    p.add_argument("--reranker", choices=["embedding", "llm"], help="default: embedding")
    p.add_argument("--top-n", type=int, help="candidates reranked per query; the rest keep their order (default: 50)")
    p.add_argument("--queries", metavar="QUERIES", help="the query set (default: the one the source run recorded)")
    p.add_argument("--index", metavar="INDEX_DIR", help="index for every query (default: the source run's)")
    p.add_argument("--index-root", metavar="DIR", help="resolve the source run's index names under DIR")
    p.add_argument("--llm-config", metavar="FILE", help="LLM reranker settings (TOML/JSON: endpoint, model, ...)")
    p.add_argument("--address", metavar="RAY_ADDRESS", help="join a Ray cluster (default: an embedded local Ray)")
    p.add_argument("--shard-size", type=int, help="ranked lists per shard (default: 256)")
    p.add_argument("--workers", type=int, help="rerank actors (default: one per CPU, at most 4)")
    p.add_argument("--run-tag", help="the run_tag column (default: the source tag + '+RERANKER')")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="default: auto")
    p.add_argument("--allow-partial", action="store_true", default=None, help="accept a source run without _SUCCESS")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from codenib.batch.rerank import rerank_job
    from codenib.commands.jobs import load_job_spec, rerank_options

    spec = load_job_spec(args.spec) if args.spec else None
    overrides = {
        "results": args.results, "out": args.out, "reranker": args.reranker, "top_n": args.top_n,
        "queries": args.queries, "index": args.index, "index_root": args.index_root,
        "llm_config": args.llm_config, "address": args.address, "shard_size": args.shard_size,
        "workers": args.workers, "run_tag": args.run_tag, "device": args.device,
        "allow_partial": args.allow_partial,
        "progress": False if args.quiet or not sys.stderr.isatty() else None,
    }
    summary = rerank_job(rerank_options(spec, overrides))
    print(summary.render(), file=sys.stderr)
    print(summary.out)
    if summary.failed_shards:
        return 1
    return 0


COMMAND = Command("Re-rank an earlier results folder's top N per query (embedding or LLM reranker) into a "
                  "new resumable results folder with lineage.", add_arguments, run)
