"""The Python reader: `ast` parses (`python_parse`), outlines derived from a neighbouring
version's for `--history` (`python_delta`), behind the interface of every language
(`codenib.compiler.lang.reader.Reader`)."""

from __future__ import annotations

from typing import Sequence

from codenib.compiler.lang.python_delta import derive, plain_text
from codenib.compiler.lang.python_parse import (PARSE_VERSION, Outline, ParsedFile, definition_spans, outline_spans,
                                                parse_source, parse_unreadable, source_outline)
from codenib.compiler.lang.reader import Hunk, Span


class PythonReader:
    """`Reader` of Python files."""

    language = "python"
    version = PARSE_VERSION
    derives = True
    outline_weight = 0          # not counted: the cache's entry count bounds these small outlines
    error_note = "indexed as a file node without definitions"

    def read(self, rel_path: str, raw: bytes) -> ParsedFile:
        """`parse_source`."""
        return parse_source(rel_path, raw)

    def unreadable(self, rel_path: str, error: str) -> ParsedFile:
        """`parse_unreadable`."""
        return parse_unreadable(rel_path, error)

    def spans(self, rel_path: str, raw: bytes) -> list[Span]:
        """`definition_spans`."""
        return definition_spans(rel_path, raw)

    def outline(self, rel_path: str, raw: bytes) -> tuple[list[Span], Outline | None]:
        """The spans of a full parse, and its outline when `derive` can start from it (a
        text `plain_text` takes)."""
        outline = source_outline(rel_path, raw)
        if outline is None:
            return [], None
        return outline_spans(rel_path, outline), (outline if plain_text(raw) is not None else None)

    def derive(self, base: Outline, rel_path: str, raw: bytes, hunks: Sequence[Hunk]
               ) -> tuple[list[Span], Outline] | None:
        """`python_delta.derive`, and the spans of its outline."""
        outline = derive(base, raw, hunks)
        return None if outline is None else (outline_spans(rel_path, outline), outline)


READER = PythonReader()
