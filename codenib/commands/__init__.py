"""Sub-commands of the `codenib` command line, one module each, in a registry."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Callable

from codenib.core.errors import CodeNibError
from codenib.core.outputs import disk_write_error, storage_failure


@dataclass(frozen=True)
class Command:
    """A sub-command: how it adds its arguments and how it runs (returns the exit status)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def execute(name: str, run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run sub-command `name` as `run(args)`; its errors become one line on stderr and an exit status."""
    try:
        return run(args)
    except CodeNibError as exc:
        print(f"codenib {name}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and stdout_reader_gone():
            raise  # the reader of stdout went away (`| head`): cli.main ends quietly
        if storage_failure(exc):
            # A full disk, a quota, an I/O error: not bad input. Write sites name their file
            # (`codenib.core.outputs.writing`); one that did not is still reported, not a traceback.
            where = exc.filename or "an output file (the failing write did not name it)"
            print(f"codenib {name}: error: {disk_write_error(exc, where)}", file=sys.stderr)
            return 1
        # A path the user gave that cannot be read or written (a folder where a file was
        # expected, no permission): say which, not a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"codenib {name}: error: {where}{exc.strerror or exc} (fix: check the path "
              "and its permissions)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"codenib {name}: interrupted; no half-written output was left behind",
              file=sys.stderr)
        return 130


def stdout_reader_gone() -> bool:
    """Whether stdout is a pipe or socket whose reader has closed it (`codenib ... | head -1`)."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):   # no descriptor (captured), or no poll()
        return False
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events)


def _registry() -> dict[str, Command]:
    from codenib.commands import demo, eval, index, qrels, query, rerank, run, submit

    return {
        "index": index.COMMAND,
        "query": query.COMMAND,
        "run": run.COMMAND,
        "qrels": qrels.COMMAND,
        "eval": eval.COMMAND,
        "rerank": rerank.COMMAND,
        "submit": submit.COMMAND,
        "demo": demo.COMMAND,
    }


REGISTRY: dict[str, Command] = _registry()
