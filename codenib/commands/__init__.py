"""Sub-commands of the `codenib` command line, one module each, in a registry."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Command:
    """A sub-command: how it adds its arguments and how it runs (returns the exit status)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _registry() -> dict[str, Command]:
    from codenib.commands import demo, eval, index, query, rerank, run, submit

    return {
        "index": index.COMMAND,
        "query": query.COMMAND,
        "run": run.COMMAND,
        "eval": eval.COMMAND,
        "rerank": rerank.COMMAND,
        "submit": submit.COMMAND,
        "demo": demo.COMMAND,
    }


REGISTRY: dict[str, Command] = _registry()
