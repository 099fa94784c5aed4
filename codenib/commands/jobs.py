"""Job specs: TOML files under jobs/ that capture every option of `codenib run` (and of
`codenib eval` / `codenib rerank`), so a job can be re-run or submitted by name.

```toml
[run]        # the options of `codenib run`, dashes as underscores
[eval]       # optional: evaluate the run's results afterwards (options of `codenib eval`)
[rerank]     # optional: the options of `codenib rerank` (nightly re-ranking jobs)
[llm]        # optional: LLM reranker settings (endpoint, model, ...); the key comes from the environment
[submit]     # optional: `codenib submit` settings (SUBMIT_KEYS: entrypoint, resources, pip, env_vars, ...)
```
Relative paths are relative to the folder the command runs in (the repository root for
the specs in jobs/).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codenib.errors import BadInputError
from codenib.specs import read_config_file

SECTIONS = ("run", "eval", "rerank", "llm", "submit")
EVAL_KEYS = ("qrels", "queries", "out", "measures", "compare", "auto", "export_trec", "plan", "no_plots")
# [submit] keys, read by codenib/commands/submission.py (values are checked there).
SUBMIT_KEYS = ("entrypoint", "entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory", "pip", "env_vars",
               "excludes", "runtime_env", "address")


@dataclass(frozen=True)
class JobSpec:
    """A parsed job spec; sections are plain tables, validated by the commands that use them."""

    path: str
    run: dict[str, Any] = field(default_factory=dict)
    eval: dict[str, Any] = field(default_factory=dict)
    rerank: dict[str, Any] = field(default_factory=dict)
    llm: dict[str, Any] = field(default_factory=dict)
    submit: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return Path(self.path).stem


def load_job_spec(path: str | Path) -> JobSpec:
    """Read a job spec; unknown sections or `[run]`/`[eval]` keys exit 2 listing the valid ones."""
    data = read_config_file(path)
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise BadInputError(f"unknown section(s) {unknown}", path=str(path),
                            fix=f"use sections: {', '.join(SECTIONS)}")
    for name in SECTIONS:
        if name in data and not isinstance(data[name], dict):
            raise BadInputError(f"[{name}] must be a table", path=str(path), fix=f"write [{name}] then key = value lines")
    spec = JobSpec(str(path), **{name: dict(data.get(name, {})) for name in SECTIONS})
    _check_keys(spec.run, _run_keys(), "run", path)
    _check_keys(spec.eval, EVAL_KEYS, "eval", path)
    _check_keys(spec.submit, SUBMIT_KEYS, "submit", path)
    return spec


def run_options(spec: JobSpec | None, overrides: dict[str, Any]):
    """`RunOptions` from a spec's [run] (and [llm]) with command-line values on top."""
    from codenib.batch.driver import RunOptions

    merged: dict[str, Any] = dict(spec.run) if spec else {}
    if spec and spec.llm and "llm" not in merged:
        merged["llm"] = spec.llm
    if overrides.get("index") is not None or overrides.get("index_root") is not None:
        # A command-line index choice replaces the spec's, whichever of the two it used.
        merged.pop("index", None)
        merged.pop("index_root", None)
    merged.update({k: v for k, v in overrides.items() if v is not None})
    if "llm_config" in merged:
        merged["llm"] = read_config_file(merged.pop("llm_config"), section="llm")
    missing = [k for k in ("queries", "out") if not merged.get(k)]
    if missing:
        where = f" (in {spec.path} [run] or on the command line)" if spec else ""
        raise BadInputError(f"missing {', '.join('--' + m for m in missing)}{where}",
                            fix="pass --queries QUERIES.parquet --out RESULTS_DIR (and --index or --index-root)")
    types = {f.name: f.type for f in dataclasses.fields(RunOptions)}
    for key, value in merged.items():
        if key in ("k", "shard_size", "workers", "max_indexes") and value is not None and not isinstance(value, int):
            raise BadInputError(f"`{key}` must be an integer, got {value!r}", fix=f"write {key} = 100")
        if types.get(key) == "bool" and not isinstance(value, bool):
            raise BadInputError(f"`{key}` must be true or false, got {value!r}", fix=f"write {key} = true")
    if merged.get("rerank") == "none":
        merged["rerank"] = None if not merged.get("llm") else "none"
    for key in ("queries", "out", "index", "index_root"):
        if merged.get(key) is not None:
            merged[key] = str(merged[key])
    return RunOptions(**merged)


def rerank_options(spec: JobSpec | None, overrides: dict[str, Any]):
    """`RerankOptions` from a spec's [rerank] (and [llm]) with command-line values on top."""
    from codenib.batch.rerank import RerankOptions

    valid = tuple(f.name for f in dataclasses.fields(RerankOptions)) + ("llm_config",)
    merged: dict[str, Any] = dict(spec.rerank) if spec else {}
    if spec:
        _check_keys(merged, valid, "rerank", spec.path)
        if spec.llm and "llm" not in merged:
            merged["llm"] = spec.llm
    merged.update({k: v for k, v in overrides.items() if v is not None})
    if "llm_config" in merged:
        merged["llm"] = read_config_file(merged.pop("llm_config"), section="llm")
    missing = [k for k in ("results", "out") if not merged.get(k)]
    if missing:
        raise BadInputError(f"missing {', '.join('--' + m for m in missing)}",
                            fix="pass --results RESULTS_DIR --out NEW_RESULTS_DIR (or a job spec with [rerank])")
    for key in ("top_n", "shard_size", "workers"):
        if merged.get(key) is not None and not isinstance(merged[key], int):
            raise BadInputError(f"`{key}` must be an integer, got {merged[key]!r}", fix=f"write {key} = 50")
    for key in ("results", "out", "queries", "index", "index_root"):
        if merged.get(key) is not None:
            merged[key] = str(merged[key])
    return RerankOptions(**merged)


def _run_keys() -> tuple[str, ...]:
    from codenib.batch.driver import RunOptions

    return tuple(f.name for f in dataclasses.fields(RunOptions)) + ("llm_config",)


def _check_keys(table: dict, valid, section: str, path) -> None:
    unknown = sorted(set(table) - set(valid))
    if unknown:
        raise BadInputError(f"unknown key(s) {unknown} in [{section}]", path=str(path),
                            fix=f"valid keys: {', '.join(valid)}")
