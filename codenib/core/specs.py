"""Reading small TOML/JSON configuration files (job specs, LLM settings) with clear errors."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Iterator

from codenib.core.errors import BadInputError


def read_config_file(path: str | Path, section: str | None = None) -> dict[str, Any]:
    """A TOML or JSON file as a dict; with `section`, that table (or the whole file if absent)."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError("configuration file not found", path=str(path), fix="pass an existing .toml or .json file")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInputError(f"cannot parse configuration: {exc}", path=str(path),
                            fix="fix the TOML/JSON syntax at the position named") from exc
    if not isinstance(data, dict):
        raise BadInputError("configuration must be a table/object at the top level", path=str(path),
                            fix="write key = value pairs")
    if section is not None and isinstance(data.get(section), dict):
        return data[section]
    return data


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """One JSON object per line (blank lines skipped); a bad line names its number."""
    return list(iter_jsonl(path))


def iter_jsonl(path: str | Path, shown: str | None = None) -> Iterator[dict[str, Any]]:
    """`read_jsonl`, a row at a time; errors name `shown` (default: the path)."""
    for _, row in iter_jsonl_lines(path, shown):
        yield row


def iter_jsonl_lines(path: str | Path, shown: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """`iter_jsonl` with each row's line number (1-based, blank lines counted).

    The file must be UTF-8: a byte that is not is bad input naming its line (JSON escapes of
    any code point, lone surrogates included, are fine). A byte-order mark at the start, as
    Windows editors write, is skipped.
    """
    path = Path(path)
    shown = shown or str(path)
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise BadInputError(f"line {n} is not valid JSON: {exc}", path=shown,
                                        fix="write one JSON object per line") from None
                if not isinstance(row, dict):
                    raise BadInputError(f"line {n} is not a JSON object", path=shown,
                                        fix='write one object per line, like {"qid": "q1", "query": "..."}')
                yield n, row
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{_undecodable_line(path)} is not UTF-8 text ({exc.reason}, byte "
                            f"0x{exc.object[exc.start]:02x})", path=shown,
                            fix="save the file as UTF-8; other characters can be written as JSON \\u escapes") from None


def _undecodable_line(path: Path) -> str:
    """`line N` of the first line that is not UTF-8 (the text reader decodes in blocks, so
    its error knows a position in a block, not the line)."""
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return f"line {n}"
    return "a line"
