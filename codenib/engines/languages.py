"""Which language a repository file is written in, by its suffix (pure; no parsing).

Shared by the compiler (which reader parses a file) and the index (which paths name code):
the readers themselves live in `codenib.compiler.lang`.
"""

from __future__ import annotations

#: File suffix -> language name (the `language` column of nodes.parquet).
#: `.h` is read as C: a C++ header parsed with the C grammar still yields its functions and
#: structs, while C headers parsed as C++ misread `new`/`class` used as identifiers; classes
#: in `.h` files of C++ projects are the cost (their `.hpp`/`.cc` files are read as C++).
LANGUAGE_OF_SUFFIX: dict[str, str] = {
    ".py": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "typescript",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".ipp": "cpp", ".inl": "cpp",
}

#: Every suffix the repository walk selects.
SOURCE_SUFFIXES: tuple[str, ...] = tuple(sorted(LANGUAGE_OF_SUFFIX))


def suffix_of(path: str) -> str:
    """The suffix of a path's last component, case kept ('' when it has none): `.PY` or
    `.C` files are left out as they were before other languages were read."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def language_of(path: str) -> str | None:
    """The language of a file by its suffix, or None for a file no reader takes."""
    return LANGUAGE_OF_SUFFIX.get(suffix_of(path))
