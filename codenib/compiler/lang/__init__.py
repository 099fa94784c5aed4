"""The languages: one reader and one resolver per language, behind a registry keyed by
language (`LANGUAGES`); `codenib.engines.languages` maps file suffixes to language names.

Every reader offers the same interface (`codenib.compiler.lang.reader.Reader`): Python's
(`python`, over `ast`) directly, each tree-sitter language's through the shared sweep
(`sweep_reader.SweepReader` over the module's `TreeReader`). A language's files are resolved by its
graph stage (`GRAPHS`): the Python graph, or the facts graph, which resolves each file with
its language's rules module. Adding a language is one reader module, one resolver module and
one line in `LANGUAGES` (and its suffixes in `codenib.engines.languages`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from codenib.compiler.lang.base import ForeignParse, TreeReader
from codenib.compiler.lang.facts import FACTS_VERSION, ForeignFacts
from codenib.compiler.lang.reader import Reader
from codenib.compiler.lang.sweep_reader import SweepReader
from codenib.engines.languages import language_of


@dataclass(frozen=True, slots=True)
class Language:
    """Where a language's reader and resolver live, and which graph stage resolves its files."""

    reader: str         # the module that defines its `READER` (a `Reader`, or a `TreeReader`)
    resolver: str       # the module that resolves its files' references
    graph: str          # a key of `GRAPHS`


#: Language name -> its reader, resolver and graph stage (Python first: manifests list the
#: readers' versions in this order).
LANGUAGES: dict[str, Language] = {
    "python": Language("codenib.compiler.lang.python", "codenib.compiler.lang.python_resolve", "python"),
    "javascript": Language("codenib.compiler.lang.javascript", "codenib.compiler.lang.resolve_js", "facts"),
    "typescript": Language("codenib.compiler.lang.typescript", "codenib.compiler.lang.resolve_js", "facts"),
    "go": Language("codenib.compiler.lang.go", "codenib.compiler.lang.resolve_go", "facts"),
    "java": Language("codenib.compiler.lang.java", "codenib.compiler.lang.resolve_java", "facts"),
    "rust": Language("codenib.compiler.lang.rust", "codenib.compiler.lang.resolve_rust", "facts"),
    "c": Language("codenib.compiler.lang.c", "codenib.compiler.lang.resolve_c", "facts"),
    "cpp": Language("codenib.compiler.lang.cpp", "codenib.compiler.lang.resolve_c", "facts"),
}

#: Graph stage -> what it is (the modules that build it: `codenib.compiler.lang.python_graph`,
#: `codenib.compiler.lang.facts_graph`).
GRAPHS: dict[str, str] = {
    "python": "the Python graph: units resolved by name inference, kept across builds",
    "facts": "the facts graph: each file's imports, calls and bases resolved by its language's rules",
}

#: Language name -> the module that defines its `READER`.
READERS: dict[str, str] = {language: entry.reader for language, entry in LANGUAGES.items()}

_loaded: dict[str, Reader] = {}


def reader_of(rel_path: str, raw: bytes | None = None) -> Reader | None:
    """The reader of a file by its suffix (and its bytes, for `.h`); None for a suffix no
    reader takes."""
    language = language_of(rel_path, raw)
    return reader_named(language) if language in LANGUAGES else None


def reader_named(language: str) -> Reader:
    """The reader of a language (KeyError naming the languages there are)."""
    reader = _loaded.get(language)
    if reader is None:
        if language not in LANGUAGES:
            raise KeyError(f"no reader for language {language!r}; choose from {', '.join(LANGUAGES)}")
        made = importlib.import_module(LANGUAGES[language].reader).READER
        reader = _loaded[language] = SweepReader(made) if isinstance(made, TreeReader) else made
    return reader


def graph_of(rel_path: str) -> str | None:
    """The graph stage that resolves a file (by its suffix); None for a suffix no reader takes."""
    entry = LANGUAGES.get(language_of(rel_path) or "")
    return entry.graph if entry is not None else None


def reader_for(rel_path: str, raw: bytes | None = None) -> TreeReader | None:
    """The `TreeReader` of a file read by the tree-sitter sweep; None for other files."""
    reader = reader_of(rel_path, raw)
    return reader.tree if isinstance(reader, SweepReader) else None


def reader_versions() -> dict[str, int]:
    """Each language's reader version (and the facts version): part of every key under
    which per-file results are kept, so a reader change invalidates only its own files."""
    out = {language: reader_named(language).version for language in LANGUAGES}
    out["facts"] = FACTS_VERSION
    return out


def read_foreign(rel_path: str, raw: bytes) -> ForeignParse:
    """Nodes and facts of a file the tree-sitter sweep reads (KeyError for other files)."""
    reader = reader_for(rel_path, raw)
    if reader is None:
        raise KeyError(f"no tree-sitter reader for {rel_path}")
    return reader_of(rel_path, raw).read(rel_path, raw)


def read_foreign_spans(rel_path: str, raw: bytes) -> list[tuple[str, int, int]]:
    """(node id, start line, end line) of each definition node `read_foreign` makes of `raw`,
    in its order, read without texts or facts (raises KeyError as `read_foreign`)."""
    reader = reader_for(rel_path, raw)
    if reader is None:
        raise KeyError(f"no tree-sitter reader for {rel_path}")
    return reader_of(rel_path, raw).spans(rel_path, raw)


__all__ = ["GRAPHS", "LANGUAGES", "READERS", "ForeignFacts", "ForeignParse", "Language", "Reader", "TreeReader",
           "graph_of", "read_foreign", "read_foreign_spans", "reader_for", "reader_named", "reader_of",
           "reader_versions"]
