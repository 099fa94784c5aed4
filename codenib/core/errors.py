"""Typed errors. Each says what was expected, what was found, and the fix.

`BadInputError` and its subclasses map to exit status 2 on the command line; any
other `CodeNibError` maps to 1.
"""

from __future__ import annotations


class CodeNibError(Exception):
    """Base class of every error CodeNib raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, path: str | None = None, fix: str | None = None):
        self.path = path
        self.fix = fix
        text = message
        if path and path not in message:
            text = f"{path}: {text}"
        if fix:
            text = f"{text} (fix: {fix})"
        super().__init__(text)


class BadInputError(CodeNibError):
    """The user's input (a path, a file, a field, an option) is wrong."""

    exit_code = 2


class IndexFormatError(BadInputError):
    """An index folder is missing, corrupted, or of another format version."""


class QueryError(BadInputError):
    """A query (or a query set row) cannot be answered as given."""


class ModelLoadError(BadInputError):
    """An embedding model could not be found or loaded offline."""


class EncoderMismatchError(BadInputError):
    """Queries would be encoded by another encoder backend than the index's vectors."""


class MissingDependencyError(CodeNibError):
    """An optional dependency is not installed."""

    def __init__(self, module: str, install: str, purpose: str):
        super().__init__(
            f"{purpose} needs the Python package '{module}', which is not installed",
            fix=f"pip install {install}",
        )


class DiskWriteError(CodeNibError):
    """The storage refused a write (a full disk, a quota, an I/O error): not bad input, so
    exit 1; the message names the file being written."""


class RerankError(CodeNibError):
    """A reranker failed for a whole request (per-window failures are recorded, not raised)."""
