"""Where the per-file store keeps its entries: a local folder or object storage.

`FileCache` (nodes and term counts) and `VectorStore` (vectors) name their entries with
relative posix paths (`v3/ab/abcdef....json.gz`, `vectors/v1/<fingerprint>/ab/....npy`) and
read and write them through a backend:

* `LocalBackend`: a folder; an entry is written to a temporary name and renamed, so a reader
  never sees half of one, and an entry already there (loose, or packed into a larger file
  once a job was done with it: `codenib.core.store_packs`) is left as it is;
* `ObjectBackend`: a `pyarrow.fs` URI (`s3://bucket/prefix`) through `codenib.core.storage`;
  an entry is one PUT, which the store makes whole or nothing (a second writer of the same
  key writes the same bytes: keys are content addresses).

Reads are best effort: a missing, unreadable or unreachable entry is None (a miss: the file is
parsed or encoded again). Whether the store can be reached at all is checked once, at the
edge (`check`), so a bad bucket stops a job at its start rather than turning every entry into
a miss. An object backend carries its `StorageConfig` as data (pickled with it to Ray tasks)
and opens its filesystem where it is first used.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlsplit

from codenib.core.errors import BadInputError
from codenib.core.storage import Location, StorageConfig


class StoreBackend(Protocol):
    """Named byte entries under one root (names are relative posix paths)."""

    def read(self, name: str) -> bytes | None:
        """The entry's bytes, or None when it is missing or cannot be read."""

    def write(self, name: str, data: bytes) -> None:
        """Store an entry whole or not at all. Raises OSError when it cannot be written."""

    def check(self) -> None:
        """Raise `StorageError` unless the store can be reached (a no-op for a folder)."""

    def shown(self, name: str = "") -> str:
        """The root (or an entry under it) for messages and manifests."""


class LocalBackend:
    """Entries as files under a folder (the layout of every store before object storage), or
    packed into larger files (`codenib.core.store_packs`) once a job is done with them."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._packs = None

    def read(self, name: str) -> bytes | None:
        try:
            return (self.root / name).read_bytes()
        except OSError:
            return self._packed().read(name)

    def has(self, name: str) -> bool:
        """Whether the store holds the entry, loose or packed."""
        return (self.root / name).is_file() or self._packed().has(name)

    def write(self, name: str, data: bytes) -> None:
        path = self.root / name
        if path.exists() or self._packed().has(name):   # written once: the same key always holds the same bytes
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def check(self) -> None:
        """A folder, or nothing yet (made on the first write); a file there is bad input."""
        if self.root.exists() and not self.root.is_dir():
            raise BadInputError("the per-file store is a file, not a folder", path=str(self.root),
                                fix="pass a folder (it is made when missing), or leave --store out")

    def shown(self, name: str = "") -> str:
        return str(self.root / name) if name else str(self.root)

    def _packed(self):
        if self._packs is None:
            from codenib.core.store_packs import Packs

            self._packs = Packs(self.root)
        return self._packs

    def __reduce__(self):
        return LocalBackend, (str(self.root),)

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.root)!r})"


class ObjectBackend:
    """Entries as objects under a `pyarrow.fs` URI (`s3://bucket/prefix`)."""

    def __init__(self, uri: str, storage: StorageConfig):
        self.uri = uri.rstrip("/")
        self.storage = storage
        self._store = None

    def read(self, name: str) -> bytes | None:
        store = self._opened()
        try:
            # One GET (no look-up first): a missing key is an OSError like any other failure.
            with store.fs.open_input_stream(store.path(name)) as fh:
                return fh.read()
        except (OSError, ValueError):
            return None

    def write(self, name: str, data: bytes) -> None:
        from codenib.core.errors import CodeNibError

        try:
            self._opened().write_bytes(name, data)
        except CodeNibError as exc:    # the callers skip an entry they cannot write (best effort)
            raise OSError(str(exc)) from exc

    def check(self) -> None:
        self._opened().check_bucket()

    def shown(self, name: str = "") -> str:
        return f"{self.uri}/{name}" if name else self.uri

    def _opened(self):
        if self._store is None:
            self._store = self.storage.open(self.uri)
        return self._store

    def __reduce__(self):
        # The filesystem is opened again where the backend lands (a Ray worker).
        return ObjectBackend, (self.uri, self.storage)

    def __repr__(self) -> str:
        return f"ObjectBackend({self.uri!r})"


def open_backend(where: "str | os.PathLike | Location | StoreBackend",
                 storage: StorageConfig | None = None) -> StoreBackend:
    """The backend of a store at `where`: a folder, a `file://` URI (a folder too) or another
    `pyarrow.fs` URI; a backend as it is. `storage`: where object storage is (the edge reads
    it from the environment once and passes it down; None reads it here)."""
    if isinstance(where, (LocalBackend, ObjectBackend)):
        return where
    location = Location.of(where)
    if not location.uri:
        return LocalBackend(location.text)
    parts = urlsplit(location.text)
    if parts.scheme.lower() == "file":
        return LocalBackend(unquote(parts.path))
    return ObjectBackend(location.text, storage if storage is not None else StorageConfig.from_env())
