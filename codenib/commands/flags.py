"""What the job commands (`codenib run`, `codenib rerank`) share: flags generated from their
options dataclass (`codenib.core.options` metadata), so each flag is declared once, and running
the job from a spec and the command line."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any, Callable

from codenib.core.options import flag_of


def add_option_flags(p: argparse.ArgumentParser, cls: type, spec_help: str) -> None:
    """`--spec JOB_SPEC`, then a flag for each option in `cls.FLAGS`. Flags default to None,
    so that a job spec's value stands unless the command line gives one."""
    p.add_argument("--spec", metavar="JOB_SPEC", help=spec_help)
    for f, meta in _flags(cls):
        kwargs: dict[str, Any] = {"help": meta["help"]}
        if meta.get("quiet"):
            kwargs["action"] = "store_true"
        elif f.type == "bool":
            kwargs.update(action="store_true", default=None)
        else:
            kwargs.update({k: meta[k] for k in ("metavar", "choices") if k in meta})
            if f.type in ("int", "int | None"):
                kwargs["type"] = int
        p.add_argument(flag_of(f), **kwargs)


def run_job_command(args: argparse.Namespace, cls: type, make_options: Callable, job: Callable):
    """Run a job: its spec (`--spec`), the command line on top, the summary to stderr and the
    results folder to stdout. Returns (the spec or None, the summary)."""
    from codenib.commands.jobs import load_job_spec

    spec = load_job_spec(args.spec) if args.spec else None
    summary = job(make_options(spec, option_overrides(cls, args)))
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
