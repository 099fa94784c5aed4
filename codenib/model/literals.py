"""Quoted-literal evidence for bug reports: which nodes hold, verbatim, the strings a report
quotes (a flag, an error message, a configuration value), and how much each one counts.

Pure: the index's `codenib.index.literal.TextScan` and what counts as library code are passed
in (`codenib.model.localise` scores the result).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: A quoted literal counts when at most this many library files hold it verbatim (more: it is
#: common code, not what the report is about); each holder gets 1 / that count.
LITERAL_MAX_FILES = 5
#: Nodes scanned per literal before it counts as too common (bounds the work of `for`, `x = 1`).
LITERAL_MAX_ROWS = 200


@dataclass(frozen=True, slots=True)
class Literal:
    """A string the report quotes, the nodes holding it verbatim, and its weight."""

    text: str
    rows: tuple[int, ...]
    weight: float


def literal_holders(literals: Sequence[str], scan, files: Sequence[str],
                    is_library: Callable[[str], bool]) -> tuple[Literal, ...]:
    """The nodes that hold what the report quotes, per literal, with its weight: a literal held
    verbatim by 1 to `LITERAL_MAX_FILES` library files weighs 1 / that count (tests, docs and
    examples hold the flags and messages they exercise, so they do not count against it, but
    hold it too); others are left out.

    Args:
        scan: the index's `codenib.index.literal.TextScan`.
        files: each node row's file.
        is_library: whether a file is library code.
    """
    out = []
    for lit in literals:
        rows = scan.rows_containing(lit, LITERAL_MAX_ROWS)
        if not rows:
            continue
        lib_files = {files[r] for r in rows if is_library(files[r])}
        if not 1 <= len(lib_files) <= LITERAL_MAX_FILES:
            continue
        out.append(Literal(lit, tuple(rows), 1.0 / len(lib_files)))
    return tuple(out)
