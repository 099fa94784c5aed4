"""Job specs: TOML files under jobs/ that capture every option of `codenib run` (and of
`codenib eval` / `codenib rerank`), so a job can be re-run or submitted by name.

```toml
[index_set]  # optional: build the indexes first (options of `codenib index-set`; codenib/commands/job_steps.py)
[qrels]      # optional: write the judgments first (from the queries' patches, or given files merged)
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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codenib.core.errors import BadInputError
from codenib.core.options import check_spec_section, check_spec_values, required_keys, spec_keys
from codenib.commands.llm_config import read_llm_config
from codenib.core.specs import read_config_file

SECTIONS = ("index_set", "qrels", "run", "eval", "rerank", "llm", "submit")
EVAL_KEYS = ("qrels", "queries", "groups", "out", "measures", "levels", "compare", "auto", "export_trec", "plan", "no_plots", "html", "force")
#: [index_set] keys: `codenib index-set`'s options (read by codenib/commands/job_steps.py; index_root,
#: address and progress default to [run]'s).
INDEX_SET_KEYS = ("snapshots", "index_root", "mirror_root", "store", "address", "dense", "history", "model",
                  "max_file_bytes", "layout")
#: [qrels] keys: where the job's judgments go (`out`) and where they come from (given `files`
#: merged, or the `patches` of a row file, by default [run]'s queries).
QRELS_KEYS = ("out", "files", "patches", "mirror_root", "force")
# [submit] keys, read by codenib/commands/submission.py and packaging.py (values are checked there).
SUBMIT_KEYS = ("entrypoint", "entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory", "pip", "env_vars",
               "excludes", "runtime_env", "address")


@dataclass(frozen=True)
class JobSpec:
    """A parsed job spec; sections are plain tables, validated by the commands that use them."""

    path: str
    index_set: dict[str, Any] = field(default_factory=dict)
    qrels: dict[str, Any] = field(default_factory=dict)
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
    _check_keys(spec.index_set, INDEX_SET_KEYS, "index_set", path)
    _check_keys(spec.qrels, QRELS_KEYS, "qrels", path)
    return spec


def run_options(spec: JobSpec | None, overrides: dict[str, Any]):
    """`RunOptions` from a spec's [run] (and [llm]) with command-line values on top."""
    from codenib.batch.options import RunOptions

    merged: dict[str, Any] = dict(spec.run) if spec else {}
    if spec:
        check_spec_section(RunOptions, merged, spec.path, "run", _given(overrides))
    if overrides.get("index") is not None or overrides.get("index_root") is not None:
        # A command-line index choice replaces the spec's, whichever of the two it used.
        merged.pop("index", None)
        merged.pop("index_root", None)
    where = f" (in {spec.path} [run] or on the command line)" if spec else ""
    merged = _merge(RunOptions, merged, spec, overrides, where,
                    "pass --queries QUERIES.parquet --out RESULTS_DIR (and --index or --index-root)")
    if merged.get("rerank") == "none":
        merged["rerank"] = None if not merged.get("llm") else "none"
    return RunOptions(**merged)


def rerank_options(spec: JobSpec | None, overrides: dict[str, Any]):
    """`RerankOptions` from a spec's [rerank] (and [llm]) with command-line values on top."""
    from codenib.batch.options import RerankOptions

    merged: dict[str, Any] = dict(spec.rerank) if spec else {}
    if spec:
        _check_keys(merged, spec_keys(RerankOptions), "rerank", spec.path)
        check_spec_section(RerankOptions, merged, spec.path, "rerank", _given(overrides))
    merged = _merge(RerankOptions, merged, spec, overrides, "",
                    "pass --results RESULTS_DIR --out NEW_RESULTS_DIR (or a job spec with [rerank])")
    return RerankOptions(**merged)


def _merge(cls: type, merged: dict[str, Any], spec: JobSpec | None, overrides: dict[str, Any], where: str,
           fix: str) -> dict[str, Any]:
    """A spec section's values, its [llm] and the command line's on top, read and checked."""
    if spec and spec.llm and "llm" not in merged:
        merged["llm"] = spec.llm
    merged.update({k: v for k, v in overrides.items() if v is not None})
    if "llm_config" in merged:
        merged["llm"] = read_llm_config(merged.pop("llm_config"))
    missing = [k for k in required_keys(cls) if not merged.get(k)]
    if missing:
        raise BadInputError(f"missing {', '.join('--' + m for m in missing)}{where}", fix=fix)
    check_spec_values(cls, merged)
    return merged


def _given(overrides: dict[str, Any]) -> frozenset[str]:
    """The keys the command line set (its flags left out are None)."""
    return frozenset(k for k, v in overrides.items() if v is not None)


def _run_keys() -> tuple[str, ...]:
    from codenib.batch.options import RunOptions

    return spec_keys(RunOptions)


def _check_keys(table: dict, valid, section: str, path) -> None:
    unknown = sorted(set(table) - set(valid))
    if unknown:
        raise BadInputError(f"unknown key(s) {unknown} in [{section}]", path=str(path),
                            fix=f"valid keys: {', '.join(valid)}")
