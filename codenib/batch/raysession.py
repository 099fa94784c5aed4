"""The Ray session of a job's driver: join a cluster or start an embedded local Ray (loopback
only, ended with this process), shut it down again, and read the actors' index LRU counters
before they go."""

from __future__ import annotations

import os
import socket
from collections import Counter
from typing import Any, Callable

from codenib.core.errors import BadInputError

#: Ray's switch for "multi-node clusters from this machine"; off means loopback addresses only.
_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: How long a cluster address may take to accept a connection before it counts as down.
CONNECT_TIMEOUT_S = 10.0
#: Ray Client's port when a `ray://` address names none.
RAY_CLIENT_PORT = 10001
#: The watchdog of the embedded Ray this process started (None: none, or it joined a cluster).
_reaper = None
#: The private folder of the embedded Ray this process started (`codenib.batch.raydir`).
_private_root = None


def start_ray(address: str | None, dashboard: bool, log: Callable[[str], None]) -> bool:
    """Join `address` (or the cluster of a submitted job), else start an embedded local Ray
    that listens on 127.0.0.1 only (dashboard off, or on 127.0.0.1) and ends with this
    process (`codenib.batch.reaper`), however it ends. Returns whether this call connected,
    so the caller knows to call `stop_ray`."""
    in_job = os.environ.get("RAY_ADDRESS")  # set by Ray inside a submitted job
    if not address and not in_job:
        # Without this Ray advertises the machine's network address and its servers listen
        # on every interface; an embedded Ray serves this machine only.
        os.environ.setdefault(_LOOPBACK_ENV, "0")
    import ray

    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False, "configure_logging": False}
    if address or in_job:
        if address:
            check_address(address)
        log(f"ray: joining the cluster at {address or in_job}")
        ray.init(address=address or "auto", **kwargs)
    else:
        global _reaper
        from codenib.batch.reaper import start_reaper, unmark

        global _private_root
        from codenib.batch.raydir import private_root, ray_temp_dir, seal

        _force_loopback(ray)
        root = private_root()   # Ray makes its folders 777: they go where only this user reaches
        # The watchdog first: every process this Ray starts carries its marker.
        _reaper = start_reaper()
        try:
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=dashboard,
                     dashboard_host="127.0.0.1", _node_ip_address="127.0.0.1",
                     _temp_dir=ray_temp_dir(root), **kwargs)
        except BaseException:
            _release_reaper()
            raise
        finally:
            unmark()
        _private_root = root
        seal(root)
    return True


def check_address(address: str) -> None:
    """Raises BadInputError when nothing listens at a `HOST:PORT` or `ray://HOST[:PORT]` cluster
    address: Ray itself retries an unreachable one without end. Ray's own look-ups (`auto`,
    `local`) and other `scheme://` addresses (Ray Client builders of other packages) pass."""
    if address in ("auto", "local"):
        return
    scheme, sep, rest = address.partition("://")
    if sep and scheme != "ray":
        return
    target = (rest if sep else address).split("/", 1)[0]
    if sep and not target.rpartition(":")[2].isdigit():
        target += f":{RAY_CLIENT_PORT}"
    host, colon, port = target.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInputError(f"--address {address!r} is not a Ray cluster address",
                            fix="pass HOST:PORT of the head's GCS (ray start --head prints it, port 6379 by default), "
                                "ray://HOST:10001 for Ray Client, or auto")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise BadInputError(f"no Ray cluster answers at --address {address}: {exc}",
                            fix="start the head (ray start --head) and pass the address it prints, or leave "
                                "--address out to run on an embedded local Ray") from exc


def stop_ray() -> None:
    """Shut down the Ray this process connected to; an embedded one's watchdog then stops
    whatever of it is left (its agents outlive `ray.shutdown()` otherwise)."""
    import ray

    global _private_root
    try:
        ray.shutdown()
    finally:
        _release_reaper()
        if _private_root is not None:
            from codenib.batch.raydir import seal

            seal(_private_root)   # folders the session made after start (workers' logs, runtime_resources)
            _private_root = None


def collect_cache_stats(actors: list) -> dict:
    """The actors' index LRU counters summed (`actors`, `hits`, `loads`, `evictions`, the
    largest `peak_rss`) and each actor's own (`per_actor`); {} when none answered. Actors
    without the counters, or that do not answer within a few seconds, are left out."""
    import ray

    totals: Counter = Counter()
    per_actor: list[dict] = []
    refs = [a.cache_stats.remote() for a in actors if hasattr(a, "cache_stats")]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=10) if refs else ([], [])
    for ref in ready:
        try:
            stats = ray.get(ref)
        except ray.exceptions.RayError:
            continue
        totals["actors"] += 1
        per_actor.append(stats)
        for k in ("hits", "loads", "evictions"):
            totals[k] += stats.get(k, 0)
        totals["peak_rss"] = max(totals["peak_rss"], stats.get("peak_rss", 0))
    return {**totals, "per_actor": per_actor} if totals else {}


def _release_reaper() -> None:
    global _reaper
    if _reaper is not None:
        _reaper.release()
        _reaper = None


def _force_loopback(ray) -> None:
    """Ray reads the switch when it is first imported; if that happened earlier in this
    process, set the constant it was read into as well."""
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if constants is not None and hasattr(constants, "ENABLE_RAY_CLUSTER"):
        constants.ENABLE_RAY_CLUSTER = False
