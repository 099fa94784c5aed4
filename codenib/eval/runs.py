"""Reading a results folder (part-*.parquet, plans.parquet) or a TREC run into `Results`."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pyarrow as pa

from codenib.core.errors import BadInputError
from codenib.eval.io import Warn, read_parquet, warn_stderr
from codenib.eval.trec import TrecRow, read_trec_run, trec_run_to_rankings
from codenib.core.results import MANIFEST, PART_GLOB, SUCCESS, ResultsFolder, check_parts


@dataclass(frozen=True, slots=True)
class Results:
    """Ranked results of one run, grouped by the plan that produced them.

    A normal run executes one plan per query, so each qid appears under one plan. A
    ``--mode all`` run executes every plan for every query: a qid appears under several
    plans, and `chosen` says which plan ``auto`` would have picked.
    """

    source: str
    label: str
    rankings: dict[str, dict[str, list[str]]]  # plan ('' when unknown) -> qid -> node ids, best first
    scores: dict[str, dict[str, list[float]]]  # same shape as rankings
    attrs: dict[str, dict[str, str]]           # 'plan' | 'kind' | 'index' -> qid -> value
    chosen: dict[str, str] = field(default_factory=dict)  # qid -> plan auto chose
    errors: dict[str, str] = field(default_factory=dict)  # qid -> error recorded by the run
    traces: dict[str, str] = field(default_factory=dict)  # qid -> trace JSON of its (auto) plan row
    complete: bool = True
    run_tag: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def multi_plan(self) -> bool:
        """True for a ``--mode all`` run (some query has rankings from several plans)."""
        return _several_plans_per_query(self.rankings)

    @property
    def plans(self) -> list[str]:
        """Plans that produced rankings, sorted."""
        return sorted(self.rankings)

    @property
    def qids(self) -> set[str]:
        """Every qid with at least one ranking."""
        return {q for run in self.rankings.values() for q in run}

    def run(self, plan: str | None = None) -> dict[str, list[str]]:
        """One ranking per qid: that of `plan`, or of each query's own plan.

        For a ``--mode all`` run without `plan`, each query gets the ranking of the plan
        auto chose (the composite "auto" run); without choices that is bad input.
        """
        if plan is not None:
            if plan not in self.rankings:
                raise BadInputError(f"no results of plan {plan!r}", path=self.source,
                                    fix="pass --plan one of: " + ", ".join(self.plans))
            return dict(self.rankings[plan])
        if not self.multi_plan:
            return {q: r for run in self.rankings.values() for q, r in run.items()}
        if not self.chosen:
            raise BadInputError(
                "these results hold several plans per query (a --mode all run) and no record of "
                "the plan auto chose", path=self.source,
                fix="pass --plan NAME to use one plan, or --auto AUTO_RESULTS_DIR (or plans.parquet "
                    "rows with mode='auto') to use auto's choices")
        return {q: self.rankings[p][q] for q, p in self.chosen.items()
                if p in self.rankings and q in self.rankings[p]}

    def run_scores(self, plan: str | None = None) -> dict[str, list[float]]:
        """Scores aligned with `run(plan)`."""
        if plan is not None:
            return dict(self.scores.get(plan, {}))
        if not self.multi_plan:
            return {q: s for run in self.scores.values() for q, s in run.items()}
        return {q: self.scores[p][q] for q, p in self.chosen.items()
                if p in self.scores and q in self.scores[p]}


def read_results(path: str | os.PathLike, *, allow_partial: bool = False,
                 warn: Warn | None = None) -> Results:
    """Read a results folder (part-*.parquet, plans.parquet) or a TREC run file."""
    warn = warn or warn_stderr
    p = Path(path)
    if p.is_file():
        return results_from_trec(read_trec_run(p), source=str(p))
    if not p.is_dir():
        raise BadInputError("no such results folder or TREC run file", path=str(p),
                            fix="pass the --out folder of `codenib run`, or a TREC run file")
    folder = ResultsFolder(p)
    parts = folder.parts()
    complete = folder.complete
    if not parts and not complete and not folder.manifest_path.is_file():
        raise BadInputError("this folder holds no part-*.parquet, _manifest.json or _SUCCESS; "
                            "it is not a results folder", path=str(p),
                            fix="pass the --out folder of `codenib run`")
    if not complete and not allow_partial:
        raise BadInputError(
            f"results folder {p} has no {SUCCESS}: the batch job has not finished "
            f"({len(parts)} shard(s) written so far)", path=str(p),
            fix="re-run the same `codenib run` command to finish the missing shards, "
                "or pass --allow-partial to evaluate the shards written so far")
    if not complete:
        warn(f"{p}: no {SUCCESS}; evaluating {len(parts)} shard(s) of an unfinished run "
             "(--allow-partial): queries not run yet count as zero")
    manifest = _check_committed(folder)
    if not parts:
        warn(f"{p}: no part-*.parquet files; every query counts as zero")
    rankings, scores, kind_of, index_of, tag = _group_rankings(folder.rows(_read_part, _empty_results()))
    attrs: dict[str, dict[str, str]] = {"plan": {}, "kind": kind_of, "index": index_of}
    chosen: dict[str, str] = {}
    errors: dict[str, str] = {}
    traces: dict[str, str] = {}
    if folder.plans_path.is_file():
        chosen, errors, traces = _merge_plans(folder.plans_path, attrs)
    if not _several_plans_per_query(rankings):
        # In a normal run the plan that produced a query's rows is the plan of the query.
        for run_plan, run in rankings.items():
            for q in run:
                if run_plan:
                    attrs["plan"].setdefault(q, run_plan)
    return Results(source=str(p), label=p.name or str(p), rankings=rankings, scores=scores,
                   attrs=attrs, chosen=chosen, errors=errors, traces=traces, complete=complete,
                   run_tag=tag, meta={"manifest": manifest} if manifest is not None else {})


def chosen_plans(results: Results) -> dict[str, str]:
    """The plan each query ran under in an auto run (used with ``--auto``)."""
    if results.chosen:
        return dict(results.chosen)
    if results.multi_plan:
        raise BadInputError("the --auto results hold several plans per query; they look like a "
                            "--mode all run, not an auto run", path=results.source,
                            fix="pass the results folder of a --mode auto run to --auto")
    out = {q: p for q, p in results.attrs.get("plan", {}).items() if p}
    if not out:
        raise BadInputError("the --auto results record no plan per query", path=results.source,
                            fix="pass a results folder whose rows (or plans.parquet) carry the plan column")
    return out


def results_from_trec(rows: list[TrecRow], *, source: str) -> Results:
    """A `Results` holding one TREC run (no plans, no query attributes)."""
    run, scores, tag = trec_run_to_rankings(rows)
    return Results(source=source, label=Path(source).stem or source, rankings={"": run},
                   scores={"": scores}, attrs={"plan": {}, "kind": {}, "index": {}}, run_tag=tag,
                   meta={"format": "trec"})


# --- private helpers --------------------------------------------------------------------

def _several_plans_per_query(rankings: Mapping[str, Mapping[str, list[str]]]) -> bool:
    seen: set[str] = set()
    for run in rankings.values():
        if seen & run.keys():
            return True
        seen |= run.keys()
    return False


def _empty_results() -> pa.Table:
    return pa.table({name: pa.array([], typ) for name, typ in _RESULT_COLUMNS.items()})


# What evaluation reads from result rows, in one schema so parts of different writers concat.
_RESULT_COLUMNS = {"qid": pa.string(), "rank": pa.int64(), "node_id": pa.string(), "score": pa.float64(),
                   "plan": pa.string(), "index": pa.string(), "run_tag": pa.string(), "kind": pa.string()}
_REQUIRED_RESULT_COLUMNS = ("qid", "rank", "node_id")


def _read_part(path: Path) -> pa.Table:
    table = read_parquet(path, "results part")
    missing = [c for c in _REQUIRED_RESULT_COLUMNS if c not in table.column_names]
    if missing:
        raise BadInputError(f"results part {path} lacks column(s) {', '.join(missing)}", path=str(path),
                            fix="results rows need qid, rank, node_id (RESULTS_SCHEMA); re-run "
                                "`codenib run` to rewrite this folder")
    try:
        out = pa.table({name: (table.column(name).cast(typ) if name in table.column_names
                               else pa.nulls(table.num_rows, typ))
                        for name, typ in _RESULT_COLUMNS.items()})
    except pa.ArrowException as exc:
        raise BadInputError(f"results part {path} has a column of an unexpected type: {exc}",
                            path=str(path), fix="results rows follow RESULTS_SCHEMA; re-run `codenib run` "
                                                "to rewrite this folder") from None
    for name in _REQUIRED_RESULT_COLUMNS:
        if out.column(name).null_count:
            raise BadInputError(f"results part {path}: column {name} has {out.column(name).null_count} "
                                "empty value(s)", path=str(path),
                                fix="re-run `codenib run` to rewrite this folder")
    return out


def _group_rankings(table: pa.Table):
    # `table` is sorted by (qid, plan, rank), so each group's node ids come out best first.
    qids = table.column("qid").to_pylist()
    nodes = table.column("node_id").to_pylist()
    plans = table.column("plan").to_pylist()
    scores = table.column("score").to_pylist()
    kinds = table.column("kind").to_pylist()
    indexes = table.column("index").to_pylist()
    tags = table.column("run_tag").to_pylist()
    rankings: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    score_map: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    kind_of: dict[str, str] = {}
    index_of: dict[str, str] = {}
    tag = ""
    for qid, node, plan, sc, kind, index, t in zip(qids, nodes, plans, scores, kinds, indexes, tags):
        plan = plan or ""
        rankings[plan][qid].append(node)
        score_map[plan][qid].append(math.nan if sc is None else sc)
        if kind:
            kind_of.setdefault(qid, kind)
        if index:
            index_of.setdefault(qid, index)
        tag = tag or (t or "")
    return ({p: dict(r) for p, r in rankings.items()}, {p: dict(s) for p, s in score_map.items()},
            kind_of, index_of, tag)


def _merge_plans(path: Path, attrs: dict[str, dict[str, str]]
                 ) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Fill per-query attributes from plans.parquet; return (auto's choices, errors, traces)."""
    table = read_parquet(path, "plans table")
    if "qid" not in table.column_names:
        raise BadInputError(f"plans table {path} lacks column qid", path=str(path),
                            fix="re-run `codenib run` to rewrite this folder")
    n = table.num_rows

    def col(name: str) -> list:
        return table.column(name).to_pylist() if name in table.column_names else [None] * n

    chosen: dict[str, str] = {}
    errors: dict[str, str] = {}
    traces: dict[str, str] = {}
    plan_rows: dict[str, list[str]] = defaultdict(list)
    for qid, plan, mode, kind, index, error, trace in zip(col("qid"), col("plan"), col("mode"), col("kind"),
                                                           col("index"), col("error"), col("trace")):
        qid = str(qid)
        if trace and (mode == "auto" or qid not in traces):
            traces[qid] = str(trace)
        if plan:
            plan_rows[qid].append(plan)
            if mode == "auto":
                chosen[qid] = plan
        if kind:
            attrs["kind"].setdefault(qid, str(kind))
        if index:
            attrs["index"].setdefault(qid, str(index))
        if error:
            errors[qid] = str(error)
    for qid, plans in plan_rows.items():
        # One row per query: that is its plan. Several (a --mode all run): auto's choice, if any.
        plan = chosen.get(qid) or (plans[0] if len(set(plans)) == 1 else None)
        if plan:
            attrs["plan"][qid] = plan
    return chosen, errors, traces


def _check_committed(folder: ResultsFolder) -> dict | None:
    """The folder's manifest (None: it has none), once every part it lists is there with the
    rows and sha256 of its commit. `codenib run` always writes a readable manifest: an
    unreadable one is damage; without one, each shard's plans part must have its result part.

    Raises:
        BadInputError: an unreadable manifest, or a damaged or missing part, named with the fix.
    """
    redo = f"re-run the job into a new --out folder: {folder.path} no longer records what it committed"
    if not folder.manifest_path.is_file():
        results = {part.name for part in folder.parts()}
        lost = sorted(part.name for part in folder.plan_parts.glob(PART_GLOB) if part.name not in results)
        if lost:
            raise BadInputError(f"{len(lost)} shard(s) have plans but no result part, and there is no {MANIFEST}",
                                path=str(folder.path / lost[0]), fix=redo)
        return None
    try:
        manifest = folder.manifest()
    except (OSError, ValueError) as exc:
        raise BadInputError(f"unreadable {MANIFEST}: {exc}", path=str(folder.manifest_path), fix=redo) from exc
    if not isinstance(manifest, dict):
        raise BadInputError(f"{MANIFEST} holds a {type(manifest).__name__}, not an object",
                            path=str(folder.manifest_path), fix=redo)
    check_parts(folder, manifest)
    return manifest
