"""The sub-commands of the `codenib` command line, by name: one module each, imported here
and nowhere else (above `command`, below `cli`)."""

from __future__ import annotations

from codenib.commands import demo, eval, index, index_set, qrels, query, rerank, run, submit
from codenib.commands.command import Command

REGISTRY: dict[str, Command] = {
    "index": index.COMMAND,
    "index-set": index_set.COMMAND,
    "query": query.COMMAND,
    "run": run.COMMAND,
    "qrels": qrels.COMMAND,
    "eval": eval.COMMAND,
    "rerank": rerank.COMMAND,
    "submit": submit.COMMAND,
    "demo": demo.COMMAND,
}
