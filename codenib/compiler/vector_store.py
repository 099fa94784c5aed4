"""Node vectors per file version, in the per-file store, shared by every index that holds
the same file with the same texts under the same model.

A `--reuse` build takes the unchanged vectors of the one index it names; a snapshot set cut
into runs (`codenib index-set`) starts each run without one, and a repository's next job
starts from nothing. The store keeps each file's vectors under a key made of the model's
fingerprint and the exact texts encoded (every node's body text, then every node's name
text, in order), so an entry is found only for texts that would encode to it: nothing about
readers, paths or commits can make a stale entry match.

    STORE/vectors/v1/<fingerprint>/ab/abcdef....npy     # (2 x nodes, dimension) float32

Entries are written once (a temporary name, then renamed; on object storage one PUT) and read
best effort: a missing, damaged or mis-shaped entry is encoded again, never trusted. The store
is a local folder or a `pyarrow.fs` URI (`codenib.core.store_backend`).
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence

import numpy as np

from codenib.core.store_backend import StoreBackend, open_backend

#: Bumped when the entry layout or key changes (old entries are then simply not found).
VECTOR_STORE_VERSION = 1
#: The folder under the per-file store's root.
VECTORS_DIR = "vectors"


class VectorStore:
    """The vectors of one model (its `fingerprint`, `dimension` wide) under a store root (a
    folder, a URI, or a backend: `open_backend`)."""

    def __init__(self, root: "str | os.PathLike | StoreBackend", fingerprint: str, dimension: int):
        self.backend = open_backend(root)
        self._prefix = f"{VECTORS_DIR}/v{VECTOR_STORE_VERSION}/{fingerprint}"
        #: Where this model's entries are, for messages.
        self.root = self.backend.shown(self._prefix)
        self.fingerprint = fingerprint
        self.dimension = dimension

    def get(self, bodies: Sequence[str], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """The (body, name) vectors of one file's nodes, or None when not stored."""
        raw = self.backend.read(self._name(bodies, names))
        if raw is None:
            return None
        try:
            data = np.load(io.BytesIO(raw), allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        n = len(bodies)
        if data.shape != (2 * n, self.dimension) or data.dtype != np.float32:
            return None
        return data[:n], data[n:]

    def put(self, bodies: Sequence[str], names: Sequence[str], body_vectors: np.ndarray,
            name_vectors: np.ndarray) -> None:
        """Store one file's vectors (atomically; the same key always holds the same vectors).
        Raises OSError when the store cannot be written."""
        data = np.concatenate([body_vectors, name_vectors]).astype(np.float32, copy=False)
        buffer = io.BytesIO()
        np.save(buffer, data, allow_pickle=False)
        self.backend.write(self._name(bodies, names), buffer.getvalue())

    def _name(self, bodies: Sequence[str], names: Sequence[str]) -> str:
        digest = _texts_digest(self.fingerprint, bodies, names)
        return f"{self._prefix}/{digest[:2]}/{digest}.npy"


def file_groups(files: Sequence[str]) -> dict[str, list[int]]:
    """File path -> the rows of its nodes, in row order."""
    groups: dict[str, list[int]] = {}
    for row, rel in enumerate(files):
        groups.setdefault(rel, []).append(row)
    return groups


def _texts_digest(fingerprint: str, bodies: Sequence[str], names: Sequence[str]) -> str:
    h = hashlib.sha256(fingerprint.encode())
    # The count, then each text's length before it: no two pairs of lists share a digest.
    h.update(len(bodies).to_bytes(8, "little"))
    for text in (*bodies, *names):
        raw = text.encode("utf-8", "surrogatepass")
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
    return h.hexdigest()
