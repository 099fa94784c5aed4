"""Where a definition's text may be cut within a line: the rule both readers share."""

from __future__ import annotations

#: A line longer than this is not written by hand (style guides stop at 80 to 120
#: characters): a definition whose first or last line is longer gets only its own columns
#: there, not the whole line (a minified bundle's one line would be every function's text).
LONG_LINE_CHARS = 1_000
