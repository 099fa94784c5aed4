"""Processing one shard: execute each query's plan (made by the driver), rows for the sink.

Used in-process (benchmarks, tests) and inside the Ray graph actors.
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from codenib.batch.query_rows import QueryRow, Shard
from codenib.model.pipelines import QueryResult
from codenib.model.planner import run_modes
from codenib.model.plans import MODE_PLANS
from codenib.core.types import PLANS_SCHEMA, RESULTS_SCHEMA


@dataclass(frozen=True)
class ShardOptions:
    """What every shard of a job is run with (per-row budget/mode override these)."""

    budget: str = "balanced"
    mode: str = "auto"          # auto | sparse | dense | hybrid | graph | all
    k: int = 100
    rerank: str | None = None
    run_tag: str = "codenib"
    llm_configured: bool = False
    localise_weights: tuple[tuple[str, float], ...] | None = None   # None: the packaged weights


class IndexCache:
    """A bounded LRU of loaded indexes (or index parts), keyed by folder and manifest sha256.

    Every actor of a job must see the same index: sparse and dense actors return row
    numbers that the graph actor turns into node ids. Asking for the sha the driver
    recorded makes an index rebuilt mid-job (or a different copy on another node) an
    error instead of silently wrong ids.
    """

    def __init__(self, loader: Callable[[str], Any], max_items: int = 4, copies=None, max_bytes: int | None = None,
                 parts: tuple[str, ...] = ()):
        """`copies`: the node's `IndexCacheDir`, which turns an index URI into a verified local copy.
        `max_bytes`: a bound on the loaded indexes' bytes besides `max_items` (the artifacts
        under `parts`, names or folder prefixes of the manifest, as the manifest sizes them:
        what this cache loads). The most recently used index always stays, even alone over."""
        self.loader = loader
        self.max_items = max(1, max_items)
        self.copies = copies
        self.max_bytes = max_bytes
        self.parts = parts
        self.stats: Counter = Counter()
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._sizes: dict[tuple[str, str], int] = {}

    def get(self, path: str, sha: str = ""):
        key = (path, sha)
        if key in self._items:
            self._items.move_to_end(key)
            self.stats["hits"] += 1
            return self._items[key]
        from codenib.index.remote import local_index

        path = local_index(path, self.copies, sha)
        if sha:
            from codenib.core.artifact import MANIFEST, sha256_file
            from codenib.core.errors import IndexFormatError

            found = sha256_file(Path(path) / MANIFEST)
            if found != sha:
                raise IndexFormatError("the index changed since the job started (manifest sha256 "
                                       f"{found[:12]}, expected {sha[:12]})", path=path,
                                       fix="re-run the job on an index that stays put, or pass a new --out")
        item = self.loader(path)
        self.stats["loads"] += 1
        self._items[key] = item
        self._sizes[key] = loaded_bytes(path, self.parts)
        while len(self._items) > 1 and (len(self._items) > self.max_items
                                        or (self.max_bytes is not None and self.bytes > self.max_bytes)):
            old, _ = self._items.popitem(last=False)
            self._sizes.pop(old, None)
            self.stats["evictions"] += 1
        self.stats["peak_bytes"] = max(self.stats["peak_bytes"], self.bytes)
        return item

    @property
    def bytes(self) -> int:
        return sum(self._sizes.values())

    def __len__(self) -> int:
        return len(self._items)


def loaded_bytes(folder: str, parts: tuple[str, ...]) -> int:
    """The manifest's sizes of the artifacts under `parts` (all of them when empty); for an
    index in the store layout, the full layout's sizes of what it reads back from the store."""
    import json

    try:
        manifest = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    sizes = {name: int(a.get("size", 0)) for name, a in manifest.get("artifacts", {}).items()}
    layout = manifest.get("layout")
    if isinstance(layout, dict):
        sizes.update((name, int(size)) for name, size in (layout.get("dropped") or {}).items())
    return sum(size for name, size in sizes.items() if not parts or any(name == p or name.startswith(p) for p in parts))


def cache_stats(cache: IndexCache) -> dict[str, int]:
    """An actor's LRU counters and its process's peak RSS (bytes), for the job summary."""
    import resource

    return {**cache.stats, "held_bytes": cache.bytes, "max_bytes": cache.max_bytes or 0,
            "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def process_shard(shard: Shard, session, options: ShardOptions) -> tuple[pa.Table, pa.Table]:
    """Run a shard's planned queries on a `RetrievalSession` (None: the index could not be
    loaded); every query yields plan rows, failures included."""
    live = [r for r in shard.rows if r.error is None] if session is not None else []
    dead = [r for r in shard.rows if r.error is not None] if session is not None else list(shard.rows)
    results_cols = {name: [] for name in RESULTS_SCHEMA.names}
    plans_cols = {name: [] for name in PLANS_SCHEMA.names}
    for row in dead:
        _plan_row(plans_cols, row, None, options, row.error or "index could not be loaded", row.mode or options.mode)
    groups: dict[tuple[str, str], list[QueryRow]] = {}
    for row in live:
        groups.setdefault((row.budget or options.budget, row.mode or options.mode), []).append(row)
    executor = session.executor() if session is not None else None
    # Grouped as planned (budget, mode): each group is one batch of engine calls.
    for (_, mode), rows in sorted(groups.items()):
        texts = [r.query for r in rows]
        executed, recorded = run_modes(mode)
        by_mode = {m: executor.execute(texts, [r.planned(m) for r in rows], options.k) for m in executed}
        for j, row in enumerate(rows):
            written: set[str] = set()
            for m in executed:
                res = by_mode[m][j]
                # A mode that degraded to a plan already written (no dense vectors, a
                # budget without graph) would repeat that plan's ranking: rows are per plan.
                if res.plan in written:
                    continue
                written.add(res.plan)
                _result_rows(results_cols, row, res, options)
                # A failed rerank keeps the results and is recorded, as `codenib rerank` does.
                _plan_row(plans_cols, row, res, options, res.error or res.rerank_error, m)
            for m in recorded:   # the planner's own choice under `all`: recorded, not run
                p = row.planned(m)
                _plan_row(plans_cols, row, None, options, None, m, plan=p.plan.plan if p.plan else "none",
                          trace=p.trace.to_dict() if p.trace else {})
    return (pa.table(results_cols, schema=RESULTS_SCHEMA), pa.table(plans_cols, schema=PLANS_SCHEMA))


def failed_shard(shard: Shard, options: ShardOptions, error: str) -> tuple[pa.Table, pa.Table]:
    """Plan rows recording `error` for every query of a shard that could not be processed."""
    plans_cols = {name: [] for name in PLANS_SCHEMA.names}
    for row in shard.rows:
        _plan_row(plans_cols, row, None, options, row.error or error, row.mode or options.mode)
    return RESULTS_SCHEMA.empty_table(), pa.table(plans_cols, schema=PLANS_SCHEMA)


def _result_rows(cols: dict[str, list], row: QueryRow, res: QueryResult, options: ShardOptions) -> None:
    for rank, c in enumerate(res.candidates, start=1):
        cols["qid"].append(row.qid)
        cols["rank"].append(rank)
        cols["node_id"].append(c.node_id)
        cols["file"].append(c.file)
        cols["score"].append(float(c.score))
        cols["plan"].append(res.plan)
        cols["index"].append(row.index)
        cols["run_tag"].append(options.run_tag)


def _plan_row(cols: dict[str, list], row: QueryRow, res: QueryResult | None, options: ShardOptions,
              error: str | None, mode: str, plan: str | None = None, trace: dict | None = None) -> None:
    trace = trace if trace is not None else (res.trace if res is not None else {})
    if row.text_changes:
        # The text was cleaned when the query set was read (codenib.core.querytext): say how.
        trace = {**trace, "query_text": dict(row.text_changes)}
    if plan is None:
        plan = res.plan if res is not None else (MODE_PLANS.get(mode, "none"))
    cols["qid"].append(row.qid)
    cols["plan"].append(plan if error is None or res is not None else "none")
    cols["signals"].append(json.dumps(trace.get("signals", res.signals if res else {}), sort_keys=True, default=str))
    cols["budget"].append(row.budget or options.budget)
    cols["capabilities"].append(json.dumps(trace.get("capabilities", {}), sort_keys=True))
    cols["trace"].append(json.dumps(trace, sort_keys=True, default=str))
    cols["latency_ms"].append(float(res.latency_ms) if res is not None else 0.0)
    cols["error"].append(error)
    cols["index"].append(row.index)
    cols["mode"].append(mode)
