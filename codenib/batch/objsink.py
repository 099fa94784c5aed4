"""`ObjectStoreSink`: the results folder of `codenib.core.results` on object storage (`--out s3://...`).

The same layout and the same guarantees as `ParquetSink`, without renames (a store has none):

* A shard is PUT under `_staging/` (temporary names), copied server-side to `_plans/part-N`
  and `part-N` (a PUT or a copy makes an object appear whole or not at all), the staged
  objects are deleted, and only then is the shard recorded in `_manifest.json` (one PUT
  replacing it: the commit marker). A shard counts as committed only once the manifest lists
  it; `open` deletes every part the manifest does not list and everything under `_staging/`,
  so a re-run repeats exactly the shards that were not committed: no lost or duplicated rows.
* `plans.parquet` is written once every shard is committed, and `_SUCCESS` last.
* One writer per prefix. `_LOCK` is created with a precondition (`If-None-Match: *`, through
  boto3 when it is installed: S3, MinIO and moto honour it), so of two jobs that start together
  exactly one gets it; the other exits 2 naming the holder. A lock whose holder was a process of
  this host that no longer runs (a killed driver) is taken over with a message; one held from
  another host is refused (fix: remove `_LOCK` if no job runs there). Without boto3, or on a
  store that is not S3, the lock is written after a look-up (not atomic): the rule is then
  one job per results prefix, which the lock enforces against any job that started earlier.
* A prefix is inspected before anything is written: another job's manifest, objects CodeNib
  did not write (unless `--force`, which deletes them) or a prefix with nothing of CodeNib's in
  it exit 2 naming the URI, and nothing is written.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.core.artifact import pid_alive
from codenib.batch.sinkbase import ShardSink, parse_holder
from codenib.core.errors import BadInputError
from codenib.core.outputs import tmp_path
from codenib.core.results import (LOCK, MANIFEST, PLAN_PARTS, PLANS, RESULTS_FORMAT, RESULTS_OWNERSHIP, STAGING, SUCCESS,
                             PartStat, digest_bytes)
from codenib.core.storage import NO_ANSWER_FIX, Location, StorageConfig, StorageError

#: botocore's errors of a request that got no answer in time, or no connection.
_NO_ANSWER_ERRORS = frozenset({"ConnectTimeoutError", "ReadTimeoutError", "EndpointConnectionError",
                               "ConnectionClosedError"})


class ObjectStoreSink(ShardSink):
    """Writes one results prefix on object storage; the interface of `ParquetSink`."""

    def __init__(self, out: str, fingerprint: str, metadata: dict[str, Any], total_shards: int, *,
                 storage: StorageConfig, force: bool = False, log: Callable[[str], None] | None = None):
        super().__init__(fingerprint, metadata, total_shards, force=force, log=log)
        self.uri = out.rstrip("/")
        self.store = storage.open(self.uri)
        self.storage = storage
        self._lock_nonce: str | None = None
        self._complete = False

    # -- lifecycle ------------------------------------------------------------------------------

    def open(self) -> set[int]:
        """Create or resume the prefix under its lock; refuse one that holds something else.

        Raises:
            StorageError: the bucket cannot be reached or does not exist.
            BadInputError: the prefix holds another job's results or objects CodeNib did not
                write (without `force`), or another job holds its lock.
        """
        self.store.check_bucket()
        self._inspect()                       # reads only: a refused prefix is left as it was
        self._lock()
        try:
            listing = self.store.listing()
            manifest = self._inspect(listing)  # again, under the lock: the answer that counts
            if self.force:
                for rel in _foreign(listing):
                    self.store.delete(rel)
            if manifest is None:
                self._manifest = self._new_manifest()
                self._write_manifest()
                self._created = not listing or set(listing) == {LOCK}
            else:
                self._manifest = manifest
                self._complete = self.store.is_file(SUCCESS)
                self.drop_damaged()
            self._clear_leftovers(self.store.listing())
            self._complete = self.store.is_file(SUCCESS)
        except BaseException:
            self.close()
            raise
        return self._resumable()

    @property
    def complete(self) -> bool:
        return self._complete

    def discard_if_unused(self) -> None:
        """After `close`: delete the manifest again if `open` wrote the first object of the
        prefix and nothing was committed (bad input found once the job started)."""
        if not self._created or self._manifest.get("shards"):
            return
        self.store.delete(MANIFEST)
        # pyarrow leaves an empty "folder" marker object where it deleted the last object
        # under a prefix; remove it with a plain delete (boto3) when the prefix is empty.
        client = _s3_client(self.storage) if self.store.scheme == "s3" else None
        if client is not None and not self.store.listing():
            bucket, _, key = self.store.path().partition("/")
            client.delete_object(Bucket=bucket, Key=key.rstrip("/") + "/")

    def read_plans(self, columns: list[str] | None = None) -> pa.Table:
        return _read_parquet(self.store.read_bytes(PLANS), columns)

    def close(self) -> None:
        """Delete `_LOCK` if this sink still holds it; safe to call more than once."""
        nonce, self._lock_nonce = self._lock_nonce, None
        if nonce is None:
            return
        try:
            self.store.delete_dir(STAGING)
            holder = parse_holder(self.store.read_bytes(LOCK)) if self.store.is_file(LOCK) else None
            if holder and holder.get("nonce") == nonce:
                self.store.delete(LOCK)
        except StorageError as exc:
            self.log(f"warning: could not remove {self.store.uri_of(LOCK)}: {exc}")

    # -- how bytes reach the store -------------------------------------------------------------

    @property
    def location(self) -> str:
        return self.uri

    def _put_part(self, name: str, results: pa.Table, plans: pa.Table) -> tuple[str, str]:
        """PUT both under `_staging/`, copy them into place server-side, delete the staged ones."""
        staged_results = f"{STAGING}/{tmp_path(Path(name)).name}"
        staged_plans = f"{STAGING}/{tmp_path(Path('plans-' + name)).name}"
        results_bytes, plans_bytes = _parquet(results), _parquet(plans)
        self.store.write_bytes(staged_results, results_bytes)
        self.store.write_bytes(staged_plans, plans_bytes)
        self.store.copy(staged_plans, f"{PLAN_PARTS}/{name}")
        self.store.copy(staged_results, name)
        self.store.delete(staged_plans, exists=True)
        self.store.delete(staged_results, exists=True)
        return hashlib.sha256(results_bytes).hexdigest(), hashlib.sha256(plans_bytes).hexdigest()

    def _stat(self, rel: str) -> PartStat:
        # Read whole: a part is one shard's rows (a few MB), and the store has no cheaper
        # checksum that is the same on every S3 implementation (ETags of multipart uploads differ).
        return digest_bytes(self.store.read_bytes(rel)) if self.store.is_file(rel) else None

    def _forget_completion(self) -> None:
        for name in (SUCCESS, PLANS):
            self.store.delete(name)
        self._complete = False

    def _remove_part(self, name: str) -> None:
        for rel in (name, f"{PLAN_PARTS}/{name}"):
            self.store.delete(rel)

    def _put_plans(self, parts: list[str], meta: dict[str, bytes]) -> None:
        """Built in a local temporary file a part at a time, then one PUT (atomic on S3)."""
        import tempfile

        from codenib.batch.sink import write_plans

        with tempfile.TemporaryDirectory(prefix="codenib-plans-") as tmp:
            readers = (pa.BufferReader(self.store.read_bytes(f"{PLAN_PARTS}/{name}")) for name in parts)
            write_plans(Path(tmp) / PLANS, readers, meta)
            self.store.upload(Path(tmp) / PLANS, PLANS)

    def _put_success(self, body: bytes) -> None:
        self.store.write_bytes(SUCCESS, body)
        self._complete = True

    # -- private helpers ------------------------------------------------------------------------

    def _inspect(self, listing: dict[str, int] | None = None) -> dict[str, Any] | None:
        listing = self.store.listing() if listing is None else listing
        if not listing:
            return None
        if not any(_ours(rel) for rel in listing):
            raise BadInputError("the output prefix is not empty and holds no CodeNib results; refusing to "
                                "overwrite it", path=self.uri, fix="choose a new --out prefix or empty this one yourself")
        manifest = None
        if MANIFEST in listing:
            try:
                manifest = json.loads(self.store.read_bytes(MANIFEST))
            except ValueError as exc:
                raise BadInputError(f"unreadable {MANIFEST}: {exc}", path=self.store.uri_of(MANIFEST),
                                    fix="remove the prefix or pass another --out") from exc
            if (not isinstance(manifest, dict) or manifest.get("format") != RESULTS_FORMAT
                    or manifest.get("fingerprint") != self.fingerprint):
                raise BadInputError(
                    "the output prefix holds another job's results (different queries, indexes or "
                    "options)", path=self.uri,
                    fix="pass a new --out, or re-run with exactly the options of that job to resume it")
        foreign = _foreign(listing)
        if foreign and not self.force:
            more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
            raise BadInputError(
                f"the results prefix {self.uri} holds an object CodeNib did not write{more}; nothing was changed",
                path=self.store.uri_of(foreign[0]),
                fix=f"move {foreign[0]} out of {self.uri}, pass another --out, or pass --force to go on and "
                    "delete the objects CodeNib did not write")
        return manifest

    def _lock(self) -> None:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "nonce": uuid.uuid4().hex,
              "run_id": self.metadata.get("run_id"), "time": time.time()}
        body = json.dumps(me).encode()
        if self._create(LOCK, body):
            self._lock_nonce = me["nonce"]
            return
        holder = parse_holder(self.store.read_bytes(LOCK)) if self.store.is_file(LOCK) else None
        if holder and holder.get("host") == me["host"] and not pid_alive(holder.get("pid")):
            self.log(f"{self.uri}: taking over the lock of pid {holder.get('pid')} on {holder.get('host')}, "
                     "which is no longer running")
            self.store.delete(LOCK)
            if self._create(LOCK, body):
                self._lock_nonce = me["nonce"]
                return
            holder = parse_holder(self.store.read_bytes(LOCK)) if self.store.is_file(LOCK) else None
        who = (f"pid {holder.get('pid')} on {holder.get('host')}" if holder
               else "a process that has not recorded its pid yet")
        raise BadInputError(f"another job ({who}) is writing to this results prefix", path=self.uri,
                            fix=f"wait for it to finish, or delete {self.store.uri_of(LOCK)} if no job is running there")

    def _create(self, name: str, body: bytes) -> bool:
        """Write `name` only if it does not exist; False when it does (see the module docstring)."""
        client = _s3_client(self.storage) if self.store.scheme == "s3" else None
        if client is None:
            if self.store.exists(name):
                return False
            self.store.write_bytes(name, body)
            return True
        bucket, _, key = self.store.path(name).partition("/")
        try:
            client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*")
        except Exception as exc:  # noqa: BLE001 - botocore's ClientError, checked by code
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                return False
            uri = self.store.uri_of(name)
            if type(exc).__name__ in _NO_ANSWER_ERRORS:
                raise StorageError(self.storage.no_answer(uri, "create", str(exc)), path=uri,
                                   fix=NO_ANSWER_FIX) from exc
            raise StorageError(f"cannot create {uri}: {exc}", path=uri,
                               fix="check the bucket's permissions and CODENIB_S3_ENDPOINT") from exc
        return True

    def _clear_leftovers(self, listing: dict[str, int]) -> None:
        """Delete what an interrupted writer left: staged objects, and parts the manifest does
        not list (copied into place, never committed)."""
        committed = {v["file"] for v in self._manifest.get("shards", {}).values()}
        for rel in listing:
            folder, _, name = rel.rpartition("/")
            if folder == STAGING or (folder in ("", PLAN_PARTS) and name.startswith("part-")
                                     and name not in committed):
                self.store.delete(rel)

    def _write_manifest(self) -> None:
        self.store.write_bytes(MANIFEST, json.dumps(self._manifest, indent=2, sort_keys=True).encode())


def make_sink(out: Location, fingerprint: str, metadata: dict[str, Any], total_shards: int, *, force: bool,
              log: Callable[[str], None], storage: StorageConfig | None):
    """The sink of `out`: on object storage for a URI, else a local folder."""
    if out.uri:
        return ObjectStoreSink(out.text, fingerprint, metadata, total_shards, storage=storage or StorageConfig(),
                               force=force, log=log)
    from codenib.batch.sink import ParquetSink

    return ParquetSink(out.text, fingerprint, metadata, total_shards, force=force, log=log)


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _read_parquet(data: bytes, columns: list[str] | None = None) -> pa.Table:
    return pq.read_table(pa.BufferReader(data), columns=columns)


def _ours(rel: str) -> bool:
    top = rel.split("/", 1)[0]
    return top in RESULTS_OWNERSHIP.dirs if "/" in rel else RESULTS_OWNERSHIP.owns(rel)


def _foreign(listing: dict[str, int]) -> list[str]:
    """Objects CodeNib did not write (a folder it does not use is one entry, `notes/`)."""
    out = set()
    for rel in listing:
        folder = rel.rpartition("/")[0]
        if folder and folder not in RESULTS_OWNERSHIP.dirs:
            out.add(rel.split("/", 1)[0] + "/")
        elif not RESULTS_OWNERSHIP.owns(rel):
            out.add(rel)
    return sorted(out)


def _s3_client(storage: StorageConfig):
    """A boto3 S3 client for conditional writes, or None without boto3 (see the module docstring)."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        return None
    return boto3.client("s3", endpoint_url=storage.endpoint, region_name=storage.region or "us-east-1",
                        config=Config(connect_timeout=storage.connect_timeout, read_timeout=storage.request_timeout,
                                      retries={"total_max_attempts": storage.attempts, "mode": "standard"}))
