"""Submitting job specs to a Ray cluster through Ray's job submission API (`codenib submit`).

A submission is planned offline first (`plan_submission`: entrypoint, runtime environment,
a deterministic submission id, checked spec), then sent (`submit`). The id is made of the
spec's name, the sha256 of its bytes and the UTC date, so a nightly job submitted twice on
one day runs once: the second submit finds the first by its id and reports it.

Inside a submitted job, `python -m codenib.commands.submission COMMAND ARGS...` runs `codenib COMMAND
ARGS...` joined to the cluster the job runs on; it is for commands that have no --address
option of their own (jobs/demo.toml uses it for `codenib demo`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fnmatch
import hashlib
import os
import re
import shlex
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, TextIO
from urllib.parse import urlsplit

from codenib import __version__
from codenib.errors import BadInputError, CodeNibError, MissingDependencyError
from codenib.commands.jobs import JobSpec, load_job_spec

DEFAULT_ADDRESS = "http://127.0.0.1:8265"  # Ray's dashboard (job API) port, on loopback only
# Never uploaded with the working_dir: environments, VCS data, run outputs, indexes, caches.
DEFAULT_EXCLUDES = (
    "/.venv", "/.git", "/runs", "/idx", "/codenib-demo", "/.codenib-demo", "/build", "/dist",
    "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache",
)
ROOT_MARKERS = ("pyproject.toml", ".git")  # a folder holding one of these is a repository root
RUNTIME_ENV_FILE = "cluster/runtime_env.yaml"  # the team's runtime_env defaults, relative to the root
RUNTIME_ENV_KEYS = ("excludes", "env_vars", "pip")  # what a runtime_env YAML may set (the root is the working_dir)
ID_HASH_CHARS = 12  # 48 bits of the spec's sha256: unique among a team's specs, short enough to read
CONNECT_TIMEOUT_S = 5.0  # fail fast on an unreachable address instead of the OS's minutes-long TCP timeout
LARGEST_FILES_SHOWN = 5  # named in the error when the upload is too large: enough to spot the culprit
POLL_INTERVAL_S = 2.0  # status polling when logs cannot be streamed
TOKEN_ENV, TOKEN_PATH_ENV, AUTH_MODE_ENV = "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"  # Ray's names
DEFAULT_TOKEN_FILE = Path("~/.ray/auth_token")  # Ray's default token file (used when RAY_AUTH_MODE=token)
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


@dataclass(frozen=True)
class AuthToken:
    """A Ray cluster token and where it came from; the value never appears in a repr or a log."""

    value: str = field(repr=False)
    source: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.value}"}


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


def build_runtime_env(spec: JobSpec, root: Path) -> dict[str, Any]:
    """working_dir = the repository root, with excludes; env_vars and pip from the runtime_env
    YAML (cluster/runtime_env.yaml or [submit] runtime_env) overridden by [submit]."""
    table = spec.submit
    if table.get("runtime_env"):
        env_file: Path | None = root / str(table["runtime_env"])
        if not env_file.is_file():
            raise BadInputError(f"[submit] runtime_env names a missing file {table['runtime_env']!r}",
                                path=spec.path, fix=f"give a YAML file path relative to {root}")
    else:
        env_file = root / RUNTIME_ENV_FILE
        env_file = env_file if env_file.is_file() else None
    defaults = read_runtime_env_file(env_file) if env_file else {}
    excludes = list(DEFAULT_EXCLUDES)
    for extra in (defaults.get("excludes", []), table.get("excludes", [])):
        excludes += [e for e in extra if e not in excludes]
    env: dict[str, Any] = {"working_dir": str(root), "excludes": excludes}
    env_vars = {**defaults.get("env_vars", {}), **table.get("env_vars", {})}
    if env_vars:
        env["env_vars"] = env_vars
    pip = table.get("pip", defaults.get("pip"))
    if pip:
        env["pip"] = list(pip)
    return env


def read_runtime_env_file(path: Path) -> dict[str, Any]:
    """A runtime_env YAML (excludes, env_vars, pip), checked."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with ray
        raise MissingDependencyError("yaml", "pyyaml", f"reading {path}") from exc
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BadInputError(f"cannot parse the runtime_env YAML: {exc}", path=str(path),
                            fix="fix the YAML syntax at the position named") from exc
    if not isinstance(data, dict):
        raise BadInputError("a runtime_env YAML must be a mapping", path=str(path), fix="write `env_vars:` etc.")
    unknown = sorted(set(data) - set(RUNTIME_ENV_KEYS))
    if unknown:
        raise BadInputError(f"unknown key(s) {unknown}", path=str(path),
                            fix=f"valid keys: {', '.join(RUNTIME_ENV_KEYS)} (the working_dir is the repository root)")
    _check_runtime_values(data, str(path))
    return data


def repository_root(spec_path: Path) -> Path:
    """The nearest folder above the spec holding pyproject.toml or .git; else the spec's folder."""
    folder = spec_path.resolve().parent
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return folder


def auth_token_from_environment(environ: Mapping[str, str]) -> AuthToken | None:
    """The cluster token from Ray's variables: RAY_AUTH_TOKEN, else the file RAY_AUTH_TOKEN_PATH,
    else ~/.ray/auth_token when RAY_AUTH_MODE=token. None: send no credentials."""
    if environ.get(TOKEN_ENV, "").strip():
        return AuthToken(environ[TOKEN_ENV].strip(), f"${TOKEN_ENV}")
    if environ.get(TOKEN_PATH_ENV):
        return AuthToken(_read_token_file(Path(environ[TOKEN_PATH_ENV]).expanduser(), f"${TOKEN_PATH_ENV}"),
                         f"the file in ${TOKEN_PATH_ENV}")
    # The default file only when token mode is asked for, as Ray's own clients do: a local
    # token is never sent to a cluster that did not ask for one.
    default = DEFAULT_TOKEN_FILE.expanduser()
    if environ.get(AUTH_MODE_ENV, "").lower() == "token" and default.is_file():
        return AuthToken(_read_token_file(default, str(DEFAULT_TOKEN_FILE)), str(DEFAULT_TOKEN_FILE))
    return None


def submit(sub: Submission, address: str, token: AuthToken | None, *, wait: bool = False,
           address_from: str = "--address", out: TextIO | None = None, log: TextIO | None = None) -> int:
    """Submit `sub` unless a job with its id exists; with `wait`, follow its logs. Returns the
    exit status: 0 submitted/exists (or, waiting, succeeded), 1 failed or stopped."""
    out, log = out or sys.stdout, log or sys.stderr
    client = connect(address, token, address_from=address_from)
    existing = _find_job(client, sub.submission_id)
    if existing is None:
        try:
            client.submit_job(entrypoint=sub.entrypoint, submission_id=sub.submission_id,
                              runtime_env=sub.runtime_env, metadata=sub.metadata,
                              entrypoint_num_cpus=sub.entrypoint_num_cpus,
                              entrypoint_num_gpus=sub.entrypoint_num_gpus,
                              entrypoint_memory=sub.entrypoint_memory)
        except ValueError as exc:  # Ray's runtime_env checks (too large a working_dir, bad pip list)
            raise BadInputError(f"the cluster refused the runtime environment: {exc}", path=sub.spec_path,
                                fix="add [submit] excludes for large files, or fix [submit] pip/env_vars") from exc
        except RuntimeError as exc:
            if _is_too_large(exc):
                raise BadInputError(
                    f"the cluster refused the upload of {sub.root} (the job's working_dir): {_first_line(exc)}",
                    path=sub.spec_path,
                    fix="add [submit] excludes for large files; the largest not excluded: "
                        + _largest_files(Path(sub.root), sub.runtime_env.get("excludes", []))) from exc
            if "already exists" not in str(exc):
                raise CodeNibError(f"submitting {sub.submission_id} to {address} failed: {_first_line(exc)}") from exc
            existing = _find_job(client, sub.submission_id)  # another submit of this spec won the race
        else:
            print(sub.submission_id, file=out, flush=True)
            print(f"codenib submit: submitted {sub.submission_id} to {address}: {sub.entrypoint}", file=log)
    if existing is not None:
        print(f"already submitted: {sub.submission_id} ({existing.status})", file=out, flush=True)
        print("codenib submit: the same spec was submitted today (UTC); to run it again, change the spec, "
              f"or delete the old job: ray job delete {sub.submission_id}", file=log)
    if not wait:
        if existing is None:
            print(f"codenib submit: follow it with: codenib submit {sub.spec_path} --wait", file=log)
        return 0
    return follow(client, sub.submission_id, out=out, log=log)


def connect(address: str, token: AuthToken | None, *, address_from: str = "--address"):
    """A `JobSubmissionClient` for `address`; unreachable, refused or malformed -> exit 2."""
    _check_address(address, address_from)
    _probe(address, address_from)
    try:
        from ray.exceptions import AuthenticationError
        from ray.job_submission import JobSubmissionClient
    except ImportError as exc:
        raise MissingDependencyError("ray", "'ray[default]'", "codenib submit") from exc
    try:
        with _address_only_from_argument():
            return JobSubmissionClient(address, headers=token.headers() if token else None)
    except AuthenticationError as exc:
        how = f"sent the token from {token.source}" if token else "sent no token"
        raise BadInputError(f"the cluster at {address} refused the request ({how}): {_first_line(exc)}",
                            fix=f"export {TOKEN_PATH_ENV}=FILE holding the cluster's token "
                                f"(or {TOKEN_ENV}); cluster/start_local_head.sh prints where it is") from exc
    except ConnectionError as exc:
        raise BadInputError(f"no Ray job API answers at {address} (from {address_from})",
                            fix=_address_fix()) from exc
    except RuntimeError as exc:
        if "ray[default]" in str(exc):
            raise MissingDependencyError("aiohttp/requests", "'ray[default]'", "codenib submit") from exc
        raise CodeNibError(f"the Ray job API at {address} failed: {_first_line(exc)}") from exc


def follow(client, submission_id: str, *, out: TextIO, log: TextIO) -> int:
    """Stream a job's logs to `out` until it ends; 0 if it succeeded, 1 if it failed or stopped."""
    import asyncio

    written = [0]  # characters streamed so far, kept if streaming breaks halfway
    try:
        try:
            asyncio.run(_tail(client, submission_id, out, written))
            streamed = True
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a proxy without websockets, a dropped connection: poll instead
            print(f"codenib submit: log streaming stopped ({_first_line(exc)}); polling the job's status",
                  file=log)
            streamed = False
        status = _wait_terminal(client, submission_id)
        if not streamed:
            print(client.get_job_logs(submission_id)[written[0]:], end="", file=out, flush=True)
    except KeyboardInterrupt:
        print(f"\ncodenib submit: stopped following; the job keeps running on the cluster "
              f"(stop it with: ray job stop {submission_id})", file=log)
        raise
    info = client.get_job_info(submission_id)
    ok = str(status) == "SUCCEEDED"
    detail = "" if ok or not info.message else f": {info.message}"
    print(f"codenib submit: job {submission_id} {status}{detail}", file=log)
    return 0 if ok else 1


def main_in_job(argv: list[str] | None = None) -> int:
    """`codenib ARGS` inside a submitted job, joined to the job's cluster (Ray sets RAY_ADDRESS
    for a job's driver), so the batch job runs there rather than on a second, embedded Ray."""
    import ray

    from codenib.commands.cli import main

    joined = False
    if os.environ.get("RAY_ADDRESS") and not ray.is_initialized():
        ray.init(address=JOB_ADDRESS, log_to_driver=False, configure_logging=False)
        joined = True
    try:
        return main(argv)
    finally:
        if joined:
            ray.shutdown()


# --- checks -----------------------------------------------------------------------------------

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
    _check_runtime_values(table, where)
    return table


def _check_runtime_values(table: Mapping[str, Any], where: str) -> None:
    for key in ("excludes", "pip"):
        value = table.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise BadInputError(f"`{key}` must be a list of strings, got {value!r}", path=where,
                                fix=f'write {key} = ["..."]')
    env_vars = table.get("env_vars")
    if env_vars is not None:
        if not isinstance(env_vars, dict):
            raise BadInputError(f"`env_vars` must be a table of strings, got {env_vars!r}", path=where,
                                fix='write env_vars = { NAME = "value" }')
        bad = sorted(k for k, v in env_vars.items() if not isinstance(v, str))
        if bad:
            raise BadInputError(f"env_vars values must be strings; not so for {bad}", path=where,
                                fix='quote them: NAME = "1"')


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


def _check_address(address: str, address_from: str) -> None:
    parts = urlsplit(address)
    try:
        parts.port
    except ValueError as exc:
        raise BadInputError(f"bad port in the address {address!r} (from {address_from})", fix=_address_fix()) from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInputError(f"{address!r} (from {address_from}) is not the URL of a Ray job API",
                            fix=_address_fix())


def _probe(address: str, address_from: str) -> None:
    parts = urlsplit(address)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise BadInputError(f"cannot reach the Ray job API at {address} (from {address_from}): {exc}",
                            fix=_address_fix()) from exc


def _address_fix() -> str:
    return (f"start a head (cluster/start_local_head.sh) or pass --address http://HEAD:8265 "
            f"(through an SSH tunnel for a remote head: ssh -L 8265:127.0.0.1:8265 HEAD, then {DEFAULT_ADDRESS})")


def _read_token_file(path: Path, named: str) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read the Ray token file named by {named}: {exc.__class__.__name__}",
                            path=str(path), fix="point it at a readable file holding the cluster's token") from exc
    if not token:
        raise BadInputError(f"the Ray token file named by {named} is empty", path=str(path),
                            fix="write the cluster's token into it")
    return token


# --- talking to the job API -------------------------------------------------------------------

@contextlib.contextmanager
def _address_only_from_argument() -> Iterator[None]:
    """Ray's client lets RAY_API_SERVER_ADDRESS / RAY_ADDRESS override the address it is given;
    hide them while it is built, so --address (already resolved from $RAY_ADDRESS) is what counts."""
    saved = {k: os.environ.pop(k) for k in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS") if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _find_job(client, submission_id: str):
    for job in client.list_jobs():
        if job.submission_id == submission_id:
            return job
    return None


async def _tail(client, submission_id: str, out: TextIO, written: list[int]) -> None:
    async for chunk in client.tail_job_logs(submission_id):
        out.write(chunk)
        out.flush()
        written[0] += len(chunk)


def _wait_terminal(client, submission_id: str) -> str:
    while True:
        status = client.get_job_status(submission_id)
        if str(status) in ("SUCCEEDED", "FAILED", "STOPPED"):
            return str(status)
        time.sleep(POLL_INTERVAL_S)


def _is_too_large(exc: BaseException) -> bool:
    """Ray's job API answers an upload over its body limit with HTTP 413."""
    text = str(exc).lower()
    return "status code 413" in text or "request body size" in text


def _largest_files(root: Path, excludes: Sequence[str], n: int = LARGEST_FILES_SHOWN) -> str:
    """The `n` largest files under `root` that no exclude matches, for an upload-size error.

    Excludes are matched per path component with fnmatch, a close stand-in for the
    .gitignore patterns Ray applies; the list is a hint, not Ray's exact upload.
    """
    anchored = [e.strip("/") for e in excludes if e.startswith("/")]
    floating = [e.strip("/") for e in excludes if not e.startswith("/")]

    def excluded(rel: Path) -> bool:
        parts = rel.parts
        return (any(fnmatch.fnmatch("/".join(parts[:i + 1]), e) for e in anchored for i in range(len(parts)))
                or any(fnmatch.fnmatch(part, e) for e in floating for part in parts))

    sizes: list[tuple[int, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(root)
        dirnames[:] = [d for d in dirnames if not excluded(here / d)]
        for name in filenames:
            rel = here / name
            if not excluded(rel):
                try:
                    sizes.append((os.lstat(root / rel).st_size, rel.as_posix()))
                except OSError:
                    continue
    biggest = sorted(sizes, key=lambda x: (-x[0], x[1]))[:n]
    return ", ".join(f"{rel} ({size / 2**20:.1f} MiB)" for size, rel in biggest) or "(none found)"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


if __name__ == "__main__":  # pragma: no cover - exercised inside submitted jobs
    sys.exit(main_in_job(sys.argv[1:]))
