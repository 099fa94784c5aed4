"""What the job commands (`codenib run`, `codenib rerank`) share: flags generated from their
options dataclass (`codenib.core.options` metadata), so each flag is declared once, and running
the job from a spec and the command line."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import textwrap
from typing import Any, Callable

from codenib.core.options import flag_of, required_keys

#: A help text that already says its default ("(default: ...)", "default: auto", "auto (default)").
_SAYS_DEFAULT = re.compile(r"\(default\b|\bdefault:", re.IGNORECASE)


def says_default(help_text: str) -> bool:
    """Whether a help text states its option's default itself."""
    return bool(_SAYS_DEFAULT.search(help_text or ""))


class HelpFormatter(argparse.HelpFormatter):
    """`--help` as a user reads it: an option's default is said once and only when there is
    one to say. Added as "(default: X)" unless the help text says it already, never for a
    required option, a default of None (the help says what happens without the option) or a
    flag (store_true and the like). Lines wrap at spaces only, so a name such as `RR@10` or
    `--index-root` is never split across lines."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (says_default(text) or "%(default)" in text or action.required or action.nargs == 0
                or action.default is None or action.default is argparse.SUPPRESS or isinstance(action.default, bool)
                or not (action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE))):
            return text
        return text + " (default: %(default)s)"

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_long_words=False, break_on_hyphens=False)


def add_option_flags(p: argparse.ArgumentParser, cls: type, spec_help: str) -> None:
    """`--spec JOB_SPEC`, then a flag for each option in `cls.FLAGS`. Flags default to None,
    so that a job spec's value stands unless the command line gives one; the help says the
    option's own default (its field's), or that it is required."""
    p.add_argument("--spec", metavar="JOB_SPEC", help=spec_help)
    required = set(required_keys(cls))
    for f, meta in _flags(cls):
        kwargs: dict[str, Any] = {"help": _option_help(f, meta, required)}
        if meta.get("quiet"):
            kwargs["action"] = "store_true"
        elif f.type == "bool":
            kwargs.update(action="store_true", default=None)
        else:
            kwargs.update({k: meta[k] for k in ("metavar", "choices") if k in meta})
            if f.type in ("int", "int | None"):
                kwargs["type"] = int
        p.add_argument(flag_of(f), **kwargs)


def run_job_command(args: argparse.Namespace, cls: type, make_options: Callable, job: Callable,
                    before: Callable | None = None):
    """Run a job: its spec (`--spec`), the command line on top, the summary to stderr and the
    results folder to stdout. `before(spec, options)`, when given, runs first and returns the
    options the job runs with. Returns (the spec or None, the summary)."""
    from codenib.commands.jobs import load_job_spec

    spec = load_job_spec(args.spec) if args.spec else None
    options = make_options(spec, option_overrides(cls, args))
    if before is not None:
        options = before(spec, options)
    summary = job(options)
    print(summary.render(), file=sys.stderr)
    print(summary.out)
    return spec, summary


def option_overrides(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """The options given on the command line, by spec key (None: not given)."""
    out: dict[str, Any] = {}
    for f, meta in _flags(cls):
        value = getattr(args, flag_of(f).lstrip("-").replace("-", "_"))
        if meta.get("quiet"):
            # Off when asked; otherwise a bar on a terminal, progress lines elsewhere
            # (codenib.core.progress), so that nohup, CI and Ray job logs show the job moving.
            out[f.name] = False if value else None
        else:
            out[meta.get("alias", f.name)] = value
    return out


def _flags(cls: type):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    help_overrides = getattr(cls, "HELP", {})
    for name in cls.FLAGS:
        f = fields[name]
        yield f, {**f.metadata, **help_overrides.get(name, {})}


def _option_help(f: dataclasses.Field, meta: dict, required: set[str]) -> str:
    """An option's help with its default said once: the field's default, unless the text
    says it (a default that needs words: "one per CPU"); a required option says so instead."""
    text = meta["help"]
    if f.name in required:
        return text + " (required, unless the job spec gives it)"
    default = f.default
    if says_default(text) or meta.get("quiet") or default is None or default is dataclasses.MISSING \
            or isinstance(default, bool):
        return text
    return f"{text} (default: {str(default).replace('%', '%%')})"

