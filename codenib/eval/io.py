"""Reading what evaluation needs (results folders, qrels, query sets) and TREC runs.

Every reader validates its input and raises `BadInputError` (exit 2) naming the file,
the column and the fix. Warnings (inputs that are usable but suspicious) go to the
`warn` callback, which defaults to stderr.
"""

from __future__ import annotations

import math
import os
import sys
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from codenib.errors import BadInputError
from codenib.results import SUCCESS, ResultsFolder
from codenib.specs import read_jsonl
from codenib.types import file_of

Warn = Callable[[str], None]


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


@dataclass(frozen=True, slots=True)
class JudgedQrels:
    """Relevance judgments at node level (None when only files are judged) and file level."""

    source: str
    nodes: dict[str, dict[str, int]] | None
    files: dict[str, dict[str, int]]

    @property
    def qids(self) -> set[str]:
        """Every judged qid (relevant or not)."""
        return set(self.files) | set(self.nodes or {})


@dataclass(frozen=True, slots=True)
class QuerySet:
    """The qids of a query set and their optional `kind` and `index` columns."""

    source: str
    qids: list[str]
    attrs: dict[str, dict[str, str]]  # 'kind' | 'index' -> qid -> value


@dataclass(frozen=True, slots=True)
class TrecRow:
    """One line of a TREC run: ``qid Q0 docno rank score tag``."""

    qid: str
    docno: str
    rank: int
    score: float
    tag: str


def read_results(path: str | os.PathLike, *, allow_partial: bool = False,
                 warn: Warn | None = None) -> Results:
    """Read a results folder (part-*.parquet, plans.parquet) or a TREC run file."""
    warn = warn or _stderr
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
    if not parts:
        warn(f"{p}: no part-*.parquet files; every query counts as zero")
    rankings, scores, kind_of, index_of, tag = _group_rankings(folder.rows(_read_part, _empty_results()))
    attrs: dict[str, dict[str, str]] = {"plan": {}, "kind": kind_of, "index": index_of}
    chosen: dict[str, str] = {}
    errors: dict[str, str] = {}
    if folder.plans_path.is_file():
        chosen, errors = _merge_plans(folder.plans_path, attrs)
    if not _several_plans_per_query(rankings):
        # In a normal run the plan that produced a query's rows is the plan of the query.
        for run_plan, run in rankings.items():
            for q in run:
                if run_plan:
                    attrs["plan"].setdefault(q, run_plan)
    return Results(source=str(p), label=p.name or str(p), rankings=rankings, scores=scores,
                   attrs=attrs, chosen=chosen, errors=errors, complete=complete,
                   run_tag=tag, meta=_read_manifest(folder, warn))


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


def read_qrels(path: str | os.PathLike, *, warn: Warn | None = None) -> JudgedQrels:
    """Read qrels (Parquet: qid, node_id and/or file, relevance; or a TREC qrels text file)."""
    warn = warn or _stderr
    p = Path(path)
    if not p.is_file():
        raise BadInputError("no such qrels file", path=str(p),
                            fix="pass a Parquet file with columns qid, node_id (or file), relevance")
    if p.suffix != ".parquet":
        return _read_trec_qrels(p)
    table = _read_parquet(p, "qrels")
    names = set(table.column_names)
    missing = [c for c in ("qid", "relevance") if c not in names]
    if missing or not names & {"node_id", "file"}:
        need = missing + ([] if names & {"node_id", "file"} else ["node_id or file"])
        raise BadInputError(
            f"qrels file {p} lacks column(s) {', '.join(need)} (has: {', '.join(sorted(names))})",
            path=str(p), fix="write qrels with columns qid (string), node_id and/or file (string), "
                             "relevance (int, >0 relevant)")
    rel = _integer_relevance(table, p, warn)
    qids = _string_column(table, "qid", p, "qrels")
    nodes = table.column("node_id").to_pylist() if "node_id" in names else [None] * len(qids)
    files = table.column("file").to_pylist() if "file" in names else [None] * len(qids)
    node_q: dict[str, dict[str, int]] = defaultdict(dict)
    file_q: dict[str, dict[str, int]] = defaultdict(dict)
    duplicates = 0
    for i, (qid, node, f, r) in enumerate(zip(qids, nodes, files, rel)):
        if node is None and f is None:
            raise BadInputError(f"qrels file {p}, row {i}: both node_id and file are empty",
                                path=str(p), fix="give every judgment a node_id or a file")
        if node is not None:
            node = str(node)
            duplicates += node in node_q[qid]
            node_q[qid][node] = max(r, node_q[qid].get(node, r))
        f = str(f) if f is not None else file_of(node)
        file_q[qid][f] = max(r, file_q[qid].get(f, r))
    if duplicates:
        warn(f"{p}: {duplicates} duplicate (qid, node_id) judgment(s); kept the highest relevance")
    has_nodes = any(n is not None for n in nodes)
    return JudgedQrels(source=str(p), nodes=dict(node_q) if has_nodes else None, files=dict(file_q))


def read_queries(path: str | os.PathLike) -> QuerySet:
    """Read a query set (Parquet or JSONL): qid, and optional kind and index."""
    p = Path(path)
    if not p.is_file():
        raise BadInputError("no such query set", path=str(p),
                            fix="pass the --queries file of `codenib run` (Parquet or JSONL)")
    if p.suffix in (".jsonl", ".json"):
        rows = read_jsonl(p)
        table = pa.Table.from_pylist(rows) if rows else pa.table({"qid": pa.array([], pa.string())})
    else:
        table = _read_parquet(p, "query set")
    if "qid" not in table.column_names:
        raise BadInputError(f"query set {p} lacks column qid (has: {', '.join(table.column_names)})",
                            path=str(p), fix="write the query set with columns qid, query (and optionally kind)")
    qids = _string_column(table, "qid", p, "query set")
    dupes = sorted({q for q in qids if qids.count(q) > 1}) if len(set(qids)) != len(qids) else []
    if dupes:
        raise BadInputError(f"query set {p} repeats qid(s) {', '.join(dupes[:10])}", path=str(p),
                            fix="make every qid unique")
    attrs = {}
    for col in ("kind", "index"):
        if col in table.column_names:
            attrs[col] = {q: str(v) for q, v in zip(qids, table.column(col).to_pylist()) if v is not None}
    return QuerySet(source=str(p), qids=qids, attrs=attrs)


def read_trec_run(path: str | os.PathLike) -> list[TrecRow]:
    """Read a TREC run file (``qid Q0 docno rank score tag``, whitespace separated)."""
    p = Path(path)
    rows = []
    with open(p, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6:
                raise BadInputError(f"TREC run {p}, line {n}: {len(fields)} fields, expected 6",
                                    path=str(p), fix="write each line as: qid Q0 docno rank score tag")
            qid, _, docno, rank, score, tag = fields
            try:
                rows.append(TrecRow(qid, docno, int(rank), float(score), tag))
            except ValueError:
                raise BadInputError(f"TREC run {p}, line {n}: rank {rank!r} or score {score!r} is "
                                    "not a number", path=str(p),
                                    fix="write rank as an integer and score as a number") from None
    return rows


def write_trec_run(rows: Iterable[TrecRow], path: str | os.PathLike) -> int:
    """Write `rows` as a TREC run (atomically); returns the number of lines."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.parent / f".{p.name}.tmp-{uuid.uuid4().hex[:8]}"
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            for r in rows:
                for what, value in (("qid", r.qid), ("node id", r.docno), ("tag", r.tag)):
                    if not value or any(c.isspace() for c in value):
                        raise BadInputError(f"{what} {value!r} is empty or holds whitespace and "
                                            "cannot be written to a TREC run", path=str(p),
                                            fix="keep the results in Parquet, or rename it")
                fh.write(f"{r.qid} Q0 {r.docno} {r.rank} {r.score!r} {r.tag}\n")
                n += 1
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return n


def trec_rows(run: Mapping[str, Sequence[str]], scores: Mapping[str, Sequence[float]],
              tag: str, *, warn: Warn | None = None) -> list[TrecRow]:
    """TREC rows of a run, with scores that keep its order under trec_eval.

    trec_eval (and ir_measures) re-sort each query by score; where a query's scores are
    tied, missing or out of rank order, they are replaced by ``n - rank + 1`` so the
    exported run evaluates exactly like the Parquet one.
    """
    warn = warn or _stderr
    tag = "_".join(tag.split()) or "codenib"
    rows, rewritten = [], 0
    for qid in sorted(run):
        docs = run[qid]
        s = list(scores.get(qid, ()))
        if len(s) != len(docs) or not _strictly_decreasing(s):
            s = [float(len(docs) - i) for i in range(len(docs))]
            rewritten += 1
        rows.extend(TrecRow(qid, d, i + 1, s[i], tag) for i, d in enumerate(docs))
    if rewritten:
        warn(f"{rewritten} query(ies) had tied or out-of-order scores; wrote rank-derived scores "
             "so that trec_eval keeps CodeNib's ranking")
    return rows


def trec_run_to_rankings(rows: Iterable[TrecRow]) -> tuple[dict[str, list[str]], dict[str, list[float]], str]:
    """Rankings as trec_eval orders them (score descending; ties by rank), scores and the tag."""
    by_q: dict[str, list[TrecRow]] = defaultdict(list)
    tag = ""
    for r in rows:
        by_q[r.qid].append(r)
        tag = tag or r.tag
    run, scores = {}, {}
    for qid, rs in by_q.items():
        rs.sort(key=lambda r: (-r.score, r.rank))
        run[qid] = [r.docno for r in rs]
        scores[qid] = [r.score for r in rs]
    return run, scores, tag


def results_from_trec(rows: list[TrecRow], *, source: str) -> Results:
    """A `Results` holding one TREC run (no plans, no query attributes)."""
    run, scores, tag = trec_run_to_rankings(rows)
    return Results(source=source, label=Path(source).stem or source, rankings={"": run},
                   scores={"": scores}, attrs={"plan": {}, "kind": {}, "index": {}}, run_tag=tag,
                   meta={"format": "trec"})


# --- private helpers --------------------------------------------------------------------

def _stderr(message: str) -> None:
    print(f"codenib eval: warning: {message}", file=sys.stderr)


def _several_plans_per_query(rankings: Mapping[str, Mapping[str, list[str]]]) -> bool:
    seen: set[str] = set()
    for run in rankings.values():
        if seen & run.keys():
            return True
        seen |= run.keys()
    return False


def _empty_results() -> pa.Table:
    return pa.table({name: pa.array([], typ) for name, typ in _RESULT_COLUMNS.items()})


def _read_parquet(path: Path, what: str) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise BadInputError(f"cannot read {what} {path} as Parquet: {exc}", path=str(path),
                            fix=f"pass a valid Parquet {what} file") from None


# What evaluation reads from result rows, in one schema so parts of different writers concat.
_RESULT_COLUMNS = {"qid": pa.string(), "rank": pa.int64(), "node_id": pa.string(), "score": pa.float64(),
                   "plan": pa.string(), "index": pa.string(), "run_tag": pa.string(), "kind": pa.string()}
_REQUIRED_RESULT_COLUMNS = ("qid", "rank", "node_id")


def _read_part(path: Path) -> pa.Table:
    table = _read_parquet(path, "results part")
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


def _merge_plans(path: Path, attrs: dict[str, dict[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    """Fill per-query attributes from plans.parquet; return (auto's choices, errors)."""
    table = _read_parquet(path, "plans table")
    if "qid" not in table.column_names:
        raise BadInputError(f"plans table {path} lacks column qid", path=str(path),
                            fix="re-run `codenib run` to rewrite this folder")
    n = table.num_rows

    def col(name: str) -> list:
        return table.column(name).to_pylist() if name in table.column_names else [None] * n

    chosen: dict[str, str] = {}
    errors: dict[str, str] = {}
    plan_rows: dict[str, list[str]] = defaultdict(list)
    for qid, plan, mode, kind, index, error in zip(col("qid"), col("plan"), col("mode"), col("kind"),
                                                    col("index"), col("error")):
        qid = str(qid)
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
    return chosen, errors


def _read_manifest(folder: ResultsFolder, warn: Warn) -> dict:
    meta: dict = {}
    path = folder.manifest_path
    if path.is_file():
        try:
            meta["manifest"] = folder.manifest()
        except (OSError, ValueError) as exc:
            warn(f"{path}: unreadable ({exc}); ignored")
    return meta


def _integer_relevance(table: pa.Table, path: Path, warn: Warn) -> list[int]:
    col = table.column("relevance")
    fix = ("write relevance as integers (1 or more = relevant, 0 = judged not relevant), e.g. "
           "df['relevance'] = df['relevance'].astype('int64') before writing")
    if col.null_count:
        raise BadInputError(f"qrels file {path}: column relevance has {col.null_count} empty value(s)",
                            path=str(path), fix=fix)
    if pa.types.is_integer(col.type):
        return [int(v) for v in col.to_pylist()]
    if pa.types.is_floating(col.type):
        values = col.to_pylist()
        if all(math.isfinite(v) and float(v).is_integer() for v in values):
            warn(f"{path}: column relevance is {col.type}, not integer; its values are whole "
                 "numbers, so they are used as integers")
            return [int(v) for v in values]
        bad = next(v for v in values if not (math.isfinite(v) and float(v).is_integer()))
        raise BadInputError(f"qrels file {path}: column relevance holds non-integer value {bad!r}",
                            path=str(path), fix=fix)
    raise BadInputError(f"qrels file {path}: column relevance has type {col.type}, not integer",
                        path=str(path), fix=fix)


def _string_column(table: pa.Table, name: str, path: Path, what: str) -> list[str]:
    col = table.column(name)
    if col.null_count:
        raise BadInputError(f"{what} {path}: column {name} has {col.null_count} empty value(s)",
                            path=str(path), fix=f"give every row a {name}")
    # Numeric qids are common in TREC-style files; compare them as strings like the results do.
    return [str(v) for v in col.to_pylist()]


def _read_trec_qrels(path: Path) -> JudgedQrels:
    nodes: dict[str, dict[str, int]] = defaultdict(dict)
    files: dict[str, dict[str, int]] = defaultdict(dict)
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise BadInputError(f"TREC qrels {path}, line {n}: {len(fields)} fields, expected 4",
                                    path=str(path), fix="write each line as: qid 0 node_id relevance, "
                                                        "or pass a Parquet qrels file")
            qid, _, doc, rel = fields
            try:
                r = int(rel)
            except ValueError:
                raise BadInputError(f"TREC qrels {path}, line {n}: relevance {rel!r} is not an integer",
                                    path=str(path), fix="write relevance as an integer (1 = relevant)") from None
            nodes[qid][doc] = max(r, nodes[qid].get(doc, r))
            f = file_of(doc)
            files[qid][f] = max(r, files[qid].get(f, r))
    return JudgedQrels(source=str(path), nodes=dict(nodes), files=dict(files))


def _strictly_decreasing(values: Sequence[float]) -> bool:
    return all(math.isfinite(v) for v in values) and all(a > b for a, b in zip(values, values[1:]))
