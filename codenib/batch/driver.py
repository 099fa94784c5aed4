"""`codenib run`: read a query set, shard it, fan shards out to Ray actors that hold loaded
indexes (placed by `batch.placement`), and write results to a resumable Parquet folder (the
lifecycle of `batch.job`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from codenib import __version__
from codenib.core.artifact import sha256_file
from codenib.batch.job import Job, JobSummary, Logger, execute, log_to_stderr
from codenib.batch.options import RunOptions
from codenib.batch.placement import start_actors
from codenib.batch.query_rows import QueryRow, Shard
from codenib.batch.scan import QueryScan, ShardInfo, ShardLayout, scan_query_set
from codenib.batch.worker import ShardOptions, failed_shard
from codenib.engines.models import require_device
from codenib.index.remote import IndexCacheDir, local_index
from codenib.model.planner import check_capabilities, plan_rows, planner_chooses, run_modes
from codenib.model.plans import plan_class
from codenib.core.storage import StorageConfig, StorageError


def run_job(options: RunOptions, log: Logger | None = None, storage: StorageConfig | None = None) -> JobSummary:
    """Run (or resume) a batch job. Raises `BadInputError` for bad input before any work.

    The query set is streamed: validated in one pass (`scan_query_set`), then read again a
    record batch at a time while the job runs, each row planned and put into its shard as it
    arrives (`stream_shards`), so the driver's memory does not grow with the number of
    queries (see `scripts/bench_queries.py`).

    `storage`: where object storage is, for URIs among the paths (default: read from the
    environment here, once; see `codenib.core.storage`)."""
    log = log or log_to_stderr
    options.validate()
    storage = storage if storage is not None else StorageConfig.from_env()
    cache = index_cache_dir(options, storage)
    with scan_query_set(options.location("queries"), options.location("index"), options.location("index_root"),
                        storage, progress=options.progress) as scan:
        for w in scan.warnings:
            log(f"warning: {w}")
        broken, indexes = _check_indexes(scan, options, log, cache)
        caps = {path: meta["capabilities"] for path, meta in indexes.items()}
        wanted = {folder for _, mode, folder in scan.combos
                  if folder in indexes and planner_chooses(mode or options.mode)}
        symbols = _symbol_tables_of(wanted, indexes)
        _check_plannable(scan, caps)
        plan = partial(plan_rows, options=options.plan_options(), capabilities=caps, symbols=symbols)
        layout = scan.layout(options.shard_size)
        shards = tuple(dataclasses.replace(s, index_sha=indexes.get(s.index_path, {}).get("manifest_sha256", ""))
                       for s in layout.shards)
        run_tag = options.run_tag or f"codenib-{options.mode}-{options.budget}"
        fingerprint = _fingerprint(options, scan.digest, indexes, run_tag)
        run_id = f"run-{fingerprint[:12]}"
        metadata = {"run_id": run_id, "codenib_version": __version__,
                    "indexes": {p: {k: v for k, v in m.items() if k not in ("capabilities", "local")}
                                for p, m in indexes.items()},
                    "index_paths": dict(scan.resolved),
                    "job_spec": {**asdict(options), "llm": _public_llm(options.llm)}, "queries": str(options.queries),
                    "query_set_sha256": scan.digest}
        shard_opts = ShardOptions(options.budget, options.mode, options.k, options.rerank, run_tag,
                                  llm_configured=bool(options.llm), localise_weights=options.weights())
        local = _local_reason(options, scan.count)
        if local and any(c.dense for c in caps.values()):
            # In this process the vectors load on --device: no GPU is bad input now, not a failed shard.
            require_device(options.device)
        job = Job(run_id, fingerprint, metadata, shards, scan.count,
                  start_actors=partial(_start_engine_actors, options, shard_opts, cache,
                                       partial(_engines_needed_streamed, scan, layout, caps, plan, broken,
                                               options.mode)),
                  failed_rows=lambda shard, error: failed_shard(shard, shard_opts, error),
                  dashboard=options.dashboard, choice_rows=bool(run_modes(options.mode)[1]),
                  run_local=partial(_local_runner, options, shard_opts, cache) if local else None,
                  local_reason=local or "", storage=storage,
                  stream=partial(stream_shards, scan, layout, shards, plan=plan, broken=broken))
        return execute(job, options, log)


#: Rows planned at a time while the query set streams (a shard's worth of planning at most
#: delays committing results that arrive meanwhile).
PLAN_CHUNK = 1024


def _chunks_to_plan(scan: QueryScan, layout: ShardLayout, skip: set[int] | frozenset,
                    broken: dict[str, str] | None) -> Iterator[tuple[list[tuple[tuple[str, str], int, int]],
                                                                     list[QueryRow]]]:
    """The rows of the shards not in `skip`, in input order, `PLAN_CHUNK` at a time, each with
    its (index key, place within its index, shard id); a row of a broken index carries its error."""
    size = layout.shard_size
    seen: dict[tuple[str, str], int] = {}
    for batch in scan.batches():
        for start in range(0, len(batch), PLAN_CHUNK):
            keep: list[tuple[tuple[str, str], int, int]] = []
            rows: list[QueryRow] = []
            for row in batch[start:start + PLAN_CHUNK]:
                key = (row.index, row.index_path)
                at = seen.get(key, 0)
                seen[key] = at + 1
                shard_id = layout.first[key] + at // size
                if shard_id in skip:
                    continue
                if broken and row.index_path in broken and row.error is None:
                    row = dataclasses.replace(row, error=f"index unusable: {broken[row.index_path]}")
                keep.append((key, at, shard_id))
                rows.append(row)
            yield keep, rows


def stream_shards(scan: QueryScan, layout: ShardLayout, infos: Sequence[ShardInfo], skip: set[int] | frozenset,
                  *, plan: Callable[[list[QueryRow]], tuple[QueryRow, ...]],
                  broken: dict[str, str] | None = None) -> Iterator[Shard]:
    """The shards not in `skip`, built as the query set streams: each row goes to its shard
    (`layout`), planned in chunks, and a shard is yielded as soon as its last row arrived.
    Rows of skipped (committed) shards are read but not planned. Holds at most one open
    shard per index and one record batch."""
    size = layout.shard_size
    open_rows: dict[tuple[str, str], list[QueryRow]] = {}
    for keep, rows in _chunks_to_plan(scan, layout, skip, broken):
        for (key, at, shard_id), row in zip(keep, plan(rows)):
            bucket = open_rows.setdefault(key, [])
            bucket.append(row)
            if len(bucket) == size or at + 1 == layout.counts[key]:
                info = infos[shard_id]
                del open_rows[key]
                yield Shard(shard_id, info.index, info.index_path, tuple(bucket), info.index_sha)


def _check_plannable(scan: QueryScan, caps: dict[str, Any]) -> None:
    """An index no query can run on fails before any work (as planning its rows would), in
    input order. (The options and each row's budget and mode were checked as they were read.)"""
    for _, _, folder in scan.combos:
        if folder in caps:
            check_capabilities(caps[folder])


def _start_engine_actors(options: RunOptions, shard_opts: ShardOptions, cache: IndexCacheDir,
                         engines_needed: Callable[[frozenset[int]], Counter], cluster, todo: Sequence[ShardInfo],
                         log: Logger) -> tuple[list, list]:
    """`placement.start_actors` for the engines the plans of the shards to run use, known only
    here: a job that runs in the driver's process (`_local_runner`) starts no actors, so it
    never plans its rows ahead of the job (each row is planned once, in `stream_shards`)."""
    planned = engines_needed(frozenset(s.shard_id for s in todo))
    return start_actors(options, shard_opts, planned, cache, cluster, todo, log)


def _engines_needed_streamed(scan: QueryScan, layout: ShardLayout, caps: dict[str, Any], plan,
                             broken: dict[str, str], mode: str, todo: frozenset[int]) -> Counter:
    """Which engines the plans of the shards in `todo` use (`_engines_needed`), known before the
    Ray actors start: none beyond sparse and graph when no index has dense vectors or a
    reranker (no plan can use them); otherwise those rows are planned ahead, stopping once
    dense and rerank are seen (rows of committed shards and of broken indexes are not)."""
    if not any(c.dense or c.embedding_rerank or c.llm_rerank for c in caps.values()):
        return Counter()
    skip = frozenset(info.shard_id for info in layout.shards) - todo
    out: Counter = Counter()
    for _, rows in _chunks_to_plan(scan, layout, skip, None):
        rows = [r for r in rows if r.index_path not in broken]
        out.update(_engines_needed(plan(rows), mode))
        if out["dense"] and out["rerank"]:
            break
    return out


def _local_reason(options: RunOptions, queries: int) -> str | None:
    """Why this job runs in the driver's process without Ray, or None (it runs on Ray).

    Starting Ray and its actors costs more than a small job's queries (15 queries: ~1 s
    of work after 10-20 s of start-up on 2 cores). A cluster address, a submitted job and a
    Ray already started in this process always use Ray."""
    import os
    import sys

    ray = sys.modules.get("ray")
    if options.address or os.environ.get("RAY_ADDRESS") or (ray is not None and ray.is_initialized()):
        return None
    if queries >= options.local_below:
        return None
    return f"{queries} queries, fewer than --local-below {options.local_below}"


def index_cache_dir(options: RunOptions, storage: StorageConfig) -> IndexCacheDir:
    """The node-local cache of index copies (`--index-cache`, default `CACHE/indexes`)."""
    from codenib.engines.export.cache import cache_root

    root = options.index_cache or str(cache_root() / "indexes")
    return IndexCacheDir(str(Path(root).absolute()), options.index_cache_bytes, storage)


def _local_runner(options: RunOptions, shard_opts: ShardOptions, cache: IndexCacheDir):
    """The shard function of the in-process path: indexes loaded once (checksums were
    verified by the driver), engines in this process, as the Ray actors would run them."""
    from codenib.model.session import RetrievalSession, llm_reranker
    from codenib.batch.worker import IndexCache, process_shard

    llm = llm_reranker(options.llm)
    cache = IndexCache(lambda p: RetrievalSession.load(p, verify=False, device=options.device, reranker=llm,
                                                       weights=shard_opts.localise_weights), options.max_indexes,
                       copies=cache, max_bytes=options.actor_memory)

    def run(shard: Shard):
        if not shard.index_path or all(r.error for r in shard.rows):   # an unusable index is not loaded
            return failed_shard(shard, shard_opts, "index not found")
        return process_shard(shard, cache.get(shard.index_path, shard.index_sha), shard_opts)

    return run


# --- fingerprint and metadata ------------------------------------------------------------------

def _symbol_tables(rows: Sequence[QueryRow], mode: str, indexes: dict[str, Any]) -> dict[str, Any]:
    """The symbol table of every usable index that some row lets the planner choose for."""
    return _symbol_tables_of({r.index_path for r in rows if r.index_path in indexes and planner_chooses(r.mode or mode)},
                             indexes)


def _symbol_tables_of(wanted: set[str], indexes: dict[str, Any]) -> dict[str, Any]:
    from codenib.index.loaded import load_symbols

    return {path: load_symbols(indexes[path].get("local", path)) for path in sorted(wanted)}


def _engines_needed(rows: Sequence[QueryRow], mode: str) -> Counter:
    """Plans executed per plan name, and how many need the dense branch or a reranker, so
    actors are started only for engines that some query's plan uses (`mode`: the job's)."""
    out: Counter = Counter()
    for row in rows:
        executed = run_modes(row.mode or mode)[0]   # a recorded-only plan runs nothing
        run = [p for p in row.plans if p.plan is not None and p.mode in executed]
        for p in run:
            out[p.plan.plan] += 1
            out["dense"] += "dense" in plan_class(p.plan.plan).needs(p.plan)
            out["rerank"] += p.plan.rerank != "none"
    return out


def _check_indexes(scan: QueryScan, options: RunOptions, log: Logger,
                   cache: IndexCacheDir) -> tuple[dict[str, str], dict]:
    """Verify every index once (checksums), here in the driver, so actors need not (an
    index on object storage is verified by each node as it copies it into its cache).

    An unusable index given with --index is bad input (exit 2); one of many under
    --index-root turns its queries into error rows while the rest of the job runs.
    Returns (the broken index folders and why, the metadata of the usable ones).
    """
    from codenib.core.artifact import read_manifest
    from codenib.core.errors import EncoderMismatchError, IndexFormatError
    from codenib.index.loaded import capabilities_of, check_encoder

    meta: dict[str, dict[str, Any]] = {}
    broken: dict[str, str] = {}
    for path in sorted({folder for folder in scan.resolved.values() if folder}):
        try:
            local = local_index(path, cache, log=log)
            manifest = read_manifest(local, verify=not scan.indexes_on_storage)   # a copy is verified as it is made
            check_encoder(manifest, options.encoder, path)
        except (IndexFormatError, EncoderMismatchError, StorageError) as exc:
            if options.index is not None:
                raise
            broken[path] = str(exc)
            log(f"warning: {exc}; its queries become error rows")
            continue
        meta[path] = {"manifest_sha256": sha256_file(Path(local) / "manifest.json"), "local": local,
                      "format_version": manifest.get("format_version"),
                      "codenib_version": manifest.get("codenib_version"),
                      "source_root_name": manifest.get("source_root_name"),
                      "git_commit": manifest.get("git_commit"),
                      "capabilities": capabilities_of(manifest, bool(options.llm))}
    return broken, meta


def _fingerprint(options: RunOptions, digest: str, indexes: dict, run_tag: str) -> str:
    fields = {**options.result_fields(), "run_tag": run_tag, "llm": _public_llm(options.llm)}
    data = json.dumps({"codenib": __version__, "options": fields, "queries": digest,
                       "indexes": {p: m["manifest_sha256"] for p, m in indexes.items()}}, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()


def _public_llm(llm) -> dict | None:
    """The LLM settings as recorded (`LLMConfig` holds no secret: the key comes from the
    environment)."""
    return llm.to_dict() if llm else None
