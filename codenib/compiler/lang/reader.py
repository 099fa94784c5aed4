"""The interface every language's reader offers: what the build and `--history` ask of a file.

The build reads each file once (`read`, or `unreadable` when its bytes could not be read)
into its nodes and the facts its graph stage resolves; `--history` asks only where each
definition of a past version lies (`spans`), and a reader that `derives` can also outline a
version from a neighbouring version's outline and the diff between them (`outline`,
`derive`), re-reading only what the diff touches. `codenib.compiler.lang` maps languages
to readers; nothing outside this package asks which language a file is written in.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from codenib.core.types import Node

#: (node id, first line, last line) of one definition.
Span = tuple[str, int, int]
#: (old start, old line count, new start, new line count), as git's hunks with no context.
Hunk = tuple[int, int, int, int]


class FileRead(Protocol):
    """One file as its reader read it."""

    rel_path: str
    nodes: list[Node]           # the file node first
    parse_error: str | None

    @property
    def facts(self):
        """What the file's graph stage takes from the read, kept and sent between processes
        (None: the stage reads the file's bytes again, and may take this read in-process)."""


class Reader(Protocol):
    """A language's reader."""

    language: str
    version: int                # bumped when the nodes read from the same bytes change
    derives: bool               # `derive` can outline a version from a neighbour's
    outline_weight: float       # memory an outline holds per byte of its file (0: not counted)
    error_note: str             # what the index holds of a file with a parse error

    def read(self, rel_path: str, raw: bytes) -> FileRead:
        """Nodes and facts of a file's bytes; a syntax error never raises."""

    def unreadable(self, rel_path: str, error: str) -> FileRead:
        """The file node of a file whose bytes could not be read."""

    def spans(self, rel_path: str, raw: bytes) -> list[Span]:
        """Where each definition node `read` makes of `raw` lies, in its order, read without
        texts or facts."""

    def outline(self, rel_path: str, raw: bytes) -> tuple[list[Span], object | None]:
        """`spans` and a base for `derive` (None: a neighbour cannot be derived from this one)."""

    def derive(self, base: object, rel_path: str, raw: bytes, hunks: Sequence[Hunk]
               ) -> tuple[list[Span], object] | None:
        """`outline` of `raw`, the version `hunks` make of the one `base` outlines; None when
        it cannot be derived (the caller asks `outline`)."""
