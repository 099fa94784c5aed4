"""`SourceReader`: read span content from a repository checkout, never outside its root."""

from __future__ import annotations

import threading
from pathlib import Path

from codenib.core.errors import BadInputError
from codenib.core.types import source_lines

#: Files kept in memory per reader: spans of one query usually share a handful of files.
CACHE_FILES = 256


class SourceReader:
    """Reads lines of files under `root`; a path that resolves outside the root is refused."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise BadInputError("the repository root for span content does not exist", path=str(root),
                                fix="pass the checkout the index was built from")
        self._cache: dict[str, list[str] | None] = {}
        self._lock = threading.Lock()

    def read_span(self, rel_path: str, start: int, end: int) -> str | None:
        """Lines start..end (1-based, inclusive) of `rel_path`, or None when unreadable or outside."""
        lines = self._lines(rel_path)
        if lines is None or start < 1 or end < start:
            return None
        return "".join(lines[start - 1:end])

    def _lines(self, rel_path: str) -> list[str] | None:
        with self._lock:
            if rel_path in self._cache:
                return self._cache[rel_path]
        path = (self.root / rel_path).resolve()
        lines = None
        if path.is_relative_to(self.root) and path.is_file():
            try:
                lines = source_lines(path.read_text(encoding="utf-8", errors="replace"), keepends=True)
            except OSError:
                lines = None
        with self._lock:
            if len(self._cache) >= CACHE_FILES:
                self._cache.pop(next(iter(self._cache)))
            self._cache[rel_path] = lines
        return lines
