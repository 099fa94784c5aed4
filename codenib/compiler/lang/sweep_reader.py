"""`SweepReader`: the `Reader` (`codenib.compiler.lang.reader`) the registry hands out for a
tree-sitter language, its `TreeReader` read through the shared sweep (`sweep`), its outlines
derived from a neighbouring version's tree for `--history` (`sweep_delta`)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from codenib.compiler.lang.base import ForeignParse, TreeReader
from codenib.compiler.lang.reader import Hunk, Span
from codenib.compiler.lang.sweep import read_file, read_spans, tree_spans
from codenib.compiler.lang.sweep_delta import OUTLINE_WEIGHT, TreeOutline, edited_tree


class SweepReader:
    """The `Reader` of a tree-sitter language: its `TreeReader` (`tree`) through the sweep.
    An outline keeps its version's tree, which a neighbouring version's parse starts from
    (`sweep_delta`)."""

    derives = True
    outline_weight = OUTLINE_WEIGHT
    error_note = "indexed as far as it parses"

    def __init__(self, tree: TreeReader):
        self.tree = tree

    @property
    def language(self) -> str:
        return self.tree.language

    @property
    def version(self) -> int:
        return self.tree.version

    def read(self, rel_path: str, raw: bytes) -> ForeignParse:
        """`read_file`."""
        return read_file(self.tree, rel_path, raw)

    def unreadable(self, rel_path: str, error: str) -> ForeignParse:
        """The file node of no bytes, with `error` as its parse error."""
        parsed = read_file(self.tree, rel_path, b"")
        node = dataclasses.replace(parsed.nodes[0], parse_error=error)
        return ForeignParse(rel_path, [node], parsed.facts, error)

    def spans(self, rel_path: str, raw: bytes) -> list[Span]:
        """`read_spans`."""
        return read_spans(self.tree, rel_path, raw)

    def outline(self, rel_path: str, raw: bytes) -> tuple[list[Span], TreeOutline | None]:
        """`read_spans`, and the tree for `derive` when it has no syntax error."""
        spans, tree = tree_spans(self.tree, rel_path, raw)
        return spans, _outline_of(tree, raw, self._grammar(rel_path))

    def derive(self, base: object, rel_path: str, raw: bytes, hunks: Sequence[Hunk]
               ) -> tuple[list[Span], TreeOutline] | None:
        """`outline` of `raw`, parsed from `base`'s tree edited by `hunks`; None when the
        hunks are not the diff from `base`'s version (`sweep_delta.edited_tree`) or the parse
        meets a syntax error: tree-sitter's error recovery may then take another path than a
        fresh parse does (one of 3,128 versions of fmt's macro-heavy headers read otherwise)."""
        grammar = self._grammar(rel_path)
        old = edited_tree(base, grammar, raw, hunks)
        if old is None:
            return None
        spans, tree = tree_spans(self.tree, rel_path, raw, old)
        outline = _outline_of(tree, raw, grammar)
        return None if outline is None else (spans, outline)

    def _grammar(self, rel_path: str) -> str:
        # The language too: a `.h` file's versions may be read as C or as C++ (by their bytes).
        return f"{self.language}:{self.tree.grammar_key(rel_path)}"


def _outline_of(tree, raw: bytes, grammar: str) -> TreeOutline | None:
    """The base `derive` may start from: none from a tree with a syntax error."""
    return None if tree.root_node.has_error else TreeOutline(tree, raw, grammar)
