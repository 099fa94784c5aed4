"""The `codenib` command line. Exit status: 0 success, 2 bad input, 1 anything else."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from contextlib import contextmanager
from typing import Iterator

from codenib import __version__
from codenib.commands.command import execute, stdout_reader_gone
from codenib.commands.registry import REGISTRY
from codenib.commands.flags import HelpFormatter
from codenib.core.errors import DiskWriteError
from codenib.core.outputs import writing

#: The status a shell reports for a Unix tool that SIGPIPE ended (128 + 13): what
#: `codenib query ... | head -1` ends with once `head` has what it wants.
EXIT_READER_GONE = 141


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `codenib` console script."""
    _offline_environment()
    if argv is None:
        argv = [utf8_argument(a) for a in sys.argv[1:]]
    with _terminal_streams():
        return _main(argv)


def utf8_argument(arg: str) -> str:
    """A command-line argument as the UTF-8 text the shell passed: under a C or POSIX locale
    Python decodes argv as ASCII, turning every non-ASCII byte into a lone surrogate (a query
    `grüße` became `gr\\udcc3...`, then U+FFFD). Bytes that are not UTF-8 stay as they were."""
    try:
        return os.fsencode(arg).decode("utf-8")
    except UnicodeDecodeError:
        return arg


def _main(argv: list[str] | None) -> int:
    try:
        parser = build_parser(_command_of(argv))
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            return 2
        code = execute(args.command, REGISTRY[args.command].run, args)
        try:
            sys.stdout.flush()  # a reader that went away shows here, not at interpreter exit
        except DiskWriteError as exc:
            print(f"codenib {args.command}: error: {exc}", file=sys.stderr)
            _discard_stdout()   # the interpreter's last flush would fail again
            return exc.exit_code
        return code
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        # Not bad input: the reader of stdout has all it wanted. Quiet, as Unix tools are; stdout
        # goes to /dev/null so the interpreter's last flush does not complain either.
        _discard_stdout()
        return EXIT_READER_GONE


def entry() -> int:
    """The console script (and `python -m codenib.commands.cli`): `main`, then pyarrow's S3
    client shut down while the interpreter is still whole."""
    try:
        return main()
    finally:
        _release_object_storage()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every registered sub-command.

    only: a sub-command name: only that one's arguments are added (the others are listed by
    name and help), so that `codenib query` does not import what `codenib run`'s flags are
    generated from (the batch options). None: every sub-command's arguments."""
    parser = argparse.ArgumentParser(
        prog="codenib",
        description="Retrieve the functions, classes and files that answer questions about a "
                    "repository; index repositories and run query sets in bulk on Ray.",
        epilog="Exit status: 0 on success, 2 for bad input, 1 for anything else.",
    )
    parser.add_argument("--version", action="version", version=f"codenib {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, cmd in REGISTRY.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help, formatter_class=HelpFormatter)
        if only is None or name == only:
            cmd.add_arguments(p)
    return parser


def _command_of(argv: list[str] | None) -> str | None:
    """The sub-command `argv` names first (the top-level parser has no option that takes a
    value), or None."""
    args = sys.argv[1:] if argv is None else argv
    first = args[0] if args else None
    return first if first in REGISTRY else None


class _NamedStdout:
    """sys.stdout whose refused writes (`> file` on a full disk) say it was standard output:
    a `write()` error names no file. Everything else is the stream's own."""

    NAME = "standard output"

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        with writing(self.NAME):
            return self._stream.write(text)

    def flush(self) -> None:
        with writing(self.NAME):
            self._stream.flush()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def _terminal_streams() -> Iterator[None]:
    """While a command runs: stdout and stderr write what their encoding cannot hold as
    backslash escapes (`PYTHONIOENCODING=ascii`, a C locale) instead of raising
    UnicodeEncodeError, and stdout names itself in a refused write. Restored afterwards (the
    command line may run inside another program, e.g. the tests)."""
    saved = []
    for stream in (sys.stdout, sys.stderr):
        errors = getattr(stream, "errors", None)
        if errors is not None and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
                saved.append((stream, errors))
            except (OSError, ValueError):   # closed, or a write already failed
                pass
    stdout = sys.stdout
    sys.stdout = _NamedStdout(stdout)
    try:
        yield
    finally:
        if sys.stdout.__class__ is _NamedStdout:
            sys.stdout = stdout
        for stream, errors in saved:
            try:
                stream.reconfigure(errors=errors)
            except (OSError, ValueError):
                pass


def _discard_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):   # stdout without a file descriptor
        pass


def _release_object_storage() -> None:
    """Finalize pyarrow's S3 subsystem once nothing holds it. Left to pyarrow's own exit hook,
    an S3 client still referenced while Python tears its objects down can abort the process
    after a job that succeeded (`terminate called without an active exception`, status -6;
    apache/arrow#41087 gives the same advice: drop the filesystems, then finalize). Not in
    `main`: S3 cannot be initialized again in a process that calls `main` twice."""
    pafs = sys.modules.get("pyarrow.fs")
    if pafs is None or not hasattr(pafs, "ensure_s3_finalized"):
        return   # S3 never used, or a pyarrow built without it
    gc.collect()   # filesystems held only by reference cycles go first
    pafs.ensure_s3_finalized()


def _offline_environment() -> None:
    """Read once, at the edge: no code path may reach a model hub at run time."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
