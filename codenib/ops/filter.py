"""Explicit candidate predicates: spans, content, symbols only, path globs, test paths.

Every filter keeps the input order and is idempotent.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache
from typing import Sequence

from codenib.ops.retrieve import Candidates, QueriedNode

#: Where test code lives, by each language's conventions (Python's first, unchanged).
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|__mocks__|testdata)(/|$)"   # tests/ test/ testing/ (src/test/ in
                                                         # Java) folders; Go's testdata/
    r"|^spec/([^/]+/)*[^/]+\.[cm]?[jt]sx?$"                # a JavaScript/TypeScript project's spec/ folder
    r"|(^|/)test_[^/]*\.py$|(^|/)conftest\.py$"           # pytest's names
    r"|_tests?\.(py|go|rs|c|cc|cpp|cxx)$"                  # x_test.py, Go's x_test.go, x_test.cc
    r"|_unittest\.(c|cc|cpp|cxx)$"                         # C/C++ x_unittest.cc
    r"|\.(test|spec)\.[cm]?[jt]sx?$"                      # JavaScript/TypeScript x.test.js, x.spec.ts
    r"|[a-z0-9]Tests?\.java$"                              # Java FooTest.java
)

#: Test modules inside source files, by file suffix: a definition whose container path holds one
#: of these names is test code although its file is not (Rust keeps unit tests in a
#: `#[cfg(test)] mod tests` block of the file they test).
_TEST_CONTAINERS = {".rs": frozenset({"tests", "test"})}


def valid_spans(cands: Sequence[QueriedNode]) -> Candidates:
    """Drop candidates whose span is impossible (start < 1 or end < start)."""
    return tuple(c for c in cands if 1 <= c.start_line <= c.end_line)


def with_content(cands: Sequence[QueriedNode], min_chars: int = 1) -> Candidates:
    """Keep candidates whose loaded content has at least `min_chars` non-blank characters."""
    return tuple(c for c in cands if c.content is not None and len(c.content.strip()) >= min_chars)


def symbols_only(cands: Sequence[QueriedNode]) -> Candidates:
    """Drop file nodes, keeping classes, functions and methods."""
    return tuple(c for c in cands if c.kind != "file")


def include_paths(cands: Sequence[QueriedNode], globs: Sequence[str]) -> Candidates:
    """Keep candidates whose file matches any of `globs` (fnmatch on the relative path)."""
    if not globs:
        return tuple(cands)
    return tuple(c for c in cands if any(fnmatch.fnmatchcase(c.file, g) for g in globs))


def exclude_paths(cands: Sequence[QueriedNode], globs: Sequence[str]) -> Candidates:
    """Drop candidates whose file matches any of `globs`."""
    return tuple(c for c in cands if not any(fnmatch.fnmatchcase(c.file, g) for g in globs))


@lru_cache(maxsize=1 << 16)
def is_test_path(path: str) -> bool:
    """True for test code: tests folders, `test_*.py`, `*_test.py`, `conftest.py`, and the other
    languages' conventions (`*_test.go`, `*.test.js`, `*.spec.ts`, `__tests__/`, `FooTest.java`).
    Cached: a bug report's candidates ask it of the same few hundred files thousands of times."""
    return bool(_TEST_PATH.search(path))


def is_test_definition(path: str, qualname: str) -> bool:
    """True for a definition in test code: in a test path, or inside a test module of a source
    file (Rust's `mod tests`); other languages' definitions go by their path alone."""
    if is_test_path(path):
        return True
    names = next((v for suffix, v in _TEST_CONTAINERS.items() if path.endswith(suffix)), None)
    return bool(names) and any(seg in names for seg in qualname.split(".")[:-1])


def drop_tests(cands: Sequence[QueriedNode]) -> Candidates:
    """Drop candidates that live in test code."""
    return tuple(c for c in cands if not is_test_path(c.file))


def demote_tests(cands: Sequence[QueriedNode]) -> Candidates:
    """Move test-code candidates below library code, keeping each group's order.

    A soft filter for behaviour questions, which are about the implementation; the tests
    stay in the list (a test is still a useful pointer), just after the library code.
    Scores are reassigned as 1/position so the list stays sorted by score.
    """
    library = [c for c in cands if not is_test_path(c.file)]
    tests = [c for c in cands if is_test_path(c.file)]
    ordered = library + tests
    if ordered == list(cands):
        return tuple(cands)
    return tuple(c.with_score(1.0 / (i + 1)) for i, c in enumerate(ordered))
