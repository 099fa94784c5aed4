"""Greetings, requests and thanks around a question, stripped before the question is read."""

from __future__ import annotations

import re


def strip_courtesy(text: str) -> str:
    """The question without greetings, requests and thanks around it ("hey, can you tell me
    ... ? thanks"), and without the punctuation at its ends. Idempotent up to MAX_PASSES
    stacked phrases."""
    s = text.strip()
    for _ in range(MAX_PASSES):
        prev = s
        s = _LEAD.sub("", s)
        s = _TRAIL.sub("", s)
        s = s.strip(_EDGE_PUNCT)
        if s == prev:
            break
    return s


# --- helpers ---------------------------------------------------------------------------------

#: Passes of stripping at most: each is linear in the text and removes a phrase, so a text of
#: stacked phrases ("thanks thanks ...", a megabyte of them) would otherwise take quadratic time.
MAX_PASSES = 16
_EDGE_PUNCT = " \t\r\n?!.,;:"
_LEAD = re.compile(
    r"^(?:(?:hey|hi|hello|yo|ok|okay|so|um|uh|dear\s+\w+|quick\s+question|question|excuse\s+me)\b[\s,:;!.-]*"
    r"|(?:sorry(?:\s+if\s+(?:this\s+is\s+|it'?s\s+)?(?:obvious|a\s+dumb\s+question|a\s+silly\s+question|silly))?"
    r"(?:\s*,?\s*but)?\b[\s,:;!.-]*)"
    r"|(?:please|pls|plz|kindly)\b[\s,:;!.-]*"
    r"|(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?:tell|show|help)\s+me\b[\s,:;]*(?:find\b\s*)?)"
    r"|(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?=(?:find|list|show|locate|get)\b))"
    r"|(?:i\s*(?:want|need|would\s+like|'?d\s+like)\s+to\s+(?:know|see|find|understand)\b[\s,:;]*)"
    r"|(?:(?:tell|give)\s+me\b[\s,:;]*)"
    r"|(?:do\s+you\s+know\b[\s,:;]*)|(?:i\s+wonder\b[\s,:;]*)|(?:(?:would|do)\s+you\s+mind\s+))",
    re.IGNORECASE)
# Starts only where a run of punctuation starts (a match from inside the run is also one from its
# start, and trying every position inside a long run made `sub` quadratic).
_TRAIL = re.compile(
    r"(?<![\s,:;!.?-])(?:[\s,:;!.?-]*\b(?:thanks(?:\s+a\s+lot|\s+in\s+advance)?|thank\s+you(?:\s+so\s+much)?|thx|ty|cheers|please|pls|plz"
    r"|if\s+you\s+can|if\s+possible|by\s+any\s+chance|if\s+any(?:thing|one)?|at\s+all)|[\s,:;!.?-]*(?:[:;]\)|🙏|🙂))[\s,:;!.?-]*$",
    re.IGNORECASE)
