"""`codenib rerank`: re-rank an earlier results folder into a new one (nightly jobs)."""

from __future__ import annotations

import argparse

from codenib.commands.command import Command
from codenib.commands.flags import add_option_flags, run_job_command


def add_arguments(p: argparse.ArgumentParser) -> None:
    # Imported here: the command registry (and so `codenib query`) loads no batch module.
    from codenib.batch.options import RerankOptions

    add_option_flags(p, RerankOptions, "a job spec with a [rerank] section; options here override it")


def run(args: argparse.Namespace) -> int:
    from codenib.batch.options import RerankOptions
    from codenib.batch.rerank import rerank_job
    from codenib.commands.jobs import rerank_options

    _, summary = run_job_command(args, RerankOptions, rerank_options, rerank_job)
    return 1 if summary.failed_shards else 0


COMMAND = Command("Re-rank an earlier results folder's top N per query (embedding or LLM reranker) into a "
                  "new resumable results folder with lineage.", add_arguments, run)
