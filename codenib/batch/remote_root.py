"""An index root on object storage: `codenib index-set --index-root s3://bucket/prefix`.

On a cluster whose nodes share no file system, each run of snapshots builds in a scratch
folder of its node (the system's temporary folder, `TMPDIR`: `codenib.batch.indexset.build_run`)
and publishes every index it finishes under `ROOT/<index>/`: an earlier index's manifest of that
name is deleted, the artifacts the new manifest lists are uploaded, and `manifest.json` goes
last. An index is thus on the store exactly when its manifest is, and a job killed mid-upload
leaves one without a manifest, which the next job builds again (objects of the half upload
are overwritten or, not being listed, never read). The queries of `codenib run --index-root
s3://...` copy each index into a node-local cache and verify its checksums
(`codenib.index.remote`). The report `ROOT/_index_set.parquet` is one PUT.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codenib.core.artifact import MANIFEST

if TYPE_CHECKING:
    import pyarrow as pa

    from codenib.core.storage import Store, StorageConfig


class RemoteRoot:
    """The index root at `uri` (a `pyarrow.fs` URI), reached with `storage`; it travels to
    Ray tasks as its URI and configuration (each process opens its own file system)."""

    def __init__(self, uri: str, storage: "StorageConfig"):
        self.uri = uri.rstrip("/")
        self.storage = storage
        self._store: "Store | None" = None

    def __reduce__(self):
        return (RemoteRoot, (self.uri, self.storage))

    @property
    def store(self) -> "Store":
        if self._store is None:
            self._store = self.storage.open(self.uri)
        return self._store

    def check(self) -> None:
        """Reach the bucket once, before any work.

        Raises:
            StorageError: a missing bucket or an endpoint that does not answer (exit 2).
        """
        self.store.check_bucket()

    def manifest(self, name: str) -> dict[str, Any] | None:
        """The manifest of the index `name`, or None when it has none (never built, or its
        upload did not finish) or one that does not parse.

        Raises:
            StorageError: the store could not be read (not taken for "not built": a
                storage fault must not make every index build and upload again).
        """
        if not self.store.is_file(f"{name}/{MANIFEST}"):
            return None
        try:
            return json.loads(self.store.read_bytes(f"{name}/{MANIFEST}"))
        except ValueError:      # not JSON (or not UTF-8): not an index of ours to keep
            return None

    def publish(self, folder: Path, name: str) -> None:
        """Upload the index at `folder` as `name`: its listed artifacts, then its manifest.

        Raises:
            StorageError, StorageIOError: an upload failed (the index is then not on the
                store: its manifest went last).
        """
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        # An earlier index of this name (other commit or settings) loses its manifest first,
        # so a stopped upload never leaves an old manifest over a mix of artifacts.
        self.store.delete(f"{name}/{MANIFEST}")
        for rel in sorted(manifest.get("artifacts") or {}):
            self.store.upload(folder / rel, f"{name}/{rel}")
        self.store.upload(folder / MANIFEST, f"{name}/{MANIFEST}")

    def write_table(self, table: "pa.Table", name: str) -> None:
        """One Parquet file under the root, in one PUT."""
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        self.store.write_bytes(name, buffer.getvalue())
