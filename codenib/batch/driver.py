"""The batch retrieval job: read a query set, shard it, fan shards out to Ray actors that hold
loaded indexes, and write results to a resumable Parquet folder."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq

from codenib import __version__
from codenib.artifact import sha256_file
from codenib.batch.queries import QuerySet, Shard, read_query_set
from codenib.batch.sink import ParquetSink
from codenib.batch.worker import ShardOptions, failed_shard
from codenib.errors import BadInputError
from codenib.model.planner import BUDGETS, MODES, RERANKERS
from codenib.results import PLANS

JOB_MODES = MODES + ("all",)
#: Shards resubmitted by the driver after Ray's own actor/task retries gave up.
SHARD_RETRIES = 2
#: Shards in flight per graph actor: enough to keep actors busy while the driver writes.
INFLIGHT_PER_ACTOR = 2
#: Graph actors at most, whatever the cluster size (each holds its own loaded indexes).
MAX_GRAPH_ACTORS = 16


@dataclass(frozen=True)
class RunOptions:
    """Every option of `codenib run` (a job spec in jobs/ holds the same fields)."""

    queries: str
    out: str
    index: str | None = None
    index_root: str | None = None
    budget: str = "balanced"
    mode: str = "auto"
    k: int = 100
    rerank: str | None = None
    llm: dict | None = None
    address: str | None = None
    shard_size: int = 256
    workers: int | None = None
    run_tag: str | None = None
    max_indexes: int = 4
    device: str = "auto"
    dashboard: bool = False
    progress: bool = True

    def validate(self) -> None:
        """Check option values (exit 2 with the valid choices)."""
        checks = [
            (self.budget in BUDGETS, f"unknown budget {self.budget!r}", f"use one of: {', '.join(BUDGETS)}"),
            (self.mode in JOB_MODES, f"unknown mode {self.mode!r}", f"use one of: {', '.join(JOB_MODES)}"),
            (self.rerank in (None,) + RERANKERS, f"unknown reranker {self.rerank!r}",
             f"use one of: {', '.join(RERANKERS)}"),
            (self.k >= 1, f"-k must be at least 1, got {self.k}", "pass -k 100"),
            (self.shard_size >= 1, f"--shard-size must be at least 1, got {self.shard_size}", "pass --shard-size 256"),
            (self.workers is None or self.workers >= 1, f"--workers must be at least 1, got {self.workers}",
             "leave it out to size to the cluster"),
            (self.device in ("auto", "cpu", "cuda"), f"unknown device {self.device!r}", "use auto, cpu or cuda"),
            (not (self.rerank == "llm" and not self.llm), "--rerank llm needs an LLM configuration",
             "pass --llm-config FILE (endpoint, model)"),
        ]
        for ok, message, fix in checks:
            if not ok:
                raise BadInputError(message, fix=fix)
        if self.llm:
            from codenib.ops.llm import LLMConfig

            LLMConfig.from_dict(self.llm)

    def result_fields(self) -> dict[str, Any]:
        """The options that decide the rows written (resume requires them unchanged)."""
        return {k: v for k, v in asdict(self).items()
                if k in ("budget", "mode", "k", "rerank", "llm", "shard_size", "run_tag", "device")}


@dataclass
class JobSummary:
    """What a job did, for the closing summary and for tests."""

    out: str
    run_id: str
    queries: int
    shards: int
    shards_run: int
    shards_resumed: int
    plans: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    seconds: float = 0.0
    failed_shards: int = 0

    def render(self) -> str:
        qps = self.queries / self.seconds if self.seconds > 0 else 0.0
        plans = ", ".join(f"{k} {v}" for k, v in sorted(self.plans.items()))
        return "\n".join([
            f"results written to {self.out}  (run {self.run_id})",
            f"  queries    {self.queries}  in {self.shards} shards ({self.shards_run} run now, "
            f"{self.shards_resumed} already committed)",
            f"  plans      {plans or '-'}",
            f"  errors     {self.errors}" + ("  (see the `error` column of plans.parquet)" if self.errors else ""),
            f"  time       {self.seconds:.1f}s  ({qps:.1f} queries/s)",
        ] + ([f"  FAILED     {self.failed_shards} shards could not run (actor or index failures); "
              "re-run the same command to retry them (no _SUCCESS until then)"] if self.failed_shards else []))


Logger = Callable[[str], None]


def run_job(options: RunOptions, log: Logger | None = None) -> JobSummary:
    """Run (or resume) a batch job. Raises `BadInputError` for bad input before any work."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    options.validate()
    query_set = read_query_set(options.queries, options.index, options.index_root)
    for w in query_set.warnings:
        log(f"warning: {w}")
    query_set, indexes = _check_indexes(query_set, options, log)
    shards = [dataclasses.replace(s, index_sha=indexes.get(s.index_path, {}).get("manifest_sha256", ""))
              for s in query_set.shards(options.shard_size)]
    planned = _planned(query_set, options, indexes)
    run_tag = options.run_tag or f"codenib-{options.mode}-{options.budget}"
    fingerprint = _fingerprint(options, query_set, indexes, run_tag)
    run_id = f"run-{fingerprint[:12]}"
    metadata = {"run_id": run_id, "codenib_version": __version__,
                "indexes": {p: {k: v for k, v in m.items() if k != "capabilities"} for p, m in indexes.items()},
                "index_paths": {r.index: r.index_path for r in query_set.rows},
                "job_spec": {**asdict(options), "llm": _public_llm(options.llm)}, "queries": str(options.queries),
                "query_set_sha256": query_set.digest}
    sink = ParquetSink(options.out, fingerprint, metadata, len(shards))
    done = sink.open()
    t0 = time.perf_counter()
    todo = [s for s in shards if s.shard_id not in done]
    if sink.complete and not todo:
        log(f"{options.out}: already complete (run {run_id}); nothing to do")
    elif todo:
        if done:
            log(f"resuming {run_id}: {len(done)} of {len(shards)} shards already committed")
        shard_opts = ShardOptions(options.budget, options.mode, options.k, options.rerank, run_tag,
                                  llm_configured=bool(options.llm))
        try:
            _run_on_ray(todo, shard_opts, options, sink, log, planned)
        except BaseException:
            sink.close()
            raise
    if not sink.complete:
        sink.finalize()
    sink.close()
    seconds = time.perf_counter() - t0
    plans = pq.read_table(Path(options.out) / PLANS, columns=["plan", "error", "mode"]).to_pylist()
    counted = [p for p in plans if p["mode"] != "auto" or options.mode != "all"]
    return JobSummary(str(options.out), run_id, len(query_set.rows), len(shards), len(todo), len(done),
                      dict(Counter(p["plan"] for p in counted)), sum(1 for p in counted if p["error"]), seconds,
                      len(sink.failed_shards))


# --- Ray ---------------------------------------------------------------------------------------

def _run_on_ray(todo: list[Shard], shard_opts: ShardOptions, options: RunOptions, sink: ParquetSink,
                log: Logger, planned: Counter) -> None:
    import ray

    from codenib.batch.actors import remote_classes

    started = start_ray(options.address, options.dashboard, log)
    actors: list[Any] = []
    try:
        resources = ray.cluster_resources()
        cpus = float(resources.get("CPU", 1.0))
        gpus = float(resources.get("GPU", 0.0))
        device = options.device if options.device != "auto" else ("cuda" if gpus > 0 else "cpu")
        n_graph = options.workers or max(1, min(MAX_GRAPH_ACTORS, int(cpus)))
        # Actors are started only for engines that some query's plan uses.
        want_dense = planned["dense"] > 0
        want_rerank = planned["rerank"] > 0
        n_actors = n_graph + 1 + int(want_dense) + int(want_rerank)
        # Every actor fits: fractional CPUs sized so the whole set schedules on the cluster.
        share = min(1.0, cpus / (n_actors + 0.5))
        classes = remote_classes(num_gpus_dense=0.5 if gpus > 0 and device == "cuda" else 0.0)
        # Named per job (run id + a nonce), so operators can find them in `ray list actors`.
        prefix = f"codenib-{sink.metadata['run_id']}-{uuid.uuid4().hex[:6]}"
        sparse = classes["sparse"].options(num_cpus=share, name=f"{prefix}-sparse").remote(options.max_indexes)
        dense_slots = min(2, options.max_indexes)  # loaded models and vectors are large
        dense = classes["dense"].options(num_cpus=share, name=f"{prefix}-dense").remote(
            dense_slots, device) if want_dense else None
        rerank = classes["rerank"].options(num_cpus=share, name=f"{prefix}-rerank").remote(
            min(2, options.max_indexes), device, options.llm) if want_rerank else None
        names = (f"{prefix}-sparse", f"{prefix}-dense" if dense else None, f"{prefix}-rerank" if rerank else None)
        graphs = [classes["graph"].options(num_cpus=share, name=f"{prefix}-graph-{i}").remote(
            names, shard_opts, options.max_indexes) for i in range(n_graph)]
        actors = [a for a in (sparse, dense, rerank) if a is not None] + graphs
        # The engine actors load the first indexes while the graph actors start.
        first = list(dict.fromkeys((s.index_path, s.index_sha) for s in todo if s.index_path))
        for engine, slots in ((sparse, options.max_indexes), (dense, dense_slots)):
            for path, sha in first[:slots] if engine is not None else ():
                engine.warm.remote(path, sha)
        log(f"ray: {len(graphs)} graph actors, 1 sparse{', 1 dense' if dense else ''}"
            f"{', 1 rerank' if rerank else ''} ({cpus:g} CPUs, {gpus:g} GPUs, dense on {device})")
        drive_shards(todo, graphs, lambda actor, shard: actor.run_shard.remote(shard),
                     lambda shard, error: failed_shard(shard, shard_opts, error), sink, log, options.progress)
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if started:
            ray.shutdown()


def drive_shards(todo: list, workers: list, submit: Callable[[Any, Any], Any],
                 on_failure: Callable[[Any, str], tuple], sink: ParquetSink, log: Logger,
                 progress: bool) -> None:
    """Keep every worker actor busy with shards, commit each result as it arrives.

    A shard whose call fails even after Ray's own actor restarts and task retries is
    resubmitted up to SHARD_RETRIES times, then recorded through `on_failure` (error rows),
    so a job always ends with every query accounted for.
    """
    import ray
    from tqdm import tqdm

    total = sum(len(s.rows) for s in todo)
    bar = tqdm(total=total, unit="q", desc="queries", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    pending = list(todo)
    inflight: dict[Any, Any] = {}
    attempts: dict[int, int] = {}
    errors = 0
    t0 = time.perf_counter()
    turn = 0
    while pending or inflight:
        while pending and len(inflight) < INFLIGHT_PER_ACTOR * len(workers):
            shard = pending.pop(0)
            inflight[submit(workers[turn % len(workers)], shard)] = shard
            turn += 1
        ready, _ = ray.wait(list(inflight), num_returns=1)
        for ref in ready:
            shard = inflight.pop(ref)
            try:
                results, plans = ray.get(ref)
            except (ray.exceptions.RayError, BadInputError) as exc:
                attempts[shard.shard_id] = attempts.get(shard.shard_id, 0) + 1
                if attempts[shard.shard_id] <= SHARD_RETRIES:
                    log(f"shard {shard.shard_id}: {type(exc).__name__}; retrying "
                        f"({attempts[shard.shard_id]}/{SHARD_RETRIES})")
                    pending.append(shard)
                    continue
                log(f"shard {shard.shard_id}: failed after {SHARD_RETRIES} retries; its queries "
                    f"are recorded as errors and a re-run retries it: {_first_line(exc)}")
                results, plans = on_failure(shard, f"shard failed: {_first_line(exc)}")
                sink.commit(shard.shard_id, results, plans, failed=True)
                errors += plans.num_rows
                bar.update(len(shard.rows))
                continue
            sink.commit(shard.shard_id, results, plans)
            errors += sum(1 for e in plans.column("error").to_pylist() if e)
            bar.update(len(shard.rows))
            elapsed = max(time.perf_counter() - t0, 1e-9)
            bar.set_postfix(shards=f"{len(todo) - len(pending) - len(inflight)}/{len(todo)}",
                            qps=f"{bar.n / elapsed:.1f}", errors=errors, refresh=False)
    bar.close()


def start_ray(address: str | None, dashboard: bool, log: Logger) -> bool:
    """Join `address` (or the cluster of a submitted job), else start an embedded local Ray
    that listens on 127.0.0.1 only (dashboard off, or on 127.0.0.1). Returns whether this
    call connected, so the caller knows to shut down."""
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
        log(f"ray: joining the cluster at {address or in_job}")
        ray.init(address=address or "auto", **kwargs)
    else:
        _force_loopback(ray)
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=dashboard,
                 dashboard_host="127.0.0.1", _node_ip_address="127.0.0.1", **kwargs)
    return True


#: Ray's switch for "multi-node clusters from this machine"; off means loopback addresses only.
_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _force_loopback(ray) -> None:
    """Ray reads the switch when it is first imported; if that happened earlier in this
    process, set the constant it was read into as well."""
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if constants is not None and hasattr(constants, "ENABLE_RAY_CLUSTER"):
        constants.ENABLE_RAY_CLUSTER = False


# --- fingerprint and metadata ------------------------------------------------------------------

def _planned(query_set: QuerySet, options: RunOptions, indexes: dict[str, dict[str, Any]]) -> Counter:
    """The planner's choice for every query (as the actors will make it): which engines the
    job needs, so unneeded actors are not started."""
    from codenib.model.planner import RetrievalPlanner
    from codenib.ops.transform import query_signals

    planner = RetrievalPlanner()
    out: Counter = Counter()
    for row in query_set.rows:
        if row.error or not row.index_path:
            continue
        mode = row.mode or options.mode
        modes = ("sparse", "dense", "hybrid", "graph") if mode == "all" else (mode,)
        for m in modes:
            plan, _ = planner.plan(query_signals(row.query), row.budget or options.budget,
                                   indexes[row.index_path]["capabilities"], m, options.rerank)
            out[plan.plan] += 1
            out["dense"] += plan.dense_weight > 0
            out["rerank"] += plan.rerank != "none"
    return out


def _check_indexes(query_set: QuerySet, options: RunOptions, log: Logger) -> tuple[QuerySet, dict]:
    """Verify every index once (checksums), here in the driver, so actors need not.

    An unusable index given with --index is bad input (exit 2); one of many under
    --index-root turns its queries into error rows while the rest of the job runs.
    """
    from codenib.artifact import read_manifest
    from codenib.errors import IndexFormatError
    from codenib.index.loaded import capabilities_of

    meta: dict[str, dict[str, Any]] = {}
    broken: dict[str, str] = {}
    for path in sorted({r.index_path for r in query_set.rows if r.index_path}):
        try:
            manifest = read_manifest(path, verify=True)
        except IndexFormatError as exc:
            if options.index is not None:
                raise
            broken[path] = str(exc)
            log(f"warning: {exc}; its queries become error rows")
            continue
        meta[path] = {"manifest_sha256": sha256_file(Path(path) / "manifest.json"),
                      "format_version": manifest.get("format_version"),
                      "codenib_version": manifest.get("codenib_version"),
                      "source_root_name": manifest.get("source_root_name"),
                      "git_commit": manifest.get("git_commit"),
                      "capabilities": capabilities_of(manifest, bool(options.llm))}
    if broken:
        rows = tuple(dataclasses.replace(r, error=f"index unusable: {broken[r.index_path]}")
                     if r.index_path in broken and r.error is None else r for r in query_set.rows)
        query_set = dataclasses.replace(query_set, rows=rows)
    return query_set, meta


def _fingerprint(options: RunOptions, query_set: QuerySet, indexes: dict, run_tag: str) -> str:
    fields = {**options.result_fields(), "run_tag": run_tag, "llm": _public_llm(options.llm)}
    data = json.dumps({"codenib": __version__, "options": fields, "queries": query_set.digest,
                       "indexes": {p: m["manifest_sha256"] for p, m in indexes.items()}}, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()


def _public_llm(llm: dict | None) -> dict | None:
    """The LLM settings as recorded (validated; `LLMConfig` holds no secret: the key comes
    from the environment)."""
    if not llm:
        return None
    from codenib.ops.llm import LLMConfig

    return LLMConfig.from_dict(llm).to_dict()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
