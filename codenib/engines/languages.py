"""Which language a repository file is written in, by its suffix (pure; no parsing).

Shared by the compiler (which reader parses a file) and the index (which paths name code):
the readers themselves live in `codenib.compiler.lang`.
"""

from __future__ import annotations

import re

#: File suffix -> language name (the `language` column of nodes.parquet).
#: `.h` is C unless its text shows C++ (`HEADER_CPP`): C headers parsed as C++ misread
#: `new`/`class` used as identifiers, and C++ headers parsed as C lose their classes and
#: namespaces (fmt keeps most of its code in `include/fmt/*.h`).
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

#: Suffixes whose language is decided by the file's text: suffix -> (default, alternative).
AMBIGUOUS_SUFFIXES: dict[str, tuple[str, str]] = {".h": ("c", "cpp")}
#: A line that only C++ writes: a namespace, a template, a class body, an access specifier,
#: `using namespace`, `std::`. (`extern "C"` is not one: C headers wrap themselves in it.)
HEADER_CPP = re.compile(rb"^[ \t]*(?:namespace(?:[ \t]+\w+)?[ \t]*\{|template[ \t]*<|class[ \t]+\w+[^;\n]*\{"
                        rb"|(?:public|private|protected)[ \t]*:|using[ \t]+namespace\b)|\bstd::", re.MULTILINE)

#: Every suffix the repository walk selects.
SOURCE_SUFFIXES: tuple[str, ...] = tuple(sorted(LANGUAGE_OF_SUFFIX))


def suffix_of(path: str) -> str:
    """The suffix of a path's last component, case kept ('' when it has none): `.PY` or
    `.C` files are left out as they were before other languages were read."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:] if dot >= 0 else ""


def language_of(path: str, raw: bytes | None = None) -> str | None:
    """The language of a file by its suffix, or None for a file no reader takes; for a suffix
    of `AMBIGUOUS_SUFFIXES`, by its bytes when given (`.h` with C++ lines is "cpp")."""
    suffix = suffix_of(path)
    pair = AMBIGUOUS_SUFFIXES.get(suffix)
    if pair is not None and raw is not None:
        return pair[1] if HEADER_CPP.search(raw) else pair[0]
    return LANGUAGE_OF_SUFFIX.get(suffix)


def languages_of(path: str) -> tuple[str, ...]:
    """Every language a file may be read as, by its suffix alone (two for `.h`)."""
    suffix = suffix_of(path)
    if suffix in AMBIGUOUS_SUFFIXES:
        return AMBIGUOUS_SUFFIXES[suffix]
    language = LANGUAGE_OF_SUFFIX.get(suffix)
    return (language,) if language else ()
