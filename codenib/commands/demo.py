"""`codenib demo`: index a bundled sample (CodeNib's own source) and show what was built."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codenib.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="codenib-demo", help="folder for the demo's index and results")
    p.add_argument("--no-dense", action="store_true", help="skip dense vectors (faster)")


def sample_repository() -> Path:
    """The bundled sample: the installed `codenib` package's own source."""
    import codenib

    return Path(codenib.__file__).resolve().parent


def run(args: argparse.Namespace) -> int:
    from codenib.compiler.build import BuildOptions, build_index

    out = Path(args.out)
    index_dir = out / "index"
    print(f"demo: indexing the bundled sample {sample_repository()} -> {index_dir}", file=sys.stderr)
    summary = build_index(sample_repository(), index_dir,
                          BuildOptions(dense=not args.no_dense, progress=sys.stderr.isatty()))
    print(summary.render(), file=sys.stderr)
    return 0


COMMAND = Command("Index a bundled sample (CodeNib's own source) and run a small query set on it.",
                  add_arguments, run)
