"""A tree-sitter file version's tree derived from a neighbouring version's tree and the diff
between them, for `--history` (`SweepReader.derive`).

The neighbour's tree is told what the diff's hunks replaced (`Tree.edit`, bottom hunk first,
so each hunk's old positions still hold when it is applied), and tree-sitter parses the new
bytes reusing every subtree the edits left alone. The sweep over the result is the same as
over a fresh parse's, so the spans are those of `read_spans` where no syntax error is met
(checked against full parses over 1,200-2,000 commits each of grpc-go, jackson-core, jq, bat,
fd, dayjs, darkreader and fmt's oldest: no version differs); under error recovery they may
differ (one of 3,128 versions of fmt's newest headers), so `SweepReader` never derives from
or keeps a tree with an error. Hunks that are not the diff of the two versions, or a tree of
another language or grammar, derive nothing: the caller parses in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from codenib.compiler.lang.reader import Hunk

#: Memory a kept tree holds per byte of its file (4.0 MB for fmt's 164 KB `format.h`), plus
#: the bytes themselves: what bounds `--history`'s cache of outlines (`Reader.outline_weight`).
OUTLINE_WEIGHT = 26

#: (start byte, old end byte, new end byte, start point, old end point, new end point).
Edit = tuple[int, int, int, tuple[int, int], tuple[int, int], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class TreeOutline:
    """A version's tree and bytes, the base a neighbour's tree is derived from."""

    tree: object        # tree_sitter.Tree
    raw: bytes
    grammar: str        # language and grammar key: a tree only edits into its own grammar


def edited_tree(base: object, grammar: str, raw: bytes, hunks: Sequence[Hunk]):
    """A copy of `base`'s tree edited into `raw` (the version `hunks` make of `base.raw`), to
    parse `raw` with; None when `base` is no tree of `grammar` or the hunks are not the diff
    of the two versions."""
    if not isinstance(base, TreeOutline) or base.grammar != grammar or not hunks:
        return None
    edits = tree_edits(base.raw, raw, hunks)
    if edits is None:
        return None
    tree = base.tree.copy()
    for edit in reversed(edits):
        tree.edit(*edit)
    return tree


def tree_edits(old: bytes, new: bytes, hunks: Sequence[Hunk]) -> list[Edit] | None:
    """The byte and point edits of `hunks` (git's: whole lines, 1-based, a side of no lines
    starting at the line before it), in file order, each in `old`'s positions; None when the
    hunks do not turn `old` into `new` (out of order or overlapping, out of range, or an
    unchanged region that differs)."""
    old_at, new_at = _line_starts(old), _line_starts(new)
    out: list[Edit] = []
    kept_old = kept_new = 0      # where the unchanged region before the next hunk starts
    for old_start, old_lines, new_start, new_lines in hunks:
        o = old_start - 1 if old_lines else old_start
        n = new_start - 1 if new_lines else new_start
        if o < 0 or n < 0 or o + old_lines >= len(old_at) or n + new_lines >= len(new_at):
            return None
        start, old_end = int(old_at[o]), int(old_at[o + old_lines])
        new_from, new_to = int(new_at[n]), int(new_at[n + new_lines])
        if start < kept_old or new_from < kept_new or old[kept_old:start] != new[kept_new:new_from]:
            return None
        out.append((start, old_end, start + (new_to - new_from),
                    _point(old, old_at, o, start), _point(old, old_at, o + old_lines, old_end),
                    _shifted(_point(new, new_at, n + new_lines, new_to), n - o)))
        kept_old, kept_new = old_end, new_to
    if old[kept_old:] != new[kept_new:]:
        return None
    return out


# --- helpers -----------------------------------------------------------------------------

def _line_starts(raw: bytes) -> np.ndarray:
    """The byte offset of each line's start, then the end of the bytes (so line i spans
    [starts[i], starts[i + 1]))."""
    starts = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 10) + 1
    starts = np.concatenate(([0], starts))
    return starts if starts[-1] == len(raw) else np.append(starts, len(raw))


def _point(raw: bytes, starts: np.ndarray, row: int, byte: int) -> tuple[int, int]:
    """The (row, column) of `byte`, the start of line `row` or the end of a last line that
    has no line break."""
    if byte == 0 or raw[byte - 1:byte] == b"\n":
        return (row, 0)
    return (row - 1, byte - int(starts[row - 1]))


def _shifted(point: tuple[int, int], rows: int) -> tuple[int, int]:
    """A point of the new version where the edit is applied bottom-up: the `rows` lines the
    hunks above it add are not there yet."""
    return (point[0] - rows, point[1])
