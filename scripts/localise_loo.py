#!/usr/bin/env python3
"""The localisation weights fitted on every dev repository, measured leave-one-repository-out.

Reads the SWE-bench Lite dev set (3 Python repositories) and the multi-language dev set (8
repositories, 7 languages) from indexes already built by `swebench_dev.py` and `mswe_dev.py`
(`--no-dense`), builds each issue's feature table in process (`locfit`, the plan's own
features), and prints strict file Acc@1/5/10 and function Acc@5/10 per repository and language,
with file Recall@10/@20 and function Recall@10 beside them (breadth, issue 41), the mean over
repositories and the worst one, for: each set's own BM25 baseline, the packaged
weights, and weights fitted on the other repositories (leave-one-repository-out). Functions
match as each set defines it (exact node id; file and last name segment for Multi-SWE).

    python scripts/localise_loo.py --swe-idx /tmp/swebench-dev/idx-sparse \\
        --mswe-idx /tmp/mswe-dev/idx-sparse --mswe-checkouts /tmp/mswe-dev/checkouts --work /tmp/loo
    ... --fit-out codenib/data/localise_weights.json    # + fit on all repositories, write them
    ... --dense --drop f_dense    # indexes WITH vectors: the dense run's node scores in the fit

The decision line applies the rule of issue 28: new weights only if the leave-one-out mean
rises at file Acc@5 and function Acc@10 and no repository falls more than one issue below BM25
where the packaged weights did not.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devsets  # noqa: E402
import locfit  # noqa: E402

from codenib.model.weights import load_packaged_weights  # noqa: E402
from codenib.eval import metrics  # noqa: E402

COLUMNS = ("file@5", "func@10")


@dataclass(frozen=True)
class Part:
    """One dev set as read here: its issues, gold, function key and BM25 baseline."""

    name: str
    dev: devsets.DevSet
    key: Callable[[str], str]
    repo_of: dict[str, str]       # qid -> repository
    language_of: dict[str, str]   # qid -> language
    baseline: dict[str, list[str]]
    idx: Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--swe-data", default=str(devsets.default_data("swebench-dev", HERE)))
    ap.add_argument("--swe-idx", required=True, help="the SWE-bench dev indexes (<qid>/ folders, without vectors)")
    ap.add_argument("--mswe-data", default=str(devsets.default_data("mswe-dev", HERE)))
    ap.add_argument("--mswe-idx", required=True, help="the multi-language dev indexes (<qid>/ folders)")
    ap.add_argument("--mswe-checkouts", required=True, help="the multi-language checkouts (its BM25 baseline reads them)")
    ap.add_argument("--work", required=True, help="caches (feature tables, the baseline) go here")
    ap.add_argument("--c", type=float, default=locfit.FIT_C, help=f"the fit's L2 C (default {locfit.FIT_C:g})")
    ap.add_argument("--fit-out", help="also fit on every repository and write the weights here")
    ap.add_argument("--dense", action="store_true",
                    help="the indexes hold vectors: the feature tables get the dense run (MiniLM, in process)")
    ap.add_argument("--drop", default=",".join(locfit.DENSE_FEATURES),
                    help="features left out of the fits (comma-separated; default: the dense ones, as packaged)")
    a = ap.parse_args(argv)
    for flag in ("swe_idx", "mswe_idx", "mswe_checkouts", "swe_data", "mswe_data"):
        if not Path(getattr(a, flag)).is_dir():
            ap.error(f"--{flag.replace('_', '-')} {getattr(a, flag)}: no such folder")
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    drop = tuple(f for f in a.drop.split(",") if f)
    unknown = sorted(set(drop) - set(locfit.localise.FEATURES))
    if unknown:
        ap.error(f"--drop {','.join(unknown)}: no such feature (choose from {', '.join(locfit.localise.FEATURES)})")

    parts = [_swe_part(Path(a.swe_data), Path(a.swe_idx)),
             _mswe_part(Path(a.mswe_data), Path(a.mswe_idx), Path(a.mswe_checkouts), work)]
    print("baselines done; feature tables ...", file=sys.stderr)
    tables: locfit.Tables = {}
    for p in parts:
        tables.update(_tables(p, work, a.dense))
    gold_files = {q: g for p in parts for q, g in p.dev.gold_files.items()}
    gold_funcs = {q: g for p in parts for q, g in p.dev.gold_funcs.items()}
    key_by_qid = {q: p.key for p in parts for q in p.dev.instances}
    repo_of = {q: r for p in parts for q, r in p.repo_of.items()}

    loo, folds = locfit.loo_rankings(tables, repo_of, gold_files, gold_funcs, drop, key_of=key_by_qid.get, c=a.c)
    systems = {"BM25 baseline": {q: r for p in parts for q, r in p.baseline.items()},
               "packaged": locfit.rank(tables, tables, load_packaged_weights()),
               f"LOO (C={a.c:g})" + (f" -{','.join(drop)}" if drop != locfit.DENSE_FEATURES else ""): loo}

    rows = _rows(systems, parts)
    print(f"\nlocalisation, {len(tables)} issues in {len(rows['BM25 baseline'])} repositories; in-process "
          f"scoring of the plan's features; strict Acc (file @1/5/10, function @5/10), Recall (file @10/20, "
          "function @10)\n")
    _print(rows, parts)
    _print_languages(systems, parts)
    _decide(rows, parts, *systems)
    print("\nleave-one-out weights (fitted without the repository named):")
    feats = list(next(iter(folds.values())).to_dict())
    print(f"  {'feature':<16}" + "".join(f"{r.split('/')[-1][:9]:>10}" for r in folds) + f"{'packaged':>10}")
    for f in feats:
        print(f"  {f:<16}" + "".join(f"{w.to_dict()[f]:>10.3f}" for w in folds.values())
              + f"{load_packaged_weights().to_dict()[f]:>10.3f}")
    if a.fit_out:
        w = locfit.fit(list(tables), tables, gold_files, gold_funcs, drop, key_of=key_by_qid.get, c=a.c)
        locfit.write_weights(Path(a.fit_out), w, (
            f"SWE-bench Lite dev and Multi-SWE-bench dev ({len(folds)} repositories, "
            f"{len(tables)} issues), indexes {'with' if a.dense else 'without'} vectors"), a.c)
        print(f"\nweights fitted on all {len(folds)} repositories written to {a.fit_out}")
    return 0


def _swe_part(data: Path, idx: Path) -> Part:
    import swebench_dev

    dev = devsets.read_set(data)
    return Part("swebench-dev", dev, metrics.plain_node_id, {q: r["repo"] for q, r in dev.instances.items()},
                {q: "python" for q in dev.instances}, swebench_dev._bm25_baseline(dev.queries, idx), idx)


def _mswe_part(data: Path, idx: Path, checkouts: Path, work: Path) -> Part:
    import mswe_dev

    dev = devsets.read_set(data, mswe_dev.KEY)
    return Part("mswe-dev", dev, mswe_dev.KEY, {q: r["repo"] for q, r in dev.instances.items()},
                {q: r["language"] for q, r in dev.instances.items()},
                mswe_dev._bm25_baseline(dev, checkouts, work), idx)


def _tables(part: Part, work: Path, dense: bool = False) -> locfit.Tables:
    """The part's feature tables, kept in `work` under a digest of the feature code, the
    index manifests and the queries (rebuilding them reads every index); `dense`: with the
    dense run (the indexes hold vectors)."""
    h = hashlib.sha256(b"dense" if dense else b"")
    for src in (HERE / "locfit.py", HERE.parent / "codenib" / "model" / "localise.py",
                HERE.parent / "codenib" / "model" / "reports" / "report.py"):
        h.update(src.read_bytes())
    for q in part.dev.queries:
        h.update(f"{q['qid']}\0{q['query']}\0".encode())
        h.update((part.idx / q["index"] / "manifest.json").read_bytes())
    cache = work / f"tables-{part.name}{'-dense' if dense else ''}-{h.hexdigest()[:16]}.pkl"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    tables = locfit.feature_tables(part.dev.queries, part.idx, dense=dense)
    tmp = cache.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(tables))
    tmp.replace(cache)
    return tables


def _rows(systems, parts) -> dict[str, dict[str, dict[str, float]]]:
    """system -> repository -> scores."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, ranks in systems.items():
        out[name] = {}
        for p in parts:
            for repo in sorted(set(p.repo_of.values())):
                qids = [q for q, r in p.repo_of.items() if r == repo]
                out[name][repo] = devsets.scores(ranks, qids, p.dev.gold_files, p.dev.gold_funcs, p.key)
    return out


def _print(rows, parts) -> None:
    n_of = {r: sum(1 for p in parts for x in p.repo_of.values() if x == r) for r in next(iter(rows.values()))}
    width = max(len(r) for r in n_of)
    print(f"{'system':<16} {'repository':<{width}} {'n':>3}  {devsets.HEAD}")
    for name, by_repo in rows.items():
        for repo, row in by_repo.items():
            print(f"{name:<16} {repo:<{width}} {n_of[repo]:>3}  " + devsets.cells(row))
        mean, worst, names = devsets.mean_and_worst(by_repo)
        print(f"{name:<16} {'mean of ' + str(len(by_repo)):<{width}} {'':>3}  " + devsets.cells(mean))
        print(f"{name:<16} {'± 95%':<{width}} {'':>3}  " + devsets.cells(devsets.margins(by_repo)))
        print(f"{name:<16} {'worst':<{width}} {'':>3}  " + devsets.cells(worst) + "   " + devsets.worst_names(names))
        print()


def _print_languages(systems, parts) -> None:
    print(f"by language:\n{'system':<16} {'language':<10} {'n':>3}  {devsets.HEAD}")
    for name, ranks in systems.items():
        for p in parts:
            for lang in sorted(set(p.language_of.values())):
                qids = [q for q, x in p.language_of.items() if x == lang]
                row = devsets.scores(ranks, qids, p.dev.gold_files, p.dev.gold_funcs, p.key)
                print(f"{name:<16} {lang:<10} {len(qids):>3}  " + devsets.cells(row))


def _decide(rows, parts, base: str, packaged: str, new: str) -> None:
    """Issue 28's rule: the mean rises at both columns, and no repository falls more than one
    issue below BM25 where the packaged weights were not already."""
    n_of = {r: sum(1 for p in parts for x in p.repo_of.values() if x == r) for r in rows[base]}
    mean = {s: {c: float(np.mean([rows[s][r][c] for r in rows[s]])) for c in COLUMNS} for s in rows}
    rises = all(mean[new][c] > mean[packaged][c] for c in COLUMNS)
    falls = []
    for repo in rows[base]:
        for c in COLUMNS:
            slack = 1.0 / n_of[repo] + 1e-9
            below_new = rows[new][repo][c] < rows[base][repo][c] - slack
            below_old = rows[packaged][repo][c] < rows[base][repo][c] - slack
            if below_new and not below_old:
                falls.append(f"{repo} {c} {rows[new][repo][c]:.3f} vs BM25 {rows[base][repo][c]:.3f}")
    print("\ndecision (issue 28): mean " + ", ".join(
        f"{c} {mean[packaged][c]:.3f} -> {mean[new][c]:.3f}" for c in COLUMNS)
        + f" ({'rises at both' if rises else 'does not rise at both'}); "
        + (f"newly more than one issue below BM25: {'; '.join(falls)}" if falls else
           "no repository newly more than one issue below BM25")
        + f" => {'ADOPT' if rises and not falls else 'KEEP the packaged weights'}")


if __name__ == "__main__":
    raise SystemExit(main())
