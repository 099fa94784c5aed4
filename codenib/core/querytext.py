"""How query text is normalised, decided once for every way a query comes in.

A query reaches CodeNib from a command-line argument (undecodable bytes arrive as lone
surrogates, Python's `surrogateescape`), a Parquet or JSONL query set (JSON may escape lone
surrogates, `"\\udce9"`) or a Python caller. Tokenizers refuse text that is not valid
Unicode, so `clean_query_text` makes it valid and says what it changed:

- a lone surrogate (an undecodable byte or half a pair) becomes U+FFFD; a high/low pair
  written as two code points becomes the character it encodes;
- a control character other than tab, newline and carriage return (NUL, ESC, C1 controls)
  becomes a space: it carries no meaning for retrieval and would reach terminals and logs;
- text longer than `MAX_QUERY_CHARS` is cut to its first `MAX_QUERY_CHARS` characters.

The result's `changes()` is what a plan row's trace records under ``query_text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Longest query kept: ten times what the bug-report reader reads (model/reports/report.py
#: MAX_CHARS, which records its own cut in the trace); beyond that the text is pasted data that
#: only costs every engine time and memory (the encoder reads the first ~256 word pieces anyway).
MAX_QUERY_CHARS = 1_000_000
#: What an undecodable byte or a lone surrogate becomes (the Unicode replacement character).
REPLACEMENT = "\ufffd"

#: An identifier that looks like code (snake_case, _private, camelCase, PascalCase), whole: the
#: query readers of the planner's ops and of the bug-report reader find names with this one pattern.
CODE_IDENTIFIER = re.compile(r"(?<![\w.])(?:_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*"   # snake_case
                             r"|_+[A-Za-z0-9]+_*"                                           # _private
                             r"|[a-z]+[A-Z][A-Za-z0-9]*"                                    # camelCase
                             r"|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)(?![\w])")                 # PascalCase

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab, newline and carriage return; DEL; C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class QueryText:
    """A query made valid Unicode, and what was changed to make it so."""

    text: str
    invalid: int = 0        # lone surrogates (undecodable bytes) replaced by U+FFFD
    controls: int = 0       # control characters replaced by a space
    cut_from: int = 0       # the original length when cut to MAX_QUERY_CHARS (0: not cut)

    @property
    def changed(self) -> bool:
        return bool(self.invalid or self.controls or self.cut_from)

    def changes(self) -> dict[str, int]:
        """The non-zero counts, for a plan row's trace (empty when nothing changed)."""
        out = {"invalid_replaced": self.invalid, "controls_replaced": self.controls, "cut_from_chars": self.cut_from}
        return {k: v for k, v in out.items() if v}

    def describe(self) -> str:
        """One line for a warning: what was changed."""
        parts = []
        if self.invalid:
            parts.append(f"{self.invalid} undecodable byte(s) or lone surrogate(s) replaced by U+FFFD")
        if self.controls:
            parts.append(f"{self.controls} control character(s) replaced by spaces")
        if self.cut_from:
            parts.append(f"cut from {self.cut_from} to {MAX_QUERY_CHARS} characters")
        return "; ".join(parts) or "unchanged"


def clean_query_text(raw: Any) -> QueryText:
    """`raw` as valid Unicode text without control characters, at most MAX_QUERY_CHARS long.

    Idempotent: cleaning a cleaned text changes nothing. A non-string (None, a number) is
    the empty text, which the planner turns into an "empty query text" error row.
    """
    if not isinstance(raw, str):
        return QueryText("")
    text, invalid = raw, 0
    if _SURROGATE.search(text):
        # UTF-16 with surrogatepass joins valid pairs; "replace" turns each lone half into U+FFFD.
        before = text.count(REPLACEMENT)
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        invalid = text.count(REPLACEMENT) - before
    text, controls = _CONTROL.subn(" ", text)
    cut_from = 0
    if len(text) > MAX_QUERY_CHARS:
        cut_from, text = len(text), text[:MAX_QUERY_CHARS]
    return QueryText(text, invalid, controls, cut_from)
