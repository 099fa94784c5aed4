"""The multi-node scenario of tests/batch/test_multinode.py, in a process of its own (a Ray
driver joins one cluster per process): a real 3-node Ray cluster on 127.0.0.1
(`ray.cluster_utils.Cluster`, one CPU and a distinct custom resource per node, a shared
`retrieval` resource on all), a sparse job over it, one worker node removed mid-job.

    python -m tests.batch.multinode_job INDEX_DIR WORK_DIR   # prints one JSON object

The reference rows come from the same job run before the cluster starts, on this one machine
(in this process: the single-node path `tests/batch/test_local.py` holds equal to Ray's).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path


def rows(out) -> list[tuple]:
    from codenib.core.results import read_results

    return sorted((r["qid"], r["rank"], r["node_id"], round(r["score"], 9)) for r in read_results(out).to_pylist())


def main(index: str, work: str) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from codenib.batch.driver import RunOptions, run_job
    from codenib.core.errors import BadInputError
    from tests.batch.conftest import QUERIES, write_queries

    work_dir = Path(work)
    many = [{"qid": f"m{i:03d}", "query": q["query"]} for i, q in enumerate(QUERIES * 20)]
    qpath = write_queries(work_dir / "many.parquet", many)
    common = dict(queries=str(qpath), index=index, shard_size=1, mode="sparse", progress=False)
    t0 = time.time()
    run_job(RunOptions(out=str(work_dir / "single"), local_below=10**6, **common), log=lambda m: None)
    reference = rows(work_dir / "single")

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"node_a": 1, "retrieval": 8}, "include_dashboard": False,
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4}})
    workers = [cluster.add_node(num_cpus=1, resources={name: 1, "retrieval": 8}) for name in ("node_b", "node_c")]
    cluster.wait_for_nodes()
    started = time.time()
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    result: dict = {"cluster_start_s": round(time.time() - started, 1)}
    out = work_dir / "multi"
    logs: list[str] = []
    box: dict = {}

    def job():
        try:
            box["summary"] = run_job(RunOptions(out=str(out), address=cluster.address, workers=3,
                                                actor_resources="retrieval=1", **common), log=logs.append)
        except BaseException as exc:  # noqa: BLE001 - reported in the JSON
            box["error"] = repr(exc)

    thread = threading.Thread(target=job)
    thread.start()
    removed_at, placement = None, {}
    deadline = time.time() + 300
    while thread.is_alive() and time.time() < deadline and removed_at is None:
        committed = 0
        try:
            committed = len(json.loads((out / "_manifest.json").read_text())["shards"])
        except (OSError, ValueError, KeyError):
            pass
        graphs = [n for n in ray.util.list_named_actors() if "-graph-" in n]
        if committed >= 3 and len(graphs) == 3:
            placement = {n: ray.get(ray.get_actor(n).node_id.remote(), timeout=60) for n in graphs}
            victim = next(w for w in workers if w.node_id in placement.values())
            cluster.remove_node(victim, allow_graceful=False)
            removed_at = committed
        time.sleep(0.02)
    thread.join(timeout=600)
    summary = box.get("summary")
    result.update({
        "error": box.get("error"),
        "queries": len(many),
        "removed_at_committed_shards": removed_at,
        "graph_actor_nodes": len(set(placement.values())),
        "nodes": 3,
        "rows_equal": summary is not None and rows(out) == reference,
        "rows": len(reference),
        "duplicates": (len(rows(out)) - len({r[:2] for r in rows(out)})) if summary else None,
        "job_errors": summary.errors if summary else None,
        "failed_shards": summary.failed_shards if summary else None,
        "retries_logged": sum(1 for m in logs if "retrying" in m),
        "placement_line": next((m for m in logs if "graph actors on" in m), None),
    })
    # A job whose actors ask for a resource no node has fails at once, naming it.
    t1 = time.time()
    try:
        run_job(RunOptions(out=str(work_dir / "unplaceable"), address=cluster.address,
                           actor_resources="gpu_box=1", **common), log=lambda m: None)
        result["unplaceable"] = None
    except BadInputError as exc:
        result["unplaceable"] = str(exc)
    result["unplaceable_s"] = round(time.time() - t1, 1)
    result["unplaceable_out_exists"] = (work_dir / "unplaceable").exists()
    result["seconds"] = round(time.time() - t0, 1)
    ray.shutdown()
    cluster.shutdown()
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
