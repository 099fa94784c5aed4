"""Node vectors per file version, in the per-file store, shared by every index that holds
the same file with the same texts under the same model.

A `--reuse` build takes the unchanged vectors of the one index it names; a snapshot set cut
into runs (`codenib index-set`) starts each run without one, and a repository's next job
starts from nothing. The store keeps each file's vectors under a key made of the model's
fingerprint and the exact texts encoded (every node's body text, then every node's name
text, in order), so an entry is found only for texts that would encode to it: nothing about
readers, paths or commits can make a stale entry match.

    STORE/vectors/v1/<fingerprint>/ab/abcdef....npy     # (2 x nodes, dimension) float32

Entries (their names and bytes: `codenib.core.vector_entry`) are written once (a temporary
name, then renamed; on object storage one PUT) and read best effort: a missing, damaged or
mis-shaped entry is encoded again, never trusted. The store is a local folder or a `pyarrow.fs` URI (`codenib.core.store_backend`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from codenib.core.store_backend import StoreBackend, open_backend
from codenib.core.vector_entry import decode_vectors, encode_vectors, entry_name, exact_entry_name, model_prefix


class VectorStore:
    """The vectors of one model (its `fingerprint`, `dimension` wide) under a store root (a
    folder, a URI, or a backend: `open_backend`)."""

    def __init__(self, root: "str | os.PathLike | StoreBackend", fingerprint: str, dimension: int):
        self.backend = open_backend(root)
        #: Where this model's entries are, for messages.
        self.root = self.backend.shown(model_prefix(fingerprint))
        self.fingerprint = fingerprint
        self.dimension = dimension

    def get(self, bodies: Sequence[str], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """The (body, name) vectors of one file's nodes, or None when not stored."""
        return self.read(self.name(bodies, names), len(bodies))

    def read(self, name: str, nodes: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The (body, name) vectors of the entry `name` for a file of `nodes` nodes, or None
        when it is missing, damaged or of another shape."""
        raw = self.backend.read(name)
        return None if raw is None else decode_vectors(raw, nodes, self.dimension)

    def has(self, bodies: Sequence[str], names: Sequence[str]) -> bool:
        """Whether the store holds an entry under these texts' name (its bytes unread)."""
        return self.backend.has(self.name(bodies, names))

    def put(self, bodies: Sequence[str], names: Sequence[str], body_vectors: np.ndarray,
            name_vectors: np.ndarray) -> None:
        """Store one file's vectors (atomically; the same key always holds the same vectors).
        Raises OSError when the store cannot be written."""
        self.backend.write(self.name(bodies, names), encode_vectors(body_vectors, name_vectors))

    def put_exact(self, body_vectors: np.ndarray, name_vectors: np.ndarray) -> str:
        """Store one file's vectors under the digest of their bytes (not of their texts) and
        return the entry's name: what a store-layout index reads back when the entry of its
        texts holds vectors encoded in another batch. Raises OSError as `put`."""
        data = encode_vectors(body_vectors, name_vectors)
        name = exact_entry_name(self.fingerprint, data)
        if not self.backend.has(name):
            self.backend.write(name, data)
        return name

    def name(self, bodies: Sequence[str], names: Sequence[str]) -> str:
        """The entry name of one file's texts (`codenib.core.vector_entry.entry_name`)."""
        return entry_name(self.fingerprint, bodies, names)
