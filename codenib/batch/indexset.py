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
job goes on. An index root on object storage (`s3://...`): each run builds on its node and
publishes each index there, manifest last (`codenib.batch.remote_root`). The rows of a set:
`codenib.batch.snapshot_set`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from codenib.batch.remote_root import RemoteRoot
from codenib.batch.snapshot_layout import FULL_LAYOUT, check_layout, pack, set_layout
from codenib.batch.snapshot_set import Snapshot, read_snapshot_set
from codenib.core.errors import BadInputError, CodeNibError
from codenib.core.storage import StorageConfig, is_uri

if TYPE_CHECKING:
    from codenib.core.store_backend import StoreBackend

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
        """What makes two builds of one commit the same index (compared on resume): the
        options, and the versions of the readers, of Python's resolver and (with history) of
        the history reader. After an upgrade that changed any of them every snapshot is built
        again, its unchanged files' parts from the store. The driver compares its own versions
        with those the workers recorded: both must run the same CodeNib."""
        from codenib.compiler.history import HISTORY_VERSION
        from codenib.compiler.lang import reader_versions
        from codenib.compiler.lang.python_resolve.deps import RESOLVE_VERSION

        return {"dense": self.dense, "history": self.history, "model": self.model,
                "max_file_bytes": self.max_file_bytes, "readers": reader_versions(),
                "resolve_version": RESOLVE_VERSION, "history_version": HISTORY_VERSION if self.history else None}


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


def run_index_set(options: IndexSetOptions, log: Callable[[str], None] | None = None,
                  storage: "StorageConfig | None" = None) -> IndexSetSummary:
    """Index every snapshot of `options.snapshots` under `options.index_root` on Ray (see the
    module docstring); returns the summary. Bad input raises before any work. `storage`: where
    object storage is, for a `--store` URI (default: read from the environment here, once)."""
    from codenib.batch.raysession import check_address, start_ray, stop_ray
    from codenib.core.outputs import refuse_uri
    from codenib.core.progress import Progress

    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    refuse_uri(options.snapshots, "codenib index-set --snapshots", "pass a local Parquet or JSONL file")
    t0 = time.perf_counter()
    snapshots = read_snapshot_set(options.snapshots, options.mirror_root)
    remote = None
    if is_uri(options.index_root):
        storage = storage or StorageConfig.from_env()
        remote = RemoteRoot(options.index_root, storage)
        if options.layout != FULL_LAYOUT:
            raise BadInputError(f"--layout {options.layout} reads each index back from a local per-file store; an "
                                f"index root on object storage ({options.index_root}) holds whole indexes",
                                fix="pass --layout full, or a local --index-root")
        remote.check()
    root = Path(options.index_root) if remote is None else None
    if root is not None and root.exists() and not root.is_dir():
        raise BadInputError("--index-root is a file", path=str(root), fix="pass a folder for the indexes")
    store = _open_store(options.store or (f"{remote.uri}/{DEFAULT_STORE_NAME}" if remote is not None
                                          else root / DEFAULT_STORE_NAME), storage)
    check_layout(options.layout, store)
    if options.address:
        check_address(options.address)    # before the index root is made
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    resolved: list[tuple[Snapshot, str, int]] = []
    for snap, commit, when, error in _resolved(snapshots):
        if error is not None:
            rows[snap.index] = _row(snap, commit, "error", error)
        else:
            resolved.append((snap, commit, when))

    def current(snap: Snapshot, commit: str) -> bool:
        if remote is not None:
            return _matches(remote.manifest(snap.index), commit, options.settings())
        return _current(root / snap.index, commit, options.settings())

    if any(not current(snap, commit) for snap, commit, _ in resolved):
        started = start_ray(options.address, False, log)
        try:
            import ray

            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            build = ray.remote(num_cpus=1, max_calls=RUNS_PER_WORKER, max_retries=TASK_RETRIES)(build_run)
            where = str(root) if remote is None else remote
            pending = {build.remote(run, where, store, options): run for run in runs_of(resolved, cpus)}
            with Progress("index-set", len(resolved), "snapshots", enabled=options.progress) as bar:
                while pending:
                    done, _ = ray.wait(list(pending), num_returns=1)
                    run = pending.pop(done[0])
                    try:
                        finished = ray.get(done[0])
                    except Exception as exc:   # noqa: BLE001 - a task that failed after its retries: its rows
                        error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                        # What the run finished before it failed is whole (each index is atomic).
                        finished = [_row(snap, commit, "built") if current(snap, commit)
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
        rows.update((snap.index, {**_row(snap, commit, "kept"), "layout": FULL_LAYOUT if remote is not None else None})
                    for snap, commit, _ in resolved)
    pack(store, log)
    table = pa.Table.from_pylist([rows[s.index] for s in snapshots], schema=REPORT_SCHEMA)
    if remote is not None:
        remote.write_table(table, REPORT_NAME)
        report = f"{remote.uri}/{REPORT_NAME}"
    else:
        report = str(root / REPORT_NAME)
        _write_report(table, root / REPORT_NAME)
    statuses = [r["status"] for r in rows.values()]
    return IndexSetSummary(report, statuses.count("built"), statuses.count("kept"), statuses.count("error"),
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


def build_run(run: list[tuple[Snapshot, str]], index_root: "str | RemoteRoot", store: "str | StoreBackend",
              options: IndexSetOptions) -> list[dict]:
    """Build a run of one repository's snapshots in commit order (a Ray task), each after
    the first reusing the one before it; returns their report rows. `store`: the per-file
    store's folder or backend (`codenib.core.store_backend`). A snapshot already
    current is kept (and serves the next as its base). An index root on object storage
    (`RemoteRoot`): each snapshot is built in a scratch folder of this node and published
    once built; the local copy serves the next snapshot as its base, then goes."""
    if isinstance(index_root, RemoteRoot):
        with tempfile.TemporaryDirectory(prefix="codenib-index-set-") as scratch:
            return _build_run(run, Path(scratch), store, options, index_root)
    return _build_run(run, Path(index_root), store, options, None)


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

def _build_run(run: list[tuple[Snapshot, str]], root: Path, store: "str | StoreBackend", options: IndexSetOptions,
               remote: RemoteRoot | None) -> list[dict]:
    """`build_run` into the local folder `root` (with `remote`: a scratch folder whose
    indexes are published there)."""
    import shutil

    rows: list[dict] = []
    base: Path | None = None

    def retire(previous: Path | None) -> None:
        """The base has served its turn: its layout set, and with `remote` its local copy gone."""
        if previous is not None:
            set_layout(previous, rows, store, options.layout)
            if remote is not None:
                shutil.rmtree(previous, ignore_errors=True)

    for snap, commit in run:
        folder = root / snap.index
        if (_matches(remote.manifest(snap.index), commit, options.settings()) if remote is not None
                else _current(folder, commit, options.settings())):
            row = _row(snap, commit, "kept")
            if remote is not None:      # on the store, not here: the next one builds afresh
                retire(base)
                rows.append({**row, "layout": FULL_LAYOUT})     # the only layout a URI root holds
                base = None
                continue
        else:
            row = build_snapshot(snap, commit, str(root), store, options, reuse=base)
            if remote is not None and row["status"] != "error":
                try:
                    remote.publish(folder, snap.index)
                except CodeNibError as exc:
                    row = _row(snap, commit, "error", f"upload failed: {exc}", row["seconds"])
                    shutil.rmtree(folder, ignore_errors=True)
        if row["status"] != "error":
            # Only the last is kept whole (and, with `remote`, on this node).
            retire(base)
            base = folder
        rows.append(row)
    retire(base)
    return rows


def _open_store(where: "str | Path", storage: "StorageConfig | None") -> "StoreBackend":
    """The per-file store's backend; one on object storage is reached once now (a bad bucket
    is bad input, exit 2, before any work)."""
    from codenib.core.store_backend import open_backend

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
    return _matches(manifest, commit, settings)


def _matches(manifest: dict | None, commit: str, settings: dict) -> bool:
    """Whether `manifest` is that of an index of `commit` built by index-set with `settings`."""
    if not isinstance(manifest, dict):
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


def _write_report(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    from codenib.core.outputs import tmp_path, writing

    tmp = tmp_path(path)
    try:
        with writing(path):
            pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
