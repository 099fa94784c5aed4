#!/usr/bin/env python3
"""History as evidence, leave-one-repository-out over every dev repository: the 3 of
SWE-bench dev and the 8 of the multi-language dev set, indexed without vectors with
`--history` (the indexes `swebench_dev.py --no-dense --history` and `mswe_dev.py --no-dense
--history` build, built here when missing).

Each repository's reports are ranked with localisation weights fitted on the other ten
repositories (`locfit`, as `localise_loo.py` does: the packaged weights are fitted on all 11,
so they would be in-sample here), and each ablation row's history weights are chosen on the
other ten repositories (`devhistory.py`). Prints per repository, the mean and
the worst repository of file Acc@5 and function Acc@10 next to each set's BM25 baseline, and
the history index time per repository. `--variants NAME,...` then measures the named variants
of `loo_variants.py` (evidence and models measured and not kept) against the shipped ranking.

    python scripts/dev_history_loo.py --history /work/.mirror \\
        --swebench-work /tmp/cochange/swebench --mswe-work /tmp/cochange/mswe \\
        --swebench-checkouts /tmp/swebench-dev/checkouts --mswe-checkouts /tmp/mswe-dev/checkouts
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devhistory  # noqa: E402
import devsets  # noqa: E402
import locfit  # noqa: E402
import loo_variants  # noqa: E402
import mswe_dev  # noqa: E402
import swebench_dev  # noqa: E402

from codenib.eval import metrics  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--history", metavar="MIRROR_ROOT", required=True,
                    help="mirrors of every repository: MIRROR_ROOT/<owner>+<name>/repo")
    ap.add_argument("--swebench-data", default=str(devsets.default_data("swebench-dev", HERE)))
    ap.add_argument("--mswe-data", default=str(devsets.default_data("mswe-dev", HERE)))
    ap.add_argument("--swebench-work", required=True, help="the --work folder of swebench_dev.py")
    ap.add_argument("--mswe-work", required=True, help="the --work folder of mswe_dev.py")
    ap.add_argument("--swebench-checkouts", help="existing checkouts; default: prepare them in the work folder")
    ap.add_argument("--mswe-checkouts", help="existing checkouts; default: prepare them in the work folder")
    ap.add_argument("--mswe-per-repo", type=int, metavar="N",
                    help="a quicker run: N reports of each multi-language repository (mswe_dev.py --per-repo)")
    ap.add_argument("--variants", default="", metavar="NAME,...",
                    help=f"also measure these variants against the shipped ranking: {', '.join(loo_variants.VARIANTS)}")
    a = ap.parse_args(argv)
    if a.mswe_per_repo is not None and a.mswe_per_repo < 1:
        ap.error("--mswe-per-repo must be at least 1")
    try:
        variants = loo_variants.check_names([n.strip() for n in a.variants.split(",") if n.strip()])
    except ValueError as exc:
        ap.error(f"--variants: {exc}")

    def mirror_of(inst: dict) -> Path:
        return Path(a.history) / inst["repo"].replace("/", "+") / "repo"

    # SWE-bench dev: localisation weights of each repository fitted on the other two.
    sw_data, sw_work = Path(a.swebench_data), Path(a.swebench_work)
    sw = devsets.read_set(sw_data)
    sw_checkouts = Path(a.swebench_checkouts) if a.swebench_checkouts else devsets.prepare(sw_data, sw_work)
    sw_root = sw_work / "idx-sparse-history"
    devsets.index_all(sw.instances, sw_checkouts, sw_root, dense=False, repo_of=swebench_dev._repo,
                      history=mirror_of)
    sw_repo = {q: swebench_dev._repo(r) for q, r in sw.instances.items()}
    sw_repos = sorted(set(sw_repo.values()))
    bm25 = swebench_dev._bm25_baseline(sw.queries, sw_root)

    ms_data, ms_work = Path(a.mswe_data), Path(a.mswe_work)
    ms = devsets.read_set(ms_data, mswe_dev.KEY)
    if a.mswe_per_repo:
        ms = mswe_dev._sample(ms, a.mswe_per_repo)
    ms_checkouts = Path(a.mswe_checkouts) if a.mswe_checkouts else devsets.prepare(ms_data, ms_work)
    ms_root = ms_work / "idx-sparse-history"
    devsets.index_all(ms.instances, ms_checkouts, ms_root, dense=False, repo_of=mswe_dev._repo, history=mirror_of)
    ms_repo = {q: mswe_dev._repo(r) for q, r in ms.instances.items()}
    bm25.update(mswe_dev._bm25_baseline(ms, ms_checkouts, ms_work))

    # Localisation weights of each repository: fitted on the other ten (both sets).
    gold_files = {**sw.gold_files, **ms.gold_files}
    gold_funcs = {**sw.gold_funcs, **ms.gold_funcs}
    key_of = {q: mswe_dev.KEY for q in ms.instances}
    repo_of = {**sw_repo, **ms_repo}
    tables = {**locfit.feature_tables(sw.queries, sw_root, dense=False),
              **locfit.feature_tables(ms.queries, ms_root, dense=False)}
    folds = {r: locfit.fit([q for q in tables if repo_of[q] != r], tables, gold_files, gold_funcs,
                           key_of=lambda q: key_of.get(q, metrics.plain_node_id))
             for r in sorted(set(repo_of.values()))}
    cases = devhistory.load_cases(sw.queries, sw_root, sw_repo, folds.get, tables)
    cases.update(devhistory.load_cases(ms.queries, ms_root, ms_repo, folds.get, tables))
    repos = sw_repos + sorted(set(ms_repo.values()))
    print(f"\n{len(cases)} reports of {len(repos)} repositories (SWE-bench dev: {len(sw.queries)}, "
          f"multi-language dev: {len(ms.queries)}), indexes without vectors, with history")
    devhistory.report(devhistory.Scorer(cases, gold_files, gold_funcs, key_of), repos, {"BM25 baseline": bm25})
    for root, dev, repo_of, rof in ((sw_root, sw, sw_repo, swebench_dev._repo), (ms_root, ms, ms_repo, mswe_dev._repo)):
        order = devsets.commit_order(dev.instances, rof, mirror_of)
        devhistory.history_times(root, {r: [q for q in order if repo_of[q] == r]
                                        for r in sorted(set(repo_of.values()))})
    if variants:
        where = {q["qid"]: root / q["index"] for root, qs in ((sw_root, sw.queries), (ms_root, ms.queries)) for q in qs}
        loo_variants.run(variants, loo_variants.Context(cases, tables, gold_files, gold_funcs, key_of, where.__getitem__))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
