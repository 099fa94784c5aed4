"""The `codenib` command line. Exit status: 0 success, 2 bad input, 1 anything else."""

from __future__ import annotations

import argparse
import os
import sys

from codenib import __version__
from codenib.commands import REGISTRY, execute


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `codenib` console script."""
    _offline_environment()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return 2
    return execute(args.command, REGISTRY[args.command].run, args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="codenib",
        description="Retrieve the functions, classes and files that answer questions about a "
                    "repository; index repositories and run query sets in bulk on Ray.",
        epilog="Exit status: 0 on success, 2 for bad input, 1 for anything else.",
    )
    parser.add_argument("--version", action="version", version=f"codenib {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, cmd in REGISTRY.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help,
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        cmd.add_arguments(p)
    return parser


def _offline_environment() -> None:
    """Read once, at the edge: no code path may reach a model hub at run time."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
