"""Query transforms: keyword extraction (identifiers, dotted names, backticks, paths, errors).

The query signals the planner reads are in `codenib.model.signals`."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from codenib.core.querytext import CODE_IDENTIFIER


_DOTTED = re.compile(r"(?<![\w./])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?(?![\w/])")
_BACKTICK = re.compile(r"`{1,3}([^`\n]{1,200})`{1,3}")
# A file path, started only where a run of path characters starts (inside a run it would rescan
# the run at every position: quadratic on "-a-a-a...").
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|pyi|pyx|cfg|toml|ini|txt|md|rst|json|yaml|yml))"
                   r"(?::(\d+))?(?![\w])")
_TRACEBACK_FILE = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\w+))?')
_ERROR = re.compile(r"(?<![\w.])([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Exit|Interrupt))(?![\w])")
_FILE_EXT = re.compile(r"\.(py|pyi|pyx|cfg|toml|ini|txt|md|rst|json|yaml|yml)$")

@dataclass(frozen=True, slots=True)
class QueryKeywords:
    """Code-like pieces of a query, in order of first appearance, without duplicates."""

    identifiers: tuple[str, ...] = ()
    dotted: tuple[str, ...] = ()
    backticked: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    traceback_functions: tuple[str, ...] = ()

    def symbols(self) -> tuple[str, ...]:
        """Every symbol-like keyword, most specific first (dotted, backticked, identifiers)."""
        out = list(self.dotted) + [b for b in self.backticked if looks_symbol(b)] + list(self.identifiers)
        out += list(self.errors) + list(self.traceback_functions)
        return tuple(dict.fromkeys(s.removesuffix("()") for s in out))

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) for k, v in asdict(self).items()}


def extract_keywords(text: str) -> QueryKeywords:
    """Identifiers, dotted names, backticked spans, file paths, exception names and traceback
    function names found in `text` (order kept, duplicates dropped)."""
    backticked = _unique(m.group(1).strip() for m in _BACKTICK.finditer(text))
    paths = _unique([m.group(1) for m in _TRACEBACK_FILE.finditer(text)]
                    + [m.group(1) for m in _PATH.finditer(text)])
    tb_funcs = _unique(m.group(3) for m in _TRACEBACK_FILE.finditer(text)
                       if m.group(3) and m.group(3) != "<module>")
    dotted = _unique(m.group(0).removesuffix("()") for m in _DOTTED.finditer(text)
                     if not _FILE_EXT.search(m.group(0)) and not _is_number_like(m.group(0)))
    idents = _unique(m.group(0) for m in CODE_IDENTIFIER.finditer(text))
    errors = _unique(m.group(1) for m in _ERROR.finditer(text))
    return QueryKeywords(idents, dotted, backticked, paths, errors, tb_funcs)


# --- helpers ---------------------------------------------------------------------------------

def looks_symbol(s: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][\w.]*(?:\(\))?", s))


def _is_number_like(s: str) -> bool:
    return bool(re.fullmatch(r"[\d.]+", s)) or bool(re.fullmatch(r"(?:e\.g|i\.e|etc)\.?", s, re.IGNORECASE))


def _unique(items) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))
