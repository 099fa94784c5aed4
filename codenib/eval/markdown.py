"""Text renderings of an evaluation: report.md and the short summary printed on stderr."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from codenib.eval import metrics
from codenib.eval.reportdata import Evaluation


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
    ]
    lines += [f"- {lv} level: {metrics.LEVELS[lv].about}" for lv in s["levels"] if lv not in ("node", "file")]
    lines += [
        "",
        "## Measures",
        "",
    ]
    lines += _table_systems(s["systems"], s["measures"], s["levels"])
    if s.get("macro"):
        lines += ["", "## Mean over repositories", ""] + _macro_markdown(s["macro"], s["measures"])
    for attr, groups in s["breakdowns"].items():
        lines += ["", f"## By {attr}", ""]
        lines += _table_breakdown(groups, s["primary"], s["levels"], s["measures"])
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
    lw = max([len(lv) for lv in s["levels"]] + [8])
    lines.append(f"  {'system':<{width}}  {'level':<{lw}} " + " ".join(f"{m:>8}" for m in heads))
    for name, levels in s["systems"].items():
        for lv, vals in levels.items():
            lines.append(f"  {name:<{width}}  {lv:<{lw}} " + " ".join(f"{vals[m]:>8.4f}" for m in heads))
    if s["regret"]:
        for lv, by_m in s["regret"]["levels"].items():
            for m, r in by_m.items():
                lines.append(f"  regret {lv} {m}: {r['regret']:.4f} (auto {r['chosen']:.4f}, "
                             f"best plan per query {r['best']:.4f}, {r['queries']} queries)")
    if s.get("macro"):
        mac = s["macro"]
        for name, levels in mac["systems"].items():
            for lv, vals in levels.items():
                worst = vals[heads[0]]
                lines.append(f"  {name} {lv}, mean over {mac['groups'][lv]} repositories (± 95%): "
                             + ", ".join(f"{m} {vals[m]['mean']:.4f} ± {_fmt(vals[m].get('margin95'))}" for m in heads)
                             + f"; worst {heads[0]} {_fmt(worst['worst'])} ({worst['worst_group']})")
    if s["comparison"]:
        c = s["comparison"]
        for lv, by_m in c["levels"].items():
            for m in heads:
                if m in by_m:
                    t = by_m[m]
                    lines.append(f"  {c['a']} - {c['b']} {lv} {m}: {t['delta']:+.4f} "
                                 f"(t-test p={t['t_p']:.4g}, permutation p={t['permutation_p']:.4g})")
        for lv, by_m in (c.get("macro") or {}).get("levels", {}).items():
            for m in heads:
                if m in by_m:
                    t = by_m[m]
                    lines.append(f"  {c['a']} - {c['b']} {lv} {m}, mean over repositories: {t['delta']:+.4f} "
                                 f"(permutation p={t['permutation_p']:.4g}, {t['wins']} wins, {t['losses']} losses)")
    return "\n".join(lines)


# --- private helpers --------------------------------------------------------------------

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


def _table_breakdown(groups: dict, primary: str | None, levels: Sequence[str], measures: Sequence[str]) -> list[str]:
    # The headline measures that were computed (a column of dashes says nothing).
    heads = [m for m in metrics.HEADLINE_MEASURES if m in measures] or list(measures[:5])
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


def _macro_markdown(macro: dict, measures: Sequence[str]) -> list[str]:
    lines = ["Each measure averaged within each repository (`repo`: the query set's, or --groups), then over the "
             "repositories, each counting the same; ± is the half-width of that mean's 95% confidence interval "
             "over the repositories (Student t), how precisely these repositories pin it down (to compare two "
             "runs, read the paired tests over repositories). Beside it the worst repository's value.", "",
             "| system | level | repositories | measure | mean | ± (95%) | worst | worst repository |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for name, levels in macro["systems"].items():
        for lv, by_m in levels.items():
            for m in measures:
                v = by_m[m]
                lines.append(f"| {name} | {lv} | {macro['groups'][lv]} | {m} | {_fmt(v['mean'])} | "
                             f"{_fmt(v.get('margin95'))} | {_fmt(v['worst'])} | {v['worst_group']} |")
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
    if c.get("macro"):
        lines += ["", "The same over repositories: A and B are means over repositories, each counting the same; "
                  "each query weighs N / (G × its repository's queries) in the tests, so that Δ is the "
                  "difference of those means; wins and losses count queries.", "",
                  "| level | measure | A | B | Δ | t-test p | permutation p | A wins | B wins | ties |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for lv, by_m in c["macro"]["levels"].items():
            for m, t in by_m.items():
                lines.append(f"| {lv} | {m} | {_fmt(t['mean_a'])} | {_fmt(t['mean_b'])} | {t['delta']:+.4f} | "
                             f"{t['t_p']:.4g} | {t['permutation_p']:.4g} | {t['wins']} | {t['losses']} | "
                             f"{t['ties']} |")
    return lines
