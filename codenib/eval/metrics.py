"""Retrieval measures over plain rankings, named as ir_measures names them.

A *run* maps a qid to its ranked doc ids (best first); *qrels* map a qid to
``{doc_id: relevance}`` where relevance > 0 means relevant. The definitions follow
trec_eval (which ir_measures calls through pytrec_eval): P@k divides by k even when
fewer than k docs were retrieved, nDCG uses the relevance grade as the gain and
``log2(rank + 1)`` as the discount, AP divides by the number of relevant docs.

Two deliberate differences from ir_measures:

- the order of a ranking is its list order (ir_measures re-sorts by score);
- a judged query missing from the run scores 0 on every measure instead of being
  left out of the mean (`evaluate` takes the qids to average over explicitly).

``Acc@k`` is the strict accuracy of code localization benchmarks: 1 when *every*
relevant doc is within the first k distinct docs, else 0. It is not an ir_measures name.

A *level* (`LEVELS`) turns node rankings and judgments into rankings and judgments of other
items before a measure is taken: files, named definitions, or definitions matched by file and
last name segment as Multi-SWE-bench counts them (its file Acc@1/5/10 is ``Acc@k`` at the
``file`` level, its function Acc@5/10 ``Acc@k`` at the ``function_name`` level).

Beside it, localisation reports breadth as ``R@k`` over the same file or function rankings
(`to_file_run`, `to_function_run`): the share of the gold within the first k distinct docs.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from codenib.core.errors import BadInputError
from codenib.core.types import ID_SEP, file_of

Run = Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, int]]

#: Measures every report computes, node level and file level.
DEFAULT_MEASURES: tuple[str, ...] = (
    "R@1", "R@5", "R@10", "R@100", "P@1", "P@5", "P@10", "RR@10", "nDCG@10", "AP",
    "Acc@1", "Acc@5", "Acc@10",
)
#: The measures that headline tables and plots show.
HEADLINE_MEASURES: tuple[str, ...] = ("R@10", "RR@10", "nDCG@10", "AP", "Acc@5")


@dataclass(frozen=True, slots=True)
class Measure:
    """A parsed measure name: a family (``R``, ``nDCG`` ...) and an optional cutoff."""

    family: str
    cutoff: int | None

    @property
    def name(self) -> str:
        """The ir_measures spelling, e.g. ``nDCG@10`` or ``AP``."""
        return self.family if self.cutoff is None else f"{self.family}@{self.cutoff}"


def parse_measure(name: str) -> Measure:
    """Parse an ir_measures-style name (``R@10``, ``RR``, ``AP@100``); exit 2 if unknown."""
    m = _MEASURE_RE.fullmatch(name.strip())
    if not m or m.group(1) not in _FAMILIES:
        raise BadInputError(
            f"unknown measure {name!r}",
            fix="use one of " + ", ".join(f"{f}@k" for f in _FAMILIES)
            + " (RR, nDCG and AP also without @k), e.g. R@10 or nDCG@10")
    family, cutoff = m.group(1), m.group(2)
    if cutoff is None and family in _NEEDS_CUTOFF:
        raise BadInputError(f"measure {name!r} needs a cutoff", fix=f"write it as {family}@10")
    if cutoff is not None and int(cutoff) < 1:
        raise BadInputError(f"measure {name!r} has a cutoff below 1", fix=f"write it as {family}@10")
    return Measure(family, int(cutoff) if cutoff is not None else None)


def score(measure: Measure, ranking: Sequence[str], rels: Mapping[str, int]) -> float:
    """Value of `measure` for one query: `ranking` best first, `rels` doc -> relevance."""
    return _FAMILIES[measure.family](_dedupe(ranking), rels, measure.cutoff)


def evaluate(run: Run, qrels: Qrels, measures: Iterable[str],
             qids: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
    """Per-query values: measure name -> qid -> value.

    `qids` defaults to every judged query with at least one relevant doc; a qid with
    no ranking in `run` scores 0 (a query that returned nothing failed, it is not absent).
    """
    parsed = [parse_measure(m) for m in measures]
    qids = list(judged_qids(qrels) if qids is None else qids)
    out: dict[str, dict[str, float]] = {m.name: {} for m in parsed}
    for qid in qids:
        ranking = _dedupe(run.get(qid, ()))
        rels = qrels.get(qid, {})
        for m in parsed:
            out[m.name][qid] = _FAMILIES[m.family](ranking, rels, m.cutoff)
    return out


def mean_of(per_query: Mapping[str, Mapping[str, float]],
            qids: Iterable[str] | None = None) -> dict[str, float]:
    """Mean of each measure over `qids` (default: all); NaN when there are none."""
    out = {}
    for name, values in per_query.items():
        chosen = list(values.values()) if qids is None else [values[q] for q in qids]
        out[name] = math.fsum(chosen) / len(chosen) if chosen else math.nan
    return out


def judged_qids(qrels: Qrels) -> list[str]:
    """Qids (sorted) with at least one relevant doc: the queries a measure can score."""
    return sorted(q for q, rels in qrels.items() if any(r > 0 for r in rels.values()))


def to_file_run(run: Run) -> dict[str, list[str]]:
    """Node rankings -> file rankings: a file ranks where its first node ranks."""
    return {qid: _dedupe([file_of(d) for d in ranking]) for qid, ranking in run.items()}


def to_file_qrels(qrels: Qrels) -> dict[str, dict[str, int]]:
    """Node judgments -> file judgments: a file gets the highest grade of its nodes."""
    out: dict[str, dict[str, int]] = {}
    for qid, rels in qrels.items():
        files: dict[str, int] = {}
        for doc, rel in rels.items():
            f = file_of(doc)
            files[f] = max(rel, files.get(f, rel))
        out[qid] = files
    return out


def to_function_run(run: Run) -> dict[str, list[str]]:
    """Node rankings -> symbol rankings as localization benchmarks score them: file nodes
    dropped, `#N` duplicate suffixes stripped, first occurrence kept."""
    return {qid: _dedupe(plain_node_id(d) for d in ranking if ID_SEP in d) for qid, ranking in run.items()}


def to_function_qrels(qrels: Qrels) -> dict[str, dict[str, int]]:
    """Node judgments -> symbol judgments: file nodes dropped, `#N` stripped (highest grade kept)."""
    out: dict[str, dict[str, int]] = {}
    for qid, rels in qrels.items():
        funcs: dict[str, int] = {}
        for doc, rel in rels.items():
            if ID_SEP in doc:
                d = plain_node_id(doc)
                funcs[d] = max(rel, funcs.get(d, rel))
        out[qid] = funcs
    return out


def plain_node_id(node_id: str) -> str:
    """`a.py::C.f#2` -> `a.py::C.f`: duplicate definitions are one symbol to a benchmark."""
    return _DUP.sub("", node_id)


def file_and_name(node_id: str) -> str:
    """`src/a.rs::Opts.parse#2` -> `src/a.rs::parse`: a definition as Multi-SWE-bench matches it,
    by its file and the last segment of its name (`A.f`, `ns.A.f` and `f` in one file are one);
    a file's own id unchanged."""
    plain = plain_node_id(node_id)
    if ID_SEP not in plain:
        return plain
    file, _, qualname = plain.partition(ID_SEP)
    return f"{file}{ID_SEP}{qualname.rsplit('.', 1)[-1]}"


def to_function_name_run(run: Run) -> dict[str, list[str]]:
    """Node rankings -> rankings of definitions by file and last name segment (`file_and_name`):
    file nodes dropped, first occurrence kept, so the first k items are the first k distinct
    named definitions (Multi-SWE-bench's function level)."""
    return {qid: _dedupe(file_and_name(d) for d in ranking) for qid, ranking in to_function_run(run).items()}


def to_function_name_qrels(qrels: Qrels) -> dict[str, dict[str, int]]:
    """Node judgments -> judgments by file and last name segment (file nodes dropped; the
    highest grade kept when two judged definitions share a key)."""
    out: dict[str, dict[str, int]] = {}
    for qid, rels in to_function_qrels(qrels).items():
        names: dict[str, int] = {}
        for doc, rel in rels.items():
            key = file_and_name(doc)
            names[key] = max(rel, names.get(key, rel))
        out[qid] = names
    return out


@dataclass(frozen=True, slots=True)
class Level:
    """A level of evaluation: how a node ranking and node judgments become that level's items
    (`from_files`: its judgments are the file judgments, not the node ones)."""

    name: str
    run: Callable[[Run], Mapping[str, Sequence[str]]]
    qrels: Callable[[Qrels], Qrels]
    from_files: bool = False
    about: str = ""


#: The levels a report can give, by name (`codenib eval --levels`).
LEVELS: dict[str, Level] = {lv.name: lv for lv in (
    Level("node", lambda run: run, lambda qrels: qrels, about="node ids as written"),
    Level("file", to_file_run, lambda qrels: qrels, from_files=True,
          about="a file ranks where its first node ranks"),
    Level("function", to_function_run, to_function_qrels,
          about="named definitions only (file nodes dropped), `#N` duplicates folded"),
    Level("function_name", to_function_name_run, to_function_name_qrels,
          about="named definitions matched by file and last name segment (Multi-SWE-bench)"),
)}
#: The levels a report gives unless asked for others.
DEFAULT_LEVELS: tuple[str, ...] = ("node", "file", "function")


def parse_levels(names: Iterable[str]) -> tuple[str, ...]:
    """Level names checked against `LEVELS` (order kept, repeats dropped); exit 2 if unknown."""
    out = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    unknown = [n for n in out if n not in LEVELS]
    if unknown or not out:
        raise BadInputError(f"unknown level(s) {unknown}" if unknown else "no level asked for",
                            fix="use some of: " + ", ".join(LEVELS))
    return out


def recall_curve(run: Run, qrels: Qrels, ks: Sequence[int],
                 qids: Iterable[str] | None = None) -> list[float]:
    """Mean R@k for each k in `ks` over `qids` (default: judged qids); missing queries score 0."""
    qids = list(judged_qids(qrels) if qids is None else qids)
    if not qids or not ks:
        return [math.nan for _ in ks]
    deepest = max(ks)
    # gained[r] = recall added at rank r, summed over queries; its prefix sums are R@k.
    gained = [0.0] * (deepest + 1)
    for qid in qids:
        relevant = {d for d, r in qrels.get(qid, {}).items() if r > 0}
        if not relevant:
            continue
        for i, d in enumerate(_dedupe(run.get(qid, ()))[:deepest]):
            if d in relevant:
                gained[i + 1] += 1.0 / len(relevant)
    prefix = list(itertools.accumulate(gained))
    return [prefix[k] / len(qids) for k in ks]



@dataclass(frozen=True, slots=True)
class GroupSummary:
    """A measure over groups (repositories, languages): the mean of the groups' values and the
    worst group, NaN groups (no query with gold there) left out."""

    mean: float
    worst: float
    worst_group: str   # "-" when no group has a value


def mean_and_worst(by_group: Mapping[str, float]) -> GroupSummary:
    """Mean over the groups and the lowest group (the first in `by_group` order on ties);
    NaN values are skipped, NaN / NaN / "-" when every value is NaN."""
    values = {g: v for g, v in by_group.items() if not math.isnan(v)}
    if not values:
        return GroupSummary(math.nan, math.nan, "-")
    worst = min(values, key=values.__getitem__)
    return GroupSummary(math.fsum(values.values()) / len(values), values[worst], worst)

# --- private helpers --------------------------------------------------------------------

_MEASURE_RE = re.compile(r"([A-Za-z]+)(?:@(\d+))?")
_DUP = re.compile(r"#\d+(?=\.|$)")


def _dedupe(ranking: Iterable[str]) -> list[str]:
    # A doc retrieved twice counts once, at its best rank (also what file aggregation needs).
    seen: set[str] = set()
    out = []
    for d in ranking:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def _n_relevant(rels: Mapping[str, int]) -> int:
    return sum(1 for r in rels.values() if r > 0)


def _recall(ranking: Sequence[str], rels: Mapping[str, int], k: int | None) -> float:
    n = _n_relevant(rels)
    if n == 0:
        return 0.0
    return sum(1 for d in ranking[:k] if rels.get(d, 0) > 0) / n


def _precision(ranking: Sequence[str], rels: Mapping[str, int], k: int | None) -> float:
    # trec_eval divides by the cutoff, not by how many docs came back; parse_measure
    # guarantees P has one (_NEEDS_CUTOFF), the fallback only keeps the type checker calm.
    k = k if k is not None else max(len(ranking), 1)
    return sum(1 for d in ranking[:k] if rels.get(d, 0) > 0) / k


def _reciprocal_rank(ranking: Sequence[str], rels: Mapping[str, int], k: int | None) -> float:
    for i, d in enumerate(ranking[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def _ndcg(ranking: Sequence[str], rels: Mapping[str, int], k: int | None) -> float:
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = math.fsum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg == 0:
        return 0.0
    dcg = math.fsum(max(rels.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    return dcg / idcg


def _average_precision(ranking: Sequence[str], rels: Mapping[str, int], k: int | None) -> float:
    n = _n_relevant(rels)
    if n == 0:
        return 0.0
    hits, total = 0, 0.0
    for i, d in enumerate(ranking[:k]):
        if rels.get(d, 0) > 0:
            hits += 1
            total += hits / (i + 1)
    return total / n


def _success(ranking: Sequence[str], rels: Mapping[str, int], k: int | None) -> float:
    return 1.0 if any(rels.get(d, 0) > 0 for d in ranking[:k]) else 0.0


def _accuracy(ranking: Sequence[str], rels: Mapping[str, int], k: int | None) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    if not relevant:
        return 0.0
    return 1.0 if relevant <= set(ranking[:k]) else 0.0


_Family = Callable[[Sequence[str], Mapping[str, int], "int | None"], float]

# ir_measures family name -> per-query function (ranking already deduplicated).
_FAMILIES: dict[str, _Family] = {
    "R": _recall,
    "P": _precision,
    "RR": _reciprocal_rank,
    "nDCG": _ndcg,
    "AP": _average_precision,
    "Success": _success,
    "Acc": _accuracy,
}
_NEEDS_CUTOFF = frozenset({"R", "P", "Success", "Acc"})
