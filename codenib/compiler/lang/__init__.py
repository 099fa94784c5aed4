"""Readers of the languages other than Python, behind a registry keyed by language.

Each module here defines one `TreeReader` (tree-sitter grammar, query, and what its
captures mean); `codenib.engines.languages` maps file suffixes to language names. Adding
a language is one module and one line in `READERS` (and its suffixes there).
Python keeps its own reader, `codenib.compiler.lang.python`.
"""

from __future__ import annotations

import dataclasses
import importlib

from codenib.compiler.lang.base import ForeignParse, TreeReader
from codenib.compiler.lang.facts import FACTS_VERSION, ForeignFacts
from codenib.compiler.lang.sweep import read_file, read_spans
from codenib.engines.languages import language_of

#: Language name -> the module that defines its `READER`.
READERS: dict[str, str] = {
    "javascript": "codenib.compiler.lang.javascript",
    "typescript": "codenib.compiler.lang.typescript",
    "go": "codenib.compiler.lang.go",
    "java": "codenib.compiler.lang.java",
    "rust": "codenib.compiler.lang.rust",
    "c": "codenib.compiler.lang.c",
    "cpp": "codenib.compiler.lang.cpp",
}

_loaded: dict[str, TreeReader] = {}


def reader_for(rel_path: str, raw: bytes | None = None) -> TreeReader | None:
    """The reader of a file by its suffix (and its bytes, for `.h`); None for Python files and
    unknown suffixes."""
    language = language_of(rel_path, raw)
    if language is None or language not in READERS:
        return None
    reader = _loaded.get(language)
    if reader is None:
        reader = _loaded[language] = importlib.import_module(READERS[language]).READER
    return reader


def is_foreign(rel_path: str) -> bool:
    """Whether a file is read by one of these readers (not by the Python reader)."""
    return language_of(rel_path) in READERS


def reader_versions() -> dict[str, int]:
    """Each language's reader version (and the facts version): part of every key under
    which per-file results are kept, so a reader change invalidates only its own files."""
    out = {language: importlib.import_module(module).READER.version for language, module in READERS.items()}
    out["facts"] = FACTS_VERSION
    return out


def read_foreign(rel_path: str, raw: bytes) -> ForeignParse:
    """Nodes and facts of a non-Python file (raises KeyError for a suffix no reader takes)."""
    reader = reader_for(rel_path, raw)
    if reader is None:
        raise KeyError(f"no reader for {rel_path}")
    return read_file(reader, rel_path, raw)


def read_foreign_spans(rel_path: str, raw: bytes) -> list[tuple[str, int, int]]:
    """(node id, start line, end line) of each definition node `read_foreign` makes of `raw`,
    in its order, read without texts or facts (raises KeyError as `read_foreign`)."""
    reader = reader_for(rel_path, raw)
    if reader is None:
        raise KeyError(f"no reader for {rel_path}")
    return read_spans(reader, rel_path, raw)


def read_unreadable(rel_path: str, error: str) -> ForeignParse:
    """The file node of a non-Python file that could not be read."""
    parsed = read_foreign(rel_path, b"")
    node = dataclasses.replace(parsed.nodes[0], parse_error=error)
    return ForeignParse(rel_path, [node], parsed.facts, error)


__all__ = ["READERS", "ForeignFacts", "ForeignParse", "TreeReader", "is_foreign", "read_foreign",
           "read_foreign_spans", "read_unreadable", "reader_for", "reader_versions"]
