"""The re-ranking job: an earlier results folder -> a new one, top N reordered per query.

Used for nightly jobs that re-rank yesterday's results with a newer reranker. It runs the
same job lifecycle as `codenib run` (`batch.job`: sharded, resumable), and records lineage
(source run, reranker and model, time) in the new folder's metadata. A query whose rerank
fails keeps its original order, with the error in its plans row.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa

from codenib import __version__
from codenib.batch.job import Cluster, Job, JobSummary, Logger, execute, log_to_stderr
from codenib.batch.options import RerankOptions
from codenib.batch.rerank_shard import RerankItem, RerankShard, rerank_shard
from codenib.core.errors import BadInputError
from codenib.core.results import ResultsFolder, check_parts, read_results

#: Rerank actors at most, whatever the cluster size.
MAX_RERANK_ACTORS = 4
#: Indexes each rerank actor keeps loaded.
RERANK_INDEXES = 2


def rerank_job(options: RerankOptions, log: Logger | None = None) -> JobSummary:
    """Run (or resume) a re-ranking job."""
    log = log or log_to_stderr
    options.validate()
    source = Path(options.results)
    source_meta = _source_metadata(source, options.allow_partial)
    queries = _query_texts(options, source_meta)
    items = _items(source, queries, options, source_meta)
    _check_vectors(items, options)
    shards = _shards(items, options.shard_size)
    lineage = {
        "source_run_id": source_meta.get("run_id"),
        "source_results": str(source.resolve()),
        "reranker": options.reranker,
        "model": _model_name(options, shards),
        "top_n": options.top_n,
    }
    fingerprint = hashlib.sha256(json.dumps({
        "codenib": __version__, "lineage": lineage, "shard_size": options.shard_size,
        "run_tag": options.run_tag, "items": _digest(items),
        "llm": {k: v for k, v in (options.llm.to_dict() if options.llm else {}).items() if "key" not in k.lower()},
    }, sort_keys=True).encode()).hexdigest()
    run_id = f"rerank-{fingerprint[:12]}"
    metadata = {
        "run_id": run_id, "codenib_version": __version__, "lineage": lineage,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "job_spec": {**asdict(options), "llm": None}, "indexes": source_meta.get("indexes", {}),
    }
    job = Job(run_id, fingerprint, metadata, shards, len(items), start_actors=partial(_start_actors, options),
              failed_rows=partial(_failed_rows, options))
    return execute(job, options, log)


def _start_actors(options: RerankOptions, cluster: Cluster, todo: Sequence[RerankShard],
                  log: Logger) -> tuple[list, list]:
    """The rerank actors; each reranks whole shards."""
    from codenib.batch.actors import remote_classes   # imports ray: on first use

    cpus, gpus, device = cluster.cpus, cluster.gpus, cluster.device
    n = options.workers or max(1, min(MAX_RERANK_ACTORS, int(cpus)))
    cls = remote_classes()["rerank"]
    resources = {"num_cpus": min(1.0, cpus / (n + 0.5)), "num_gpus": 1.0 / n if gpus > 0 and device == "cuda" else 0}
    # The LLM client is built only for an LLM job: a spec's [llm] may serve its [run] alone.
    llm = options.llm if options.reranker == "llm" else None
    workers = [cls.options(name=f"{cluster.prefix}-rerank-{i}", **resources).remote(
        RERANK_INDEXES, device, llm, options.reranker, options.top_n) for i in range(n)]
    log(f"ray: {n} rerank actors ({options.reranker}, top {options.top_n}; {cpus:g} CPUs, {gpus:g} GPUs)")
    return workers, workers


def _failed_rows(options: RerankOptions, shard: RerankShard, error: str) -> tuple[pa.Table, pa.Table]:
    """Every list of a shard that could not run keeps its order, with `error` recorded."""
    failed = RerankShard(shard.shard_id, "", tuple(RerankItem(**{**asdict(it), "error": error}) for it in shard.rows))
    return rerank_shard(failed, None, options.reranker, options.top_n)


# --- reading the source run -------------------------------------------------------------------

def _source_metadata(source: Path, allow_partial: bool) -> dict[str, Any]:
    folder = ResultsFolder(source)
    manifest = folder.manifest_path
    if not manifest.is_file():
        raise BadInputError("not a CodeNib results folder (no _manifest.json)", path=str(source),
                            fix="pass the --out folder of a `codenib run`")
    if not folder.complete and not allow_partial:
        raise BadInputError("the source run is not complete (no _SUCCESS)", path=str(source),
                            fix="finish it by re-running the same `codenib run`, or pass --allow-partial")
    try:
        meta = folder.manifest()
    except ValueError as exc:
        raise BadInputError(f"unreadable manifest: {exc}", path=str(manifest), fix="re-run the source job") from exc
    check_parts(folder, meta)   # a part lost or changed since its commit: refused, naming it
    return meta


def _query_texts(options: RerankOptions, meta: dict) -> dict[str, str]:
    from codenib.batch.query_files import check_column_types, load_query_records
    from codenib.core.querytext import clean_query_text

    path = options.queries or meta.get("queries")
    if not path:
        raise BadInputError("the source run does not record its query set", path=options.results,
                            fix="pass --queries QUERIES.parquet")
    if not Path(path).is_file():
        raise BadInputError("the query set of the source run is not here", path=str(path),
                            fix="pass --queries with the query set the source run used")
    table, records = load_query_records(path)
    if "qid" not in table.column_names or "query" not in table.column_names:
        raise BadInputError("the query set lacks qid/query columns", path=str(path), fix="pass the right --queries")
    check_column_types(table, path)
    # Cleaned as `codenib run` cleaned them, so the reranker sees the text the run saw.
    return {str(r["qid"]): clean_query_text(r["query"]).text for r in records}


def _items(source: Path, queries: dict[str, str], options: RerankOptions, meta: dict) -> list[RerankItem]:
    from codenib.batch.query_rows import resolve_index_name

    table = read_results(source)
    index_paths: dict[str, str] = dict(meta.get("index_paths", {}))
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in table.to_pylist():
        groups.setdefault((row["qid"], row["plan"]), []).append(row)
    items = []
    for (qid, plan), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["rank"])
        written = rows[0]["index"]
        path = _resolve(written, options, index_paths)
        error = None
        if qid not in queries:
            error = "query text not found in the query set"
        elif not path:
            outside = resolve_index_name(written, options.location("index_root"))[1] if options.index_root else None
            error = outside or f"index {written!r} not found (fix: pass --index or --index-root)"
        items.append(RerankItem(qid, plan, written, queries.get(qid, ""), tuple(r["node_id"] for r in rows),
                                tuple(float(r["score"]) for r in rows),
                                options.run_tag or f"{rows[0]['run_tag']}+{options.reranker}", path, error))
    return items


def _check_vectors(items: Sequence[RerankItem], options: RerankOptions) -> None:
    """An embedding rerank reads the indexes' vectors: when no index of the job has any, every
    row could only be an error row, so it is bad input now, before the output folder or Ray.
    Indexes in object storage, or that do not read, are left to the rows (each records why)."""
    if options.reranker != "embedding":
        return
    from codenib.core.artifact import read_manifest
    from codenib.core.errors import CodeNibError
    from codenib.core.storage import Location
    from codenib.index.loaded import capabilities_of

    paths = sorted({it.index_path for it in items if it.error is None and it.index_path})
    if not paths or any(Location.of(p).uri for p in paths):
        return
    for path in paths:
        try:
            if capabilities_of(read_manifest(path, verify=False)).dense:
                return
        except CodeNibError:
            return
    more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
    raise BadInputError(f"the embedding reranker needs dense vectors, and no index of this job has any: "
                        f"{paths[0]}{more} was built with --no-dense",
                        fix="rebuild the index without --no-dense, or pass --reranker llm --llm-config FILE")


def _resolve(written: str, options: RerankOptions, recorded: dict[str, str]) -> str:
    from codenib.batch.query_rows import resolve_index_name

    candidates = []
    if options.index:
        candidates.append(Path(options.index))
    elif options.index_root:
        # Strictly under the root, as `codenib run` resolves the names of an `index` column.
        return resolve_index_name(written, options.location("index_root"))[0]
    else:
        if recorded.get(written):
            candidates.append(Path(recorded[written]))
        candidates.append(Path(written))
    for c in candidates:
        if (c / "manifest.json").is_file():
            return str(c.resolve())
    return ""


def _shards(items: list[RerankItem], size: int) -> list[RerankShard]:
    by_index: dict[str, list[RerankItem]] = {}
    for it in items:
        by_index.setdefault(it.index_path or f"missing:{it.index}", []).append(it)
    shards: list[RerankShard] = []
    for index in sorted(by_index):
        group = by_index[index]
        for start in range(0, len(group), size):
            chunk = tuple(group[start:start + size])
            path = next((it.index_path for it in chunk if it.error is None), "")
            shards.append(RerankShard(len(shards), path, chunk))
    return shards


def _model_name(options: RerankOptions, shards: list[RerankShard]) -> str | None:
    if options.reranker == "llm":
        return options.llm.model if options.llm else None
    for s in shards:
        if s.index_path:
            manifest = json.loads((Path(s.index_path) / "manifest.json").read_text(encoding="utf-8"))
            return (manifest.get("model") or {}).get("name")
    return None


def _digest(items: list[RerankItem]) -> str:
    h = hashlib.sha256()
    for it in items:
        h.update(json.dumps([it.qid, it.plan, it.index, it.query, it.node_ids, it.error]).encode())
    return h.hexdigest()
