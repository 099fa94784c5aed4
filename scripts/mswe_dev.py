#!/usr/bin/env python3
"""Bug-report localisation on the multi-language dev set (Multi-SWE-bench: JavaScript,
TypeScript, Go, Java, Rust, C, C++): CodeNib's modes against a plain BM25 baseline.

Indexes every instance's snapshot (`--reuse` of the previous snapshot of the same
repository), runs the batch job per mode and prints strict file Acc@1/5/10 and function
Acc@5/10, with file Recall@10/@20 and function Recall@10 beside them (breadth, issue 41), per
language and overall, then per repository with the mean over repositories and the worst one,
next to a BM25 baseline computed here (`tsbaseline.py`: bm25s over tree-sitter
definition chunks plus one chunk per file, the whole issue as the query, camelCase/snake_case
split, English stems) and the baseline table of the set's README.

A function matches a gold function by file and last name segment (`A.f`, `ns.A.f` and `f`
in one file are one), among the first k named definitions of the ranking (file nodes
dropped); a query counts only when every gold function is there (strict). The auto plan
uses the packaged localisation weights, whose provenance the output prints: fitted on all 11
dev repositories, these 8 included, its numbers are in-sample (`localise_loo.py` gives them
leave-one-repository-out).

    python scripts/mswe_dev.py --no-dense --modes auto,sparse   # BM25 + graph indexes
    python scripts/mswe_dev.py --checkouts /tmp/mswe-dev/checkouts
    python scripts/mswe_dev.py --no-dense --history /work/.mirror   # history as evidence

With `--history MIRROR_ROOT` every snapshot is indexed with `--history
MIRROR_ROOT/<owner>+<name>/repo@<base commit>` (snapshots of a repository in base-commit order,
each with `--reuse` of the latest earlier one its base descends from, so only new commits are
read), the batch runs use those indexes, and the script prints the ablation per history signal
leave-one-repository-out (`devhistory.py`: weights chosen on the other repositories; the
localisation weights are the packaged ones) and the
history index time per repository.

The mirrors come from the search library's `fetch` (see ../shared/eval/mswe-dev/README.md).
`--data` and `--checkouts` point the script at another set of the same layout (the tests use a
two-instance fixture).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))   # devsets and tsbaseline, when this file is loaded by path (the tests)

import devsets  # noqa: E402
import tsbaseline  # noqa: E402

MODES = ("auto", "sparse", "dense", "hybrid", "graph")
KEY = devsets.file_and_name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(devsets.default_data("mswe-dev", HERE)), help="folder with queries/qrels/instances parquet")
    ap.add_argument("--work", default="/tmp/mswe-dev", help="checkouts, indexes and runs go here")
    ap.add_argument("--checkouts", help="existing checkouts (<qid>/ folders); default: prepare them")
    ap.add_argument("--no-dense", action="store_true", help="index without vectors (dense and hybrid skipped)")
    ap.add_argument("--modes", default=",".join(MODES), help="modes to run (comma-separated)")
    ap.add_argument("--shard-size", type=int, default=8)
    ap.add_argument("--per-repo", type=int, metavar="N",
                    help="a quick run: N instances of each repository, evenly spaced in instance order")
    ap.add_argument("--history", metavar="MIRROR_ROOT",
                    help="index with each repository's history from MIRROR_ROOT/<owner>+<name>/repo and "
                         "measure it as evidence (leave-one-repository-out)")
    a = ap.parse_args(argv)

    data, work = Path(a.data), Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    dev = devsets.read_set(data, KEY)
    if a.per_repo is not None:
        if a.per_repo < 1:
            ap.error("--per-repo must be at least 1")
        dev = _sample(dev, a.per_repo)
    checkouts = Path(a.checkouts) if a.checkouts else devsets.prepare(data, work)
    idx_root = work / (("idx-sparse" if a.no_dense else "idx") + ("-history" if a.history else ""))
    mirror_of = (lambda inst: Path(a.history) / inst["repo"].replace("/", "+") / "repo") if a.history else None
    t0 = time.perf_counter()
    indexed = devsets.index_all(dev.instances, checkouts, idx_root, dense=not a.no_dense, repo_of=_repo,
                                history=mirror_of)
    index_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    rankings: dict[str, dict[str, list[str]]] = {"BM25 baseline": _bm25_baseline(dev, checkouts, work)}
    timings = {"BM25 baseline": time.perf_counter() - t0}
    plans_of: dict[str, str] = {}
    latency: dict[str, list[float]] = {}
    tag = "sparse" if a.no_dense else "dense"
    for mode in [m for m in a.modes.split(",") if m and not (a.no_dense and m in ("dense", "hybrid"))]:
        t0 = time.perf_counter()
        ranks, plans = devsets.run_job(dev.queries, idx_root, work / f"runs-{tag}" / mode, mode, a.shard_size,
                                       latency=latency)
        rankings[f"codenib {mode}"] = ranks
        if mode == "auto":
            plans_of = plans
        timings[mode] = time.perf_counter() - t0

    languages = sorted({r["language"] for r in dev.instances.values()})
    repos = sorted({_repo(r) for r in dev.instances.values()})
    by_lang = [(lang, [q for q, r in dev.instances.items() if r["language"] == lang]) for lang in languages]
    by_repo = [(repo, [q for q, r in dev.instances.items() if _repo(r) == repo]) for repo in repos]
    sample = f" (--per-repo {a.per_repo}: a sample of the set)" if a.per_repo else ""
    from codenib.model.weights import load_packaged_provenance

    print(f"\nMulti-language dev{sample}, {len(dev.queries)} issues in {len(languages)} languages and {len(repos)} "
          f"repositories, indexes {'without' if a.no_dense else 'with'} vectors; strict Acc (file @1/5/10, "
          "function @5/10 by file and last name segment), Recall (file @10/20, function @10).\nThe auto plan's packaged weights were "
          f"fitted on: {load_packaged_provenance()}.\n")
    devsets.print_table(rankings, by_lang + [("overall", list(dev.instances))], dev.gold_files, dev.gold_funcs,
                        KEY, set_width=10)
    readme = _readme_baseline(data / "README.md")
    if readme:
        print(f"\nthe set README's BM25 baseline (strict Acc only):\n{'language':<10} {'n':>3}  {devsets.ACC_HEAD}")
        for lang, row in readme.items():
            print(f"{lang:<10} {row[0]:>3}  " + " ".join(f"{v:>6.3f}" for v in row[1:]))

    print("\nper repository, with the mean over repositories and the worst repository:")
    _print_repos(rankings, by_repo, dev)
    if "codenib auto" in rankings:
        _print_targets(rankings, by_lang, dev)
    if plans_of:
        print("\nauto by plan:")
        for plan in sorted(set(plans_of.values())):
            members = [q for q, p in plans_of.items() if p == plan]
            row = devsets.scores(rankings["codenib auto"], members, dev.gold_files, dev.gold_funcs, KEY)
            print(f"  {plan:<18} {len(members):>3} issues  " + devsets.fmt(row))
    if a.history:
        _history_report(dev, idx_root, repos, rankings, mirror_of)
    if indexed:
        print(f"\nindexed {len(indexed)} snapshots in {index_s:.0f}s (median {np.median(list(indexed.values())):.1f}s)")
    print("wall time per system (s): " + ", ".join(f"{m} {t:.0f}" for m, t in timings.items()))
    if latency:
        print("query latency by plan (ms, median / p90, in the actors): " + ", ".join(
            f"{p} {np.median(v):.0f} / {np.percentile(v, 90):.0f}" for p, v in sorted(latency.items())))
    return 0


def _repo(instance: dict) -> str:
    return instance["repo"]


def _history_report(dev: devsets.DevSet, idx_root: Path, repos: list[str], rankings, mirror_of) -> None:
    """The ablation per history signal, leave-one-repository-out (`devhistory.report`)."""
    import devhistory

    from codenib.model.weights import load_packaged_weights

    packaged = load_packaged_weights()
    repo_of = {q: _repo(r) for q, r in dev.instances.items()}
    cases = devhistory.load_cases(dev.queries, idx_root, repo_of, lambda repo: packaged)
    scorer = devhistory.Scorer(cases, dev.gold_files, dev.gold_funcs, {q: KEY for q in cases})
    devhistory.report(scorer, repos, {"BM25 baseline": rankings["BM25 baseline"]})
    devhistory.history_times(idx_root, {r: [q for q in devsets.commit_order(dev.instances, _repo, mirror_of)
                                            if repo_of[q] == r] for r in repos})


def _sample(dev: devsets.DevSet, n: int) -> devsets.DevSet:
    """`n` instances of each repository, evenly spaced in instance order (first and last kept)."""
    by_repo: dict[str, list[str]] = {}
    for qid in devsets.order(dev.instances, _repo):
        by_repo.setdefault(_repo(dev.instances[qid]), []).append(qid)
    keep = set()
    for qids in by_repo.values():
        picks = np.linspace(0, len(qids) - 1, min(n, len(qids))).round().astype(int)
        keep.update(qids[i] for i in picks)
    return devsets.DevSet([q for q in dev.queries if q["qid"] in keep],
                          {q: r for q, r in dev.instances.items() if q in keep},
                          {q: g for q, g in dev.gold_files.items() if q in keep},
                          {q: g for q, g in dev.gold_funcs.items() if q in keep})


def _bm25_baseline(dev: devsets.DevSet, checkouts: Path, work: Path) -> dict[str, list[str]]:
    """The baseline's ranking of every query; kept in `work` under a digest of the baseline's
    code, each query's text and its checkout path (it depends on nothing else)."""
    code = hashlib.sha256((HERE / "tsbaseline.py").read_bytes()).hexdigest()[:16]
    cache = work / f"bm25-baseline-{code}.json"
    kept = json.loads(cache.read_text()) if cache.exists() else {}
    tokenize = tsbaseline.Tokenizer()
    out = {}
    for q in dev.queries:
        key = hashlib.sha256(f"{checkouts / q['index']}\0{q['query']}".encode()).hexdigest()
        if key not in kept:
            inst = dev.instances[q["qid"]]
            items = tsbaseline.snapshot_chunks(checkouts / q["index"], cpp_repo=inst["language"] == "cpp")
            kept[key] = tsbaseline.rank(q["query"], items, tokenize)
        out[q["qid"]] = kept[key]
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(kept))
    tmp.replace(cache)
    return out


def _readme_baseline(path: Path) -> dict[str, list[float]]:
    """The README's `| language | n | ... |` rows: language -> [n, five Acc values]."""
    out: dict[str, list[float]] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[1].isdigit():
            try:
                out[cells[0]] = [int(cells[1]), *map(float, cells[2:])]
            except ValueError:
                continue
    return out


def _print_repos(rankings, by_repo, dev) -> None:
    width = max(len(r) for r, _ in by_repo)
    print(f"{'system':<16} {'repository':<{width}} {'n':>3}  {devsets.HEAD}")
    for name, ranks in rankings.items():
        rows = {repo: devsets.scores(ranks, qids, dev.gold_files, dev.gold_funcs, KEY) for repo, qids in by_repo}
        for (repo, qids), row in zip(by_repo, rows.values()):
            print(f"{name:<16} {repo:<{width}} {len(qids):>3}  " + devsets.cells(row))
        mean, worst, names = devsets.mean_and_worst(rows)
        print(f"{name:<16} {'mean of ' + str(len(rows)):<{width}} {'':>3}  " + devsets.cells(mean))
        print(f"{name:<16} {'worst':<{width}} {'':>3}  " + devsets.cells(worst) + "   " + devsets.worst_names(names))


def _print_targets(rankings, by_lang, dev) -> None:
    """Issue 25's targets for `--mode auto`: each language at or above BM25 at file Acc@5 and
    function Acc@10; overall file Acc@5 >= 0.60 and function Acc@10 >= 0.45."""
    print("\ntargets (auto):")
    auto, base = rankings["codenib auto"], rankings["BM25 baseline"]
    for lang, qids in by_lang:
        a = devsets.scores(auto, qids, dev.gold_files, dev.gold_funcs, KEY)
        b = devsets.scores(base, qids, dev.gold_files, dev.gold_funcs, KEY)
        verdicts = [f"{c} {a[c]:.3f} vs BM25 {b[c]:.3f} {'met' if _at_least(a[c], b[c]) else 'MISSED'}"
                    for c in ("file@5", "func@10")]
        print(f"  {lang:<10} " + "; ".join(verdicts))
    a = devsets.scores(auto, list(dev.instances), dev.gold_files, dev.gold_funcs, KEY)
    for col, bar in (("file@5", 0.60), ("func@10", 0.45)):
        print(f"  overall    {col} {a[col]:.3f} >= {bar:.2f} {'met' if a[col] >= bar else 'MISSED'}")


def _at_least(a: float, b: float) -> bool:
    return math.isnan(b) or (not math.isnan(a) and a >= b - 1e-9)


if __name__ == "__main__":
    raise SystemExit(main())
