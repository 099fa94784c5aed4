"""The steps a job spec runs before its queries, so that one command (`codenib run --spec`)
goes from a data set to its evaluation report:

```toml
[index_set]  # `codenib index-set`: each snapshot's index, under [run]'s index_root
[qrels]      # the judgments: from the rows' patches (`codenib qrels`), or given files merged
[run]        # the batch job
[eval]       # `codenib eval` of its results; its qrels default to [qrels]'s out
```

Every table is checked before any work (exit 2 naming the spec, the table, the key and the
fix), so a typo in [eval] does not wait for an hour of indexing. A re-run does only what is
missing: index-set keeps every index that is current, the judgments are written again
(atomically; they follow the indexes), the run resumes its committed shards (or finds them
all committed), and the report is replaced atomically. No step leaves a half-written file.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from codenib.core.errors import BadInputError
from codenib.core.storage import is_uri

if TYPE_CHECKING:
    from codenib.batch.indexset import IndexSetOptions
    from codenib.batch.options import RunOptions
    from codenib.commands.jobs import JobSpec

_INDEX_SET_TYPES: dict[str, tuple[type, str]] = {
    "snapshots": (str, '"swe.jsonl"'), "index_root": (str, '"idx/swe"'), "mirror_root": (str, '"mirrors"'),
    "store": (str, '"idx/.codenib-store"'), "address": (str, '"ray://127.0.0.1:10001"'),
    "model": (str, '"all-MiniLM-L6-v2"'), "dense": (bool, "false"), "history": (bool, "true"),
    "max_file_bytes": (int, "1048576"), "layout": (str, '"store"')}
_QRELS_TYPES: dict[str, tuple[type, str]] = {
    "out": (str, '"runs/swe.qrels.parquet"'), "patches": (str, '"swe.jsonl"'), "mirror_root": (str, '"mirrors"'),
    "force": (bool, "true")}


@dataclass(frozen=True, slots=True)
class QrelsStep:
    """What [qrels] writes to `out`: the given `files` merged, or (none given) the judgments
    of the `patches` rows over the indexes under `index_root`; with `queries`, only the
    judgments of those queries (a job over part of a set)."""

    out: str
    index_root: str | None = None
    files: tuple[str, ...] = ()
    patches: str | None = None
    mirror_root: str | None = None
    force: bool = False
    queries: str | None = None     # the run's queries (a local file): only their judgments are kept


@dataclass(frozen=True, slots=True)
class JobSteps:
    """A job spec's steps, checked: the run's options (its index root filled in from
    [index_set]), what runs before it, and the [eval] values the other tables give."""

    run: RunOptions
    index_set: IndexSetOptions | None = None
    qrels: QrelsStep | None = None
    eval_defaults: dict[str, Any] = dataclasses.field(default_factory=dict)


def plan_steps(spec: JobSpec | None, options: RunOptions) -> JobSteps:
    """The steps of `spec` around the run `options`, every table checked (BadInputError, exit 2)
    before any of them runs."""
    if spec is None:
        return JobSteps(options)
    index_set = None
    if spec.index_set:
        options, index_set = _index_set_step(spec, options)
    qrels = _qrels_step(spec, options, index_set) if spec.qrels else None
    defaults: dict[str, Any] = {}
    if qrels is not None:
        given = spec.eval.get("qrels")
        if given is not None and not _same_path(str(given), qrels.out):
            raise BadInputError(f"[eval] qrels {given!r} is not the file [qrels] writes ({qrels.out!r})",
                                path=spec.path, fix="drop qrels from [eval]: it evaluates with [qrels]'s out")
        defaults["qrels"] = qrels.out
    if (index_set is not None or qrels is not None) and _local_queries(options):
        defaults["queries"] = options.queries     # the report of the job's own queries, with their text
    if spec.eval:
        _check_eval(spec, options, defaults)
    return JobSteps(options, index_set, qrels, defaults)


def run_before(steps: JobSteps, log: Callable[[str], None] | None = None) -> None:
    """Run what comes before the queries: the indexes, then the judgments."""
    log = log or _stderr
    if steps.index_set is not None:
        from codenib.batch.indexset import run_index_set

        from codenib.core.storage import StorageConfig

        log(f"job: indexing the snapshots of {steps.index_set.snapshots} under {steps.index_set.index_root}")
        # Where object storage is: read once, here at the edge.
        remote = is_uri(str(steps.index_set.index_root)) or is_uri(str(steps.index_set.store or ""))
        summary = run_index_set(steps.index_set, log=log, storage=StorageConfig.from_env() if remote else None)
        log(summary.render())
    if steps.qrels is not None:
        log(write_qrels(steps.qrels, log))


def write_qrels(step: QrelsStep, log: Callable[[str], None] | None = None) -> str:
    """Write [qrels]'s judgments to `step.out` (atomically; error rows of derived judgments
    beside it, `codenib qrels`'s layout); returns a line saying what was written."""
    from codenib.commands.qrels import errors_path, write_judgments

    log = log or _stderr
    if step.files:
        from codenib.eval.qrels import merge_qrels, qrels_table, read_qrels

        merged = merge_qrels([read_qrels(f) for f in step.files])
        table, left_out = _of_queries(qrels_table(merged), step.queries)
        write_judgments(table, None, Path(step.out))
        n_nodes = table.num_rows - table.column("node_id").null_count
        return (f"job: wrote {table.num_rows} judgments of {len(merged.qids) - left_out} queries ({n_nodes} "
                f"definitions) from {len(step.files)} file(s) to {step.out}" + _left_out(left_out, step.queries))
    from codenib.eval.gold import judge, read_patch_rows

    rows = read_patch_rows(step.patches)
    qrels, errors = judge(rows, step.index_root, step.mirror_root,
                          log=lambda message: log(f"job: qrels: warning: {message}"))
    qrels, left_out = _of_queries(qrels, step.queries)
    write_judgments(qrels, errors, Path(step.out))
    judged = len(set(qrels.column("qid").to_pylist()))
    return (f"job: wrote {qrels.num_rows} judgments for {judged} of {len(rows)} rows from the patches of "
            f"{step.patches} to {step.out}" + _left_out(left_out, step.queries) +
            (f"; {errors.num_rows} rows could not be judged: {errors_path(Path(step.out))}" if errors.num_rows else ""))


# --- private helpers ---------------------------------------------------------------------------

def _of_queries(table, queries: str | None):
    """The judgments of `table` whose qid is a query of `queries` (all without it), and how
    many judged queries were left out."""
    if queries is None:
        return table, 0
    import pyarrow as pa
    import pyarrow.compute as pc

    from codenib.eval.queries import read_queries

    wanted = pa.array(read_queries(queries).qids, pa.string())
    keep = pc.is_in(table.column("qid"), value_set=wanted)
    left_out = len(set(table.filter(pc.invert(keep)).column("qid").to_pylist()))
    return table.filter(keep), left_out


def _left_out(n: int, queries: str | None) -> str:
    return f" ({n} judged queries that are not in {queries} left out)" if n else ""


def _index_set_step(spec: JobSpec, options: RunOptions) -> tuple[RunOptions, IndexSetOptions]:
    """[index_set] as `IndexSetOptions`, and the run's options with its index root."""
    from codenib.batch.indexset import IndexSetOptions
    from codenib.batch.snapshot_set import read_snapshot_set
    from codenib.batch.snapshot_layout import LAYOUTS

    table = spec.index_set
    where = f"{spec.path} [index_set]"
    _check_types(table, _INDEX_SET_TYPES, where)
    if table.get("max_file_bytes") is not None and table["max_file_bytes"] < 1:
        raise BadInputError(f"`max_file_bytes` must be at least 1, got {table['max_file_bytes']}", path=where,
                            fix="leave it out for codenib index's default")
    if table.get("layout", "full") not in LAYOUTS:
        raise BadInputError(f"unknown `layout` {table['layout']!r}", path=where, fix=f"use one of {', '.join(LAYOUTS)}")
    if options.index is not None:
        raise BadInputError("[index_set] builds one index per snapshot under an index root, but the run names "
                            f"one index (--index {options.index})", path=spec.path,
                            fix="give [run] index_root (or --index-root) instead of index")
    root = _one_root(table.get("index_root"), options.index_root, spec.path)
    if options.index_root is None:
        options = dataclasses.replace(options, index_root=root)
    snapshots = table.get("snapshots") or options.queries
    index_set = IndexSetOptions(snapshots=str(snapshots), index_root=root, store=table.get("store"),
                                mirror_root=table.get("mirror_root"),
                                address=table.get("address", options.address), dense=table.get("dense", True),
                                history=table.get("history", False), model=table.get("model"),
                                max_file_bytes=table.get("max_file_bytes"), progress=options.progress,
                                layout=table.get("layout", "full"))
    # The set is read now (its rows, their git directories) so that bad input stops here.
    read_snapshot_set(index_set.snapshots, index_set.mirror_root)
    return options, index_set


def _qrels_step(spec: JobSpec, options: RunOptions, index_set: IndexSetOptions | None) -> QrelsStep:
    """[qrels] checked: where its judgments go and that their sources can be read."""
    from codenib.core.outputs import refuse_uri

    table = spec.qrels
    where = f"{spec.path} [qrels]"
    _check_types(table, _QRELS_TYPES, where)
    files = table.get("files", [])
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise BadInputError(f"`files` must be a list of qrels files, got {files!r}", path=where,
                            fix='write files = ["qrels_file.parquet", "qrels_function.parquet"]')
    out = table.get("out")
    if not out:
        raise BadInputError("[qrels] has no `out`", path=where,
                            fix='write out = "runs/NAME.qrels.parquet" (where the job writes its judgments)')
    refuse_uri(out, "[qrels] out", "write the judgments to a local file")
    _check_out(Path(out), bool(table.get("force", False)), files, where)
    if files:
        if "patches" in table:
            raise BadInputError("[qrels] names both given `files` and `patches` to derive judgments from",
                                path=where, fix="keep one: files (judgments as they are) or patches")
        for f in files:
            if not Path(f).is_file():
                raise BadInputError(f"no such qrels file {f!r}", path=where,
                                    fix="give the path of a Parquet or TREC qrels file (relative to where the "
                                        "command runs)")
        return QrelsStep(str(out), options.index_root, tuple(files), force=bool(table.get("force", False)),
                         queries=_local_queries(options))
    if options.index_root is None:
        raise BadInputError("[qrels] derives judgments from patches over the indexes under an index root, but "
                            "the run has none", path=where,
                            fix="give [run] index_root (or [index_set]), or [qrels] files = [...]")
    if is_uri(str(options.index_root)):
        # Judgments from patches read each row's index with its readers: a local folder.
        raise BadInputError(f"[qrels] derives judgments from patches over local indexes, and the index root "
                            f"{options.index_root!r} is on object storage; nothing was written", path=where,
                            fix="give [qrels] files = [...] (the set's own judgments), or build the indexes "
                                "under a local index_root")
    patches = str(table.get("patches") or options.queries)
    from codenib.eval.gold import read_patch_rows

    try:
        read_patch_rows(patches)    # a file without a patch column stops here, before any indexing
    except BadInputError as exc:
        raise BadInputError(f"{where}: {exc}", fix="give the rows' patches ([qrels] patches = FILE, rows with "
                                                   "qid or instance_id and patch), or the judgments as files = "
                                                   "[...]") from None
    mirror = table.get("mirror_root", index_set.mirror_root if index_set is not None else None)
    return QrelsStep(str(out), options.index_root, patches=patches, mirror_root=mirror,
                     force=bool(table.get("force", False)), queries=_local_queries(options))


def _check_eval(spec: JobSpec, options: RunOptions, defaults: dict[str, Any]) -> None:
    """[eval]'s options checked now, as the eval after the run will read them."""
    from codenib.commands.eval import EvalCommandOptions
    from codenib.eval.report import check_report_dir

    opts = EvalCommandOptions.from_table({**defaults, **spec.eval}, options.out, f"{spec.path} [eval]")
    opts.validate()
    if opts.qrels is not None and "qrels" not in defaults and not Path(opts.qrels).is_file():
        raise BadInputError(f"[eval] qrels {opts.qrels!r} does not exist", path=spec.path,
                            fix="give the judgments' path, or a [qrels] table that writes them")
    if opts.queries is not None and not Path(opts.queries).is_file():
        raise BadInputError(f"[eval] queries {opts.queries!r} does not exist", path=spec.path,
                            fix="give the query set of the run (or drop queries from [eval])")
    if opts.groups is not None and not Path(opts.groups).is_file():
        raise BadInputError(f"[eval] groups {opts.groups!r} does not exist", path=spec.path,
                            fix="give a file of each query's repo (qid and repo), e.g. the data set's instances file")
    if opts.out and opts.qrels is not None:
        check_report_dir(Path(opts.out).absolute(), opts.force)


def _check_out(out: Path, force: bool, files: list[str], where: str) -> None:
    """[qrels] out is a file path the job may (re)write: not a folder, not one of its inputs,
    and, unless `force`, no file that CodeNib did not write as qrels."""
    from codenib.commands.qrels import written_by_codenib

    if out.is_dir():
        raise BadInputError(f"[qrels] out {str(out)!r} is a folder", path=where,
                            fix='write out = "runs/NAME.qrels.parquet"')
    if any(_same_path(f, str(out)) for f in files):
        raise BadInputError(f"[qrels] out {str(out)!r} is one of the given files", path=where,
                            fix="write the merged judgments to another file")
    if (out.exists() or out.is_symlink()) and not force and not written_by_codenib(out):
        raise BadInputError(f"[qrels] out {str(out)!r} is a file CodeNib did not write as judgments; nothing "
                            "was written", path=where,
                            fix="give another out, or force = true in [qrels] to replace it")


def _one_root(table_root: str | None, run_root: str | None, path: str) -> str:
    """The index root [index_set] and [run] share."""
    if table_root and run_root and not _same_path(table_root, run_root):
        raise BadInputError(f"[index_set] index_root {table_root!r} is not the run's index root {run_root!r}",
                            path=path, fix="drop index_root from [index_set]: it builds under [run]'s index_root")
    root = run_root or table_root
    if not root:
        raise BadInputError("[index_set] needs an index root", path=path,
                            fix='give [run] index_root = "idx/NAME" (or --index-root DIR)')
    return str(root)


def _local_queries(options: RunOptions) -> str | None:
    """The run's query set when it is a local file (what eval and the judgments can read)."""
    where = options.location("queries")
    return options.queries if where is not None and not where.uri else None


def _same_path(a: str, b: str) -> bool:
    return Path(a).absolute() == Path(b).absolute() or Path(a).resolve() == Path(b).resolve()


def _check_types(table: dict, types: dict[str, tuple[type, str]], where: str) -> None:
    for key, (kind, example) in types.items():
        if key not in table:
            continue
        value = table[key]
        ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        if not ok or (kind is str and not value):
            name = {str: "a non-empty string", bool: "true or false", int: "an integer"}[kind]
            raise BadInputError(f"`{key}` must be {name}, got {value!r}", path=where, fix=f"write {key} = {example}")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
