"""The index-set scenario of tests/batch/test_multinode.py, in a process of its own (a Ray
driver joins one cluster per process): a git repository of 12 commits, `codenib index-set` on a
real 3-node Ray cluster on 127.0.0.1 (`ray.cluster_utils.Cluster`, one CPU per node: three runs
of four snapshots), one worker node removed while the runs build.

    python -m tests.batch.multinode_indexset WORK_DIR   # prints one JSON object

The reference is each snapshot built on this one machine, in this process, before the cluster
starts (`build_index` of the same commit's tree, no Ray).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

#: Commits in the repository, and Python files each holds (enough that a build takes a moment).
COMMITS = 12
FILES = 60


def make_repo(root: Path) -> tuple[Path, list[str]]:
    """A repository whose every commit rewrites a few of its files (calls between them)."""
    import pygit2

    from tests.git_history import git_commit

    repo = pygit2.init_repository(str(root))
    parents: list = []
    commits: list[str] = []
    for c in range(COMMITS):
        files = {f"pkg/m{i:03d}.py": (f"from pkg.m{(i + 1) % FILES:03d} import f{(i + 1) % FILES}\n\n\n"
                                      f"def f{i}(x):\n    return f{(i + 1) % FILES}(x) + {c if i % 7 == c % 7 else 0}\n\n\n"
                                      f"class C{i}:\n    def m(self):\n        return f{i}(1)\n")
                 for i in range(FILES)}
        if c == 0:
            files["pkg/__init__.py"] = ""
        oid = git_commit(repo, files, f"commit {c}", 1_700_000_000 + c * 100, parents)
        parents = [oid]
        commits.append(str(oid))
    return Path(root) / ".git", commits


def tables(folder: Path) -> tuple:
    import pyarrow.parquet as pq

    return tuple(pq.read_table(folder / name) for name in ("nodes.parquet", "edges.parquet"))


def main(work: str) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from codenib.batch.indexset import IndexSetOptions, run_index_set
    from codenib.compiler.build import build_index
    from codenib.compiler.build_options import BuildOptions
    from codenib.compiler.source import GitTree

    work_dir = Path(work)
    gitdir, commits = make_repo(work_dir / "repo")
    names = [f"s{i:02d}" for i in range(len(commits))]
    for name, commit in zip(names, commits):
        build_index(GitTree.open(gitdir, commit, name), work_dir / "reference" / name,
                    BuildOptions(dense=False, progress=False, use_cache=False, jobs=1), log=lambda m: None)
    snapshots = work_dir / "set.jsonl"
    snapshots.write_text("".join(json.dumps({"index": n, "repo": str(gitdir), "rev": c}) + "\n"
                                 for n, c in zip(names, commits)), encoding="utf-8")

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False,
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4}})
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    root = work_dir / "indexes"
    box: dict = {}

    def job():
        try:
            box["summary"] = run_index_set(IndexSetOptions(snapshots=str(snapshots), index_root=str(root),
                                                           address=cluster.address, dense=False, progress=False),
                                           log=lambda m: None)
        except BaseException as exc:  # noqa: BLE001 - reported in the JSON
            box["error"] = repr(exc)

    thread = threading.Thread(target=job)
    thread.start()
    removed_at = None
    deadline = time.time() + 300
    while thread.is_alive() and time.time() < deadline and removed_at is None:
        built = [n for n in names if (root / n / "manifest.json").is_file()]
        if built:
            cluster.remove_node(workers[0], allow_graceful=False)
            removed_at = len(built)
        time.sleep(0.02)
    thread.join(timeout=600)
    summary = box.get("summary")
    report = {}
    if summary is not None:
        import pyarrow.parquet as pq

        report = {r["index"]: r["status"] for r in pq.read_table(summary.report).to_pylist()}
    equal = summary is not None and all(
        all(a.equals(b) for a, b in zip(tables(root / n), tables(work_dir / "reference" / n))) for n in names)
    result = {"error": box.get("error"), "snapshots": len(names), "removed_at_built": removed_at,
              "statuses": sorted(set(report.values())), "all_rows": len(report) == len(names),
              "equal_to_one_node": equal}
    ray.shutdown()
    cluster.shutdown()
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
