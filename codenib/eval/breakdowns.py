"""Per-query aggregations of an evaluation: breakdowns by plan/kind/index/repo, the mean over
repositories with the worst one, planner regret (auto's chosen plan vs the best plan per query)
and the paired comparison of two runs.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict
from typing import Callable, Mapping, Sequence

import numpy as np

from codenib.eval import metrics
from codenib.eval.queries import QueryGroups, QuerySet
from codenib.eval.reportdata import EvalOptions
from codenib.eval.runs import Results
from codenib.eval.stats import group_weights, mean_margin, paired_tests

AUTO = "auto"
ORACLE = "oracle"
_NO_VALUE = "(not recorded)"  # breakdown group of queries whose plan/kind/index is unknown
#: The query-set column that names each query's repository (or a file of its own, `--groups`).
#: A set over several repositories (SWE-bench-shaped files carry `repo`) also reports every
#: measure averaged per repository and then over repositories, each counting the same however
#: many queries it has, with the worst repository beside it: a mean over queries is mostly the
#: largest repositories'.
GROUP_COLUMN = "repo"


def planner_regret(per_plan: Mapping[str, Mapping[str, float]], chosen: Mapping[str, str],
                   qids: Sequence[str]) -> dict:
    """Regret of the planner for one measure.

    `per_plan` maps plan -> qid -> value. Per query, regret = best plan's value minus the
    chosen plan's value. A tie for best counts as the chosen plan when it is among the
    tied, else as the first tied plan in name order.
    """
    plans = sorted(per_plan)
    rows = []
    skipped: Counter = Counter()
    for q in qids:
        plan = chosen.get(q)
        if plan is None:
            skipped["no recorded choice"] += 1
            continue
        if plan not in per_plan:
            skipped["chosen plan not executed"] += 1
            continue
        values = {p: per_plan[p].get(q, 0.0) for p in plans}
        top = max(values.values())
        tied = [p for p in plans if values[p] == top]
        best = plan if plan in tied else tied[0]
        rows.append((q, plan, best, values[plan], top))
    n = len(rows)
    confusion: dict[str, dict[str, int]] = defaultdict(dict)
    for _, plan, best, _, _ in rows:
        confusion[plan][best] = confusion[plan].get(best, 0) + 1
    return {
        "queries": n,
        "skipped": dict(skipped),
        "chosen": math.fsum(r[3] for r in rows) / n if n else math.nan,
        "best": math.fsum(r[4] for r in rows) / n if n else math.nan,
        "regret": math.fsum(r[4] - r[3] for r in rows) / n if n else math.nan,
        "queries_with_regret": sum(1 for r in rows if r[4] > r[3]),
        "chose_best": sum(1 for r in rows if r[1] == r[2]),
        "per_plan": {p: math.fsum(per_plan[p].get(r[0], 0.0) for r in rows) / n if n else math.nan
                     for p in plans},
        "confusion": {c: dict(sorted(b.items())) for c, b in sorted(confusion.items())},
        "per_query": {r[0]: {"chosen": r[1], "best": r[2], "regret": r[4] - r[3]} for r in rows},
    }


def breakdowns(results: Results, queries: QuerySet | None, chosen: dict[str, str],
                per_query: dict, qids: dict[str, list[str]], groups: QueryGroups | None = None) -> dict:
    """Means per group of queries, for plan (auto's choice in a --mode all run), kind, index,
    repo (`GROUP_COLUMN`) and language (the last two from `groups` when given, else the query
    set's)."""
    sources: dict[str, dict[str, str]] = {
        "plan": chosen if results.multi_plan else results.attrs.get("plan", {}),
        "kind": {**results.attrs.get("kind", {}), **(queries.attrs.get("kind", {}) if queries else {})},
        "index": {**results.attrs.get("index", {}), **(queries.attrs.get("index", {}) if queries else {})},
        GROUP_COLUMN: query_attr(queries, groups, GROUP_COLUMN),
        "language": query_attr(queries, groups, "language"),
    }
    out = {}
    for attr, value_of in sources.items():
        if not value_of:
            continue
        groups: dict[str, dict] = {}
        values = sorted({value_of.get(q, _NO_VALUE) for lv in qids.values() for q in lv})
        for value in values:
            entry: dict = {"n": {}, "systems": {}}
            for lv, level_qids in qids.items():
                members = [q for q in level_qids if value_of.get(q, _NO_VALUE) == value]
                entry["n"][lv] = len(members)
                for name, levels in per_query.items():
                    if lv in levels:
                        entry["systems"].setdefault(name, {})[lv] = metrics.mean_of(levels[lv], members)
            groups[value] = entry
        out[attr] = groups
    return out


def query_attr(queries: QuerySet | None, groups: QueryGroups | None, column: str) -> dict[str, str]:
    """qid -> value of `column` (repo, language): from the groups file when it has the column,
    else from the query set."""
    if groups is not None and column in groups.attrs:
        return groups.attrs[column]
    return queries.attrs.get(column, {}) if queries else {}


def group_of_queries(queries: QuerySet | None, qids: Mapping[str, Sequence[str]],
                     groups: QueryGroups | None = None) -> dict[str, str] | None:
    """qid -> repository (`query_attr` of `GROUP_COLUMN`; a query without one is in the group
    "(not recorded)") when the evaluated queries span two groups or more, else None."""
    recorded = query_attr(queries, groups, GROUP_COLUMN)
    if not recorded:
        return None
    out = {q: recorded.get(q, _NO_VALUE) for level_qids in qids.values() for q in level_qids}
    return out if len(set(out.values())) >= 2 else None


def macro_means(per_query: dict, qids: Mapping[str, Sequence[str]], group_of: Mapping[str, str],
                measures: Sequence[str]) -> dict:
    """Each system's measures averaged within each repository, then over the repositories (each
    counting the same), with the half-width of that mean's 95% confidence interval over the
    repositories (`margin95`, `stats.mean_margin`) and the lowest repository
    (`metrics.mean_and_worst`), per level."""
    out: dict = {"by": GROUP_COLUMN, "groups": {}, "systems": {}}
    for lv, level_qids in qids.items():
        members: dict[str, list[str]] = defaultdict(list)
        for q in level_qids:
            members[group_of[q]].append(q)
        out["groups"][lv] = len(members)
        for name, levels in per_query.items():
            if lv not in levels:
                continue
            per_group = {g: metrics.mean_of(levels[lv], qs) for g, qs in sorted(members.items())}
            by_m = {}
            for m in measures:
                values = {g: means[m] for g, means in per_group.items()}
                summary = metrics.mean_and_worst(values)
                by_m[m] = {"mean": summary.mean, "margin95": mean_margin(list(values.values())),
                           "worst": summary.worst, "worst_group": summary.worst_group}
            out["systems"].setdefault(name, {})[lv] = by_m
    return out


def plan_regret(results: Results, chosen: dict[str, str], per_query: dict, qids: dict[str, list[str]],
            options: EvalOptions, note: Callable[[str], None]) -> dict | None:
    if not results.multi_plan or options.plan is not None:
        return None
    if not chosen:
        note("a --mode all run without auto's choices: planner regret is skipped (pass --auto "
             "AUTO_RESULTS_DIR or write plans.parquet rows with mode='auto')")
        return None
    plans = results.plans
    out: dict = {"plans": plans, "levels": {}, "oracle": {}}
    for lv, level_qids in qids.items():
        out["levels"][lv] = {}
        for m in options.regret_measures:
            per_plan = {p: per_query[p][lv][m] for p in plans}
            out["levels"][lv][m] = planner_regret(per_plan, chosen, level_qids)
        # Oracle: the best plan per query, per measure (an upper bound for any planner).
        out["oracle"][lv] = {
            m: (math.fsum(max(per_query[p][lv][m][q] for p in plans) for q in level_qids) / len(level_qids)
                if level_qids else math.nan)
            for m in options.measures
        }
    # Skips depend on the queries only, not on the measure: report them once per level.
    for lv, by_m in out["levels"].items():
        for why, n in next(iter(by_m.values()))["skipped"].items():
            note(f"planner regret, {lv} level: {n} queries skipped ({why})")
    return out


def comparison(a: str, b: str, per_query: dict, qids: dict[str, list[str]], options: EvalOptions,
               group_of: Mapping[str, str] | None = None) -> dict:
    """Paired tests of `a` against `b` per level and measure over the queries; with `group_of`
    (qid -> repository) also of their means over repositories (`macro`): each query's values
    weighed N / (G x its repository's queries), so that the tested mean difference is the
    difference of the two means over the G repositories (wins and losses still count queries)."""
    out: dict = {"a": a, "b": b, "delta": "a - b", "permutations": options.permutations,
                 "seed": options.seed, "levels": {},
                 "note": "two-sided tests per measure, no correction for multiple comparisons"}
    macro: dict = {"by": GROUP_COLUMN, "levels": {}}
    for lv, level_qids in qids.items():
        if lv not in per_query[a] or lv not in per_query[b]:
            continue
        va = np.array([[per_query[a][lv][m][q] for m in options.measures] for q in level_qids], dtype=float)
        vb = np.array([[per_query[b][lv][m][q] for m in options.measures] for q in level_qids], dtype=float)
        va, vb = va.reshape(len(level_qids), len(options.measures)), vb.reshape(len(level_qids), len(options.measures))
        tests = paired_tests(va, vb, permutations=options.permutations, seed=options.seed)
        out["levels"][lv] = {m: asdict(t) for m, t in zip(options.measures, tests)}
        if group_of is not None and level_qids:
            tests = paired_tests(va, vb, permutations=options.permutations, seed=options.seed,
                                 weights=group_weights([group_of[q] for q in level_qids]))
            macro["levels"][lv] = {m: asdict(t) for m, t in zip(options.measures, tests)}
    if group_of is not None:
        out["macro"] = macro
    return out
