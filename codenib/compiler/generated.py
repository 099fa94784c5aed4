"""Minified and generated files: the walk leaves them out of the index and says why.

A bundle's definitions are machine-named and packed onto a few huge lines; indexed, each
one's text would be a slice of the same line, and the file costs a hundred times the time
and memory of hand-written code of its size. Left out, it is named in the skipped list.
"""

from __future__ import annotations

from pathlib import Path

#: File names that minifiers and bundlers write (only suffixes a reader takes reach here).
GENERATED_NAME_ENDINGS = (".min.js", ".min.mjs", ".min.cjs", "-min.js", ".bundle.js")
#: Below this size a file is read whatever it holds: it cannot cost much.
GENERATED_MIN_BYTES = 4_096
#: A line this long is a bundle or a blob: hand-written files with data literals (test
#: expectations, tables) reach about 30 kB lines in the packages of a large environment.
GENERATED_LINE_BYTES = 50_000
#: Hand-written code averages 30 to 45 bytes a line and data-heavy test modules up to about
#: 900 (measured over 35,000 files of site-packages); minified bundles average thousands.
GENERATED_MEAN_LINE_BYTES = 1_000


def generated_reason(path: Path, rel_path: str) -> str | None:
    """Why the file at `path` is minified or generated code, None when it looks hand-written
    (or cannot be read: the walk's own checks report that)."""
    named = generated_name_reason(rel_path)
    if named is not None:
        return named
    try:
        if path.stat().st_size < GENERATED_MIN_BYTES:
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    return generated_text_reason(raw)


def generated_name_reason(rel_path: str) -> str | None:
    """Why a file of this name is minified or generated code (its ending), else None."""
    name = rel_path.rsplit("/", 1)[-1].lower()
    for ending in GENERATED_NAME_ENDINGS:
        if name.endswith(ending):
            return f"minified or generated code (a {ending} file name)"
    return None


def generated_text_reason(raw: bytes) -> str | None:
    """Why these bytes are minified or generated code (their line lengths), else None."""
    if len(raw) < GENERATED_MIN_BYTES:
        return None
    lines = raw.count(b"\n") + (not raw.endswith(b"\n"))
    mean = len(raw) // max(lines, 1)
    if mean >= GENERATED_MEAN_LINE_BYTES:
        return (f"minified or generated code ({lines} lines of {mean} bytes on average, "
                f"at least {GENERATED_MEAN_LINE_BYTES} taken as generated)")
    if len(raw) >= GENERATED_LINE_BYTES:
        longest = max(map(len, raw.split(b"\n")))
        if longest >= GENERATED_LINE_BYTES:
            return (f"minified or generated code (a line of {longest} bytes, "
                    f"at least {GENERATED_LINE_BYTES} taken as generated)")
    return None
