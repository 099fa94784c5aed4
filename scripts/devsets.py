"""What the dev-set scripts share (`swebench_dev.py`, `mswe_dev.py`): reading a set, indexing
its snapshots, running the batch job per mode, strict Acc at file and function level with
Recall beside it (issue 41: breadth for reports with many changed files), tables.

A set is a folder of `queries.parquet`, `instances.parquet`, `qrels_file.parquet` and
`qrels_function.parquet` (the layout of ../shared/eval/*-dev), plus its `prepare.py`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.eval import metrics, stats

FILE_KS = (1, 5, 10)
FUNCTION_KS = (5, 10)
#: Recall@k beside the strict Acc: the share of the gold files (definitions) in the first k
#: distinct files (definitions), averaged over the queries with gold at that level.
FILE_RECALL_KS = (10, 20)
FUNCTION_RECALL_KS = (10,)
ACC_HEAD = "file@1 file@5 file@10 func@5 func@10"
HEAD = (ACC_HEAD + " "
        + " ".join([f"fileR@{k}" for k in FILE_RECALL_KS] + [f"funcR@{k}" for k in FUNCTION_RECALL_KS]))
#: The columns a "worst repository" line names the repository of.
WORST_NAMED = ("file@5", "func@10", "fileR@10", "funcR@10")
#: How a node id is compared with a gold function (the default: exact, `#N` duplicates one).
FunctionKey = Callable[[str], str]


@dataclass(frozen=True)
class DevSet:
    """One set's queries, instances (qid -> row) and gold (qid -> files, qid -> function keys)."""

    queries: list[dict]
    instances: dict[str, dict]
    gold_files: dict[str, set[str]]
    gold_funcs: dict[str, set[str]]


def default_data(name: str, here: Path) -> Path:
    """`shared/eval/<name>` beside the repository or beside any folder above it (a worktree
    sits a level deeper than the main checkout)."""
    for up in here.parents:
        if (up / "shared" / "eval" / name).is_dir():
            return up / "shared" / "eval" / name
    return here.parent.parent / "shared" / "eval" / name


def read_set(data: Path, function_key: FunctionKey = metrics.plain_node_id) -> DevSet:
    """Read a set folder; gold functions are kept as `function_key` of their node ids."""
    return DevSet(queries=pq.read_table(data / "queries.parquet").to_pylist(),
                  instances={r["qid"]: r for r in pq.read_table(data / "instances.parquet").to_pylist()},
                  gold_files=qrels(data / "qrels_file.parquet", "file"),
                  gold_funcs=qrels(data / "qrels_function.parquet", "node_id", function_key))


def qrels(path: Path, column: str, key: FunctionKey = metrics.plain_node_id) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    if path.exists():
        for r in pq.read_table(path).to_pylist():
            if int(r["relevance"]) > 0:
                out.setdefault(r["qid"], set()).add(key(r[column]))
    return out


#: `src/a.rs::Opts.parse#2` -> `src/a.rs::parse`: a definition matched by its file and last name
#: segment (so `A.f`, `ns.A.f` and `f` in one file are one), a file node unchanged; the eval
#: layer's `function_name` level matches by the same key.
file_and_name = metrics.file_and_name


def prepare(data: Path, work: Path) -> Path:
    """Check out every snapshot with the set's own prepare script; the checkouts folder."""
    subprocess.run([sys.executable, str(data / "prepare.py"), str(work)], check=True)
    return work / "checkouts"


def order(instances: dict, repo_of: Callable[[dict], str]) -> list[str]:
    """Snapshots of one repository in instance-number order (close to commit order), so that
    `--reuse` sees the nearest earlier snapshot."""
    def key(qid: str):
        num = re.search(r"-(\d+)$", qid)
        return repo_of(instances[qid]), int(num.group(1)) if num else 0, qid
    return sorted(instances, key=key)


def commit_order(instances: dict, repo_of: Callable[[dict], str], mirror_of: Callable[[dict], Path]) -> list[str]:
    """Snapshots of one repository in base-commit time order (from the repository's mirror),
    so that each snapshot's history extends the previous one's and `--reuse` reads only the
    new commits."""
    import pygit2

    repos: dict[Path, pygit2.Repository] = {}

    def key(qid: str):
        inst = instances[qid]
        mirror = mirror_of(inst)
        repo = repos.setdefault(mirror, pygit2.Repository(str(mirror)))
        commit = repo.revparse_single(inst["base_commit"]).peel(pygit2.Commit)
        return repo_of(inst), commit.commit_time, qid
    return sorted(instances, key=key)


def index_all(instances: dict, checkouts: Path, root: Path, dense: bool, repo_of: Callable[[dict], str],
              reuse: bool = True, history: Callable[[dict], Path] | None = None) -> dict[str, float]:
    """`codenib index` each snapshot not indexed yet under `root`/<qid> (`--reuse` of the
    previous snapshot of its repository when `reuse`); seconds per snapshot indexed now.
    `history(instance)`: the repository's git mirror, indexed with `--history MIRROR@BASE`
    (snapshots then go in base-commit order, each reusing the latest earlier snapshot that its
    base commit descends from, so a history read on a maintenance branch is not read again)."""
    root.mkdir(parents=True, exist_ok=True)
    prev: dict[str, str] = {}
    seconds: dict[str, float] = {}
    qids = order(instances, repo_of) if history is None else commit_order(instances, repo_of, history)
    done: dict[str, list[str]] = {}
    for qid in qids:
        repo = repo_of(instances[qid])
        if history is not None and repo in prev:
            # Snapshots on maintenance branches: reuse the latest one the history extends.
            prev[repo] = _nearest_ancestor(instances, qid, done[repo], history) or prev[repo]
        done.setdefault(repo, []).append(qid)
        out = root / qid
        if not (out / "manifest.json").exists():
            cmd = [codenib(), "index", str(checkouts / qid), "--out", str(out), "--quiet"]
            if not dense:
                cmd.append("--no-dense")
            if history is not None:
                cmd += ["--history", f"{history(instances[qid])}@{instances[qid]['base_commit']}"]
            if reuse and repo in prev:
                cmd += ["--reuse", str(root / prev[repo])]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            seconds[qid] = time.perf_counter() - t0
            print(f"indexed {qid} in {seconds[qid]:.1f}s", file=sys.stderr)
        prev[repo] = qid
    return seconds


def _nearest_ancestor(instances: dict, qid: str, earlier: list[str], mirror_of: Callable[[dict], Path]) -> str | None:
    """The latest of `earlier` whose base commit is an ancestor of `qid`'s (None: none is)."""
    import pygit2

    repo = pygit2.Repository(str(mirror_of(instances[qid])))
    head = repo.revparse_single(instances[qid]["base_commit"]).peel(pygit2.Commit).id
    for other in reversed(earlier):
        base = repo.revparse_single(instances[other]["base_commit"]).peel(pygit2.Commit).id
        if base == head or repo.descendant_of(head, base):
            return other
    return None


def run_job(queries: list[dict], idx_root: Path, out: Path, mode: str, shard_size: int,
            weights: Path | None = None, latency: dict[str, list[float]] | None = None,
            ) -> tuple[dict[str, list[str]], dict[str, str]]:
    """One batch job (a fresh results folder); its rankings and the plan of each query.
    Per-query latencies (ms) are appended to `latency` by plan."""
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    qfile = out.parent / f"{out.name}.queries.parquet"
    pq.write_table(pa.Table.from_pylist([{"qid": q["qid"], "query": q["query"], "index": q["index"]}
                                         for q in queries]), qfile)
    cmd = [codenib(), "run", "--queries", str(qfile), "--index-root", str(idx_root), "--out", str(out),
           "--mode", mode, "-k", "100", "--shard-size", str(shard_size)]
    if weights is not None:
        cmd += ["--localise-weights", str(weights)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    from codenib.core.results import ResultsFolder, read_results

    rows = sorted(read_results(out).select(["qid", "rank", "node_id", "plan"]).to_pylist(),
                  key=lambda r: (r["qid"], r["rank"]))
    ranks: dict[str, list[str]] = {}
    plans: dict[str, str] = {}
    for r in rows:
        ranks.setdefault(r["qid"], []).append(r["node_id"])
        plans[r["qid"]] = r["plan"]
    if latency is not None:
        for r in ResultsFolder(out).plans(["qid", "plan", "latency_ms"]).to_pylist():
            latency.setdefault(r["plan"], []).append(r["latency_ms"])
    return ranks, plans


def scores(ranks: dict[str, list[str]], qids: Sequence[str], gold_files, gold_funcs,
           function_key: FunctionKey = metrics.plain_node_id) -> dict[str, float]:
    """Mean strict Acc@k, as `codenib eval` computes it, then mean Recall@k (`fileR@k`,
    `funcR@k`): files ranked by their best node; named definitions (file nodes dropped)
    compared by `function_key`, each over the queries with gold at its level."""
    files = metrics.to_file_run({q: ranks.get(q, []) for q in qids})
    funcs = {q: [function_key(d) for d in r]
             for q, r in metrics.to_function_run({q: ranks.get(q, []) for q in qids}).items()}
    row = {}
    fq = {q: {f: 1 for f in gold_files[q]} for q in qids if gold_files.get(q)}
    nq = {q: {f: 1 for f in gold_funcs[q]} for q in qids if gold_funcs.get(q)}
    # (column prefix, measure, run, judgments, cut-offs): strict Acc, then Recall beside it.
    for prefix, measure, run, qrels, ks in (("file", "Acc", files, fq, FILE_KS), ("func", "Acc", funcs, nq, FUNCTION_KS),
                                            ("fileR", "R", files, fq, FILE_RECALL_KS),
                                            ("funcR", "R", funcs, nq, FUNCTION_RECALL_KS)):
        for k in ks:
            vals = metrics.evaluate(run, qrels, [f"{measure}@{k}"], list(qrels))[f"{measure}@{k}"]
            row[f"{prefix}@{k}"] = sum(vals.values()) / len(vals) if vals else float("nan")
    return row


def recalls(ranks: dict[str, list[str]], qids: Sequence[str], gold_files, gold_funcs,
            function_key: FunctionKey = metrics.plain_node_id) -> dict[str, float]:
    """The Recall columns of `scores` alone (`fileR@10`, `fileR@20`, `funcR@10`)."""
    return {k: v for k, v in scores(ranks, qids, gold_files, gold_funcs, function_key).items() if "R@" in k}


def fmt(row: dict[str, float]) -> str:
    return "  ".join(f"{k} {v:.3f}" for k, v in row.items())


def cells(row: dict[str, float]) -> str:
    # The Acc columns keep their six characters (quoted tables); a Recall column is as wide as its name.
    return " ".join(f"{v:>{8 if 'R@' in k else 6}.3f}" for k, v in row.items())


def mean_and_worst(rows: dict[str, dict[str, float]]) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """Group -> scores into the mean over groups and the worst group of each column (groups
    without gold at a column left out): (mean row, worst row, column -> worst group)."""
    cols = list(next(iter(rows.values())))
    summary = {c: metrics.mean_and_worst({g: r[c] for g, r in rows.items()}) for c in cols}
    return ({c: s.mean for c, s in summary.items()}, {c: s.worst for c, s in summary.items()},
            {c: s.worst_group for c, s in summary.items()})


def margins(rows: dict[str, dict[str, float]]) -> dict[str, float]:
    """Group -> scores into each column's 95% margin of the mean over groups
    (`stats.mean_margin`: how precisely these groups pin the mean down)."""
    cols = list(next(iter(rows.values())))
    return {c: stats.mean_margin([r[c] for r in rows.values()]) for c in cols}


def worst_names(names: dict[str, str], columns: Sequence[str] = WORST_NAMED) -> str:
    """`(file@5: fd, func@10: jq, ...)`: the worst group of each named column."""
    return "(" + ", ".join(f"{c}: {names[c]}" for c in columns if c in names) + ")"


def print_table(rankings: dict[str, dict[str, list[str]]], groups: Iterable[tuple[str, list[str]]],
                gold_files, gold_funcs, function_key: FunctionKey = metrics.plain_node_id,
                set_width: int = 9) -> None:
    """One line per system and group (label, qids): n and strict Acc at file and function level."""
    groups = list(groups)
    print(f"{'system':<16} {'set':<{set_width}} {'n':>3}  {HEAD}")
    for name, ranks in rankings.items():
        for label, qids in groups:
            row = scores(ranks, qids, gold_files, gold_funcs, function_key)
            print(f"{name:<16} {label:<{set_width}} {len(qids):>3}  " + cells(row))


def print_summary(rankings: dict[str, dict[str, list[str]]], groups: Iterable[tuple[str, list[str]]],
                  gold_files, gold_funcs, function_key: FunctionKey = metrics.plain_node_id,
                  set_width: int = 9) -> None:
    """Two lines per system: the mean over the groups (label, qids) and the worst group of
    each column, the worst group named for `WORST_NAMED`."""
    groups = list(groups)
    print(f"{'system':<16} {'set':<{set_width}} {'n':>3}  {HEAD}")
    for name, ranks in rankings.items():
        rows = {label: scores(ranks, qids, gold_files, gold_funcs, function_key) for label, qids in groups}
        mean, worst, names = mean_and_worst(rows)
        print(f"{name:<16} {'mean of ' + str(len(rows)):<{set_width}} {'':>3}  " + cells(mean))
        print(f"{name:<16} {'± 95%':<{set_width}} {'':>3}  " + cells(margins(rows)))
        print(f"{name:<16} {'worst':<{set_width}} {'':>3}  " + cells(worst) + "   " + worst_names(names))


def codenib() -> str:
    exe = Path(sys.executable).with_name("codenib")
    return str(exe) if exe.exists() else (shutil.which("codenib") or "codenib")
