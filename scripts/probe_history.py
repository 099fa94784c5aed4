"""Offline probe of one history signal alone: similar past changes (BM25 over commit messages,
BugLocator weights) ranking files for the SWE-bench dev issues, with no look at the code.

    python scripts/probe_history.py [--eval /work/shared/eval/swebench-dev] [--mirrors /work/.mirror]

For each issue the history is what `codenib index --history MIRROR@BASE` reads (the commits
reachable from the issue's base commit; files only here, so no blob is parsed), and a file
counts when the base commit's tree holds it and it is a Python file (what the index holds).
Prints strict file Acc@5 (every gold file in the top 5) per repository, their mean and the
worst, for several numbers of top commits.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pygit2

from codenib.compiler import history as hist
from codenib.compiler.history import commits as history_commits
from codenib.index.history import History

TOP_COMMITS = (10, 50, 200)


def _files_only_history(gitdir: str, bases: list[str]) -> tuple[pa.Table, pa.Table]:
    """Commits reachable from any of `bases` and the files each changed (no blob parsed)."""
    repo = pygit2.Repository(gitdir)
    walker = repo.walk(pygit2.Oid(hex=bases[0]), pygit2.enums.SortMode.TOPOLOGICAL)
    for base in bases[1:]:
        walker.push(pygit2.Oid(hex=base))
    ids = [str(c.id) for c in walker]
    history_commits._language = lambda path: None      # files only: the probe ranks files
    # No shallow boundary named: a probe reads full mirrors.
    commits, changes, _ = history_commits.read_chunk((gitdir, ids, "probe", frozenset()))
    return (pa.Table.from_pylist([dict(zip(hist.COMMITS_SCHEMA.names, r)) for r in commits],
                                 schema=hist.COMMITS_SCHEMA),
            pa.Table.from_pylist([dict(zip(hist.CHANGES_SCHEMA.names, r + (False,))) for r in changes],
                                 schema=hist.CHANGES_SCHEMA))


def _tree_files(repo: pygit2.Repository, commit) -> set[str]:
    out: set[str] = set()
    stack = [(commit.tree, "")]
    while stack:
        tree, prefix = stack.pop()
        for entry in tree:
            if entry.type_str == "tree":
                stack.append((repo[entry.id], prefix + entry.name + "/"))
            elif entry.name.endswith(".py"):
                out.add(prefix + entry.name)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval", default="/work/shared/eval/swebench-dev")
    ap.add_argument("--mirrors", default="/work/.mirror")
    a = ap.parse_args()
    ev = Path(a.eval)
    instances = pq.read_table(ev / "instances.parquet").to_pylist()
    queries = {r["qid"]: r["query"] for r in pq.read_table(ev / "queries.parquet").to_pylist()}
    gold: dict[str, set[str]] = defaultdict(set)
    for r in pq.read_table(ev / "qrels_file.parquet").to_pylist():
        if int(r["relevance"]) > 0:
            gold[r["qid"]].add(r["file"])
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for inst in instances:
        by_repo[inst["repo"]].append(inst)
    acc: dict[int, dict[str, list[float]]] = {k: defaultdict(list) for k in TOP_COMMITS}
    for name, insts in sorted(by_repo.items()):
        gitdir = str(Path(a.mirrors) / name.replace("/", "+") / "repo")
        t0 = time.perf_counter()
        commits, changes = _files_only_history(gitdir, sorted({i["base_commit"] for i in insts}))
        print(f"{name}: {commits.num_rows} commits read in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        repo = pygit2.Repository(gitdir)
        for inst in insts:
            base = repo.revparse_single(inst["base_commit"]).peel(pygit2.Commit)
            ancestors = pa.array([str(c.id) for c in repo.walk(base.id, pygit2.enums.SortMode.NONE)])
            c = commits.filter(pc.is_in(commits["id"], value_set=ancestors))
            ch = changes.filter(pc.is_in(changes["commit"], value_set=ancestors))
            present = pa.array(sorted(_tree_files(repo, base)))
            ch = ch.set_column(ch.schema.get_field_index("exists"), "exists",
                               pc.is_in(ch["node_id"], value_set=present))
            h = History(c.sort_by([("time", "descending"), ("id", "ascending")]), ch, int(base.author.time))
            for k in TOP_COMMITS:
                files = h.similar_changes(queries[inst["qid"]], k=k).files
                top = [f for f, _ in sorted(files.items(), key=lambda x: (-x[1], x[0]))[:5]]
                acc[k][inst["repo_short"]].append(float(gold[inst["qid"]] <= set(top)))
    report = {}
    for k in TOP_COMMITS:
        per = {r: sum(v) / len(v) for r, v in sorted(acc[k].items())}
        report[f"top{k}"] = {"per_repository": per, "n": {r: len(v) for r, v in sorted(acc[k].items())},
                             "mean_over_repositories": sum(per.values()) / len(per),
                             "worst": min(per.values()),
                             "over_issues": sum(sum(v) for v in acc[k].values()) / sum(len(v) for v in acc[k].values())}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
