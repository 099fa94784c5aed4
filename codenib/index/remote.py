"""Indexes on object storage: a node-local cache of verified copies.

An index at a URI (`s3://bucket/indexes/click`) is copied into `CACHE/<self_sha256>/` (the
manifest's own checksum: two URIs of the same index share one copy, a rebuilt index gets a
new one). A copy is made in a staging folder, verified (every artifact's size and sha256,
and the manifest's own checksum equal to the key) and renamed into place, under a per-key
`flock`, so the processes of a node (driver, actors) fetch each index once. A copy is
verified again every time it is taken from the cache: a copy that fails (a disk error, a
hand edit) is removed and fetched again. The cache is bounded in bytes: after each fetch
the least recently used copies go until the total fits (a copy another process is fetching
or checking is skipped).

Only the files the manifest lists are copied (plus `manifest.json`).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from codenib.core.artifact import MANIFEST, SELF_CHECKSUM, is_store_layout, manifest_checksum, read_manifest
from codenib.core.errors import IndexFormatError
from codenib.core.storage import StorageConfig, StorageError, is_uri

#: Default bound of a node's index cache.
DEFAULT_CACHE_BYTES = 50 * 2**30
_USED = ".used"        # sidecar file whose mtime is the copy's last use (LRU clock)
_LOCKS = ".locks"

#: What this process's caches did, for summaries and tests: fetches, hits, refetches, evictions.
STATS: Counter = Counter()


@dataclass(frozen=True)
class IndexCacheDir:
    """A node-local cache of index copies (see the module docstring)."""

    root: str
    max_bytes: int = DEFAULT_CACHE_BYTES
    storage: StorageConfig = StorageConfig()

    def local(self, uri: str, expect_sha: str = "", log: Callable[[str], None] | None = None) -> Path:
        """The verified local copy of the index at `uri`, fetched if needed.

        `expect_sha`: the sha256 of the manifest file the job recorded (a rebuilt index is
        an error, not a silent switch).

        Raises:
            IndexFormatError: no manifest at the URI, a manifest without `self_sha256`, an
                index that changed since the job started, or a copy that fails its checksums
                twice (each naming the URI and the fix).
            StorageError: the store cannot be read.
        """
        log = log or _stderr
        store = self.storage.open(uri)
        if not store.is_file(MANIFEST):
            raise IndexFormatError(f"no {MANIFEST} at {uri}: not a CodeNib index", path=uri,
                                   fix=f"upload a built index folder (codenib index REPO --out DIR) to {uri}")
        raw = store.read_bytes(MANIFEST)
        if expect_sha:
            import hashlib

            found = hashlib.sha256(raw).hexdigest()
            if found != expect_sha:
                raise IndexFormatError(f"the index changed since the job started (manifest sha256 {found[:12]}, "
                                       f"expected {expect_sha[:12]})", path=uri,
                                       fix="re-run the job on an index that stays put, or pass a new --out")
        try:
            manifest = json.loads(raw)
        except ValueError as exc:
            raise IndexFormatError(f"unreadable manifest: {exc}", path=f"{uri}/{MANIFEST}",
                                   fix="upload the index again") from exc
        key = manifest.get(SELF_CHECKSUM) if isinstance(manifest, dict) else None
        if not isinstance(key, str) or len(key) != 64 or manifest_checksum(manifest) != key:
            raise IndexFormatError(f"the manifest has no valid {SELF_CHECKSUM}", path=f"{uri}/{MANIFEST}",
                                   fix="rebuild the index with `codenib index` and upload it again")
        if is_store_layout(manifest):
            # Its nodes live in a per-file store beside it, which is not copied from object storage.
            raise IndexFormatError("this index is in the store layout (`index-set --layout store`): its nodes are "
                                   "read from a local per-file store, which an index on object storage does not "
                                   "carry", path=uri, fix="upload indexes built with `--layout full`, or run on the "
                                                          "local index root")
        root = Path(self.root)
        root.mkdir(parents=True, exist_ok=True)
        dest = root / key
        with _flock(root / _LOCKS / f"{key}.lock"):
            if dest.is_dir():
                try:
                    _verify(dest, key)
                    STATS["hits"] += 1
                    _touch(root, key)
                    return dest
                except IndexFormatError as exc:
                    STATS["refetches"] += 1
                    log(f"warning: the cached copy of {uri} in {dest} is corrupt ({exc}); fetching it again")
                    shutil.rmtree(dest, ignore_errors=True)
            self._fetch(store, manifest, raw, dest, uri)
            STATS["fetches"] += 1
            _touch(root, key)
        self.evict(keep=key)
        return dest

    def evict(self, keep: str = "") -> list[str]:
        """Remove least recently used copies until the cache holds at most `max_bytes`
        (never `keep`, nor a copy another process holds the lock of). Returns the keys removed."""
        root = Path(self.root)
        entries = []
        for d in root.iterdir() if root.is_dir() else ():
            if d.is_dir() and len(d.name) == 64 and not d.name.startswith("."):
                used = root / _LOCKS / f"{d.name}{_USED}"
                entries.append((used.stat().st_mtime if used.exists() else 0.0, d.name, _size(d)))
        total = sum(e[2] for e in entries)
        removed = []
        for _, key, size in sorted(entries):
            if total <= self.max_bytes:
                break
            if key == keep:
                continue
            with _flock(root / _LOCKS / f"{key}.lock", blocking=False) as held:
                if not held:
                    continue
                shutil.rmtree(root / key, ignore_errors=True)
                (root / _LOCKS / f"{key}{_USED}").unlink(missing_ok=True)
            total -= size
            removed.append(key)
            STATS["evictions"] += 1
        return removed

    def _fetch(self, store, manifest: dict, raw: bytes, dest: Path, uri: str) -> None:
        """Copy the listed files into a staging folder, verify, rename into place."""
        staging = dest.with_name(f".{dest.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        try:
            staging.mkdir(parents=True)
            names = sorted(manifest.get("artifacts", {}))
            for name in names:
                if not store.is_file(name):
                    raise IndexFormatError(f"the index lists {name} but there is no such object", path=f"{uri}/{name}",
                                           fix="upload the whole index folder again")
                target = staging / name
                target.parent.mkdir(parents=True, exist_ok=True)
                store.download(name, target)
            (staging / MANIFEST).write_bytes(raw)
            try:
                _verify(staging, dest.name)
            except IndexFormatError as exc:
                raise IndexFormatError(f"the copy of {uri} fails its checksums: {exc}", path=uri,
                                       fix="upload the index folder again (an object differs from what its "
                                           "manifest lists), or rebuild it with `codenib index`") from None
            os.replace(staging, dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def local_index(path: str, cache: IndexCacheDir | None, expect_sha: str = "",
                log: Callable[[str], None] | None = None) -> str:
    """`path` itself when local, else its verified cached copy."""
    if not is_uri(path):
        return path
    if cache is None:
        raise StorageError("an index on object storage needs a node-local cache", path=path,
                           fix="pass --index-cache DIR")
    return str(cache.local(path, expect_sha, log))


def index_exists(path: str, storage: StorageConfig) -> bool:
    """Whether an index folder (local or URI) holds a manifest.json."""
    if is_uri(path):
        return storage.open(path).is_file(MANIFEST)
    return (Path(path) / MANIFEST).is_file()


def _verify(folder: Path, key: str) -> None:
    manifest = read_manifest(folder, verify=True)
    if manifest.get(SELF_CHECKSUM) != key:
        raise IndexFormatError(f"the manifest's {SELF_CHECKSUM} is not {key[:12]}", path=str(folder),
                               fix="remove the cached copy")


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _touch(root: Path, key: str) -> None:
    used = root / _LOCKS / f"{key}{_USED}"
    used.touch()
    now = time.time()
    os.utime(used, (now, now))


@contextmanager
def _flock(path: Path, blocking: bool = True) -> Iterator[bool]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)

