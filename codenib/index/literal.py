"""Verbatim search over the indexed text of every node: which nodes hold a string exactly as a
bug report quotes it (an error message, a command-line flag, a configuration key).

BM25 splits `--collect-only` into two common words and an error message into its stems; the
node that prints the message holds it character for character.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

#: Node texts are joined with this separator: it never occurs in a quoted literal, so no match
#: spans two nodes.
_SEP = "\0"


class TextScan:
    """Every node's text joined into one string, with each node's start offset."""

    def __init__(self, blob: str, starts: Sequence[int]):
        self._blob = blob
        self._starts = list(starts)

    @classmethod
    def from_texts(cls, texts: Sequence[str | None]) -> "TextScan":
        """One scan over `texts` (row i is node i; None counts as empty)."""
        starts, pos = [], 0
        parts = []
        for t in texts:
            t = (t or "").replace(_SEP, " ")
            starts.append(pos)
            parts.append(t)
            pos += len(t) + 1
        return cls(_SEP.join(parts), starts)

    def __len__(self) -> int:
        return len(self._starts)

    def rows_containing(self, s: str, limit: int) -> list[int] | None:
        """Rows whose text contains `s` exactly, ascending; None when more than `limit` do
        (too common to point anywhere) or `s` is empty."""
        if not s or _SEP in s:
            return None
        rows: list[int] = []
        find, starts, blob = self._blob.find, self._starts, self._blob
        pos = find(s)
        while pos >= 0:
            row = bisect.bisect_right(starts, pos) - 1
            rows.append(row)
            if len(rows) > limit:
                return None
            nxt = starts[row + 1] if row + 1 < len(starts) else len(blob)
            pos = find(s, nxt)
        return rows
