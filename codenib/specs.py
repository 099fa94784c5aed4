"""Reading small TOML/JSON configuration files (job specs, LLM settings) with clear errors."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Iterator

from codenib.errors import BadInputError


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
    path = Path(path)
    shown = shown or str(path)
    try:
        with open(path, encoding="utf-8") as fh:
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
                yield row
    except UnicodeDecodeError as exc:
        raise BadInputError(f"not UTF-8 text: {exc}", path=shown, fix="save the file as UTF-8") from None
