"""Planning the submission of a job spec to a Ray cluster (`codenib submit`), offline.

`plan_submission` checks the spec and plans what is sent: the entrypoint, the runtime
environment (`packaging`) and a deterministic submission id; `job_client.submit` sends it.
The id is made of the spec's name, the sha256 of its bytes and the UTC date, so a nightly
job submitted twice on one day runs once: the second submit finds the first by its id and
reports it.

What runs inside the submitted job (`python -m codenib.commands.submission`) is
`codenib.commands.submission`, above the command line; this module is below it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from codenib import __version__
from codenib.commands.jobs import JobSpec, load_job_spec
from codenib.commands.packaging import build_runtime_env, check_runtime_values, repository_root
from codenib.core.errors import BadInputError

ID_HASH_CHARS = 12  # 48 bits of the spec's sha256: unique among a team's specs, short enough to read
# Inside a job Ray sets RAY_ADDRESS; "auto" makes `codenib run/rerank` join that cluster.
JOB_ADDRESS = "auto"


@dataclass(frozen=True)
class Submission:
    """Everything sent to the cluster for one job spec; planned without contacting anything."""

    spec_path: str
    root: str
    submission_id: str
    entrypoint: str
    runtime_env: dict[str, Any]
    metadata: dict[str, str]
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_memory: int | None = None
    address: str | None = None  # the spec's [submit] address, if any

    def describe(self) -> dict[str, Any]:
        """A JSON-ready view (what `--dry-run` prints)."""
        out: dict[str, Any] = {"submission_id": self.submission_id, "spec": self.spec_path,
                               "entrypoint": self.entrypoint}
        for key in ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["runtime_env"] = self.runtime_env
        out["metadata"] = self.metadata
        return out


def plan_submission(spec_path: str | Path, day: _dt.date | None = None) -> Submission:
    """Read and check a job spec and plan its submission (id, entrypoint, runtime env); offline."""
    path = Path(spec_path)
    spec = load_job_spec(path)
    content = path.read_bytes()
    root = repository_root(path)
    relpath = path.resolve().relative_to(root).as_posix()
    day = day or _dt.datetime.now(_dt.timezone.utc).date()
    submit_table = _check_submit_table(spec)
    _check_sections(spec, submit_table)
    return Submission(
        spec_path=str(path),
        root=str(root),
        submission_id=submission_id(spec.name, content, day),
        entrypoint=select_entrypoint(spec, relpath),
        runtime_env=build_runtime_env(spec, root),
        metadata={"codenib_spec": relpath, "codenib_spec_sha256": hashlib.sha256(content).hexdigest(),
                  "codenib_date": day.strftime("%Y%m%d"), "codenib_version": __version__},
        entrypoint_num_cpus=submit_table.get("entrypoint_num_cpus"),
        entrypoint_num_gpus=submit_table.get("entrypoint_num_gpus"),
        entrypoint_memory=submit_table.get("entrypoint_memory"),
        address=submit_table.get("address"),
    )


def submission_id(name: str, content: bytes, day: _dt.date) -> str:
    """`codenib-NAME-YYYYMMDD-HASH`: the same spec bytes on the same UTC day give the same id."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "spec"
    return f"codenib-{safe}-{day.strftime('%Y%m%d')}-{hashlib.sha256(content).hexdigest()[:ID_HASH_CHARS]}"


def select_entrypoint(spec: JobSpec, spec_relpath: str) -> str:
    """[submit] entrypoint if given; else `codenib rerank` for a [rerank] spec, else `codenib run`."""
    if spec.submit.get("entrypoint"):
        return str(spec.submit["entrypoint"])
    command = "rerank" if spec.rerank else "run"
    return f"codenib {command} --spec {shlex.quote(spec_relpath)} --address {JOB_ADDRESS}"


# --- private helpers --------------------------------------------------------------------

def _check_submit_table(spec: JobSpec) -> dict[str, Any]:
    table = spec.submit
    where = f"{spec.path} [submit]"
    if "entrypoint" in table and (not isinstance(table["entrypoint"], str) or not table["entrypoint"].strip()):
        raise BadInputError("`entrypoint` must be a non-empty string", path=where,
                            fix='write entrypoint = "codenib run --spec jobs/NAME.toml --address auto"')
    for key in ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory"):
        value = table.get(key)
        if value is None:
            continue
        integer_only = key == "entrypoint_memory"
        kinds = (int,) if integer_only else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value < 0:
            raise BadInputError(f"`{key}` must be a non-negative {'integer (bytes)' if integer_only else 'number'}, "
                                f"got {value!r}", path=where, fix=f"write {key} = 1")
    for key in ("address", "runtime_env"):
        if key in table and not isinstance(table[key], str):
            raise BadInputError(f"`{key}` must be a string, got {table[key]!r}", path=where,
                                fix=f'write {key} = "..."')
    check_runtime_values(table, where)
    return table


def _check_sections(spec: JobSpec, table: Mapping[str, Any]) -> None:
    """Check locally what the cluster would run, so a typo fails here and not after an upload."""
    from codenib.commands.jobs import rerank_options, run_options

    if table.get("entrypoint"):
        return
    # llm_config names a file on the cluster; it is read there, not here.
    if spec.rerank:
        rerank_options(_without(spec, "rerank", "llm_config"), {})
    elif spec.run:
        run_options(_without(spec, "run", "llm_config"), {})
    else:
        raise BadInputError("nothing to run: the spec has no [run], [rerank] or [submit] entrypoint", path=spec.path,
                            fix="add a [run] section (or [rerank]), or [submit] entrypoint = \"...\"")


def _without(spec: JobSpec, section: str, key: str) -> JobSpec:
    import dataclasses

    return dataclasses.replace(spec, **{section: {k: v for k, v in getattr(spec, section).items() if k != key}})
