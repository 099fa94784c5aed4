"""History as evidence, measured leave-one-repository-out with the plan's own scorers, in
process on the localisation feature tables (`swebench_dev.py --history`, `mswe_dev.py
--history`, `dev_history_loo.py` over both sets).

A `Case` is one report on its snapshot's index: its feature table, the localisation weights
its repository is ranked with (fitted without it), each history signal's evidence, and the
co_changed partners its ranking can reach. `rank` ranks it as the `bug_localisation` plan
does (`history.evidence.rank_with_history`, then `cochange.expand`) for any history weights.

Every ablation row chooses its weights for a held-out repository on the other repositories
only (grid `GRID`, objective: the mean over those repositories of (file Acc@5 + function
Acc@10) / 2, ties to the smaller weights), then scores the held-out repository with them.
The tables show file Recall@10/@20 and function Recall@10 beside (issue 41); they take no part
in the choice.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

import devsets

from codenib.core.querytext import clean_query_text
from codenib.eval import metrics, stats
from codenib.model import localise, localise_inputs
from codenib.model.history import cochange, evidence as he
from codenib.model.reports.report import read_report

#: The weights tried for each signal.
GRID = (0.0, 0.5, 1.0, 2.0, 4.0)
#: The joint grid of the "all" row (three signals: 4 ** 3 points).
GRID_ALL = (0.0, 0.5, 1.0, 2.0)
#: The co-change expansion, named like a history signal in the rows.
CO_CHANGE = "co_change"
#: Ablation rows: the signals whose weights each row chooses (the rest weigh 0).
ROWS: dict[str, tuple[str, ...]] = {
    "similar changes": ("similar_changes",),
    "change-proneness": ("change_proneness", "fix_proneness"),
    "co-change": (CO_CHANGE,),
    "all": ("similar_changes", "fix_proneness", CO_CHANGE),
}

Weights = tuple[tuple[str, float], ...]
#: What `Scorer` computes per query, in this order: the two strict Acc columns the weights are
#: chosen by (`OBJECTIVE`), then the Recall columns reported beside them.
COLUMNS = ("file@5", "func@10", "fileR@10", "fileR@20", "funcR@10")
OBJECTIVE = 2   # the first two columns


@dataclass
class Case:
    """One report, ready to rank under any history weights."""

    qid: str
    repo: str
    table: localise.FeatureTable
    ids: list[str]
    nodes: object
    row_of: dict[str, int]
    file_rows: dict[str, int]
    loc: localise.LocaliseWeights
    evidence: dict
    partners: "_Partners"
    text: str = ""   # the report as the plan searches it (cleaned, cut to the report)


class _Partners:
    """The co_changed partners of the nodes a ranking of the case can hold (`History.partners`
    cut to them, so that a case does not keep its whole history)."""

    def __init__(self, history, keep: set[str]):
        self._levels = {level: {k: v for k, v in history.partners(level).items() if k in keep}
                        for level in ("file", "node")}

    def partners(self, level: str):
        return self._levels[level]


def load_cases(queries: Sequence[dict], idx_root: Path, repo_of: Mapping[str, str],
               loc_of: Callable[[str], localise.LocaliseWeights], tables: Mapping | None = None) -> dict[str, Case]:
    """A `Case` per query (`tables`: qid -> (FeatureTable, node ids) already computed)."""
    from codenib.index.loaded import load_index

    out = {}
    for q in queries:
        given = tables is not None and q["qid"] in tables
        # A table already computed needs neither the BM25 index nor the graph loaded again.
        index = load_index(idx_root / q["index"], dense=False, sparse=not given, graph=not given)
        table = tables[q["qid"]][0] if given else localise.feature_table(q["query"], index, index.sparse.search)
        history = index.history
        if history is None:
            raise SystemExit(f"{idx_root / q['index']} was indexed without --history")
        cache = he.EvidenceCache(history)
        text = clean_query_text(q["query"]).text   # as the plan searches it (`sparse_texts`' whole text)
        text = text[:read_report(text).chars]
        evidence = {name: cache.get(name, text) for name in he.SIGNALS}
        ids = index.nodes.node_id
        keep = {ids[r] for r in table.rows.tolist()}
        keep |= {i.split("::", 1)[0] for i in keep}
        keep |= set(evidence["similar_changes"].files) | set(evidence["similar_changes"].nodes)
        out[q["qid"]] = Case(q["qid"], repo_of[q["qid"]], table, ids, index.nodes, index.row_of,
                             localise_inputs.file_rows_of(index.nodes), loc_of(repo_of[q["qid"]]), evidence,
                             _Partners(history, keep), text)
    return out


def rank(case: Case, weights: Weights) -> list[str]:
    """The case's top 100 node ids under `weights` (history signals and `co_change`)."""
    hw = tuple((n, w) for n, w in weights if n != CO_CHANGE and w)
    wc = dict(weights).get(CO_CHANGE, 0.0)
    depth = len(case.ids) if wc else 100
    if hw:
        scored = he.rank_with_history(case.table, case.loc, case.evidence, hw, case.nodes, case.row_of,
                                      case.file_rows, depth)
    else:
        scored = localise.rank(case.table, case.loc, case.ids, depth)
    if wc:
        scored, _ = cochange.expand(scored, case.partners, wc, case.nodes, 100)
    return [case.ids[s.row] for s in scored]


class Scorer:
    """Per-query values of `COLUMNS` (file Acc@5, function Acc@10, then Recall) of each weight
    setting, computed once."""

    def __init__(self, cases: Mapping[str, Case], gold_files, gold_funcs,
                 key_of: Mapping[str, devsets.FunctionKey] | None = None):
        self.cases, self.gold_files, self.gold_funcs = cases, gold_files, gold_funcs
        self.key_of = key_of or {}   # qid -> how its set compares functions (default: exact)
        self._hits: dict[Weights, dict[str, tuple[float, float]]] = {}
        self.rankings: dict[Weights, dict[str, list[str]]] = {}

    def hits(self, weights: Weights) -> dict[str, tuple[float, ...]]:
        weights = tuple((n, float(w)) for n, w in weights if w)
        if weights not in self._hits:
            ranks = {q: rank(c, weights) for q, c in self.cases.items()}
            self.rankings[weights] = ranks
            self._hits[weights] = self.score(ranks)
        return self._hits[weights]

    def score(self, ranks: Mapping[str, list[str]]) -> dict[str, tuple[float, ...]]:
        out = {}
        for q in self.cases:
            row = devsets.scores(ranks, [q], self.gold_files, self.gold_funcs,
                                 self.key_of.get(q, devsets.metrics.plain_node_id))
            out[q] = tuple(row[c] for c in COLUMNS)
        return out


def repo_means(hits: Mapping[str, tuple[float, ...]], cases: Mapping[str, Case], repos: Sequence[str]
               ) -> dict[str, tuple[float, ...]]:
    """Repository -> the mean of each of `COLUMNS` over its queries (NaN: none with gold)."""
    out = {}
    for r in repos:
        vals = [hits[q] for q, c in cases.items() if c.repo == r]
        out[r] = tuple(float(np.nanmean([v[i] for v in vals])) if any(not math.isnan(v[i]) for v in vals)
                       else math.nan for i in range(len(COLUMNS)))
    return out


def _objective(per_repo: Mapping[str, tuple[float, ...]], repos: Sequence[str]) -> float:
    # (file Acc@5 + function Acc@10) / 2 only: the Recall columns are reported, not chosen by.
    acc = {r: per_repo[r][:OBJECTIVE] for r in repos}
    vals = [np.nanmean(acc[r]) for r in repos if not all(math.isnan(x) for x in acc[r])]
    return float(np.mean(vals)) if vals else 0.0


def held_out(scorer: Scorer, repos: Sequence[str], signals: Sequence[str], grid: Sequence[float] = GRID
             ) -> tuple[dict[str, tuple[float, ...]], dict[str, Weights]]:
    """Each repository's queries scored with the weights chosen on the other repositories."""
    settings = [tuple(zip(signals, ws)) for ws in itertools.product(grid, repeat=len(signals))]
    per_setting = {s: repo_means(scorer.hits(s), scorer.cases, repos) for s in settings}
    hits, chosen = {}, {}
    for held in repos:
        rest = [r for r in repos if r != held]
        best = None
        for s in settings:   # product order: the smaller weights first, kept on ties
            val = _objective(per_setting[s], rest)
            if best is None or val > best[0] + 1e-12:
                best = (val, s)
        chosen[held] = tuple((n, w) for n, w in best[1] if w)
        h = scorer.hits(chosen[held])
        hits.update({q: h[q] for q, c in scorer.cases.items() if c.repo == held})
    return hits, chosen


def shipped() -> Weights:
    """The plan's own weights: `history.evidence.WEIGHTS` and `history.cochange.COCHANGE_WEIGHT`."""
    return tuple((n, w) for n, w in he.WEIGHTS if w) + (((CO_CHANGE, cochange.COCHANGE_WEIGHT),)
                                                         if cochange.COCHANGE_WEIGHT else ())


def report(scorer: Scorer, repos: Sequence[str], baselines: Mapping[str, Mapping[str, list[str]]],
           grid: Sequence[float] = GRID) -> dict[str, dict[str, tuple[float, ...]]]:
    """Print the leave-one-repository-out table (per repository, mean, worst) of the baselines,
    no history, the shipped weights and each ablation row; returns row -> repo -> values."""
    rows: dict[str, dict[str, tuple[float, ...]]] = {}
    per_query: dict[str, dict[str, tuple[float, ...]]] = {}
    for name, ranks in baselines.items():
        per_query[name] = scorer.score(ranks)
    per_query["no history"] = scorer.hits(())
    per_query["with history (shipped)"] = scorer.hits(shipped())
    for name, hits in per_query.items():
        rows[name] = repo_means(hits, scorer.cases, repos)
    print(f"\nhistory signals, leave-one-repository-out over {len(repos)} repositories (weights chosen on the "
          f"others from {tuple(grid)}; 'all' from {GRID_ALL}; objective: mean over repositories of "
          "(file@5 + func@10) / 2):")
    for name, signals in ROWS.items():
        hits, chosen = held_out(scorer, repos, signals, GRID_ALL if name == "all" else grid)
        rows[name] = repo_means(hits, scorer.cases, repos)
        per_query[name] = hits
        picks: dict[Weights, list[str]] = {}
        for r, w in chosen.items():
            picks.setdefault(w, []).append(r)
        print(f"  {name:<18} chosen: " + "; ".join(
            (", ".join(f"{n} {w:g}" for n, w in ws) or "none") + f" ({len(rs)} folds)"
            for ws, rs in sorted(picks.items(), key=lambda x: -len(x[1]))))
    print_rows(rows, repos)
    print_tests(per_query, scorer.cases, "no history")
    return rows


def print_tests(per_query: Mapping[str, Mapping[str, tuple[float, ...]]], cases: Mapping[str, Case],
                base: str) -> None:
    """Each row against `base` at the strict columns: the difference of the means over
    repositories, the reports won and lost, and the sign-flip p of that difference (each report
    weighed as the mean over repositories weighs it, `stats.group_weights`)."""
    print(f"\npaired against '{base}' (mean over repositories; reports won / lost; permutation p):")
    for name, hits in per_query.items():
        if name == base:
            continue
        cells = []
        for i, col in enumerate(COLUMNS[:OBJECTIVE]):
            qs = sorted(q for q in hits if q in per_query[base]
                        and not math.isnan(hits[q][i]) and not math.isnan(per_query[base][q][i]))
            t = stats.paired_test([hits[q][i] for q in qs], [per_query[base][q][i] for q in qs],
                                  weights=stats.group_weights([cases[q].repo for q in qs]))
            cells.append(f"{col} {t.delta:+.3f} (+{t.wins}/-{t.losses}, p {t.permutation_p:.3f})")
        print(f"  {name:<24} " + "   ".join(cells))


def print_rows(rows: Mapping[str, Mapping[str, tuple[float, ...]]], repos: Sequence[str]) -> None:
    width = max(12, max(len(r) for r in repos))
    print(f"\n{'system':<24} {'repository':<{width}}  file@5 func@10 fileR@10 fileR@20 funcR@10")
    for name, per in rows.items():
        for r in repos:
            print(f"{name:<24} {r:<{width}}  {per[r][0]:>6.3f} {per[r][1]:>7.3f} "
                  + " ".join(f"{v:>8.3f}" for v in per[r][OBJECTIVE:]))
    # Each mean with its 95% margin over the repositories (`stats.mean_margin`).
    heads = ("mean file@5 ± 95%  worst file@5 (repo)         mean func@10 ± 95%  worst func@10 (repo)",
             "mean fileR@10 ± 95%  worst fileR@10 (repo)       mean fileR@20 ± 95%  worst fileR@20 (repo)       "
             "mean funcR@10 ± 95%  worst funcR@10 (repo)")
    for head, (first, last) in zip(heads, ((0, OBJECTIVE), (OBJECTIVE, len(COLUMNS)))):
        print(f"\n{'system':<24}  {head}")
        for name, per in rows.items():
            cells = []
            for i in range(first, last):
                values = {r: per[r][i] for r in repos}
                s = metrics.mean_and_worst(values)
                margin = stats.mean_margin(list(values.values()))
                cells.append(f"{s.mean:>11.3f} ±{margin:<5.3f}  {s.worst:>12.3f} ({s.worst_group[:14]:<14})")
            print(f"{name:<24}  " + "    ".join(cells))


def history_times(idx_root: Path, qids_by_repo: Mapping[str, Sequence[str]]) -> None:
    """Per repository, the history reads of its snapshots (the manifests' `history` entries):
    full reads (the first snapshot, and any whose base descends from no earlier one) and
    reads with --reuse (only the commits the reused snapshot lacks)."""
    import json

    print(f"\nhistory index time per repository (s; manifest `history.seconds`):\n"
          f"{'repository':<24} {'commits':>7}  {'full reads':<28} {'with --reuse':<36}")
    for repo, qids in qids_by_repo.items():
        entries = [json.loads((idx_root / q / "manifest.json").read_text())["history"] for q in qids]
        full = [e for e in entries if not e["reused"]]
        inc = [e for e in entries if e["reused"]]
        f = (f"{len(full)}: first {full[0]['seconds']:.1f} ({full[0]['read']} commits)"
             + (f", max {max(e['seconds'] for e in full):.1f}" if len(full) > 1 else "")) if full else "-"
        i = (f"{len(inc)}: median {np.median([e['seconds'] for e in inc]):.1f}, max "
             f"{max(e['seconds'] for e in inc):.1f} (median {np.median([e['read'] for e in inc]):.0f} new)"
             if inc else "-")
        print(f"{repo:<24} {max(e['commits'] for e in entries):>7}  {f:<28} {i:<36}")
