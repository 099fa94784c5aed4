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
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from codenib.core import outputs
from codenib.core.artifact import atomic_dir
from codenib.core.errors import BadInputError
from codenib.eval import metrics
from codenib.eval.breakdowns import AUTO, breakdowns, comparison, group_of_queries, macro_means, plan_regret
from codenib.eval.html import HTML_NAME, render_html
from codenib.eval.io import Warn
from codenib.eval.markdown import render_markdown
from codenib.eval.plots import write_plots
from codenib.eval.qrels import JudgedQrels
from codenib.eval.queries import QueryGroups, QuerySet
from codenib.eval.reportdata import EvalOptions, Evaluation
from codenib.eval.runs import Results, chosen_plans

REPORT_FORMAT = "codenib-eval/1"
#: The report folder's list of the files it wrote (written last).
REPORT_MANIFEST = "manifest.json"
REPORT_FOLDER_FORMAT = "codenib-report"
#: What a report folder held before it listed its files (metrics.json marks one).
LEGACY_REPORT_FILES = ("metrics.json", "per_query.parquet", "report.md", "recall_at_k.png", "per_plan.png",
                       "by_kind.png")
#: node: rankings as written; file: a file ranks at its first node; function: symbol nodes only,
#: `#N` stripped (the localization benchmarks' function level). The levels a report gives by
#: default; `EvalOptions.levels` may ask for others of `metrics.LEVELS` (function_name).
LEVELS = metrics.DEFAULT_LEVELS
def evaluate_results(results: Results, qrels: JudgedQrels, *, queries: QuerySet | None = None,
                     auto: Results | None = None, compare: Results | None = None,
                     options: EvalOptions = EvalOptions(), warn: Warn | None = None,
                     groups: QueryGroups | None = None) -> Evaluation:
    """Evaluate `results` (and optionally `compare`) against `qrels`; `groups`: each query's
    repository, in place of the query set's `repo` column (the breakdown by repository and the
    mean over repositories)."""
    warnings: list[str] = []

    def note(message: str) -> None:
        warnings.append(message)
        (warn or _stderr)(message)

    for m in options.measures + options.regret_measures:
        metrics.parse_measure(m)  # unknown names are bad input before any work is done
    if results.multi_plan and options.plan is None:
        # Regret needs its measures per query even when --measures leaves them out.
        options = replace(options, measures=tuple(dict.fromkeys(options.measures + options.regret_measures)))
    levels = metrics.parse_levels(options.levels)
    level_qrels = judgments_by_level(qrels, levels)
    qids = _evaluation_qids(results, qrels, queries, note, level_qrels)
    _check_groups(groups, qids, note)
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
    per_query: dict = {}
    curves: dict = {}
    for name, run in systems.items():
        per_query[name], curves[name] = {}, {}
        for level in levels:
            judged = level_qrels[level]
            if judged is None:
                continue
            level_run = metrics.LEVELS[level].run(run)
            per_query[name][level] = metrics.evaluate(level_run, judged, options.measures, qids[level])
            curves[name][level] = metrics.recall_curve(level_run, judged, options.curve_ks, qids[level])
    group_of = group_of_queries(queries, qids, groups)
    summary = {
        "format": REPORT_FORMAT,
        "inputs": {
            "results": results.source, "qrels": qrels.source,
            "queries": queries.source if queries else None,
            "groups": groups.source if groups else None,
            "auto": auto.source if auto else None,
            "compare": compare.source if compare else None,
            "plan": options.plan,
        },
        "run": {"complete": results.complete, "run_tag": results.run_tag,
                "multi_plan": results.multi_plan, "plans": [p for p in results.plans if p]},
        "levels": [lv for lv in levels if level_qrels[lv] is not None],
        "measures": list(options.measures),
        "primary": primary,
        "queries": _query_counts(results, qrels, qids),
        "systems": {name: {lv: metrics.mean_of(vals) for lv, vals in levels.items()}
                    for name, levels in per_query.items()},
        "breakdowns": breakdowns(results, queries, chosen, per_query, qids, groups),
        "macro": macro_means(per_query, qids, group_of, options.measures) if group_of else None,
        "regret": plan_regret(results, chosen, per_query, qids, options, note),
        "comparison": None,
        "warnings": warnings,
    }
    if compare is not None:
        summary["comparison"] = comparison(primary, b_name, per_query, qids, options, group_of)
    return Evaluation(summary=summary, per_query=per_query, curves=curves,
                      curve_ks=tuple(options.curve_ks), warnings=warnings, runs=systems,
                      judgments={lv: dict(j) for lv, j in level_qrels.items() if j is not None},
                      query_info=_query_info(results, queries, chosen, qids))


def write_report(evaluation: Evaluation, out: str | os.PathLike, *, plots: bool = True,
                 force: bool = False, html: bool = False) -> Path:
    """Write metrics.json, per_query.parquet, report.md, PNG plots (and with `html` the
    self-contained report.html) and the manifest that lists them into `out` (atomically;
    `force`: even over files CodeNib did not write, deleting them)."""
    out = Path(out).absolute()
    check_report_dir(out, force)
    with atomic_dir(out, REPORT_MANIFEST) as staging:
        figures = write_plots(evaluation, staging) if plots else []
        (staging / "metrics.json").write_text(json.dumps(_jsonable(evaluation.summary), indent=2) + "\n", encoding="utf-8")
        with outputs.writing(out / "per_query.parquet"):   # pyarrow deletes a file it failed to write
            _write_per_query(evaluation, staging / "per_query.parquet")
        (staging / "report.md").write_text(render_markdown(evaluation, figures), encoding="utf-8")
        if html:
            page = render_html(evaluation, {name: (staging / name).read_bytes() for name in figures})
            (staging / HTML_NAME).write_text(page, encoding="utf-8")
        files = sorted(p.name for p in staging.iterdir())
        (staging / REPORT_MANIFEST).write_text(json.dumps({"format": REPORT_FOLDER_FORMAT, "files": files},
                                                          indent=2) + "\n", encoding="utf-8")
    return out


def check_report_dir(out: Path, force: bool = False) -> None:
    """Refuse a report path that is a file, a non-empty folder that is not a report, or a
    report that also holds files CodeNib did not write (unless `force`). Reads only."""
    outputs.check_folder(out, report_ownership, "report", "CodeNib report (no metrics.json)",
                         "the report folder", force)


def report_ownership(out: Path) -> outputs.Ownership | None:
    """The files CodeNib wrote in the report folder `out` (None: it is not a report)."""
    try:
        listed = json.loads((out / REPORT_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        listed = None
    if isinstance(listed, dict) and listed.get("format") == REPORT_FOLDER_FORMAT \
            and isinstance(listed.get("files"), list):
        return outputs.files_of([REPORT_MANIFEST, *map(str, listed["files"])])
    if (out / "metrics.json").is_file():
        return outputs.files_of(LEGACY_REPORT_FILES)
    return None


def judgments_by_level(qrels: JudgedQrels, levels=LEVELS) -> dict[str, dict[str, dict[str, int]] | None]:
    """Each level's judgments (`metrics.LEVELS`): from the file judgments or the node ones;
    None where the qrels judge no nodes and the level needs them."""
    out = {}
    for name in levels:
        level = metrics.LEVELS[name]
        source = qrels.files if level.from_files else qrels.nodes
        out[name] = level.qrels(source) if source is not None else None
    return out


def summary_json(evaluation: Evaluation) -> str:
    """metrics.json as text (NaN written as null, which JSON allows)."""
    return json.dumps(_jsonable(evaluation.summary), indent=2)


# --- private helpers --------------------------------------------------------------------

def _stderr(message: str) -> None:
    print(f"codenib eval: warning: {message}", file=sys.stderr)


def _evaluation_qids(results: Results, qrels: JudgedQrels, queries: QuerySet | None,
                     note: Callable[[str], None], level_qrels: dict) -> dict[str, list[str]]:
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
    for level, judged in level_qrels.items():
        if judged is None:
            continue
        qs = metrics.judged_qids(judged)
        out[level] = [q for q in qs if allowed is None or q in allowed]
    evaluated = set().union(*map(set, out.values())) if out else set()
    if not evaluated:
        raise BadInputError(f"qrels {qrels.source} hold no relevant judgment"
                            + (" for the query set" if queries is not None else ""),
                            path=qrels.source, fix="give at least one judgment relevance > 0")
    if qrels.nodes is None:   # said only of qrels that judge something (empty ones are refused above)
        note(f"{qrels.source} judges files only; node-level measures are skipped")
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


def _check_groups(groups: QueryGroups | None, qids: dict[str, list[str]], note: Callable[[str], None]) -> None:
    """A groups file that names none of the evaluated queries is the wrong file; one that lacks
    some is said (those queries form the group "(not recorded)")."""
    if groups is None:
        return
    evaluated = sorted({q for level_qids in qids.values() for q in level_qids})
    lacking = [q for q in evaluated if q not in groups.repo_of]
    if evaluated and len(lacking) == len(evaluated):
        raise BadInputError(f"groups file {groups.source} names none of the {len(evaluated)} evaluated queries "
                            f"(first: {', '.join(evaluated[:3])})", path=groups.source,
                            fix="pass the instances file of the data set the run answered (qid and repo)")
    if lacking:
        note(f"{len(lacking)} of {len(evaluated)} evaluated queries have no repo in {groups.source} "
             f"(first: {', '.join(lacking[:3])}); they are one group, (not recorded)")


def _query_info(results: Results, queries: QuerySet | None, chosen: dict[str, str],
                qids: dict[str, list[str]]) -> dict[str, dict[str, str]]:
    """What the HTML report shows of each evaluated query beside its measures."""
    plan_of = chosen if results.multi_plan else results.attrs.get("plan", {})
    q_attrs = queries.attrs if queries is not None else {}
    texts = queries.texts if queries is not None else {}
    out = {}
    for q in sorted(set().union(*map(set, qids.values()))):
        out[q] = {"text": texts.get(q, ""), "plan": plan_of.get(q, ""),
                  "kind": q_attrs.get("kind", {}).get(q) or results.attrs.get("kind", {}).get(q, ""),
                  "index": q_attrs.get("index", {}).get(q) or results.attrs.get("index", {}).get(q, ""),
                  "trace": results.traces.get(q, ""), "error": results.errors.get(q, "")}
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
