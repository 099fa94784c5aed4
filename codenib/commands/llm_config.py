"""`--llm-config FILE`: the LLM reranker settings a command reads, checked so that a bad
setting names the file. Its own module so that `codenib query` reads them without the job-spec
code (`codenib.commands.jobs`, which imports the batch options)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codenib.core.errors import BadInputError
from codenib.core.specs import read_config_file


def read_llm_config(path: str | Path) -> dict[str, Any]:
    """The LLM reranker settings of a TOML/JSON file (its [llm] table or the whole file),
    checked here so that a bad setting names the file."""
    from codenib.engines.llm.client import LLMConfig

    data = read_config_file(path, section="llm")
    try:
        LLMConfig.from_dict(data)
    except BadInputError as exc:
        raise BadInputError(str(exc), path=str(path)) from None
    return data
