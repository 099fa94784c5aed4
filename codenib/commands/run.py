"""`codenib run`: the batch job (query set -> Ray actors -> resumable Parquet results)."""

from __future__ import annotations

import argparse

from codenib.commands import Command
from codenib.commands.flags import add_option_flags, run_job_command


def add_arguments(p: argparse.ArgumentParser) -> None:
    # Imported here: the command registry (and so `codenib query`) loads no batch module.
    from codenib.batch.options import RunOptions

    add_option_flags(p, RunOptions, "a job spec (jobs/NAME.toml); options given here override it")


def run(args: argparse.Namespace) -> int:
    from codenib.batch.driver import run_job
    from codenib.batch.options import RunOptions
    from codenib.commands.jobs import run_options

    spec, summary = run_job_command(args, RunOptions, run_options, run_job)
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
