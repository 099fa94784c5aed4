"""A Python file version's outline derived from a neighbouring version's and the diff
between them, parsing again only the top-level statements the diff touches.

`--history` needs the definitions of every version of every changed file, and a later
snapshot's read of a few thousand commits spent three quarters of its time in `ast.parse`
of whole files (sphinx, 2,391 commits: 15 of 25 CPU seconds) for diffs of a few lines.

Why the result equals a full parse of the new version: the lines the diff leaves alone
are the same text in both versions. The changed lines are widened to whole *extents* (a
top-level statement with the comments and blank lines after it, up to the next one), and
each widened region is parsed on its own. A region starts where a top-level statement
starts (or at line 1) and ends just before one starts (or at the end of the file), so
Python's tokenizer enters and leaves it with nothing open: no bracket, string,
continuation line or indented block. When the region parses as a module on its own, its
statements are those a full parse finds there, and the untouched statements around it are
those of the old version, moved by the lines the diff added or removed. When it does not
parse alone (an edit that opens a string closed further down, indents a line into the
statement before, adds a decorator to the statement after), `derive` returns None and the
caller parses the whole file, as before. Counted names (`f#2`) are numbered over the
whole file afterwards (`outline_spans`), never carried over.

Also left to a full parse: texts with carriage returns (line numbering), a BOM or a
coding declaration other than UTF-8 (decoding), a backslash continuation at either edge
of a region, and the one future import that changes how later lines parse
(`barry_as_FLUFL`).
"""

from __future__ import annotations

import bisect
import io
import tokenize
from typing import Sequence

from codenib.compiler.parse import Outline, text_outline

#: (old start, old line count, new start, new line count), as git's hunks with no context.
Hunk = tuple[int, int, int, int]


def derive(base: Outline, raw: bytes, hunks: Sequence[Hunk]) -> Outline | None:
    """The outline of `raw`, the version that `hunks` make of the version `base` outlines;
    None when it cannot be derived (the caller parses `raw` in full).

    Args:
        base: the neighbouring version's outline (a full parse's, or derived).
        raw: the bytes of the version wanted.
        hunks: the diff from the base version to `raw`, in order, without context lines.
    """
    text = plain_text(raw)
    if text is None or not base.tops or not hunks or "barry_as_FLUFL" in text:
        return None
    lines = text.split("\n")
    if len(lines) != base.lines + sum(h[3] - h[1] for h in hunks):
        return None                     # not the diff of these two versions
    groups = _groups(base, hunks)
    if groups is None:
        return None
    tops: list[tuple[int, int]] = []
    defs: list[tuple[str, int, int, int]] = []
    shift = 0                           # lines added minus removed before the current line
    done = 0                            # base tops copied so far
    for first, last, old_start, old_end, delta in groups:
        _copy(base, done, first, shift, tops, defs)
        new_start, new_end = old_start + shift, old_end + shift + delta
        region = "\n".join(lines[new_start - 1:new_end])
        if region.endswith("\\") or (new_start > 1 and lines[new_start - 2].endswith("\\")):
            return None
        part = text_outline(region, first_line=new_start)
        if part is None:
            return None
        offset = len(tops)
        tops += part.tops
        defs += [(q, s, e, t + offset) for q, s, e, t in part.defs]
        shift += delta
        done = last + 1
    _copy(base, done, len(base.tops), shift, tops, defs)
    return Outline(tuple(tops), tuple(defs), len(lines))


def plain_text(raw: bytes) -> str | None:
    """The text of `raw` when the reader decodes it as UTF-8 (no BOM, no other declared
    coding) and it has only "\\n" line breaks and no NUL, else None: the versions `derive`
    takes, and the only ones whose outline may serve as its `base`."""
    if raw.startswith(b"\xef\xbb\xbf") or b"\r" in raw or b"\0" in raw:
        return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode("utf-8") if encoding == "utf-8" else None
    except (SyntaxError, UnicodeDecodeError):
        return None


# --- helpers ---------------------------------------------------------------------------------


def _groups(base: Outline, hunks: Sequence[Hunk]) -> list[tuple[int, int, int, int, int]] | None:
    """Runs of touched extents: (first top, last top, first line, last line in the base,
    lines added minus removed inside), in order; None when a hunk lies outside the text.

    An extent starts at a line where a top-level statement starts and no earlier one
    reaches (`a = 1; b = 2` is one extent), and runs to the line before the next one."""
    heads = [0]                         # the first top of each extent
    reach = base.tops[0][1]
    for i in range(1, len(base.tops)):
        start, end = base.tops[i]
        if start > reach:
            heads.append(i)
        reach = max(reach, end)
    starts = [1] + [base.tops[i][0] for i in heads[1:]]
    ends = [s - 1 for s in starts[1:]] + [base.lines]
    stops = [h - 1 for h in heads[1:]] + [len(base.tops) - 1]
    spans: list[list[int]] = []         # [first extent, last extent, delta]
    for old_start, old_lines, new_start, new_lines in hunks:
        if old_lines:
            lo, hi = old_start, old_start + old_lines - 1
        else:                           # an insertion after line old_start: both neighbours
            lo, hi = max(old_start, 1), min(old_start + 1, base.lines)
        if lo < 1 or hi > base.lines or lo > hi:
            return None
        first, last = _extent(starts, lo), _extent(starts, hi)
        delta = new_lines - old_lines
        if spans and first <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], last)
            spans[-1][2] += delta
        else:
            spans.append([first, last, delta])
    return [(heads[f], stops[l], starts[f], ends[l], d) for f, l, d in spans]


def _extent(starts: list[int], line: int) -> int:
    """The index of the extent holding `line` (starts ascending, starts[0] == 1)."""
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= line:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _copy(base: Outline, first: int, stop: int, shift: int, tops: list, defs: list) -> None:
    """Append the base's tops first..stop-1 and their definitions, moved by `shift` lines."""
    offset = len(tops) - first
    tops += [(s + shift, e + shift) for s, e in base.tops[first:stop]]
    lo = bisect.bisect_left(base.defs, first, key=_top)
    hi = bisect.bisect_left(base.defs, stop, lo, key=_top)
    defs += [(q, s + shift, e + shift, t + offset) for q, s, e, t in base.defs[lo:hi]]


def _top(definition: tuple[str, int, int, int]) -> int:
    return definition[3]
