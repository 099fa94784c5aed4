"""A store of per-file parse results keyed by content, shared by the indexes of a repository.

Each entry holds one file's nodes and the BM25 term counts of their texts, for one
(relative path, content sha256, version of the reader of its language, tokenizer settings):
the same bytes at the same path always give the same nodes. Entries are gzipped JSON (node texts
repeat their file's source, so they shrink about fivefold) written once (to a temporary
name, then renamed; on object storage one PUT), so builds that share the store never see half
an entry, and a store can be deleted at any time. Nothing is pickled. The store is a local
folder or a `pyarrow.fs` URI (`s3://bucket/prefix`; `codenib.core.store_backend`).

    STORE/v3/ab/abcdef....json.gz      (`zcat` shows one)

`--reuse` goes further (edges and unchanged files without reading them); the store is what
a build without an earlier index of the same repository at hand can still skip.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from codenib.compiler.lang import reader_versions
from codenib.compiler.lang.python_parse import PARSE_VERSION
from codenib.core.file_entry import CachedFile, decode_entry, encode_entry
from codenib.core.store_backend import LocalBackend, StoreBackend, open_backend
from codenib.engines.languages import languages_of
from codenib.core.tokens import TokenizerConfig

#: Bumped when the entry layout or key changes (old entries are then simply not found; 2:
#: the key holds the version of the reader of the file's language; 3: entries are gzipped).
CACHE_VERSION = 3
#: The store's folder name when it sits next to the index (`codenib index --out DIR`).
DEFAULT_CACHE_NAME = ".codenib-cache"


class FileCache:
    """The store under `root` (a folder, a URI, or a backend: `open_backend`) for builds with
    these tokenizer settings."""

    def __init__(self, root: "str | os.PathLike | StoreBackend", tokenizer: TokenizerConfig):
        self.backend = open_backend(root)
        #: A local store's folder; an object store's URI.
        self.root: Path | str = self.backend.root if isinstance(self.backend, LocalBackend) else self.backend.shown()
        settings = json.dumps([CACHE_VERSION, PARSE_VERSION, tokenizer.to_dict()], sort_keys=True)
        self._salt = hashlib.sha256(settings.encode()).hexdigest()[:16]
        # A reader's version keys its own files only: a change to one language's reader
        # leaves the entries of the others valid.
        self._versions = reader_versions()

    def get(self, rel_path: str, content_sha256: str) -> CachedFile | None:
        """The entry for these bytes at this path, or None (missing or unreadable)."""
        raw = self.backend.read(self.entry_name(rel_path, content_sha256))
        # A missing or damaged entry is parsed again, never trusted.
        return None if raw is None else decode_entry(raw, rel_path)

    def put(self, rel_path: str, content_sha256: str, entry: CachedFile) -> None:
        """Store an entry (atomically; the same key always holds the same bytes). Raises
        OSError when the store cannot be written."""
        self.backend.write(self.entry_name(rel_path, content_sha256), encode_entry(entry))

    def entry_name(self, rel_path: str, content_sha256: str) -> str:
        """The name of the entry for these bytes at this path (what an index in the store
        layout records, so a later reader version still finds it)."""
        # A `.h` may be read as C or C++: both readers' versions key it.
        reader = "/".join(str(self._versions.get(lang, 0)) for lang in languages_of(rel_path)) or "0"
        key = hashlib.sha256(f"{self._salt}\0{rel_path}\0{content_sha256}\0{reader}".encode("utf-8", "surrogatepass"))
        digest = key.hexdigest()
        return f"v{CACHE_VERSION}/{digest[:2]}/{digest}.json.gz"
