"""`codenib index-set SNAPSHOTS --index-root DIR`: many snapshots indexed from git objects, on Ray."""

from __future__ import annotations

import argparse
import sys

from codenib.commands.command import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("snapshots", metavar="SNAPSHOTS",
                   help="Parquet or JSONL, one row per snapshot: index (a folder name under --index-root), repo "
                        "(a git directory: a bare mirror or a clone) and rev; SWE-bench-shaped rows "
                        "(instance_id, repo, base_commit) are read as they are, with --mirror-root")
    p.add_argument("--index-root", required=True, metavar="DIR|URI",
                   help="where each snapshot's index goes (DIR/INDEX), with the run's report _index_set.parquet; "
                        "object storage such as s3://bucket/prefix for a cluster whose nodes share no disk (each "
                        "index built on its node and uploaded, its manifest last; --layout full only)")
    p.add_argument("--store", metavar="DIR|URI",
                   help="the per-file store the snapshots share (each file version parsed, tokenized and encoded "
                        "once): a folder, or object storage such as s3://bucket/prefix (endpoint and timeouts from "
                        "CODENIB_S3_ENDPOINT etc., docs/scale.md; the bucket is checked before any work); "
                        "default DIR/.codenib-store under --index-root")
    p.add_argument("--mirror-root", metavar="DIR",
                   help="where repo names are git mirrors (owner/name as DIR/owner+name/repo, DIR/owner+name, "
                        "DIR/owner/name or DIR/name.git)")
    p.add_argument("--address", metavar="RAY_ADDRESS",
                   help="a Ray cluster to run on; without it an embedded local Ray on 127.0.0.1")
    p.add_argument("--no-dense", action="store_true", help="no vectors (BM25, graph and history only)")
    p.add_argument("--history", action="store_true",
                   help="each index also holds the commits up to its revision (docs/history.md)")
    p.add_argument("--model", metavar="NAME_OR_PATH",
                   help="sentence-transformers model of the vectors (the packaged all-MiniLM-L6-v2 when absent)")
    p.add_argument("--max-file-bytes", type=int, metavar="N",
                   help="source files larger than N bytes are skipped, as in `codenib index`")
    p.add_argument("--layout", choices=("full", "store"), default="full",
                   help="full: each snapshot a whole index folder (default); store: each snapshot keeps only its "
                        "edges and history, its nodes, BM25 and vectors read back from the local per-file store "
                        "when loaded (a tenth to a sixth of the disk; docs/scale.md)")
    p.add_argument("--quiet", action="store_true", help="no progress")


def run(args: argparse.Namespace) -> int:
    from codenib.batch.indexset import IndexSetOptions, run_index_set
    from codenib.core.errors import BadInputError
    from codenib.core.storage import StorageConfig, is_uri

    if args.max_file_bytes is not None and args.max_file_bytes < 1:
        raise BadInputError(f"--max-file-bytes must be at least 1, got {args.max_file_bytes}",
                            fix="leave it out for codenib index's default")
    options = IndexSetOptions(snapshots=args.snapshots, index_root=args.index_root, store=args.store,
                              mirror_root=args.mirror_root, address=args.address, dense=not args.no_dense,
                              history=args.history, model=args.model, max_file_bytes=args.max_file_bytes,
                              progress=not args.quiet, layout=args.layout)
    storage = StorageConfig.from_env() if is_uri(args.store) or is_uri(args.index_root) else None
    summary = run_index_set(options, storage=storage)
    print(summary.render(), file=sys.stderr)
    return 0


COMMAND = Command("Index many repository snapshots (a snapshot set, or a SWE-bench-shaped file) straight from "
                  "git objects, as Ray tasks sharing one per-file store; resumable.", add_arguments, run)
