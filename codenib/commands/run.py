"""`codenib run`: the batch job (query set -> Ray actors -> resumable Parquet results)."""

from __future__ import annotations

import argparse

from codenib.commands.command import Command
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
    """`codenib eval` on the results, with the spec's [eval] table as its options (typed once,
    `EvalCommandOptions.from_table`; no command line is made and parsed again)."""
    from codenib.commands import eval as eval_command
    from codenib.commands.command import execute

    def evaluate(_) -> int:
        return eval_command.evaluate(eval_command.EvalCommandOptions.from_table(spec.eval, results_dir,
                                                                               f"{spec.path} [eval]"))

    code = execute("eval", evaluate, None)
    if code:
        raise SystemExit(code)


COMMAND = Command("Run a query set through the batch job (Ray actors holding loaded indexes) into a "
                  "resumable Parquet results folder.", add_arguments, run)
