"""`ParquetSink`: writes a sharded, resumable results folder (layout: `codenib.core.results`).

A shard is written to `_staging/` and renamed into place; it counts as committed only once
`_manifest.json` (replaced atomically) lists it, so a re-run skips it and never duplicates or
loses rows. When every shard is committed, `plans.parquet` and finally `_SUCCESS` are written.

One writer per folder: `open` takes an exclusive `flock` on `_LOCK` (the kernel drops it when
the process dies, so a crashed job never blocks the next), then writes its pid and host into
it for the message others get. The folder is inspected before the lock (so nothing is written
into a folder that is refused) and again under it (the answer that counts).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.core.artifact import pid_alive, sha256_file
from codenib.batch.sinkbase import ShardSink, parse_holder
from codenib.core.errors import BadInputError, DiskWriteError
from codenib.core.outputs import TMP_NAME, foreign_files, remove_foreign, tmp_path, writing
from codenib.core.results import (MANIFEST, PLAN_PARTS, PLANS, RESULTS_FORMAT, RESULTS_OWNERSHIP, PartStat,
                             ResultsFolder, check_results_dir, digest_file)
from codenib.core.types import PLANS_SCHEMA

#: How long a process that lost the lock waits for the holder to write its name into `_LOCK`.
HOLDER_WAIT_S = 5.0


class ParquetSink(ShardSink):
    """Writes one results folder; `open` validates it and returns the shards already done."""

    def __init__(self, out: str | Path, fingerprint: str, metadata: dict[str, Any], total_shards: int, *,
                 force: bool = False, log: Callable[[str], None] | None = None):
        super().__init__(fingerprint, metadata, total_shards, force=force, log=log)
        self.out = Path(out)
        self.folder = ResultsFolder(self.out)
        self._lock_fd: int | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def open(self) -> set[int]:
        """Create or resume the folder under its lock; refuse one that holds something else.

        Raises:
            BadInputError: the folder holds another job's results or files CodeNib did not
                write (without `force`), or another live job writes to it (its pid and host).
        """
        self._inspect()                     # reads only: a refused folder is left as it was
        created = not self.out.exists()
        self.out.mkdir(parents=True, exist_ok=True)
        try:
            self._lock()
            manifest = self._inspect()      # again, under the lock: the answer that counts
            if self.force:
                remove_foreign(self.out, foreign_files(self.out, RESULTS_OWNERSHIP))
            self._clear_leftovers()
            if manifest is None:
                self._manifest = self._new_manifest()
                self._write_manifest()
                self._created = created
            else:
                self._manifest = manifest
                self.drop_damaged()
            self.folder.plan_parts.mkdir(exist_ok=True)
            self.folder.staging.mkdir(exist_ok=True)
        except BaseException:
            self.close()
            if created:
                _remove_if_empty(self.out)
            raise
        return self._resumable()

    @property
    def complete(self) -> bool:
        return self.folder.complete

    def discard_if_unused(self) -> None:
        """After `close`: remove the folder again if `open` created it and nothing was committed."""
        if not self._created or self._manifest.get("shards"):
            return
        self.folder.manifest_path.unlink(missing_ok=True)
        for folder in (self.folder.plan_parts, self.folder.staging, self.out):
            _remove_if_empty(folder)

    def read_plans(self, columns: list[str] | None = None) -> pa.Table:
        """The rows of the finished `plans.parquet`."""
        return self.folder.plans(columns=columns)

    def close(self) -> None:
        """Release the folder: remove `_LOCK` while still holding it, then let go (so a process
        that opened the old file notices it is gone); safe to call more than once."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is None:
            return
        try:
            _remove_if_empty(self.folder.staging)
            if _same_file(fd, self.folder.lock_path):
                self.folder.lock_path.unlink()
        finally:
            os.close(fd)

    # -- how bytes reach the folder ------------------------------------------------------------

    @property
    def location(self) -> Path:
        return self.out

    def _put_part(self, name: str, results: pa.Table, plans: pa.Table) -> tuple[str, str]:
        staged_results = tmp_path(self.folder.staging / name)
        staged_plans = tmp_path(self.folder.staging / f"plans-{name}")
        try:
            with writing(self.out / name):
                pq.write_table(results, staged_results)
            with writing(self.folder.plan_parts / name):
                pq.write_table(plans, staged_plans)
        except BaseException:
            staged_results.unlink(missing_ok=True)   # nothing half-written stays (a full disk)
            staged_plans.unlink(missing_ok=True)
            raise
        sha, plans_sha = sha256_file(staged_results), sha256_file(staged_plans)
        os.replace(staged_plans, self.folder.plan_parts / name)
        os.replace(staged_results, self.out / name)
        return sha, plans_sha

    def _stat(self, rel: str) -> PartStat:
        return digest_file(self.out / rel)

    def _forget_completion(self) -> None:
        self.folder.success_path.unlink(missing_ok=True)
        self.folder.plans_path.unlink(missing_ok=True)

    def _remove_part(self, name: str) -> None:
        (self.out / name).unlink(missing_ok=True)
        (self.out / PLAN_PARTS / name).unlink(missing_ok=True)

    def _put_plans(self, parts: list[str], meta: dict[str, bytes]) -> None:
        tmp = tmp_path(self.folder.staging / PLANS)
        with writing(self.folder.plans_path):
            write_plans(tmp, (self.folder.plan_parts / name for name in parts), meta)
        os.replace(tmp, self.folder.plans_path)
        self._clear_leftovers()

    def _put_success(self, body: bytes) -> None:
        with writing(self.folder.success_path):
            self.folder.success_path.write_bytes(body)

    # -- private helpers ----------------------------------------------------------------------

    def _inspect(self) -> dict[str, Any] | None:
        """Check the folder without writing: its manifest (None for a new folder) and that it
        holds nothing CodeNib did not write (unless `force`)."""
        out, folder = self.out, self.folder
        if out.exists() and not out.is_dir():
            raise BadInputError("the output path is a file", path=str(out), fix="pass a folder to --out")
        if not out.is_dir():
            return None
        manifest = None
        if folder.manifest_path.is_file():
            try:
                manifest = folder.manifest()
            except (OSError, ValueError) as exc:
                raise BadInputError(f"unreadable {MANIFEST}: {exc}", path=str(folder.manifest_path),
                                    fix="remove the folder or pass another --out") from exc
            if manifest.get("format") != RESULTS_FORMAT or manifest.get("fingerprint") != self.fingerprint:
                raise BadInputError(
                    "the output folder holds another job's results (different queries, indexes or "
                    "options)", path=str(out),
                    fix="pass a new --out, or re-run with exactly the options of that job to resume it")
        check_results_dir(out, self.force)
        return manifest

    def _lock(self) -> None:
        """Take the folder's flock or raise naming the live holder (see the module docstring)."""
        path = self.folder.lock_path
        me = {"pid": os.getpid(), "host": socket.gethostname()}
        deadline = time.monotonic() + HOLDER_WAIT_S
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                holder = _read_holder(path)
                if _live(holder, me["host"]) or time.monotonic() > deadline:
                    raise self._locked(holder) from None
                time.sleep(0.005)   # the holder has the lock but has not written its name yet
                continue
            except BaseException:
                os.close(fd)
                raise
            if _same_file(fd, path):
                break
            os.close(fd)            # the holder removed _LOCK as we opened it: take the new one
        try:
            previous = parse_holder(os.pread(fd, 4096, 0))
            if previous and previous.get("pid") != me["pid"] and _live(previous, me["host"]):
                # Not held, yet it names a running process (an older CodeNib without flock, or a
                # job on another host where flock may not reach): do not take it.
                raise self._locked(previous)
            if previous and previous.get("pid") != me["pid"]:
                self.log(f"{self.out}: taking over the lock of pid {previous.get('pid')} on "
                         f"{previous.get('host')}, which is no longer running")
            data = json.dumps(me).encode()
            with writing(path):
                os.ftruncate(fd, 0)
                os.pwrite(fd, data, 0)
        except BaseException as exc:
            if isinstance(exc, DiskWriteError) and _same_file(fd, path):
                path.unlink()      # still held: an empty _LOCK would be all the folder holds
            os.close(fd)
            raise
        self._lock_fd = fd

    def _locked(self, holder: dict[str, Any] | None) -> BadInputError:
        who = (f"pid {holder.get('pid')} on {holder.get('host')}" if holder
               else "a process that has not recorded its pid yet")
        return BadInputError(f"another job ({who}) is writing to this results folder", path=str(self.out),
                             fix=f"wait for it to finish, or remove {self.folder.lock_path} if no job is "
                                 "running there")

    def _clear_leftovers(self) -> None:
        """Remove what an interrupted writer left (staged shards, temporary files): under the
        lock, after the foreign-file check, so only CodeNib's own files are there."""
        for path in _leftovers(self.folder):
            path.unlink(missing_ok=True)

    def _write_manifest(self) -> None:
        tmp = tmp_path(self.folder.manifest_path)
        try:
            with writing(self.folder.manifest_path):
                tmp.write_text(json.dumps(self._manifest, indent=2, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.folder.manifest_path)
        finally:
            tmp.unlink(missing_ok=True)


def _leftovers(folder: ResultsFolder) -> list[Path]:
    """CodeNib's files an interrupted writer left: staged shards and temporary files."""
    out = []
    for where in (folder.staging, folder.path, folder.plan_parts):
        if where.is_dir():
            out += [p for p in where.iterdir() if p.is_file() and not p.is_symlink()
                    and (where == folder.staging or TMP_NAME.fullmatch(p.name))
                    and RESULTS_OWNERSHIP.owns(p.relative_to(folder.path).as_posix())]
    return out


def _read_holder(path: Path) -> dict[str, Any] | None:
    try:
        return parse_holder(path.read_bytes())
    except OSError:
        return None


def _live(holder: dict[str, Any] | None, host: str) -> bool:
    """Whether `holder` may still run: on this host, its pid is alive; another host's pid
    cannot be checked from here, so it counts as alive."""
    if not holder:
        return False
    return holder.get("host") != host or pid_alive(holder.get("pid"))


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    fst = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass   # not empty, or already gone


def write_plans(dest: Path | str, parts, meta: dict) -> None:
    """`plans.parquet` at `dest`: the plan parts (files, in the order given) appended one
    at a time through a ParquetWriter, so a million plan rows are never one table in memory.
    The same rows and schema (metadata included) as concatenating the parts."""
    schema = PLANS_SCHEMA.with_metadata(meta)
    held: list[pa.Table] = []
    rows = 0
    with pq.ParquetWriter(str(dest), schema) as writer:
        # Parts gathered into row groups of PLANS_GROUP_ROWS: a row group per part (thousands
        # of them) would make the footer, with its statistics of long `trace` strings, grow
        # with the job.
        for part in parts:
            table = pq.read_table(part).cast(PLANS_SCHEMA).replace_schema_metadata(meta)
            held.append(table)
            rows += table.num_rows
            if rows >= PLANS_GROUP_ROWS:
                writer.write_table(pa.concat_tables(held), row_group_size=max(rows, 1))
                held, rows = [], 0
        if held:
            writer.write_table(pa.concat_tables(held), row_group_size=max(rows, 1))


#: Rows per row group of `plans.parquet` (a few MB of plan rows held while it is written).
PLANS_GROUP_ROWS = 8192
