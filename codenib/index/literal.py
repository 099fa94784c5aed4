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
    """Every node's text joined into one UTF-8 string of bytes, with each node's start offset.

    Bytes, not `str`: one emoji anywhere in a repository makes a Python string four bytes per
    character, and every literal a report quotes is a scan of the whole join (sphinx: 6 M
    characters, 25 MB as `str`, 6 MB as UTF-8). A UTF-8 match can only start on a character
    boundary, so the rows found are the same.
    """

    def __init__(self, blob: bytes, starts: Sequence[int]):
        self._blob = blob
        self._starts = list(starts)

    @classmethod
    def from_texts(cls, texts: Sequence[str | None]) -> "TextScan":
        """One scan over `texts` (row i is node i; None counts as empty)."""
        starts, pos = [], 0
        parts = []
        for t in texts:
            b = _utf8((t or "").replace(_SEP, " "))
            starts.append(pos)
            parts.append(b)
            pos += len(b) + 1
        return cls(_SEP.encode().join(parts), starts)

    def __len__(self) -> int:
        return len(self._starts)

    def rows_containing(self, s: str, limit: int) -> list[int] | None:
        """Rows whose text contains `s` exactly, ascending; None when more than `limit` do
        (too common to point anywhere) or `s` is empty."""
        if not s or _SEP in s:
            return None
        needle = _utf8(s)
        rows: list[int] = []
        find, starts, blob = self._blob.find, self._starts, self._blob
        pos = find(needle)
        while pos >= 0:
            row = bisect.bisect_right(starts, pos) - 1
            rows.append(row)
            if len(rows) > limit:
                return None
            nxt = starts[row + 1] if row + 1 < len(starts) else len(blob)
            pos = find(needle, nxt)
        return rows


def _utf8(text: str) -> bytes:
    # Lone surrogates (undecodable bytes of a source file) encode as themselves, the same way
    # in a text and in a literal, so they match as they would in `str`.
    return text.encode("utf-8", "surrogatepass")
