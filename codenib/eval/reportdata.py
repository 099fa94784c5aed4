"""What an evaluation is: its options and its result. The bottom of `codenib.eval`'s report
modules: `report` computes an `Evaluation`, `breakdowns`, `markdown`, `html` and `plots`
read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from codenib.eval import metrics

#: Measures whose planner regret is reported (the issue asks for these two).
REGRET_MEASURES: tuple[str, ...] = ("RR@10", "R@10")
CURVE_KS: tuple[int, ...] = tuple(range(1, 101))


@dataclass(frozen=True, slots=True)
class EvalOptions:
    """What `evaluate_results` computes."""

    measures: tuple[str, ...] = metrics.DEFAULT_MEASURES
    levels: tuple[str, ...] = metrics.DEFAULT_LEVELS   # of metrics.LEVELS; those the qrels allow are given
    regret_measures: tuple[str, ...] = REGRET_MEASURES
    curve_ks: tuple[int, ...] = CURVE_KS
    permutations: int = 10_000
    seed: int = 0
    plan: str | None = None  # use only this plan of a --mode all run


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Everything one `codenib eval` computed; `summary` is the content of metrics.json."""

    summary: dict
    per_query: dict[str, dict[str, dict[str, dict[str, float]]]]  # system -> level -> measure -> qid -> value
    curves: dict[str, dict[str, list[float]]]                      # system -> level -> R@k for k in curve_ks
    curve_ks: tuple[int, ...] = CURVE_KS
    warnings: list[str] = field(default_factory=list)
    runs: dict[str, dict[str, list[str]]] = field(default_factory=dict)        # system -> qid -> node ids
    judgments: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # level -> qid -> item -> rel
    query_info: dict[str, dict[str, str]] = field(default_factory=dict)  # qid -> text/plan/kind/index/trace/error
