"""Evaluation of a results folder: headline measures, breakdowns, planner regret,
paired comparison of two runs, and the report files (metrics.json, report.md, plots).

Every query that has a relevant judgment is evaluated; a query with no results scores 0
on every measure. Node-level measures use the node rankings as they are; file-level
measures aggregate them to files (a file ranks where its first node ranks).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from codenib.artifact import atomic_dir
from codenib.errors import BadInputError
from codenib.eval import metrics
from codenib.eval.io import JudgedQrels, QuerySet, Results, Warn, chosen_plans

REPORT_FORMAT = "codenib-eval/1"
#: node: rankings as written; file: a file ranks at its first node; function: symbol nodes only,
#: `#N` stripped (the localization benchmarks' function level).
LEVELS = ("node", "file", "function")
#: Measures whose planner regret is reported (the issue asks for these two).
REGRET_MEASURES: tuple[str, ...] = ("RR@10", "R@10")
CURVE_KS: tuple[int, ...] = tuple(range(1, 101))
AUTO = "auto"
ORACLE = "oracle"
_NO_VALUE = "(not recorded)"  # breakdown group of queries whose plan/kind/index is unknown


@dataclass(frozen=True, slots=True)
class EvalOptions:
    """What `evaluate_results` computes."""

    measures: tuple[str, ...] = metrics.DEFAULT_MEASURES
    regret_measures: tuple[str, ...] = REGRET_MEASURES
    curve_ks: tuple[int, ...] = CURVE_KS
    permutations: int = 10_000
    seed: int = 0
    plan: str | None = None  # use only this plan of a --mode all run


@dataclass(frozen=True, slots=True)
class PairedTest:
    """Paired comparison of per-query values a and b (delta = mean(a) - mean(b))."""

    n: int
    mean_a: float
    mean_b: float
    delta: float
    t_statistic: float
    t_p: float            # two-sided paired t-test
    permutation_p: float  # two-sided sign-flip randomization test on the mean difference
    permutations: int
    exact: bool           # all 2**n sign flips enumerated
    wins: int             # queries where a > b
    losses: int
    ties: int


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Everything one `codenib eval` computed; `summary` is the content of metrics.json."""

    summary: dict
    per_query: dict[str, dict[str, dict[str, dict[str, float]]]]  # system -> level -> measure -> qid -> value
    curves: dict[str, dict[str, list[float]]]                      # system -> level -> R@k for k in curve_ks
    curve_ks: tuple[int, ...] = CURVE_KS
    warnings: list[str] = field(default_factory=list)


def evaluate_results(results: Results, qrels: JudgedQrels, *, queries: QuerySet | None = None,
                     auto: Results | None = None, compare: Results | None = None,
                     options: EvalOptions = EvalOptions(), warn: Warn | None = None) -> Evaluation:
    """Evaluate `results` (and optionally `compare`) against `qrels`."""
    warnings: list[str] = []

    def note(message: str) -> None:
        warnings.append(message)
        (warn or _stderr)(message)

    for m in options.measures + options.regret_measures:
        metrics.parse_measure(m)  # unknown names are bad input before any work is done
    if results.multi_plan and options.plan is None:
        # Regret needs its measures per query even when --measures leaves them out.
        options = replace(options, measures=tuple(dict.fromkeys(options.measures + options.regret_measures)))
    qids = _evaluation_qids(results, qrels, queries, note)
    chosen = _chosen(results, auto, options)
    systems = _systems(results, chosen, options)
    primary = _primary_name(results, chosen, options)
    if compare is not None and primary is None:
        raise BadInputError("--compare needs one ranking per query from --results, but it is a --mode all "
                            "run without auto's choices", path=results.source,
                            fix="pass --plan NAME, or --auto AUTO_RESULTS_DIR")
    if compare is not None:
        b_name = compare.label if compare.label != primary else f"{compare.label} (compare)"
        b_run = compare.run(options.plan if options.plan in compare.rankings else None)
        systems[b_name] = b_run
        if compare.qids != results.qids:
            note(f"--compare results cover {len(compare.qids)} queries and --results "
                 f"{len(results.qids)}; queries missing from one side count as zero there")
    level_qrels = {"node": qrels.nodes, "file": qrels.files, "function": _function_qrels(qrels)}
    per_query: dict = {}
    curves: dict = {}
    for name, run in systems.items():
        per_query[name], curves[name] = {}, {}
        for level in LEVELS:
            judged = level_qrels[level]
            if judged is None:
                continue
            level_run = _LEVEL_RUN[level](run)
            per_query[name][level] = metrics.evaluate(level_run, judged, options.measures, qids[level])
            curves[name][level] = metrics.recall_curve(level_run, judged, options.curve_ks, qids[level])
    summary = {
        "format": REPORT_FORMAT,
        "inputs": {
            "results": results.source, "qrels": qrels.source,
            "queries": queries.source if queries else None,
            "auto": auto.source if auto else None,
            "compare": compare.source if compare else None,
            "plan": options.plan,
        },
        "run": {"complete": results.complete, "run_tag": results.run_tag,
                "multi_plan": results.multi_plan, "plans": [p for p in results.plans if p]},
        "levels": [lv for lv in LEVELS if level_qrels[lv] is not None],
        "measures": list(options.measures),
        "primary": primary,
        "queries": _query_counts(results, qrels, qids),
        "systems": {name: {lv: metrics.mean_of(vals) for lv, vals in levels.items()}
                    for name, levels in per_query.items()},
        "breakdowns": _breakdowns(results, queries, chosen, per_query, qids),
        "regret": _regret(results, chosen, per_query, qids, options, note),
        "comparison": None,
        "warnings": warnings,
    }
    if compare is not None:
        summary["comparison"] = _comparison(primary, b_name, per_query, qids, options)
    return Evaluation(summary=summary, per_query=per_query, curves=curves,
                      curve_ks=tuple(options.curve_ks), warnings=warnings)


def paired_test(a: Sequence[float], b: Sequence[float], *, permutations: int = 10_000,
                seed: int = 0) -> PairedTest:
    """Paired t-test and sign-flip randomization test of mean(a) - mean(b).

    The randomization test enumerates all 2**n sign flips when that is no more than
    `permutations`, and otherwise samples `permutations` of them (p = (hits + 1) / (N + 1)).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError("paired_test needs two sequences of the same length")
    return paired_tests(x[:, None], y[:, None], permutations=permutations, seed=seed)[0]


def paired_tests(a: np.ndarray, b: np.ndarray, *, permutations: int = 10_000,
                 seed: int = 0) -> list[PairedTest]:
    """`paired_test` for each column of two (queries x measures) arrays, sharing the sign flips."""
    from scipy import stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = x - y
    n, m = d.shape
    if n == 0:
        return [PairedTest(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0, True, 0, 0, 0)
                for _ in range(m)]
    perm_p, used, exact = _sign_flip_p(d, permutations, seed)
    out = []
    for j in range(m):
        dj = d[:, j]
        delta = float(dj.mean())
        spread = float(dj.std(ddof=1)) if n > 1 else 0.0
        if n < 2:
            t, t_p = math.nan, math.nan
        elif spread <= 1e-12 * max(1.0, abs(delta)):
            # A constant difference (up to float noise): scipy answers NaN or noise here, while
            # the limit is clear: no difference at all, or a certain one.
            t, t_p = (0.0, 1.0) if abs(delta) <= 1e-12 else (math.copysign(math.inf, delta), 0.0)
        else:
            res = stats.ttest_rel(x[:, j], y[:, j])
            t, t_p = float(res.statistic), float(res.pvalue)
        out.append(PairedTest(n=n, mean_a=float(x[:, j].mean()), mean_b=float(y[:, j].mean()),
                              delta=delta, t_statistic=t, t_p=t_p, permutation_p=float(perm_p[j]),
                              permutations=used, exact=exact, wins=int((dj > 0).sum()),
                              losses=int((dj < 0).sum()), ties=int((dj == 0).sum())))
    return out


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


def write_report(evaluation: Evaluation, out: str | os.PathLike, *, plots: bool = True) -> Path:
    """Write metrics.json, per_query.parquet, report.md and PNG plots into `out` (atomically)."""
    out = Path(out).absolute()
    _check_report_dir(out)
    with atomic_dir(out, "report.md") as staging:
        figures = _write_plots(evaluation, staging) if plots else []
        (staging / "metrics.json").write_text(json.dumps(_jsonable(evaluation.summary), indent=2) + "\n")
        _write_per_query(evaluation, staging / "per_query.parquet")
        (staging / "report.md").write_text(render_markdown(evaluation, figures))
    return out


def summary_json(evaluation: Evaluation) -> str:
    """metrics.json as text (NaN written as null, which JSON allows)."""
    return json.dumps(_jsonable(evaluation.summary), indent=2)


def render_markdown(evaluation: Evaluation, figures: Sequence[str] = ()) -> str:
    """The Markdown summary (report.md)."""
    s = evaluation.summary
    q = s["queries"]
    lines = [
        "# CodeNib evaluation",
        "",
        f"- results: `{s['inputs']['results']}`" + ("" if s["run"]["complete"] else " (**partial run**)"),
        f"- qrels: `{s['inputs']['qrels']}`",
    ]
    for key in ("queries", "auto", "compare"):
        if s["inputs"][key]:
            lines.append(f"- {key}: `{s['inputs'][key]}`")
    lines += [
        f"- evaluated queries: {_fmt_counts(q['evaluated'])}; without results (scored 0): "
        f"{q['judged_without_results']}; result queries without judgments (ignored): "
        f"{q['results_not_judged']}",
        "- measures are named as ir_measures names them; file level ranks a file where its first "
        "node ranks; Acc@k counts a query only when all its gold items are in the top k.",
        "",
        "## Measures",
        "",
    ]
    lines += _table_systems(s["systems"], s["measures"], s["levels"])
    for attr, groups in s["breakdowns"].items():
        lines += ["", f"## By {attr}", ""]
        lines += _table_breakdown(groups, s["primary"], s["levels"])
    if s["regret"]:
        lines += ["", "## Planner regret", ""] + _regret_markdown(s["regret"])
    if s["comparison"]:
        lines += ["", "## Comparison", ""] + _comparison_markdown(s["comparison"])
    if figures:
        lines += ["", "## Plots", ""] + [f"![{f}]({f})" for f in figures]
    if s["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in s["warnings"]]
    return "\n".join(lines) + "\n"


def render_summary(evaluation: Evaluation) -> str:
    """A short plain-text table of the headline measures (for stderr)."""
    s = evaluation.summary
    heads = [m for m in metrics.HEADLINE_MEASURES if m in s["measures"]] or s["measures"][:5]
    width = max([len(n) for n in s["systems"]] + [6])
    lines = [f"evaluated {_fmt_counts(s['queries']['evaluated'])} against {s['inputs']['qrels']}"
             f" ({s['queries']['judged_without_results']} without results, scored 0)"]
    lines.append(f"  {'system':<{width}}  level    " + " ".join(f"{m:>8}" for m in heads))
    for name, levels in s["systems"].items():
        for lv, vals in levels.items():
            lines.append(f"  {name:<{width}}  {lv:<8} " + " ".join(f"{vals[m]:>8.4f}" for m in heads))
    if s["regret"]:
        for lv, by_m in s["regret"]["levels"].items():
            for m, r in by_m.items():
                lines.append(f"  regret {lv} {m}: {r['regret']:.4f} (auto {r['chosen']:.4f}, "
                             f"best plan per query {r['best']:.4f}, {r['queries']} queries)")
    if s["comparison"]:
        c = s["comparison"]
        for lv, by_m in c["levels"].items():
            for m in heads:
                if m in by_m:
                    t = by_m[m]
                    lines.append(f"  {c['a']} - {c['b']} {lv} {m}: {t['delta']:+.4f} "
                                 f"(t-test p={t['t_p']:.4g}, permutation p={t['permutation_p']:.4g})")
    return "\n".join(lines)


# --- private helpers --------------------------------------------------------------------

def _stderr(message: str) -> None:
    print(f"codenib eval: warning: {message}", file=sys.stderr)


_LEVEL_RUN = {"node": lambda run: run, "file": metrics.to_file_run, "function": metrics.to_function_run}


def _function_qrels(qrels: JudgedQrels):
    return metrics.to_function_qrels(qrels.nodes) if qrels.nodes is not None else None


def _evaluation_qids(results: Results, qrels: JudgedQrels, queries: QuerySet | None,
                     note: Callable[[str], None]) -> dict[str, list[str]]:
    """Qids each level averages over: judged with a relevant item (and in the query set)."""
    if queries is not None:
        unknown = sorted(qrels.qids - set(queries.qids))
        if unknown:
            raise BadInputError(
                f"qrels {qrels.source} judge {len(unknown)} qid(s) that are not in the query set "
                f"{queries.source}: {', '.join(unknown[:10])}" + (" ..." if len(unknown) > 10 else ""),
                path=qrels.source,
                fix="pass the query set these qrels were made for, or drop those qids from the qrels")
    allowed = set(queries.qids) if queries is not None else None
    out = {}
    for level, judged in (("node", qrels.nodes), ("file", qrels.files), ("function", _function_qrels(qrels))):
        if judged is None:
            continue
        qs = metrics.judged_qids(judged)
        out[level] = [q for q in qs if allowed is None or q in allowed]
    if qrels.nodes is None:
        note(f"{qrels.source} judges files only; node-level measures are skipped")
    evaluated = set().union(*map(set, out.values())) if out else set()
    if not evaluated:
        raise BadInputError(f"qrels {qrels.source} hold no relevant judgment"
                            + (" for the query set" if queries is not None else ""),
                            path=qrels.source, fix="give at least one judgment relevance > 0")
    missing = evaluated - results.qids
    if missing:
        note(f"{len(missing)} of {len(evaluated)} judged queries have no results; they count as zero")
    if results.qids and not results.qids & qrels.qids:
        note(f"none of the {len(results.qids)} queries in {results.source} is judged in "
             f"{qrels.source}; are these the right qrels?")
    unjudged = results.qids - qrels.qids
    if unjudged:
        note(f"{len(unjudged)} queries in the results have no judgments and are not evaluated")
    no_relevant = sorted(q for q in qrels.qids if q not in evaluated and (allowed is None or q in allowed))
    if no_relevant:
        note(f"{len(no_relevant)} judged queries have no relevant item and are not evaluated")
    return out


def _query_counts(results: Results, qrels: JudgedQrels, qids: dict[str, list[str]]) -> dict:
    evaluated = set().union(*map(set, qids.values()))
    return {
        "evaluated": {lv: len(q) for lv, q in qids.items()},
        "judged_without_results": len(evaluated - results.qids),
        "results_not_judged": len(results.qids - qrels.qids),
        "with_errors": len(set(results.errors) & evaluated),
    }


def _chosen(results: Results, auto: Results | None, options: EvalOptions) -> dict[str, str]:
    if auto is not None:
        if not results.multi_plan:
            raise BadInputError("--auto compares auto's choices with every plan, so --results must be "
                                "a --mode all run (several plans per query); these results hold one "
                                "plan per query", path=results.source,
                                fix="pass the folder of `codenib run --mode all` as --results")
        return chosen_plans(auto)
    return dict(results.chosen)


def _systems(results: Results, chosen: dict[str, str], options: EvalOptions) -> dict[str, dict[str, list[str]]]:
    if options.plan is not None and not results.multi_plan:
        # In an auto run each plan answered only its own queries; scoring the others as
        # zero would be misleading, and the by-plan breakdown already gives that view.
        raise BadInputError("--plan picks one plan of a --mode all run, but these results hold one "
                            "plan per query", path=results.source,
                            fix="drop --plan and read the 'By plan' breakdown of the report")
    if options.plan is not None:
        return {options.plan: results.run(options.plan)}
    if not results.multi_plan:
        return {results.label: results.run()}
    systems = {p: results.run(p) for p in results.plans}
    if chosen:
        systems[AUTO] = {q: results.rankings[p][q] for q, p in chosen.items()
                         if p in results.rankings and q in results.rankings[p]}
    return systems


def _primary_name(results: Results, chosen: dict[str, str], options: EvalOptions) -> str | None:
    if options.plan is not None:
        return options.plan
    if not results.multi_plan:
        return results.label
    return AUTO if chosen else None


def _breakdowns(results: Results, queries: QuerySet | None, chosen: dict[str, str],
                per_query: dict, qids: dict[str, list[str]]) -> dict:
    """Means per group of queries, for plan (auto's choice in a --mode all run), kind, index."""
    sources: dict[str, dict[str, str]] = {
        "plan": chosen if results.multi_plan else results.attrs.get("plan", {}),
        "kind": {**results.attrs.get("kind", {}), **(queries.attrs.get("kind", {}) if queries else {})},
        "index": {**results.attrs.get("index", {}), **(queries.attrs.get("index", {}) if queries else {})},
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


def _regret(results: Results, chosen: dict[str, str], per_query: dict, qids: dict[str, list[str]],
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


def _comparison(a: str, b: str, per_query: dict, qids: dict[str, list[str]], options: EvalOptions) -> dict:
    out: dict = {"a": a, "b": b, "delta": "a - b", "permutations": options.permutations,
                 "seed": options.seed, "levels": {},
                 "note": "two-sided tests per measure, no correction for multiple comparisons"}
    for lv, level_qids in qids.items():
        if lv not in per_query[a] or lv not in per_query[b]:
            continue
        va = np.array([[per_query[a][lv][m][q] for m in options.measures] for q in level_qids], dtype=float)
        vb = np.array([[per_query[b][lv][m][q] for m in options.measures] for q in level_qids], dtype=float)
        tests = paired_tests(va.reshape(len(level_qids), len(options.measures)),
                             vb.reshape(len(level_qids), len(options.measures)),
                             permutations=options.permutations, seed=options.seed)
        out["levels"][lv] = {m: asdict(t) for m, t in zip(options.measures, tests)}
    return out


def _sign_flip_p(d: np.ndarray, permutations: int, seed: int) -> tuple[np.ndarray, int, bool]:
    """Two-sided sign-flip p-value of each column's mean of `d` (queries x measures)."""
    n = d.shape[0]
    observed = np.abs(d.mean(axis=0))
    threshold = observed - 1e-12 * np.maximum(1.0, observed)  # float noise must not turn a tie into a miss
    if n <= 20 and 2 ** n <= permutations:
        signs = (((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1).astype(float)
        means = np.abs(signs @ d) / n
        return (means >= threshold).mean(axis=0), 2 ** n, True
    rng = np.random.default_rng(seed)
    hits = np.zeros(d.shape[1])
    done = 0
    while done < permutations:
        batch = min(1000, permutations - done)  # bounded memory for large query sets
        signs = rng.integers(0, 2, size=(batch, n)).astype(float) * 2 - 1  # float: BLAS matmul
        hits += (np.abs(signs @ d) / n >= threshold).sum(axis=0)
        done += batch
    return (hits + 1) / (permutations + 1), permutations, False


def _check_report_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise BadInputError("the report path exists and is a file", path=str(out),
                            fix="pass a new folder path to --out")
    if out.is_dir() and any(out.iterdir()) and not (out / "metrics.json").is_file():
        raise BadInputError("the report folder exists, is not empty and holds no metrics.json; "
                            "refusing to overwrite it", path=str(out),
                            fix="choose a new --out folder or remove this one yourself")


def _jsonable(value):
    # NaN is not JSON; null says "undefined" (e.g. a group with no queries).
    if isinstance(value, float):
        return None if math.isnan(value) else (str(value) if math.isinf(value) else value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    return value


def _write_per_query(evaluation: Evaluation, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list] = {"system": [], "level": [], "measure": [], "qid": [], "value": []}
    for system, levels in evaluation.per_query.items():
        for lv, by_m in levels.items():
            for m, values in by_m.items():
                for q, v in values.items():
                    cols["system"].append(system)
                    cols["level"].append(lv)
                    cols["measure"].append(m)
                    cols["qid"].append(q)
                    cols["value"].append(v)
    pq.write_table(pa.table(cols, schema=pa.schema([("system", pa.string()), ("level", pa.string()),
                                                    ("measure", pa.string()), ("qid", pa.string()),
                                                    ("value", pa.float64())])), path)


def _fmt(v) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def _fmt_counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} ({lv} level)" for lv, n in counts.items())


def _table_systems(systems: dict, measures: Sequence[str], levels: Sequence[str]) -> list[str]:
    lines = ["| system | level | " + " | ".join(measures) + " |",
             "|---|---|" + "---:|" * len(measures)]
    for name, by_level in systems.items():
        for lv in levels:
            if lv in by_level:
                lines.append(f"| {name} | {lv} | " + " | ".join(_fmt(by_level[lv][m]) for m in measures) + " |")
    return lines


def _table_breakdown(groups: dict, primary: str | None, levels: Sequence[str]) -> list[str]:
    heads = list(metrics.HEADLINE_MEASURES)
    lines = ["| group | system | level | n | " + " | ".join(heads) + " |",
             "|---|---|---|---:|" + "---:|" * len(heads)]
    for value, entry in groups.items():
        for name, by_level in entry["systems"].items():
            for lv in levels:
                if lv in by_level:
                    vals = by_level[lv]
                    lines.append(f"| {value} | {name} | {lv} | {entry['n'][lv]} | "
                                 + " | ".join(_fmt(vals.get(m)) for m in heads) + " |")
    return lines


def _regret_markdown(regret: dict) -> list[str]:
    lines = ["Regret = mean over queries of (best plan's value − value of the plan auto chose); "
             "oracle = best plan per query.", "",
             "| level | measure | queries | auto | best plan per query | regret | queries with regret | chose best |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for lv, by_m in regret["levels"].items():
        for m, r in by_m.items():
            lines.append(f"| {lv} | {m} | {r['queries']} | {_fmt(r['chosen'])} | {_fmt(r['best'])} | "
                         f"{_fmt(r['regret'])} | {r['queries_with_regret']} | {r['chose_best']} |")
    plans = regret["plans"]
    for lv, by_m in regret["levels"].items():
        for m, r in by_m.items():
            lines += ["", f"Chosen plan (rows) vs best plan (columns), {lv} level, {m}:", "",
                      "| chosen \\ best | " + " | ".join(plans) + " |",
                      "|---|" + "---:|" * len(plans)]
            for c in plans:
                row = r["confusion"].get(c, {})
                lines.append(f"| {c} | " + " | ".join(str(row.get(b, 0)) for b in plans) + " |")
    return lines


def _comparison_markdown(c: dict) -> list[str]:
    lines = [f"A = `{c['a']}`, B = `{c['b']}`; Δ = A − B; paired t-test and sign-flip randomization "
             f"test ({c['permutations']} permutations, seed {c['seed']}), two-sided, "
             "no correction for multiple comparisons.", "",
             "| level | measure | A | B | Δ | t-test p | permutation p | A wins | B wins | ties |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lv, by_m in c["levels"].items():
        for m, t in by_m.items():
            lines.append(f"| {lv} | {m} | {_fmt(t['mean_a'])} | {_fmt(t['mean_b'])} | {t['delta']:+.4f} | "
                         f"{t['t_p']:.4g} | {t['permutation_p']:.4g} | {t['wins']} | {t['losses']} | {t['ties']} |")
    return lines


def _write_plots(evaluation: Evaluation, folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    s = evaluation.summary
    heads = [m for m in metrics.HEADLINE_MEASURES if m in s["measures"]]
    written = []
    # Recall@k curves, one panel per level, one line per system.
    levels = s["levels"]
    fig, axes = plt.subplots(1, len(levels), figsize=(6 * len(levels), 4), squeeze=False)
    ks = list(evaluation.curve_ks)
    for ax, lv in zip(axes[0], levels):
        for name, by_level in evaluation.curves.items():
            if lv in by_level:
                ax.plot(ks, by_level[lv], label=name)
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_ylabel("R@k")
        ax.set_ylim(0, 1)
        ax.set_title(f"Recall@k, {lv} level")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(folder / "recall_at_k.png", dpi=110)
    plt.close(fig)
    written.append("recall_at_k.png")
    # Per-plan bars: every plan of a --mode all run (with auto and oracle), else the plan groups.
    bars = _plan_bars(s, heads)
    if bars:
        _bar_chart(plt, bars, heads, "node" if "node" in levels else levels[0],
                   folder / "per_plan.png", "by plan")
        written.append("per_plan.png")
    if "kind" in s["breakdowns"] and s["primary"]:
        lv = "node" if "node" in levels else levels[0]
        kind_bars = {f"{k} (n={e['n'][lv]})": e["systems"][s["primary"]][lv]
                     for k, e in s["breakdowns"]["kind"].items() if s["primary"] in e["systems"]}
        _bar_chart(plt, {k: {lv: v} for k, v in kind_bars.items()}, heads, lv,
                   folder / "by_kind.png", f"{s['primary']} by query kind")
        written.append("by_kind.png")
    return written


def _plan_bars(s: dict, heads: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
    """label -> level -> measure -> value for the per-plan bar chart."""
    if s["run"]["multi_plan"] and s["inputs"]["plan"] is None:
        bars = {name: levels for name, levels in s["systems"].items() if name in s["run"]["plans"] or name == AUTO}
        if s["regret"]:
            bars[ORACLE] = s["regret"]["oracle"]
        return bars
    groups = s["breakdowns"].get("plan")
    if not groups or not s["primary"]:
        return {}
    lv = "node" if "node" in s["levels"] else s["levels"][0]
    return {f"{p} (n={e['n'][lv]})": e["systems"][s["primary"]] for p, e in groups.items()
            if s["primary"] in e["systems"]}


def _bar_chart(plt, bars: dict, heads: Sequence[str], level: str, path: Path, title: str) -> None:
    labels = list(bars)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels) * len(heads) / 3), 4))
    width = 0.8 / max(len(heads), 1)
    x = np.arange(len(labels))
    for i, m in enumerate(heads):
        vals = [bars[label].get(level, {}).get(m) for label in labels]
        ax.bar(x + i * width, [0.0 if v is None or math.isnan(v) else v for v in vals], width, label=m)
    ax.set_xticks(x + width * (len(heads) - 1) / 2)
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize="small")
    ax.set_ylim(0, 1)
    ax.set_title(f"{title}, {level} level")
    ax.legend(fontsize="small", ncol=min(len(heads), 5))
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
