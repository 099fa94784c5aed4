"""Where a `codenib run` job's actors go: the engine actors (sparse, dense and rerank) and the
graph actors that take shards, sized so the whole set schedules on the cluster, checked
against what the alive nodes offer before anything starts, and waited for until placed."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from codenib.batch.job import Cluster, Logger
from codenib.batch.options import RunOptions
from codenib.batch.query_rows import Shard
from codenib.batch.worker import ShardOptions
from codenib.index.remote import IndexCacheDir

#: Graph actors at most, whatever the cluster size (each holds its own loaded indexes).
MAX_GRAPH_ACTORS = 16


def start_actors(options: RunOptions, shard_opts: ShardOptions, planned: Counter, copies: IndexCacheDir,
                 cluster: Cluster, todo: Sequence[Shard], log: Logger) -> tuple[list, list]:
    """The sparse, dense and rerank engine actors and the graph actors that take shards."""
    from codenib.batch.actors import remote_classes

    cpus, gpus, device, prefix = cluster.cpus, cluster.gpus, cluster.device, cluster.prefix
    custom = options.resources()
    nodes = _alive_nodes()
    n_graph = options.workers or max(1, min(MAX_GRAPH_ACTORS, int(cpus)))
    # Actors are started only for engines that some query's plan uses.
    want_dense = planned["dense"] > 0
    want_rerank = planned["rerank"] > 0
    n_actors = n_graph + 1 + int(want_dense) + int(want_rerank)
    # Every actor fits: fractional CPUs sized so the whole set schedules on the cluster (on
    # several nodes: on the smallest node that can take actors, an even share plus one).
    share = min(1.0, cpus / (n_actors + 0.5))
    eligible = [n for n in nodes if all(n.get(k, 0.0) >= v for k, v in custom.items())]
    if len(nodes) > 1 and eligible:
        per_node = -(-n_actors // len(eligible)) + 1
        share = min(share, min(n.get("CPU", 0.0) for n in eligible) / per_node)
    # --device cuda asks for a GPU: on a cluster without one the placement check says so.
    gpu_dense = 0.5 if device == "cuda" else 0.0
    check_placeable(nodes, {"CPU": share, **custom}, {"CPU": share, "GPU": gpu_dense, **custom} if want_dense else None)
    classes = remote_classes(num_gpus_dense=gpu_dense)
    res = {"resources": custom} if custom else {}
    sparse = classes["sparse"].options(num_cpus=share, name=f"{prefix}-sparse", **res).remote(
        options.max_indexes, copies, options.actor_memory)
    dense_slots = min(2, options.max_indexes)  # loaded models and vectors are large
    dense = classes["dense"].options(num_cpus=share, name=f"{prefix}-dense", **res).remote(
        dense_slots, device, copies, options.actor_memory) if want_dense else None
    rerank = classes["rerank"].options(num_cpus=share, name=f"{prefix}-rerank", **res).remote(
        min(2, options.max_indexes), device, options.llm, copies=copies) if want_rerank else None
    names = (f"{prefix}-sparse", f"{prefix}-dense" if dense else None, f"{prefix}-rerank" if rerank else None)
    # Graph actors take the shards: spread over the nodes, so that one node lost costs a share.
    graphs = [classes["graph"].options(num_cpus=share, name=f"{prefix}-graph-{i}", scheduling_strategy="SPREAD",
                                       **res).remote(names, shard_opts, options.max_indexes, copies,
                                                     options.actor_memory)
              for i in range(n_graph)]
    actors = [a for a in (sparse, dense, rerank) if a is not None] + graphs
    # The engine actors load the first indexes while the graph actors start.
    first = list(dict.fromkeys((s.index_path, s.index_sha) for s in todo if s.index_path))
    # As many as the graph actors take at once, no more: a warm-up past the LRU's room would
    # only evict what the first shards need.
    for engine, slots in ((sparse, min(options.max_indexes, n_graph)), (dense, min(dense_slots, n_graph))):
        for path, sha in first[:slots] if engine is not None else ():
            engine.warm.remote(path, sha)
    where = _placed(graphs, custom, share, log)
    log(f"ray: {len(graphs)} graph actors on {len(set(where))} of {len(nodes)} nodes, 1 sparse"
        f"{', 1 dense' if dense else ''}{', 1 rerank' if rerank else ''} ({cpus:g} CPUs, {gpus:g} GPUs, "
        f"dense on {device})")
    return actors, graphs


#: Seconds the graph actors may take to be placed and started before the job gives up.
ACTOR_START_TIMEOUT_S = 300.0


def check_placeable(nodes: list[dict[str, float]], graph: dict[str, float], dense: dict[str, float] | None) -> None:
    """Fail before starting anything when no alive node offers what an actor asks for
    (Ray would keep such an actor pending forever), naming the missing resource.

    Raises:
        BadInputError: the first resource no node has enough of, with what the nodes offer.
    """
    from codenib.core.errors import BadInputError

    for what, want in (("graph and sparse", graph), ("dense", dense)):
        if not want:
            continue
        if any(all(n.get(k, 0.0) >= v for k, v in want.items() if v > 0) for n in nodes):
            continue
        missing = next((k for k, v in want.items() if v > 0 and not any(n.get(k, 0.0) >= v for n in nodes)),
                       None)
        offered = sorted({k for n in nodes for k in n if not k.startswith("node:") and "memory" not in k})
        if missing is None:   # each resource exists, but never all on one node
            missing = " + ".join(f"{k}={v:g}" for k, v in want.items() if v > 0)
            text = f"no node of the cluster has {missing} together"
        else:
            text = (f"no node of the cluster has resource {missing!r} (the {what} actors ask for "
                    f"{want[missing]:g}; alive nodes offer {', '.join(offered) or 'nothing'})")
        raise BadInputError(f"the job's {what} actors cannot be placed: {text}",
                            fix=f"start nodes with that resource (ray start --resources '{{\"{missing}\": 1}}'), "
                                "or change --actor-resources / --device")


def _alive_nodes() -> list[dict[str, float]]:
    import ray

    return [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]


def _placed(graphs: list, custom: dict[str, float], share: float, log: Logger) -> list[str]:
    """Wait until every graph actor runs; their node ids. An actor still pending after
    ACTOR_START_TIMEOUT_S fails the job, naming what it asked for (not a hang)."""
    import ray

    from codenib.core.errors import CodeNibError

    refs = [g.node_id.remote() for g in graphs]
    ready, pending = ray.wait(refs, num_returns=len(refs), timeout=ACTOR_START_TIMEOUT_S)
    if pending:
        asked = ", ".join(f"{k}={v:g}" for k, v in {"CPU": share, **custom}.items())
        raise CodeNibError(f"{len(pending)} of {len(graphs)} graph actors could not be placed within "
                           f"{ACTOR_START_TIMEOUT_S:g}s (each asks for {asked}); the cluster is full or lost nodes",
                           fix="add nodes with those resources, or pass fewer --workers")
    return ray.get(refs)
