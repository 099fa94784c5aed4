"""The client side of Ray's job submission API on the head (`codenib submit`): the address,
the cluster token, sending a planned `Submission` once, and following its logs.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, TextIO
from urllib.parse import urlsplit

from codenib.commands.packaging import largest_files
from codenib.commands.submission_plan import Submission
from codenib.core.errors import BadInputError, CodeNibError, MissingDependencyError
from codenib.core.hosts import is_loopback

DEFAULT_ADDRESS = "http://127.0.0.1:8265"  # Ray's dashboard (job API) port, on loopback only
CONNECT_TIMEOUT_S = 5.0  # fail fast on an unreachable address instead of the OS's minutes-long TCP timeout
POLL_INTERVAL_S = 2.0  # status polling when logs cannot be streamed
TOKEN_ENV, TOKEN_PATH_ENV, AUTH_MODE_ENV = "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"  # Ray's names
DEFAULT_TOKEN_FILE = Path("~/.ray/auth_token")  # Ray's default token file (used when RAY_AUTH_MODE=token)


@dataclass(frozen=True)
class AuthToken:
    """A Ray cluster token and where it came from; the value never appears in a repr or a log."""

    value: str = field(repr=False)
    source: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.value}"}


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


def check_transport(address: str, address_from: str = "--address", *, insecure: bool = False) -> str | None:
    """Refuse plain http to anything but this machine: the job, and the cluster token with it,
    would cross the network in clear text. Returns the warning to print when `insecure`
    lets it through (None when the address is https or loopback).

    Raises:
        BadInputError: not an http(s) URL, or http to a host that is not loopback without `insecure`.
    """
    _check_address(address, address_from)
    parts = urlsplit(address)
    if parts.scheme == "https" or is_loopback(parts.hostname or ""):
        return None
    if not insecure:
        raise BadInputError(f"{address} (from {address_from}) is plain http to another machine: the job and the "
                            "cluster token would cross the network in clear text",
                            fix="use https://HOST:PORT, or an SSH tunnel (ssh -L 8265:127.0.0.1:8265 HEAD, then "
                                f"{DEFAULT_ADDRESS}), or pass --insecure to send it anyway")
    return (f"codenib submit: warning: --insecure: the job and the cluster token (if any) go in clear text over "
            f"http to {parts.hostname}; anyone on the way can read the token and use it")


def submit(sub: Submission, address: str, token: AuthToken | None, *, wait: bool = False,
           address_from: str = "--address", out: TextIO | None = None, log: TextIO | None = None,
           insecure: bool = False) -> int:
    """Submit `sub` unless a job with its id exists; with `wait`, follow its logs. Returns the
    exit status: 0 submitted/exists (or, waiting, succeeded), 1 failed or stopped. Plain http
    goes to loopback only, unless `insecure` (see `check_transport`)."""
    out, log = out or sys.stdout, log or sys.stderr
    warning = check_transport(address, address_from, insecure=insecure)
    if warning:
        print(warning, file=log)
    client = connect(address, token, address_from=address_from, insecure=insecure)
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
                        + largest_files(Path(sub.root), sub.runtime_env.get("excludes", []))) from exc
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


def connect(address: str, token: AuthToken | None, *, address_from: str = "--address", insecure: bool = False):
    """A `JobSubmissionClient` for `address`; unreachable, refused, malformed or plain http to
    another machine without `insecure` -> exit 2."""
    check_transport(address, address_from, insecure=insecure)
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


# --- private helpers --------------------------------------------------------------------

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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
