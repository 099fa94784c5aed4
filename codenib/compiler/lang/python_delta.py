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

Inside one top-level class the same holds one level down, for the class's body
statements after its first: the region is parsed behind a stand-in header, `class
Name:` and a `pass` indented as the class's first statement (whose line is unchanged),
which puts the tokenizer and parser where they are at a body statement of the real
class. A region that is not all body statements of that class at that indentation
fails to parse there or adds a second top-level statement, and is parsed as a whole
class instead. A change to a class's header, decorators or first statement re-parses
the whole class.

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

from codenib.compiler.lang.python_parse import Outline, text_outline
from codenib.compiler.lang.reader import Hunk


def derive(base: Outline, raw: bytes, hunks: Sequence[Hunk]) -> Outline | None:
    """The outline of `raw`, the version that `hunks` make of the version `base` outlines;
    None when it cannot be derived (the caller parses `raw` in full).

    Args:
        base: the neighbouring version's outline (a full parse's, or derived); its version
            must be one `plain_text` takes.
        raw: the bytes of the version wanted.
        hunks: the diff from the base version to `raw`, in order, without context lines.
    """
    text = plain_text(raw)
    if text is None or not base.tops or not hunks or "barry_as_FLUFL" in text:
        return None
    lines = text.split("\n")
    if len(lines) != base.lines + sum(h[3] - h[1] for h in hunks):
        return None                     # not the diff of these two versions
    heads, starts = _units(base.tops, 1)
    runs = _runs(starts, base.lines, hunks)
    if runs is None:
        return None
    ends = [start - 1 for start in starts[1:]] + [base.lines]
    out = _Pieces()
    shift = 0                           # lines added minus removed before the current line
    done = 0                            # base tops copied so far
    for first, last, run in runs:
        lo, hi = heads[first], _last_of(heads, last, len(base.tops))
        out.copy(base, done, lo, shift)
        delta = sum(h[3] - h[1] for h in run)
        piece = _members(base, lo, lines, run, shift, ends[last]) if lo == hi else None
        if piece is None:
            piece = _region(lines, starts[first] + shift, ends[last] + shift + delta, "", 0)
            if piece is None:
                return None
        out.add(piece)
        shift += delta
        done = hi + 1
    out.copy(base, done, len(base.tops), shift)
    return Outline(tuple(out.tops), tuple(out.bodies), tuple(out.defs), len(lines))


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

class _Pieces:
    """The new outline's tops, class bodies and definitions, appended in order."""

    __slots__ = ("tops", "bodies", "defs")

    def __init__(self) -> None:
        self.tops: list = []
        self.bodies: list = []
        self.defs: list = []

    def copy(self, base: Outline, first: int, stop: int, shift: int) -> None:
        """The base's tops first..stop-1 and their definitions, moved by `shift` lines."""
        offset = len(self.tops) - first
        self.tops += [(s + shift, e + shift) for s, e in base.tops[first:stop]]
        self.bodies += [tuple((s + shift, e + shift) for s, e in body) for body in base.bodies[first:stop]]
        lo = bisect.bisect_left(base.defs, first, key=_top)
        hi = bisect.bisect_left(base.defs, stop, lo, key=_top)
        self.defs += [(q, s + shift, e + shift, t + offset, m) for q, s, e, t, m in base.defs[lo:hi]]

    def add(self, piece: Outline) -> None:
        offset = len(self.tops)
        self.tops += piece.tops
        self.bodies += piece.bodies
        self.defs += [(q, s, e, t + offset, m) for q, s, e, t, m in piece.defs]


def _members(base: Outline, top: int, lines: list[str], hunks: Sequence[Hunk], shift: int,
             old_end: int) -> Outline | None:
    """The one-top outline of the class `base.tops[top]` after `hunks`, re-parsing only the
    body statements they touch; None when they touch its header or first statement, or a
    region does not parse as statements of the class (the caller parses the whole class)."""
    members = base.bodies[top]
    if len(members) < 2:
        return None
    heads, starts = _units(members, members[0][0])
    runs = _runs(starts, old_end, hunks)
    if runs is None or runs[0][0] == 0:
        return None
    first_line = lines[members[0][0] + shift - 1]
    indent = first_line[:len(first_line) - len(first_line.lstrip(" \t"))]
    lo = bisect.bisect_left(base.defs, top, key=_top)
    hi = bisect.bisect_left(base.defs, top + 1, lo, key=_top)
    name, start, _, _, member = base.defs[lo]
    if not indent or member != -1 or start != base.tops[top][0]:
        return None
    own = base.defs[lo + 1:hi]
    ends = [s - 1 for s in starts[1:]] + [old_end]
    body: list[tuple[int, int]] = []
    defs: list[tuple] = []
    local, done = shift, 0
    for first, last, run in runs:
        m_lo, m_hi = heads[first], _last_of(heads, last, len(members))
        _copy_members(members, own, done, m_lo, local, body, defs)
        delta = sum(h[3] - h[1] for h in run)
        piece = _region(lines, starts[first] + local, ends[last] + local + delta, f"class {name}:\n{indent}pass\n", 2)
        if piece is None or len(piece.tops) != 1:
            return None
        offset = len(body) - 1          # the stand-in `pass` is the piece's statement 0
        body += piece.bodies[0][1:]
        defs += [(q, s, e, 0, m + offset) for q, s, e, _, m in piece.defs[1:]]
        local += delta
        done = m_hi + 1
    _copy_members(members, own, done, len(members), local, body, defs)
    end = body[-1][1]
    return Outline(((start + shift, end),), (tuple(body),), ((name, start + shift, end, 0, -1), *defs), 0)


def _copy_members(members, own, first: int, stop: int, shift: int, body: list, defs: list) -> None:
    """Append a class's body statements first..stop-1 and their definitions, moved."""
    offset = len(body) - first
    body += [(s + shift, e + shift) for s, e in members[first:stop]]
    defs += [(q, s + shift, e + shift, 0, m + offset) for q, s, e, _, m in own if first <= m < stop]


def _region(lines: list[str], start: int, end: int, header: str, header_lines: int) -> Outline | None:
    """The outline of new lines start..end parsed on their own behind `header` (its
    `header_lines` lines numbered before `start`); None when they do not parse or a
    backslash continues a line across either edge."""
    text = "\n".join(lines[start - 1:end])
    if text.endswith("\\") or (start > 1 and lines[start - 2].endswith("\\")):
        return None
    return text_outline(header + text, first_line=start - header_lines)


def _units(spans: Sequence[tuple[int, int]], first_line: int) -> tuple[list[int], list[int]]:
    """Statements grouped into units that start on a line no earlier statement reaches
    (`a = 1; b = 2` is one unit): each unit's first statement and first line (the first
    unit starts at `first_line`)."""
    heads = [0]
    reach = spans[0][1]
    for i in range(1, len(spans)):
        start, end = spans[i]
        if start > reach:
            heads.append(i)
        reach = max(reach, end)
    return heads, [first_line] + [spans[i][0] for i in heads[1:]]


def _runs(starts: list[int], last_end: int, hunks: Sequence[Hunk]) -> list[tuple[int, int, list]] | None:
    """Runs of units the hunks touch, (first unit, last unit, their hunks), in order; a
    unit runs from its start to the line before the next one's (the last to `last_end`).
    An insertion touches the units on both sides of it. None when a hunk reaches outside."""
    runs: list[tuple[int, int, list]] = []
    for hunk in hunks:
        old_start, old_lines = hunk[0], hunk[1]
        if old_lines:
            lo, hi = old_start, old_start + old_lines - 1
        else:
            lo, hi = max(old_start, starts[0]), min(old_start + 1, last_end)
        if lo < starts[0] or hi > last_end or lo > hi:
            return None
        first, last = _unit(starts, lo), _unit(starts, hi)
        if runs and first <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], last), runs[-1][2] + [hunk])
        else:
            runs.append((first, last, [hunk]))
    return runs


def _unit(starts: list[int], line: int) -> int:
    """The index of the unit holding `line` (starts ascending)."""
    return bisect.bisect_right(starts, line) - 1


def _last_of(heads: list[int], unit: int, n: int) -> int:
    """The last statement of unit `unit`."""
    return heads[unit + 1] - 1 if unit + 1 < len(heads) else n - 1


def _top(definition: tuple) -> int:
    return definition[3]
