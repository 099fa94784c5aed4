"""Candidate evidence and models measured against the shipped localisation, leave-one-repository-out
(`dev_history_loo.py --variants NAME,...`): the rows of docs/bug-reports.md's "What limits the
fitted model" that are not kept, so that anyone can run them again.

Each variant ranks every report of the 11 dev repositories; the caller prints its rows beside
the shipped ranking (per repository, the mean with its 95% margin, the worst) and the paired
test over repositories against it (`devhistory.print_rows`, `devhistory.print_tests`).

- `in_sample`: the localisation weights fitted on all 11 repositories and scored on the same
  11, with the shipped history: the ceiling of the linear model over today's features.
- `prf`: pseudo-relevance feedback. The terms of each report's top `PRF_SEEDS` definitions under
  its own held-out ranking (`expansion_terms`) are searched again over the node BM25 index, as
  a node column and its file's best (in the unused dense columns); every fold refitted.
- `trees`: gradient-boosted trees (scikit-learn) on the same rows and sample weights, without
  history, to compare with the linear fit without history.
- `change_proneness`: the history's recency-weighted change counts of each file
  (`history.evidence.scaled`), as a fitted column of file nodes in the second stage (beside the
  `fnode_*` copies) instead of the additive prior; every fold refitted.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

import devhistory
import locfit

from codenib.eval import metrics
from codenib.model import localise
from codenib.model.history import evidence as history_evidence

#: Feedback seeds: the report's top definitions under its held-out ranking.
PRF_SEEDS = 5
#: Expansion terms searched (the report's own terms left out: its runs already hold them).
PRF_TERMS = 10
#: BM25 depth of the expansion search, as the whole-report run's.
PRF_DEPTH = 1000
#: Trees: few leaves and a slow rate, the best of the three settings measured.
TREE_PARAMS = {"max_leaf_nodes": 7, "learning_rate": 0.05, "max_iter": 200, "l2_regularization": 1.0}


@dataclass(frozen=True)
class Context:
    """What every variant reads: the cases of `devhistory.load_cases` (held-out weights and
    history evidence), their feature tables, the gold, and where each report's index lives."""

    cases: Mapping[str, devhistory.Case]
    tables: locfit.Tables
    gold_files: Mapping
    gold_funcs: Mapping
    key_of: Mapping[str, Callable[[str], str]]
    index_path: Callable[[str], Path]

    def key(self, qid: str) -> Callable[[str], str]:
        return self.key_of.get(qid, metrics.plain_node_id)

    @property
    def repos(self) -> list[str]:
        return sorted({c.repo for c in self.cases.values()})


Variant = Callable[[Context], dict[str, list[str]]]


def expansion_terms(seeds: Sequence[Sequence[str]], doc_freq: Callable[[str], int | None], n_docs: int,
                    k: int, exclude: frozenset[str] = frozenset()) -> list[str]:
    """The `k` best feedback terms of ranked seed documents (token lists, best first): each term
    weighs the sum over seeds of 1 / (1 + rank) x its share of the seed's tokens x its BM25 IDF
    (terms the index lacks, and `exclude`, left out); ties by term."""
    weight: Counter = Counter()
    for rank, tokens in enumerate(seeds):
        if not tokens:
            continue
        for term, count in Counter(tokens).items():
            df = doc_freq(term)
            if df is None or term in exclude:
                continue
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            weight[term] += count / len(tokens) * idf / (1 + rank)
    return [t for t, _ in sorted(weight.items(), key=lambda tw: (-tw[1], tw[0]))[:k]]


def rank_scores(table: localise.FeatureTable, node_ids: Sequence[str], scores: np.ndarray,
                limit: int = 100) -> list[str]:
    """Node ids by any per-row scores, ordered as `localise.rank` orders a linear score (copies
    capped below their sources, library code first, ties by node id)."""
    order, _ = localise.ordered(table, table.capped(scores), node_ids, limit)
    return [node_ids[table.rows[i]] for i in order]


def in_sample(ctx: Context) -> dict[str, list[str]]:
    """Weights fitted on every report, scored on the same reports (train = test)."""
    weights = locfit.fit(list(ctx.tables), ctx.tables, ctx.gold_files, ctx.gold_funcs, key_of=ctx.key)
    return {q: devhistory.rank(dataclasses.replace(c, loc=weights), devhistory.shipped())
            for q, c in ctx.cases.items()}


def prf(ctx: Context) -> dict[str, list[str]]:
    """Feedback columns added (`_with_feedback`), every fold refitted."""
    tables = {q: _with_feedback(ctx, q) for q in ctx.cases}
    return _refitted(ctx, tables, drop=())


def trees(ctx: Context) -> dict[str, list[str]]:
    """Gradient-boosted trees per fold on the linear fit's rows and sample weights, no history."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    keep = np.array([f not in locfit.DENSE_FEATURES for f in localise.FEATURES])
    out = {}
    for held in ctx.repos:
        train = [q for q, c in ctx.cases.items() if c.repo != held]
        data = locfit.training_rows(train, ctx.tables, ctx.gold_files, ctx.gold_funcs, ctx.key)
        model = HistGradientBoostingClassifier(random_state=0, **TREE_PARAMS).fit(
            np.vstack([x for x, _, _ in data])[:, keep], np.concatenate([y for _, y, _ in data]),
            sample_weight=np.concatenate([w for _, _, w in data]))
        for q, c in ctx.cases.items():
            if c.repo == held:
                table, ids = ctx.tables[q]
                out[q] = rank_scores(table, ids, model.decision_function(table.X[:, keep]))
    return out


def change_proneness(ctx: Context) -> dict[str, list[str]]:
    """Each file node's scaled change count as a second-stage column, every fold refitted."""
    col = localise.FEATURES.index("n_dense")
    tables = {}
    for q, case in ctx.cases.items():
        table, ids = ctx.tables[q]
        files, _ = history_evidence.scaled(case.evidence["change_proneness"], "change_proneness")
        X = table.X.copy()
        X[:, col] = [files.get(ids[r], 0.0) if "::" not in ids[r] else 0.0 for r in table.rows.tolist()]
        tables[q] = (localise.FeatureTable(table.rows, X, table.below), ids)
    return _refitted(ctx, tables, drop=("f_dense",), also_staged=("n_dense",))


VARIANTS: dict[str, Variant] = {"in_sample": in_sample, "prf": prf, "trees": trees,
                                "change_proneness": change_proneness}


def check_names(names: Sequence[str]) -> list[str]:
    """The variants named, in order; an unknown name raises ValueError listing the valid ones."""
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant {', '.join(unknown)}: choose from {', '.join(VARIANTS)}")
    return list(names)


def run(names: Sequence[str], ctx: Context) -> None:
    """Print each named variant's rows beside the shipped ranking and its paired test against it."""
    scorer = devhistory.Scorer(ctx.cases, ctx.gold_files, ctx.gold_funcs, ctx.key_of)
    shipped = "with history (shipped)"
    per_query = {"no history": scorer.hits(()), shipped: scorer.hits(devhistory.shipped())}
    for name in check_names(names):
        per_query[name] = scorer.score(VARIANTS[name](ctx))
    repos = ctx.repos
    print(f"\nvariants, leave-one-repository-out over {len(repos)} repositories (docs/bug-reports.md):")
    devhistory.print_rows({n: devhistory.repo_means(h, ctx.cases, repos) for n, h in per_query.items()}, repos)
    devhistory.print_tests(per_query, ctx.cases, shipped)


# --- helpers ---------------------------------------------------------------------------------

def _refitted(ctx: Context, tables: locfit.Tables, drop: tuple[str, ...],
              also_staged: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Every repository's reports ranked (shipped history) with weights refitted on the other
    repositories' `tables`."""
    out = {}
    for held in ctx.repos:
        train = [q for q, c in ctx.cases.items() if c.repo != held]
        weights = locfit.fit(train, tables, ctx.gold_files, ctx.gold_funcs, drop=drop, key_of=ctx.key,
                             also_staged=also_staged)
        for q, c in ctx.cases.items():
            if c.repo == held:
                case = dataclasses.replace(c, table=tables[q][0], loc=weights)
                out[q] = devhistory.rank(case, devhistory.shipped())
    return out


def _with_feedback(ctx: Context, qid: str) -> tuple[localise.FeatureTable, list[str]]:
    """The report's table with the feedback search's node scores in `n_dense` and each file's
    best in `f_dense`."""
    from codenib.index.loaded import load_index

    case = ctx.cases[qid]
    table, ids = ctx.tables[qid]
    index = load_index(ctx.index_path(qid), dense=False, sparse=True, graph=False)
    sparse, texts = index.sparse, index.texts()
    indptr = sparse.retriever.scores["indptr"]
    vocab = sparse.retriever.vocab_dict

    def doc_freq(term: str) -> int | None:
        t = vocab.get(term)
        return int(indptr[t + 1] - indptr[t]) if t is not None and t < len(indptr) - 1 else None

    held_out = devhistory.rank(case, devhistory.shipped())
    seeds = [texts[index.row_of[i]] or "" for i in held_out if "::" in i][:PRF_SEEDS]
    own = frozenset(sparse.tokenize([case.text])[0]) if case.text else frozenset()
    terms = expansion_terms(sparse.tokenize(seeds), doc_freq, sparse.num_docs, PRF_TERMS, own)
    rows, scores = sparse.search_tokens([terms], PRF_DEPTH)
    node = localise.normalised((rows[0], scores[0]), len(ids))
    files = [ids[r].split("::", 1)[0] for r in table.rows.tolist()]
    best: dict[str, float] = {}
    for r, v in node.items():
        f = ids[r].split("::", 1)[0]
        best[f] = max(best.get(f, 0.0), v)
    col = {f: i for i, f in enumerate(localise.FEATURES)}
    X = table.X.copy()
    X[:, col["n_dense"]] = [node.get(int(r), 0.0) for r in table.rows.tolist()]
    X[:, col["f_dense"]] = [best.get(f, 0.0) for f in files]
    return localise.FeatureTable(table.rows, X, table.below), ids
