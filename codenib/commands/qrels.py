"""`codenib qrels --queries Q --index-root DIR --out QRELS`: judgments from the `patch` column."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codenib.commands.command import Command

#: The Parquet metadata that marks a qrels file CodeNib wrote.
WRITTEN_BY = {b"codenib": b"qrels"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queries", required=True, metavar="QUERIES",
                   help="Parquet or JSONL with qid (or instance_id) and patch (a unified diff against the "
                        "row's snapshot); optional index (the qid when absent), repo and rev (or base_commit). "
                        "SWE-bench-shaped files are read as they are")
    p.add_argument("--index-root", required=True, metavar="DIR",
                   help="the folder of the indexes the rows name (ROOT/INDEX)")
    p.add_argument("--out", required=True, metavar="QRELS",
                   help="the qrels to write (Parquet: qid, node_id, file, relevance); rows that could not "
                        "be judged go to QRELS's name with .errors.parquet")
    p.add_argument("--mirror-root", metavar="DIR",
                   help="where the rows' repo names are git mirrors (owner/name as DIR/owner+name/repo, "
                        "DIR/owner+name, DIR/owner/name or DIR/name.git); with repo and rev a patch must "
                        "apply to the files at rev")
    p.add_argument("--force", action="store_true", help="replace an existing QRELS file")


def run(args: argparse.Namespace) -> int:
    from codenib.core.errors import BadInputError
    from codenib.core.outputs import refuse_uri
    from codenib.eval.gold import judge, read_patch_rows

    for flag, value in (("--out", args.out), ("--index-root", args.index_root), ("--queries", args.queries)):
        refuse_uri(value, f"codenib qrels {flag}", "pass a local path")
    out = Path(args.out)
    errors_out = errors_path(out)
    if out.is_dir():
        raise BadInputError("--out names a folder", path=str(out), fix="pass a file path, e.g. qrels.parquet")
    if (out.exists() or out.is_symlink()) and not args.force:
        raise BadInputError("--out would overwrite this existing file; nothing was written", path=str(out),
                            fix="pass another --out, or --force to replace it")
    if not Path(args.index_root).is_dir():
        raise BadInputError("the --index-root folder does not exist", path=str(args.index_root),
                            fix="pass the folder that holds the indexes the rows name")
    if args.mirror_root is not None and not Path(args.mirror_root).is_dir():
        raise BadInputError("the --mirror-root folder does not exist", path=str(args.mirror_root),
                            fix="pass the folder that holds the git mirrors")
    rows = read_patch_rows(args.queries)
    qrels, errors = judge(rows, args.index_root, args.mirror_root,
                          log=lambda message: print(f"codenib qrels: warning: {message}", file=sys.stderr))
    write_judgments(qrels, errors, out)
    judged = len(set(qrels.column("qid").to_pylist()))
    n_files = sum(n is None for n in qrels.column("node_id").to_pylist())
    print(f"wrote {qrels.num_rows} judgments ({n_files} files, {qrels.num_rows - n_files} definitions) for "
          f"{judged} of {len(rows)} rows to {out}" +
          (f"; {errors.num_rows} rows could not be judged: {errors_out}" if errors.num_rows else ""),
          file=sys.stderr)
    return 0


def written_by_codenib(path: Path) -> bool:
    """Whether `path` is a qrels file that `codenib qrels` or a job's [qrels] wrote (its Parquet
    metadata says so), which a job may write again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException):
        return False
    return all(meta.get(k) == v for k, v in WRITTEN_BY.items())


def errors_path(out: Path) -> Path:
    """Where the error rows of `--out` go: the same name with `.errors.parquet`."""
    return out.with_name(out.name.removesuffix(".parquet") + ".errors.parquet")


def write_judgments(qrels, errors, out: Path) -> None:
    """The qrels table at `out`, marked as CodeNib's judgments (so a job may write it again),
    and the error rows beside it (`errors_path`; an earlier file of them is removed when there
    are none); each written atomically."""
    _write(qrels.replace_schema_metadata({**(qrels.schema.metadata or {}), **WRITTEN_BY}), out)
    errors_out = errors_path(out)
    if errors is not None and errors.num_rows:
        _write(errors, errors_out)
    else:
        errors_out.unlink(missing_ok=True)     # an earlier run's errors no longer hold


def _write(table, path: Path) -> None:
    """`table` as Parquet at `path`, atomically (through a link, to its target)."""
    import os

    import pyarrow.parquet as pq

    from codenib.core.outputs import through_links, tmp_path, writing

    path = through_links(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(path)
    try:
        with writing(path):
            pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


COMMAND = Command("Write judgments (qrels) from the patches of a query set: the files each patch changes and "
                  "the innermost definitions around its changed lines, read from the rows' indexes.",
                  add_arguments, run)
