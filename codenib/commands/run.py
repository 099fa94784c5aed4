"""`codenib run`: the batch job (query set -> Ray actors -> resumable Parquet results); with a
job spec, also what comes before it ([index_set], [qrels]: `codenib.commands.job_steps`) and
the evaluation after it ([eval])."""

from __future__ import annotations

import argparse

from codenib.commands.command import Command
from codenib.commands.flags import add_option_flags, run_job_command


def add_arguments(p: argparse.ArgumentParser) -> None:
    # Imported here: the command registry (and so `codenib query`) loads no batch module.
    from codenib.batch.options import RunOptions

    add_option_flags(p, RunOptions, "a job spec (jobs/NAME.toml): [run] and optionally [index_set], [qrels] "
                                    "(run first) and [eval] (after); options given here override [run]")


def run(args: argparse.Namespace) -> int:
    from codenib.batch.driver import run_job
    from codenib.batch.options import RunOptions
    from codenib.commands.job_steps import plan_steps, run_before
    from codenib.commands.jobs import run_options

    planned = []

    def before(spec, options):
        steps = plan_steps(spec, options)   # every table checked before any step runs
        planned.append(steps)
        run_before(steps)
        return steps.run

    spec, summary = run_job_command(args, RunOptions, run_options, run_job, before=before)
    if summary.failed_shards:
        return 1
    if spec and spec.eval:
        _evaluate(spec, summary.out, planned[0].eval_defaults)
    return 0


def _evaluate(spec, results_dir: str, defaults: dict | None = None) -> None:
    """`codenib eval` on the results, with the spec's [eval] table as its options (typed once,
    `EvalCommandOptions.from_table`; no command line is made and parsed again) over
    `defaults` (the judgments [qrels] wrote)."""
    from codenib.commands import eval as eval_command
    from codenib.commands.command import execute

    def evaluate(_) -> int:
        return eval_command.evaluate(eval_command.EvalCommandOptions.from_table(
            {**(defaults or {}), **spec.eval}, results_dir, f"{spec.path} [eval]"))

    code = execute("eval", evaluate, None)
    if code:
        raise SystemExit(code)


COMMAND = Command("Run a query set through the batch job (Ray actors holding loaded indexes) into a "
                  "resumable Parquet results folder; a job spec may build the indexes and judgments first "
                  "and evaluate after.", add_arguments, run)
