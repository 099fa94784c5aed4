"""One file's vectors in the per-file store: the names and bytes of its entries.

An entry holds a file's node vectors under one model: every node's body vector, then every
node's name vector, as one `(2 x nodes, dimension)` float32 `.npy`. Its name is made of the
model's fingerprint and the exact texts encoded, so it is found only for texts that would
encode to it. The compiler writes entries (`codenib.compiler.vector_store`); an index in the
store layout whose vectors went to the store (`codenib.core.store_layout`) reads them back.

    STORE/vectors/v1/<fingerprint>/ab/abcdef....npy         # keyed by the texts
    STORE/vectors/v1/<fingerprint>/exact/ab/abcdef....npy   # keyed by the bytes
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence

import numpy as np

#: Bumped when the entry layout or key changes (old entries are then simply not found).
VECTOR_STORE_VERSION = 1
#: The folder under the per-file store's root.
VECTORS_DIR = "vectors"


def file_groups(files: Sequence[str]) -> dict[str, list[int]]:
    """File path -> the rows of its nodes, in row order (an entry holds one file's rows)."""
    groups: dict[str, list[int]] = {}
    for row, rel in enumerate(files):
        groups.setdefault(rel, []).append(row)
    return groups


def model_prefix(fingerprint: str) -> str:
    """The folder of one model's entries, relative to the store's root."""
    return f"{VECTORS_DIR}/v{VECTOR_STORE_VERSION}/{fingerprint}"


def entry_name(fingerprint: str, bodies: Sequence[str], names: Sequence[str]) -> str:
    """The store name of the entry of one file whose nodes have these body and name texts."""
    h = hashlib.sha256(fingerprint.encode())
    # The count, then each text's length before it: no two pairs of lists share a digest.
    h.update(len(bodies).to_bytes(8, "little"))
    for text in (*bodies, *names):
        raw = text.encode("utf-8", "surrogatepass")
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
    digest = h.hexdigest()
    return f"{model_prefix(fingerprint)}/{digest[:2]}/{digest}.npy"


def exact_entry_name(fingerprint: str, data: bytes) -> str:
    """The store name of an entry keyed by its bytes (`encode_vectors`' output) rather than by
    texts: a store-layout index's own vectors, where they differ in the last bits from the
    entry of the same texts (encoded in another batch)."""
    digest = hashlib.sha256(data).hexdigest()
    return f"{model_prefix(fingerprint)}/exact/{digest[:2]}/{digest}.npy"


def encode_vectors(body_vectors: np.ndarray, name_vectors: np.ndarray) -> bytes:
    """The stored bytes of one file's (body, name) vectors."""
    data = np.concatenate([body_vectors, name_vectors]).astype(np.float32, copy=False)
    buffer = io.BytesIO()
    np.save(buffer, data, allow_pickle=False)
    return buffer.getvalue()


def decode_vectors(raw: bytes, nodes: int, dimension: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The (body, name) vectors of an entry's bytes for a file of `nodes` nodes, or None when
    the bytes are damaged or of another shape (never trusted: the caller encodes again or
    reports the entry)."""
    try:
        data = np.load(io.BytesIO(raw), allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if data.shape != (2 * nodes, dimension) or data.dtype != np.float32:
        return None
    return data[:nodes], data[nodes:]
