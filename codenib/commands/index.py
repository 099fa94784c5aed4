"""`codenib index REPO --out INDEX_DIR`: compile a repository into an index folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codenib.commands.command import Command
from codenib.compiler.walk import MAX_FILE_BYTES
from codenib.engines.backends import ENCODERS
from codenib.engines.models import DEFAULT_MODEL
from codenib.core.options import DEVICES


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("repo", help="root folder of the repository to index")
    p.add_argument("--out", required=True, help="index folder to write (replaced atomically; files CodeNib did not write stop it, see --force)")
    p.add_argument("--model", default=DEFAULT_MODEL,
                   help="sentence-transformers model name or local path (offline only)")
    p.add_argument("--no-dense", action="store_true", help="skip dense vectors (BM25 and graph only)")
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="where to encode: auto picks CUDA when torch sees a GPU")
    p.add_argument("--encoder", choices=ENCODERS, default="auto",
                   help="encoder backend: auto (default) picks the fastest that agrees with torch on this "
                        "machine (torch on CUDA); queries are encoded by the index's backend")
    p.add_argument("--reuse", metavar="PREVIOUS_INDEX_DIR",
                   help="an earlier index of this repository: unchanged files keep their nodes, edges, "
                        "BM25 counts and vectors; only what changed is parsed, resolved and encoded "
                        "(the result equals a full build)")
    p.add_argument("--history", nargs="?", const="", default=None, metavar="[GITDIR][@REV]",
                   help="also read the repository's past into history/: the commits reachable from REV "
                        "(default HEAD) of GITDIR (default REPO/.git; a checkout without .git needs "
                        "MIRROR@BASE), their messages and the files and functions each changed; "
                        "with --reuse, only the commits the earlier index lacks")
    p.add_argument("--fit-weights", action="store_true",
                   help="with --history: fit the bug-report localisation weights to this repository on "
                        "its own recent commits (message as the query, what it changed as the answer; "
                        "the packaged weights as the prior), stored in the index and used by its "
                        "queries; off by default (it did not beat the packaged weights on the dev set)")
    p.add_argument("--cache", metavar="DIR|URI",
                   help="per-file store (nodes, term counts, vectors) shared by the indexes of a repository: "
                        "a folder or object storage (s3://bucket/prefix, see docs/scale.md); "
                        "when not given, .codenib-cache next to --out")
    p.add_argument("--no-cache", action="store_true", help="neither read nor fill the per-file parse store")
    p.add_argument("--jobs", type=int, default=None,
                   help="worker processes for parsing and tokenizing; when not given, the CPUs this "
                        "process may use")
    p.add_argument("--ann", choices=["flat", "hnsw"], default=None,
                   help="flat (default): exact search; hnsw: also build an approximate index (prints its "
                        "recall@100); vectors only, so not with --no-dense")
    p.add_argument("--batch-size", type=int, default=None,
                   help="encoder batch size (default: 32 on the CPU, 256 on CUDA)")
    p.add_argument("--max-seq-length", type=int, default=None,
                   help="encoder truncation in tokens (default: the model's own)")
    p.add_argument("--no-stem", action="store_true", help="BM25 without Snowball stemming")
    p.add_argument("--max-file-bytes", type=int, default=MAX_FILE_BYTES, metavar="N",
                   help="source files (every language) larger than N bytes are skipped (each named on stderr and in the "
                        "manifest's skipped_files): generated or vendored data, not code")
    p.add_argument("--force", action="store_true",
                   help="replace an index folder that also holds files CodeNib did not write (deleting them)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress (a bar on a terminal, else a line every $CODENIB_PROGRESS_INTERVAL s)")


def run(args: argparse.Namespace) -> int:
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions
    from codenib.compiler.history import HistorySpec
    from codenib.core.errors import BadInputError
    from codenib.core.outputs import refuse_uri
    from codenib.core.tokens import TokenizerConfig

    refuse_uri(args.out, "codenib index --out",
               "build into a local folder; upload it yourself (`codenib run` reads indexes from object storage)")
    if args.batch_size is not None and args.batch_size < 1:
        raise BadInputError(f"--batch-size must be at least 1, got {args.batch_size}", fix="pass --batch-size 32")
    if args.jobs is not None and args.jobs < 1:
        raise BadInputError(f"--jobs must be at least 1, got {args.jobs}", fix="pass --jobs 1 to work in one process")
    if args.max_seq_length is not None and args.max_seq_length < 1:
        raise BadInputError(f"--max-seq-length must be at least 1, got {args.max_seq_length}",
                            fix="leave it out to use the model's own limit")
    if args.max_file_bytes < 1:
        raise BadInputError(f"--max-file-bytes must be at least 1, got {args.max_file_bytes}",
                            fix=f"leave it out for the default, {MAX_FILE_BYTES} bytes")
    if args.ann is not None and args.no_dense:
        print(f"codenib index: warning: --ann {args.ann} has no effect with --no-dense (no vectors to search)",
              file=sys.stderr)
    if args.fit_weights and args.history is None:
        raise BadInputError("--fit-weights fits on the repository's history, and --history is not given",
                            fix="add --history (or --history MIRROR@BASE for a checkout without .git)")
    options = BuildOptions(
        model=args.model,
        dense=not args.no_dense,
        device=args.device,
        encoder=args.encoder,
        reuse=Path(args.reuse) if args.reuse else None,
        tokenizer=TokenizerConfig(stemmer=None if args.no_stem else "english"),
        ann=args.ann or "flat",
        batch_size=args.batch_size,
        max_seq_length=args.max_seq_length,
        progress=not args.quiet,
        force=args.force,
        jobs=args.jobs,
        cache=_cache(args.cache) if args.cache else None,
        use_cache=not args.no_cache,
        history=HistorySpec.parse(args.history) if args.history is not None else None,
        max_file_bytes=args.max_file_bytes,
    )
    summary = build_index(args.repo, args.out, options, finish=_fit_weights if args.fit_weights else None)
    print(summary.render(), file=sys.stderr)
    return 0


def _cache(where: str):
    """`--cache`: a folder, or a store on object storage whose bucket is checked now (a bad
    one exits 2 here rather than making every file a miss)."""
    from codenib.core.store_backend import LocalBackend, open_backend
    from codenib.core.storage import StorageConfig, is_uri

    backend = open_backend(where, StorageConfig.from_env() if is_uri(where) else None)
    if isinstance(backend, LocalBackend):
        return backend.root
    backend.check()
    return backend


def _fit_weights(staging, log) -> dict:
    """`--fit-weights`: the localisation weights fitted on the staged index's history."""
    from codenib.model.weights import MANIFEST_KEY
    from codenib.model.weights_fit import save_fitted_weights

    return {MANIFEST_KEY: save_fitted_weights(staging, log)}


COMMAND = Command("Compile a repository into an index folder (nodes, code graph, BM25, vectors).",
                  add_arguments, run)
