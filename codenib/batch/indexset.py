"""`codenib index-set`: many repository snapshots indexed from git objects, as Ray tasks.

A snapshot set names, per row, an index (a folder name under `--index-root`), a git directory
and a revision; SWE-bench-shaped rows (`instance_id`, `repo`, `base_commit`) are read as they
are, their `repo` found under `--mirror-root`. Every snapshot is read from the object store
(`codenib.compiler.source.GitTree`; nothing is checked out) into a standalone index folder,
so every command reads it as any other.

The work: each repository's snapshots in commit order, cut into as many contiguous runs as
the cluster has CPUs; a run is one Ray task that builds its first snapshot afresh and each
next one as `codenib index --reuse` of the one before (unchanged files keep their nodes,
edges, terms and vectors; the graph is resolved again only where something changed). Across
runs, the per-file store (`--store`, a folder or a `pyarrow.fs` URI such as `s3://bucket/prefix`;
default `ROOT/.codenib-store`) keeps the nodes and term counts of each file version, keyed by
path, content, reader versions and tokenizer settings, so the first snapshot of a run parses
only what no other run parsed. A store on object storage is checked once before any work (a bad
bucket exits 2) and reaches the tasks as data, with its `StorageConfig`. Corpus statistics,
vectors of changed files and history are computed per snapshot.

Resume: a snapshot whose folder holds an index of the same commit built with the same
settings (recorded in its manifest under `index_set`) is kept; an interrupted job re-run
builds only the rest. Each build replaces its folder atomically, so a task that dies (a node
lost) leaves no half index, and Ray runs it again. A row whose revision is not in its
repository, or whose build fails, becomes an error row of `ROOT/_index_set.parquet`; the
job goes on.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from codenib.batch.snapshot_layout import FULL_LAYOUT, check_layout, pack, set_layout
from codenib.core.errors import BadInputError, CodeNibError
from codenib.core.mirrors import find_git_dir
from codenib.core.rows import column_of, read_rows

if TYPE_CHECKING:
    from codenib.core.store_backend import StoreBackend
    from codenib.core.storage import StorageConfig

#: Runs one Ray worker process builds before it exits: a fresh process hands back what
#: fragmentation kept, so a worker's memory stays bounded however many snapshots the set holds
#: (a run holds one snapshot's build at a time, and the index before it on disk).
RUNS_PER_WORKER = 1
#: The fewest snapshots a run is cut to: a run's first build costs about two reused ones
#: (sphinx, 905 files: ~5-8 CPU s afresh, ~3-4 as --reuse of the commit 50 before), so shorter
#: runs spend more CPU than their parallelism gives back in time.
MIN_RUN_SNAPSHOTS = 4
#: Ray runs a task again this many times when its worker or node dies (a build is idempotent).
TASK_RETRIES = 3
#: The report of a run, beside the indexes.
REPORT_NAME = "_index_set.parquet"
#: The per-file store's folder under the index root when `--store` is not given.
DEFAULT_STORE_NAME = ".codenib-store"
#: The manifest key under which a snapshot records how it was built (for resume).
MANIFEST_KEY = "index_set"
REPORT_SCHEMA = pa.schema([("index", pa.string()), ("repo", pa.string()), ("rev", pa.string()),
                           ("commit", pa.string()), ("status", pa.string()), ("error", pa.string()),
                           ("seconds", pa.float64()), ("files", pa.int64()), ("nodes", pa.int64()),
                           ("files_from_store", pa.int64()), ("files_kept", pa.int64()),
                           ("reused_from", pa.string()), ("texts_encoded", pa.int64()), ("layout", pa.string())])


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One row of a snapshot set: the index name, its git directory and revision."""

    index: str
    repo: str
    gitdir: str
    rev: str


@dataclass(frozen=True, slots=True)
class IndexSetOptions:
    """What `codenib index-set` was asked."""

    snapshots: str
    index_root: str
    store: str | None = None
    mirror_root: str | None = None
    address: str | None = None
    dense: bool = True
    history: bool = False
    model: str | None = None
    max_file_bytes: int | None = None
    progress: bool = True
    layout: str = FULL_LAYOUT

    def settings(self) -> dict[str, Any]:
        """What makes two builds of one commit the same index (compared on resume)."""
        return {"dense": self.dense, "history": self.history, "model": self.model,
                "max_file_bytes": self.max_file_bytes}


@dataclass(frozen=True, slots=True)
class IndexSetSummary:
    """How a run went: counts by status and where the report is."""

    report: str
    built: int
    kept: int
    errors: int
    seconds: float

    def render(self) -> str:
        return (f"index-set: {self.built} built, {self.kept} kept (already current), {self.errors} error row(s) "
                f"in {self.seconds:.1f}s; report: {self.report}")


def read_snapshot_set(path: str | os.PathLike, mirror_root: str | os.PathLike | None = None) -> list[Snapshot]:
    """The rows of a snapshot set (Parquet or JSONL): `index`, `repo` (a git directory, or
    with `mirror_root` a name `owner/name` found under it) and `rev`; or SWE-bench rows
    (`instance_id` as the index, `repo`, `base_commit`).

    Raises:
        BadInputError: naming the file and row: an unreadable set, a missing column, an empty
            or repeated index, an index that is not a plain folder name, a repo with no git
            directory.
    """
    p = Path(path)
    records = read_rows(p, "snapshot set", "pass a Parquet or JSONL file with index, repo and rev columns")
    names = set().union(*(r.keys() for r in records)) if records else set()
    index_col, rev_col = column_of(names, "index"), column_of(names, "rev")
    lacking = [w for w, ok in (("index (or instance_id)", index_col), ("repo", "repo" in names),
                               ("rev (or base_commit)", rev_col)) if not ok]
    if lacking:
        raise BadInputError(f"snapshot set {p} lacks column(s) {', '.join(lacking)} "
                            f"(has: {', '.join(sorted(names)) or 'no rows'})", path=str(p),
                            fix="write one row per snapshot with index, repo (a git directory) and rev, or pass a "
                                "SWE-bench-shaped file (instance_id, repo, base_commit) with --mirror-root")
    out: list[Snapshot] = []
    seen: set[str] = set()
    for n, r in enumerate(records, 1):
        where = f"snapshot set {p}, row {n}"
        index, repo, rev = (_text(r.get(c)) for c in (index_col, "repo", rev_col))
        if not (index and repo and rev):
            empty = [c for c, v in ((index_col, index), ("repo", repo), (rev_col, rev)) if not v][0]
            raise BadInputError(f"{where}: {empty} is empty", path=str(p), fix=f"give every row a {empty}")
        if index in seen:
            raise BadInputError(f"{where}: index {index!r} is named twice", path=str(p),
                                fix="give every snapshot its own index name")
        if "/" in index or "\\" in index or index in (".", "..") or index.startswith("."):
            raise BadInputError(f"{where}: index {index!r} is not a plain folder name", path=str(p),
                                fix="name each index with one folder name (no '/', no leading '.')")
        seen.add(index)
        gitdir = find_git_dir(repo, mirror_root)
        if gitdir is None:
            under = f" under --mirror-root {mirror_root}" if mirror_root is not None else ""
            raise BadInputError(f"{where}: no git directory for repo {repo!r}{under}", path=str(p),
                                fix="fetch the repository's mirror, give repo as the path of a git directory, "
                                    "or pass --mirror-root the folder of mirrors")
        out.append(Snapshot(index, repo, str(gitdir.absolute()), rev))
    return out


def run_index_set(options: IndexSetOptions, log: Callable[[str], None] | None = None,
                  storage: "StorageConfig | None" = None) -> IndexSetSummary:
    """Index every snapshot of `options.snapshots` under `options.index_root` on Ray (see the
    module docstring); returns the summary. Bad input raises before any work. `storage`: where
    object storage is, for a `--store` URI (default: read from the environment here, once)."""
    from codenib.batch.raysession import start_ray, stop_ray
    from codenib.core.outputs import refuse_uri
    from codenib.core.progress import Progress

    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    for flag, value in (("--index-root", options.index_root), ("--snapshots", options.snapshots)):
        refuse_uri(value, f"codenib index-set {flag}",
                   "pass a local path (indexes are built into local folders; --store may be a URI)")
    t0 = time.perf_counter()
    snapshots = read_snapshot_set(options.snapshots, options.mirror_root)
    root = Path(options.index_root)
    if root.exists() and not root.is_dir():
        raise BadInputError("--index-root is a file", path=str(root), fix="pass a folder for the indexes")
    store = _open_store(options.store or root / DEFAULT_STORE_NAME, storage)
    check_layout(options.layout, store)
    root.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    resolved: list[tuple[Snapshot, str, int]] = []
    for snap, commit, when, error in _resolved(snapshots):
        if error is not None:
            rows[snap.index] = _row(snap, commit, "error", error)
        else:
            resolved.append((snap, commit, when))
    if any(not _current(root / snap.index, commit, options.settings()) for snap, commit, _ in resolved):
        started = start_ray(options.address, False, log)
        try:
            import ray

            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            build = ray.remote(num_cpus=1, max_calls=RUNS_PER_WORKER, max_retries=TASK_RETRIES)(build_run)
            pending = {build.remote(run, str(root), store, options): run for run in runs_of(resolved, cpus)}
            with Progress("index-set", len(resolved), "snapshots", enabled=options.progress) as bar:
                while pending:
                    done, _ = ray.wait(list(pending), num_returns=1)
                    run = pending.pop(done[0])
                    try:
                        finished = ray.get(done[0])
                    except Exception as exc:   # noqa: BLE001 - a task that failed after its retries: its rows
                        error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                        # What the run finished before it failed is whole (each index is atomic).
                        finished = [_row(snap, commit, "built") if _current(root / snap.index, commit, options.settings())
                                    else _row(snap, commit, "error", error) for snap, commit in run]
                    for row in finished:
                        rows[row["index"]] = row
                        if row["status"] == "error":
                            log(f"index-set: {row['index']}: {row['error']}")
                    bar.update(len(finished))
        finally:
            if started:
                stop_ray()
    else:
        rows.update((snap.index, _row(snap, commit, "kept")) for snap, commit, _ in resolved)
    pack(store, log)
    report = root / REPORT_NAME
    _write_report([rows[s.index] for s in snapshots], report)
    statuses = [r["status"] for r in rows.values()]
    return IndexSetSummary(str(report), statuses.count("built"), statuses.count("kept"), statuses.count("error"),
                           time.perf_counter() - t0)


def runs_of(snapshots: list[tuple[Snapshot, str, int]], n: int) -> list[list[tuple[Snapshot, str]]]:
    """Each repository's snapshots in commit order (commit time, then id), cut into contiguous
    runs: about `n` in all, at least one per repository, the longer repositories cut more,
    none shorter than `MIN_RUN_SNAPSHOTS` unless its repository has fewer."""
    by_repo: dict[str, list[tuple[int, str, Snapshot]]] = {}
    for snap, commit, when in snapshots:
        by_repo.setdefault(snap.gitdir, []).append((when, commit, snap))
    total = len(snapshots)
    runs: list[list[tuple[Snapshot, str]]] = []
    for gitdir in sorted(by_repo):
        ordered = [(snap, commit) for _, commit, snap in sorted(by_repo[gitdir], key=lambda t: (t[0], t[1]))]
        k = max(1, min(len(ordered) // MIN_RUN_SNAPSHOTS, round(n * len(ordered) / total)))
        runs += [ordered[i * len(ordered) // k:(i + 1) * len(ordered) // k] for i in range(k)]
    return runs


def build_run(run: list[tuple[Snapshot, str]], index_root: str, store: "str | StoreBackend",
              options: IndexSetOptions) -> list[dict]:
    """Build a run of one repository's snapshots in commit order (a Ray task), each after
    the first reusing the one before it; returns their report rows. `store`: the per-file
    store's folder or backend (`codenib.core.store_backend`). A snapshot already
    current is kept (and serves the next as its base)."""
    rows: list[dict] = []
    base: Path | None = None
    for snap, commit in run:
        folder = Path(index_root) / snap.index
        if _current(folder, commit, options.settings()):
            row = _row(snap, commit, "kept")
        else:
            row = build_snapshot(snap, commit, index_root, store, options, reuse=base)
        if row["status"] != "error":
            # The one before has served its turn as the base: only the last is kept whole.
            if base is not None:
                set_layout(base, rows, store, options.layout)
            base = folder
        rows.append(row)
    if base is not None:
        set_layout(base, rows, store, options.layout)
    return rows


def build_snapshot(snap: Snapshot, commit: str, index_root: str, store: "str | StoreBackend",
                   options: IndexSetOptions, reuse: Path | None = None) -> dict:
    """Build one snapshot's index from its git objects (with `reuse`, as `--reuse` of that
    index); returns its report row. A bad revision or a failed build is the row's error,
    never the job's."""
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions
    from codenib.compiler.history import HistorySpec
    from codenib.compiler.source import GitTree
    from codenib.core.store_backend import open_backend

    t0 = time.perf_counter()
    try:
        tree = GitTree.open(snap.gitdir, commit, snap.index)
        extra = {} if options.max_file_bytes is None else {"max_file_bytes": options.max_file_bytes}
        build = BuildOptions(dense=options.dense, model=options.model, progress=False, jobs=1, cache=open_backend(store),
                             history=HistorySpec() if options.history else None, reuse=reuse, **extra)
        record = {"repo": snap.repo, "rev": snap.rev, "commit": commit, "settings": options.settings()}
        summary = build_index(tree, Path(index_root) / snap.index, build, log=lambda message: None,
                              finish=lambda staging, log: {MANIFEST_KEY: record})
    except CodeNibError as exc:
        return _row(snap, commit, "error", str(exc), time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - one snapshot's failure is its row; the run goes on
        return _row(snap, commit, "error", f"{type(exc).__name__}: {exc}".splitlines()[0], time.perf_counter() - t0)
    manifest = summary.manifest
    reused = summary.reuse or {}
    return _row(snap, commit, "built", None, time.perf_counter() - t0, files=manifest["counts"]["files"],
                nodes=manifest["counts"]["nodes"], from_store=(manifest.get("cache") or {}).get("files_found"),
                kept=reused.get("files_kept"), reused_from=reuse.name if reuse is not None else None,
                encoded=(manifest.get("model") or {}).get("encoded"))


# --- private helpers ---------------------------------------------------------------------------

def _open_store(where: "str | Path", storage: "StorageConfig | None") -> "StoreBackend":
    """The per-file store's backend; one on object storage is reached once now (a bad bucket
    is bad input, exit 2, before any work)."""
    from codenib.core.store_backend import open_backend
    from codenib.core.storage import StorageConfig, is_uri

    if is_uri(str(where)) and storage is None:
        storage = StorageConfig.from_env()
    backend = open_backend(str(where), storage)
    backend.check()
    return backend


def _resolved(snapshots: list[Snapshot]):
    """Each snapshot with its revision's commit id and commit time, or the error that makes
    it an error row."""
    import pygit2

    repos: dict[str, Any] = {}
    for snap in snapshots:
        try:
            repo = repos.get(snap.gitdir) or repos.setdefault(snap.gitdir, pygit2.Repository(snap.gitdir))
            commit = repo.revparse_single(snap.rev).peel(pygit2.Commit)
        except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
            yield snap, None, 0, f"revision {snap.rev!r} is not a commit of {snap.gitdir} ({type(exc).__name__})"
            continue
        yield snap, str(commit.id), int(commit.commit_time), None


def _current(folder: Path, commit: str, settings: dict) -> bool:
    """Whether `folder` holds a whole index of `commit` built with `settings`."""
    from codenib.core.artifact import is_index_dir, read_manifest

    if not is_index_dir(folder):
        return False
    try:
        manifest = read_manifest(folder, verify=True)
    except CodeNibError:
        return False
    record = manifest.get(MANIFEST_KEY) or {}
    return manifest.get("git_commit") == commit and record.get("settings") == settings


def _row(snap: Snapshot, commit: str | None, status: str, error: str | None = None, seconds: float = 0.0,
         files: int | None = None, nodes: int | None = None, from_store: int | None = None,
         kept: int | None = None, reused_from: str | None = None, encoded: int | None = None) -> dict:
    return {"index": snap.index, "repo": snap.repo, "rev": snap.rev, "commit": commit, "status": status,
            "error": error, "seconds": round(seconds, 3), "files": files, "nodes": nodes,
            "files_from_store": from_store, "files_kept": kept, "reused_from": reused_from,
            "texts_encoded": encoded, "layout": None}


def _write_report(rows: list[dict], path: Path) -> None:
    import pyarrow.parquet as pq

    from codenib.core.outputs import tmp_path, writing

    tmp = tmp_path(path)
    try:
        with writing(path):
            pq.write_table(pa.Table.from_pylist(rows, schema=REPORT_SCHEMA), tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _text(v) -> str | None:
    if v is None:
        return None
    s = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return s.strip() or None
