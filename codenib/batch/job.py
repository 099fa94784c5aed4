"""One job lifecycle for `codenib run` and `codenib rerank`, after Ray Data's datasink:
open the results folder (resuming its committed shards), write each remaining shard through
worker actors, commit each result as it arrives, then complete (`plans.parquet`, `_SUCCESS`)
or end with failed shards that a re-run retries.

A job is a configuration of this loop (`Job`): its shards, its fingerprint and metadata, an
actor factory, and the rows of a shard that could not run. The Ray it runs on is
`batch.raysession`'s.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from codenib.batch.objsink import make_sink
from codenib.batch.options import JobOptions
from codenib.batch.raysession import collect_cache_stats, start_ray, stop_ray
from codenib.batch.sink import ParquetSink
from codenib.core.errors import BadInputError
from codenib.core.storage import StorageConfig

Logger = Callable[[str], None]
#: Shards resubmitted by the driver after Ray's own actor/task retries gave up.
SHARD_RETRIES = 2
#: Shards in flight per worker actor: enough to keep actors busy while the driver writes.
INFLIGHT_PER_ACTOR = 2
#: Queries of streamed shards read ahead and waiting for a worker, at most (besides at least
#: a few shards per worker): planned rows cost the driver a few KB each, so a lookahead of
#: 256 full shards would hold ~65k of them.
PENDING_ROWS = 4096


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
    #: Where the shards ran: "ray" or why they ran in this process instead.
    runner: str = "ray"
    #: The actors' index LRUs summed (hits, loads, evictions) and the largest peak RSS.
    cache: dict = field(default_factory=dict)

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
        ] + ([_cache_line_of(self.cache)] if self.cache else []) + ([f"  ray        not started: {self.runner}"] if self.runner != "ray" else []) + ([f"  FAILED     {self.failed_shards} shards could not run (actor or index failures); "
              "re-run the same command to retry them (no _SUCCESS until then)"] if self.failed_shards else []))


def _cache_line_of(cache: dict) -> str:
    gets = cache.get("hits", 0) + cache.get("loads", 0)
    rate = cache.get("hits", 0) / gets if gets else 0.0
    return (f"  indexes    LRU hit rate {rate:.1%} ({cache.get('hits', 0)} hits, {cache.get('loads', 0)} loads, "
            f"{cache.get('evictions', 0)} evictions over {cache.get('actors', 0)} actors); "
            f"largest actor peak RSS {cache.get('peak_rss', 0) / 2**20:.0f} MiB")


@dataclass(frozen=True)
class Cluster:
    """What an actor factory sizes its actors by."""

    cpus: float
    gpus: float
    device: str   # where encoders run: cpu or cuda (the job's --device, auto resolved)
    prefix: str   # actor names start with it: the run id and a nonce, for `ray list actors`


#: Starts a job's actors: returns (every actor started, the workers that take shards).
ActorFactory = Callable[[Cluster, Sequence[Any], Logger], tuple[list, list]]
#: The rows (results, plans) of a shard that could not run, recording the error.
FailedRows = Callable[[Any, str], tuple[pa.Table, pa.Table]]


@dataclass(frozen=True)
class Job:
    """One configuration of the lifecycle. Shards have `shard_id` and `rows`; workers have
    `run_shard(shard) -> (results, plans)`."""

    run_id: str
    fingerprint: str
    metadata: dict[str, Any]
    shards: Sequence[Any]
    queries: int
    start_actors: ActorFactory
    failed_rows: FailedRows
    dashboard: bool = False
    #: Plan rows of mode "auto" only record auto's choice (a --mode all run): not counted.
    choice_rows: bool = False
    #: A small job runs its shards in this process instead of on Ray: a factory of the
    #: shard function (`shard -> (results, plans)`), and the reason shown in the summary.
    run_local: Callable[[], Callable[[Any], tuple[pa.Table, pa.Table]]] | None = None
    local_reason: str = ""
    #: Where object storage is (`--out s3://...`); read from the environment at the edge.
    storage: StorageConfig | None = None
    #: Extra lines for the summary (cache hit rates), called once the shards are done.
    report: Callable[[], list[str]] | None = None
    #: A streamed job: `shards` describe the shards (`shard_id`, `index_path`, `index_sha`,
    #: `size`) without rows, and `stream(committed_ids)` yields the full shards not committed
    #: yet, built as the query set is read.
    stream: Callable[[set[int]], Iterable[Any]] | None = None


def log_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def execute(job: Job, options: JobOptions, log: Logger) -> JobSummary:
    """Run (or resume) `job` into `options.out`; returns its summary."""
    sink = make_sink(options.location("out"), job.fingerprint, job.metadata, len(job.shards), force=options.force, log=log,
                     storage=job.storage)
    done = sink.open()
    t0 = time.perf_counter()
    todo = [s for s in job.shards if s.shard_id not in done]
    work = job.stream(set(done)) if job.stream is not None and todo else todo
    cache: dict = {}
    try:
        if sink.complete and not todo:
            log(f"{options.out}: already complete (run {job.run_id}); nothing to do")
        elif todo:
            if done:
                log(f"resuming {job.run_id}: {len(done)} of {len(job.shards)} shards already committed")
            if job.run_local is not None:
                log(f"running in this process, without Ray: {job.local_reason}")
                _run_in_process(job, todo, sink, log, options.progress, work)
            else:
                cache = _run_on_ray(job, todo, options, sink, log, work)
        if not sink.complete:
            sink.finalize()
    except BaseException:
        # Bad input found once the job started (actors no node can take), an embedded Ray
        # that did not start, an interrupt: a folder this job created and committed nothing
        # to is removed again, leaving nothing half-written.
        sink.close()
        sink.discard_if_unused()
        raise
    finally:
        sink.close()
    seconds = time.perf_counter() - t0
    # Counted a batch at a time: a million plan rows as dicts would cost the driver ~1 GB.
    plan_counts: Counter = Counter()
    errors = 0
    for batch in sink.read_plans(columns=["plan", "error", "mode"]).to_batches(max_chunksize=65_536):
        for p in batch.to_pylist():
            if p["mode"] != "auto" or not job.choice_rows:
                plan_counts[p["plan"]] += 1
                errors += bool(p["error"])
    return JobSummary(str(options.out), job.run_id, job.queries, len(job.shards), len(todo), len(done),
                      dict(plan_counts), errors, seconds,
                      len(sink.failed_shards), job.local_reason if job.run_local is not None else "ray",
                      cache)


def drive_shards(todo: list, workers: list, failed_rows: FailedRows, sink: ParquetSink, log: Logger,
                 progress: bool, work: Iterable[Any] | None = None) -> None:
    """Keep every worker actor busy with shards, commit each result as it arrives.

    `todo` says which shards to run (their sizes give the progress total); `work` yields
    them with their rows (default: `todo` itself). It is drawn from lazily, a lookahead's
    worth at a time, so a streamed query set is never held whole.

    A shard whose call fails even after Ray's own actor restarts and task retries is
    resubmitted up to SHARD_RETRIES times, then recorded through `failed_rows` (error rows),
    so a job always ends with every query accounted for.
    """
    import ray

    from codenib.core.progress import Progress

    total = sum(shard_size(s) for s in todo)
    bar = Progress("queries", total, "queries", enabled=progress)
    source: Iterator[Any] = iter(todo if work is None else work)
    pending: list = []
    inflight: dict[Any, Any] = {}
    attempts: dict[int, int] = {}
    errors = committed = 0
    route = AffinityRouter(len(workers))

    def refill() -> None:
        while len(pending) < AffinityRouter.LOOKAHEAD and (
                work is None or len(pending) < 2 * len(workers) or sum(len(p.rows) for p in pending) < PENDING_ROWS):
            shard = next(source, None)
            if shard is None:
                return
            pending.append(shard)

    refill()
    while pending or inflight:
        while pending and len(inflight) < INFLIGHT_PER_ACTOR * len(workers):
            at, w = route.assign([p.index_path for p in pending[:AffinityRouter.LOOKAHEAD]])
            shard = pending.pop(at)
            inflight[workers[w].run_shard.remote(shard)] = (shard, w)
            refill()
        # A timeout so that progress lines keep their interval while a long shard runs.
        ready, _ = ray.wait(list(inflight), num_returns=1, timeout=bar.interval)
        bar.update(0)
        for ref in ready:
            shard, w = inflight.pop(ref)
            route.done(w)
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
                results, plans = failed_rows(shard, f"shard failed: {_first_line(exc)}")
                sink.commit(shard.shard_id, results, plans, failed=True)
                errors += plans.num_rows
                committed += 1
                bar.update(len(shard.rows))
                continue
            sink.commit(shard.shard_id, results, plans)
            committed += 1
            errors += sum(1 for e in plans.column("error").to_pylist() if e)
            bar.update(len(shard.rows), shards=f"{committed}/{len(todo)}", errors=errors)
    bar.close()


class AffinityRouter:
    """Which pending shard the next free worker takes: the least busy worker gets a shard of
    an index it holds (it ran a shard of it last), else one of an index no worker holds, else
    the first pending shard. Shards come grouped by index, so each index is loaded by as few
    actors as the parallelism allows, and workers take different indexes side by side."""

    #: Pending shards looked at per pick (they are sorted by index: a few groups ahead).
    LOOKAHEAD = 256

    def __init__(self, workers: int):
        self.busy = [0] * workers
        self.holder: dict[str, int] = {}

    def assign(self, pending_indexes: Sequence[str]) -> tuple[int, int]:
        """(position in `pending_indexes` of the shard to run, worker to run it)."""
        w = min(range(len(self.busy)), key=lambda i: (self.busy[i], i))
        ahead = list(pending_indexes[:self.LOOKAHEAD])
        pick = next((i for i, idx in enumerate(ahead) if self.holder.get(idx) == w), None)
        if pick is None:
            pick = next((i for i, idx in enumerate(ahead) if idx not in self.holder), 0)
        self.holder[ahead[pick]] = w
        self.busy[w] += 1
        return pick, w

    def done(self, w: int) -> None:
        self.busy[w] = max(0, self.busy[w] - 1)


# --- private helpers -----------------------------------------------------------------------------

def shard_size(shard: Any) -> int:
    """Queries of a shard, or of a shard's description (`size`) in a streamed job."""
    size = getattr(shard, "size", None)
    return size if isinstance(size, int) else len(shard.rows)


def _run_in_process(job: Job, todo: list, sink: ParquetSink, log: Logger, progress: bool,
                    work: Iterable[Any] | None = None) -> None:
    """The shards one after another in this process (a shard that fails is recorded as
    failed, as on Ray, and a re-run retries it)."""
    from codenib.core.errors import CodeNibError
    from codenib.core.progress import Progress

    run = job.run_local()
    with Progress("queries", sum(shard_size(s) for s in todo), "queries", enabled=progress) as bar:
        for shard in todo if work is None else work:
            try:
                results, plans = run(shard)
            except CodeNibError as exc:
                log(f"shard {shard.shard_id}: failed; its queries are recorded as errors and a re-run "
                    f"retries it: {_first_line(exc)}")
                results, plans = job.failed_rows(shard, f"shard failed: {_first_line(exc)}")
                sink.commit(shard.shard_id, results, plans, failed=True)
            else:
                sink.commit(shard.shard_id, results, plans)
            bar.update(len(shard.rows))


def _run_on_ray(job: Job, todo: list, options: JobOptions, sink: ParquetSink, log: Logger,
                work: Iterable[Any] | None = None) -> dict:
    """The shards on Ray actors (a Ray started here is stopped again); returns the actors'
    index cache counters (`collect_cache_stats`)."""
    import ray

    started = start_ray(options.address, job.dashboard, log)
    actors: list[Any] = []
    try:
        resources = ray.cluster_resources()
        cpus, gpus = float(resources.get("CPU", 1.0)), float(resources.get("GPU", 0.0))
        device = options.device if options.device != "auto" else ("cuda" if gpus > 0 else "cpu")
        # Named per job (run id + a nonce), so operators can find them in `ray list actors`.
        cluster = Cluster(cpus, gpus, device, f"codenib-{job.run_id}-{uuid.uuid4().hex[:6]}")
        actors, workers = job.start_actors(cluster, todo, log)
        drive_shards(todo, workers, job.failed_rows, sink, log, options.progress, work)
        return collect_cache_stats(actors)
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if started:
            stop_ray()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
