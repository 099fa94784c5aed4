"""`codenib run`: the batch job (query set -> Ray actors -> resumable Parquet results)."""

from __future__ import annotations

import argparse
import sys

from codenib.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spec", metavar="JOB_SPEC", help="a job spec (jobs/NAME.toml); options given here override it")
    p.add_argument("--queries", metavar="QUERIES", help="query set: Parquet or JSONL with qid, query "
                   "(and optionally index, budget, mode)")
    p.add_argument("--index", metavar="INDEX_DIR", help="one index for every query")
    p.add_argument("--index-root", metavar="DIR", help="resolve each query's `index` column under DIR")
    p.add_argument("--out", metavar="RESULTS_DIR", help="results folder (resumed when it holds this same job)")
    p.add_argument("--budget", choices=["fast", "balanced", "thorough"], help="default: balanced")
    p.add_argument("--mode", choices=["auto", "sparse", "dense", "hybrid", "graph", "all"],
                   help="auto: the planner chooses per query; all: every plan for every query (planner "
                        "regret); default: auto")
    p.add_argument("-k", type=int, help="results kept per query (default: 100)")
    p.add_argument("--rerank", choices=["none", "embedding", "llm"], help="force a reranker (default: the budget decides)")
    p.add_argument("--llm-config", metavar="FILE", help="LLM reranker settings (TOML/JSON: endpoint, model, ...)")
    p.add_argument("--address", metavar="RAY_ADDRESS", help="join a Ray cluster (default: an embedded local Ray)")
    p.add_argument("--shard-size", type=int, help="queries per shard: the unit of resume and parallelism (default: 256)")
    p.add_argument("--workers", type=int, help="graph actors (default: one per CPU, at most 16)")
    p.add_argument("--run-tag", help="the run_tag column (default: codenib-MODE-BUDGET)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="dense and rerank actors' device (default: auto)")
    p.add_argument("--dashboard", action="store_true", default=None, help="start the Ray dashboard on 127.0.0.1")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from codenib.batch.driver import run_job
    from codenib.commands.jobs import load_job_spec, run_options

    spec = load_job_spec(args.spec) if args.spec else None
    overrides = {
        "queries": args.queries, "index": args.index, "index_root": args.index_root, "out": args.out,
        "budget": args.budget, "mode": args.mode, "k": args.k, "rerank": args.rerank,
        "llm_config": args.llm_config, "address": args.address, "shard_size": args.shard_size,
        "workers": args.workers, "run_tag": args.run_tag, "device": args.device, "dashboard": args.dashboard,
        "progress": False if args.quiet or not sys.stderr.isatty() else None,
    }
    summary = run_job(run_options(spec, overrides))
    print(summary.render(), file=sys.stderr)
    print(summary.out)
    if summary.failed_shards:
        return 1
    if spec and spec.eval:
        _evaluate(spec, summary.out)
    return 0


def _evaluate(spec, results_dir: str) -> None:
    """`codenib eval` on the results, with the spec's [eval] options as its arguments."""
    from codenib.commands import eval as eval_command, execute

    args = ["--results", results_dir]
    for key, value in spec.eval.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                args.append(flag)
        elif isinstance(value, list):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    parser = argparse.ArgumentParser(prog="codenib eval")
    eval_command.add_arguments(parser)
    code = execute("eval", eval_command.run, parser.parse_args(args))
    if code:
        raise SystemExit(code)


COMMAND = Command("Run a query set through the batch job (Ray actors holding loaded indexes) into a "
                  "resumable Parquet results folder.", add_arguments, run)
