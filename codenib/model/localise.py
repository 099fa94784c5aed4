"""Files-first bug-report localisation: score files from several signals, then nodes inside them.

Inputs arrive already computed (`codenib.model.localise_inputs`: BM25 runs of the report and
its parts, a dense run when the caller has one (the `bug_localisation` plan fetches none, so its
dense features are 0), mention priors, the code graph); `features` and `rank` only score. A node's
score is its file's score plus its own features, each a weighted, named feature, so the trace
shows every signal's contribution. The weights are data (`codenib/data/localise_weights.json`,
read by the `load_*` functions of `codenib.model.weights`,
fitted on the 11 dev repositories by `scripts/localise_loo.py --fit-out`, measured
leave-one-repository-out) and scoring is one matrix product: deterministic and cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

# `is_library_path` and the report-side names below moved out; they stay importable from here.
from codenib.model.library_paths import is_library_path, is_nonlib_path  # noqa: F401
from codenib.model.localise_inputs import (DENSE_CHARS, DENSE_DEPTH, FILE_RUNS, RUNS, SPARSE_DEPTH,  # noqa: F401
                                          LocaliseInputs, dense_text, file_rows_of, inputs_for, search_runs,
                                          sparse_texts)
from codenib.model.localise_links import (companion_files, companion_nodes, copy_caps, copy_sources_of,
                                          fold_copies)
from codenib.model.names import distinctive, name_words
from codenib.model.reports.report import read_report
from codenib.ops.filter import is_test_definition, is_test_path

#: File features: broadcast to every node of the file.
FILE_FEATURES = ("f_bm25", "f_bm25_top3", "f_title", "f_prose", "f_dense", "f_mention",
                 "f_graph", "f_test", "f_nonlib", "f_literal", "f_companion")
#: Node features: the node's own evidence.
NODE_FEATURES = ("n_bm25", "n_title", "n_prose", "n_dense", "n_mention", "n_graph", "n_is_file",
                 "n_named", "n_parent_named", "n_class", "n_length", "n_literal", "n_name_words", "n_companion")
#: File-node features, as (file feature, its copy on the file node alone) pairs: a file node's
#: own weight on its file's evidence, beside the weight every node of the file shares. A file
#: ranks by its best node; with one weight for both, its evidence is weighed as the definitions
#: need it. Fitted after the other weights, with those held (`scripts/locfit.py`), so
#: definitions rank among themselves as before. `f_dense` and `f_companion` weigh 0: no copy.
FILE_NODE_OF = tuple((f, "fnode_" + f[2:]) for f in ("f_bm25", "f_bm25_top3", "f_title", "f_prose", "f_mention",
                                                      "f_graph", "f_test", "f_nonlib", "f_literal"))
FILE_NODE_FEATURES = tuple(fn for _, fn in FILE_NODE_OF)
FEATURES = FILE_FEATURES + NODE_FEATURES + FILE_NODE_FEATURES
#: Edge types that connect the code around a mention (LocAgent: the fix is usually within
#: two hops of what the issue names).
GRAPH_EDGES = ("calls", "references", "inherits", "imports")
#: Neighbours kept per seed node, by edge count: hubs would flood the list otherwise.
GRAPH_PER_SEED = 30
#: How far below its source a generated or vendored copy is kept (`localise_links.copy_caps`).
COPY_MARGIN = 1e-6
#: Library code first (`library_first`): tests, examples, documentation and build files the
#: report does not name rank below every library candidate.
LIBRARY_FIRST = True
#: Group key suffix of a source file's in-file test module (scored as a test file of its own).
_TEST_GROUP = "\0tests"

#: Hand-set weights, used when the packaged fitted weights are missing.
_HAND_WEIGHTS = {"f_bm25": 1.0, "f_bm25_top3": 0.5, "f_title": 0.5, "f_prose": 0.5,
                 "f_dense": 0.5, "f_mention": 1.0, "f_graph": 0.3, "f_test": -1.0, "f_nonlib": -0.5,
                 "n_bm25": 0.5, "n_title": 0.25, "n_prose": 0.25, "n_dense": 0.3, "n_mention": 0.5,
                 "n_graph": 0.1, "n_is_file": 0.0}


@dataclass(frozen=True)
class LocaliseWeights:
    """One weight per feature (`FEATURES`); a missing feature weighs 0.

    `source` names where they come from (the trace shows it); `history` holds the weights of
    history signals fitted with them (`codenib.model.history.fit`), which replace the plan's
    for those signals (`history_weights`)."""

    values: Mapping[str, float] = field(default_factory=lambda: dict(_HAND_WEIGHTS))
    source: str = "packaged"
    history: tuple[tuple[str, float], ...] = ()

    def history_weights(self, planned: Sequence[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
        """The plan's (signal, weight) pairs, each weight replaced by the fitted one if any."""
        fitted = dict(self.history)
        return tuple((name, fitted.get(name, w)) for name, w in planned)

    def vector(self) -> np.ndarray:
        return np.array([float(self.values.get(f, 0.0)) for f in FEATURES], dtype=np.float64)

    def to_dict(self) -> dict[str, float]:
        return {f: float(self.values.get(f, 0.0)) for f in FEATURES}


@dataclass(frozen=True)
class FeatureTable:
    """Candidate rows and their feature matrix (columns = `FEATURES`)."""

    rows: np.ndarray
    X: np.ndarray
    # (candidate, its sources' candidates): a copy scores at most its best source less
    # `COPY_MARGIN` (`copy_caps`); empty without `copies` edges
    below: tuple[tuple[int, tuple[int, ...]], ...] = ()

    def scores(self, weights: LocaliseWeights) -> np.ndarray:
        if not len(self.rows):
            return np.zeros(0)
        return self.capped(self.X @ weights.vector())

    def capped(self, scores: np.ndarray) -> np.ndarray:
        """Per-row `scores` (a copy) with every copy capped just below its best source."""
        s = np.array(scores, dtype=np.float64)
        for i, sources in self.below:
            s[i] = min(s[i], max(s[j] for j in sources) - COPY_MARGIN)
        return s

    def demoted(self) -> np.ndarray:
        """Rows in test code (unless the report is about tests) or in documentation, examples,
        benchmarks or build files, whose file and node the report does not name."""
        col = {f: i for i, f in enumerate(FEATURES)}
        X = self.X
        if not len(self.rows):
            return np.zeros(0, dtype=bool)
        outside = (X[:, col["f_test"]] > 0) | (X[:, col["f_nonlib"]] > 0)
        named = (X[:, col["f_mention"]] > 0) | (X[:, col["n_mention"]] > 0)
        return outside & ~named


@dataclass(frozen=True, slots=True)
class Scored:
    """One ranked node with its score and each feature's contribution."""

    row: int
    score: float
    contributions: dict[str, float]


def feature_table(text: str, index, sparse_search, dense_search=None) -> FeatureTable:
    """A report's candidate features on a loaded index, searched in this process (for fitting)."""
    report = read_report(text)
    runs = search_runs(text, report, sparse_search, dense_search, index.file_sparse)
    return features(inputs_for(report, runs, index), index.nodes, index.graph, file_rows_of(index.nodes))


def features(inputs: LocaliseInputs, nodes, graph, file_rows: Mapping[str, int]) -> FeatureTable:
    """The candidate nodes of a report and their features.

    Candidates are every node some run or mention reached, their graph neighbours, and the
    file node of every file any of them lives in.

    Args:
        nodes: the index's node table (node_id, kind, file columns).
        graph: the index's `CodeGraph` (typed neighbour lists), or None.
        file_rows: file path -> row of its file node.
    """
    n_nodes = len(nodes.node_id)
    node_runs = {name: normalised(inputs.runs.get(name), n_nodes, minmax=(name == "dense"))
                 for name in RUNS}
    inputs, node_runs = fold_copies(inputs, node_runs, graph, nodes)
    whole_files = {f"n_{run}": normalised(inputs.runs[name], n_nodes)
                   for run, name in FILE_RUNS.items() if name in inputs.runs}
    mention: dict[int, float] = {}
    file_mention: dict[str, float] = {}
    for p in inputs.priors:
        file_mention[p.file] = file_mention.get(p.file, 0.0) + p.confidence
        if p.row is not None:
            mention[p.row] = mention.get(p.row, 0.0) + p.confidence
    near = _graph_scores(graph, mention, nodes)

    # A source file's in-file test module (Rust `mod tests`) scores as a test file of its own:
    # its matches neither lift the file it tests nor escape the test demotion.
    groups: dict[int, str] = {}

    def group(r: int) -> str:
        g = groups.get(r)
        if g is None:
            f = nodes.file[r]
            in_tests = nodes.kind[r] != "file" and not is_test_path(f) and is_test_definition(f, nodes.qualname[r])
            g = groups[r] = f + _TEST_GROUP if in_tests else f
        return g

    literal: dict[int, float] = {}
    file_literal: dict[str, float] = {}
    for lit in inputs.literals:
        for r in lit.rows:
            literal[r] = literal.get(r, 0.0) + lit.weight
        for g in {group(r) for r in lit.rows}:
            file_literal[g] = file_literal.get(g, 0.0) + lit.weight

    per_file: dict[str, dict[str, float]] = {}

    def bump(f: str, key: str, value: float) -> None:
        feats = per_file.setdefault(f, {})
        feats[key] = max(feats.get(key, 0.0), value)

    tops: dict[str, list[float]] = {}
    for r, s in node_runs["bm25"].items():
        bump(group(r), "f_bm25", s)
        tops.setdefault(group(r), []).append(s)
    for f, scores in tops.items():
        per_file[f]["f_bm25_top3"] = sum(sorted(scores, reverse=True)[:3]) / 3.0
    for run, key in (("title", "f_title"), ("prose", "f_prose"), ("dense", "f_dense")):
        for r, s in node_runs[run].items():
            bump(group(r), key, s)
    for f, c in file_mention.items():
        bump(f, "f_mention", min(1.0, c))
    for r, s in near.items():
        bump(group(r), "f_graph", s)
    for f, s in file_literal.items():
        bump(f, "f_literal", math.log2(1.0 + s))
    for f, s in companion_files(graph, per_file, file_rows, nodes).items():
        bump(f, "f_companion", s)
    for f, feats in per_file.items():
        path, _, in_file_tests = f.partition(_TEST_GROUP[0])
        if (in_file_tests or is_test_path(path)) and not inputs.about_tests:
            feats["f_test"] = 1.0
        if is_nonlib_path(path) or path in inputs.borrowed:
            feats["f_nonlib"] = 1.0

    # The report's words as name words: `n_name_words` is the share of a definition's name
    # words (class and method alike) the report uses anywhere, in any spelling; a name the
    # report describes without writing it ("variables and attributes" for
    # `AttributeDocumenter`) scores where `n_named` (the exact name) cannot.
    report_words = frozenset().union(*map(name_words, inputs.words))
    cand = set(mention) | set(near) | set(literal)
    for run in ("bm25", "title", "prose", "dense"):
        cand |= set(node_runs[run])
    companion = companion_nodes(graph, node_runs, mention, nodes)
    cand |= set(companion)
    cand |= {file_rows[f] for f in per_file if f in file_rows}
    cand |= copy_sources_of(graph, cand, nodes)
    rows = np.array(sorted(cand), dtype=np.int64)
    col = {f: i for i, f in enumerate(FEATURES)}
    c_bm25, c_title, c_prose, c_dense = col["n_bm25"], col["n_title"], col["n_prose"], col["n_dense"]
    c_mention, c_graph, c_literal, c_is_file = col["n_mention"], col["n_graph"], col["n_literal"], col["n_is_file"]
    c_named, c_parent, c_class = col["n_named"], col["n_parent_named"], col["n_class"]
    c_words, c_length, c_companion = col["n_name_words"], col["n_length"], col["n_companion"]
    whole_cols = [(col[feat], scores) for feat, scores in whole_files.items()]
    file_node_cols = [(col[f], col[fn]) for f, fn in FILE_NODE_OF]
    # Rows are built as Python lists and made one array at the end: a numpy scalar store per
    # feature was most of this function's time (the values are the same floats either way).
    table = []
    for r in rows.tolist():
        x = [0.0] * len(FEATURES)
        for k, v in per_file.get(group(r), {}).items():
            x[col[k]] = v
        x[c_bm25] = node_runs["bm25"].get(r, 0.0)
        x[c_title] = node_runs["title"].get(r, 0.0)
        x[c_prose] = node_runs["prose"].get(r, 0.0)
        x[c_dense] = node_runs["dense"].get(r, 0.0)
        x[c_companion] = companion.get(r, 0.0)
        kind = nodes.kind[r]
        if kind == "file":
            for c, scores in whole_cols:
                x[c] = scores.get(r, 0.0)
            for c, c_node in file_node_cols:
                x[c_node] = x[c]
        x[c_mention] = min(1.0, mention.get(r, 0.0))
        x[c_graph] = near.get(r, 0.0)
        x[c_literal] = math.log2(1.0 + literal.get(r, 0.0))
        x[c_is_file] = 1.0 if kind == "file" else 0.0
        if kind != "file":
            parts = nodes.qualname[r].split(".")
            x[c_named] = 1.0 if distinctive(parts[-1]) and parts[-1] in inputs.words else 0.0
            x[c_parent] = 1.0 if any(p in inputs.words for p in parts[:-1] if distinctive(p)) else 0.0
            x[c_class] = 1.0 if kind == "class" else 0.0
            own = name_words(nodes.qualname[r])
            if own:
                x[c_words] = len(own & report_words) / len(own)
            x[c_length] = min(1.0, math.log1p(max(0, nodes.end_line[r] - nodes.start_line[r])) / 6.0)
        table.append(x)
    X = np.array(table, dtype=np.float64).reshape(len(rows), len(FEATURES))
    return FeatureTable(rows, X, copy_caps(graph, rows, nodes))


def rank(table: FeatureTable, weights: LocaliseWeights, node_ids: Sequence[str], limit: int = 100,
         explain: int = 0) -> list[Scored]:
    """Nodes by weighted feature sum (desc), ties by node id; the first `explain` carry each
    feature's contribution."""
    if not len(table.rows):
        return []
    plain = table.scores(weights)
    order, scores = ordered(table, plain, node_ids, limit)
    why = _contributions(table, weights, order[:explain], plain, scores)
    return [Scored(int(table.rows[i]), float(scores[i]), why.get(i, {})) for i in order]


def ordered(table: FeatureTable, plain: np.ndarray, node_ids: Sequence[str], limit: int = 100
            ) -> tuple[list[int], np.ndarray]:
    """The first `limit` table positions by per-row scores (copies already capped), library code
    first, ties by node id; and the scores they were ordered by."""
    scores = library_first(plain, table.demoted()) if LIBRARY_FIRST else plain
    order = sorted(range(len(table.rows)), key=lambda i: (-scores[i], node_ids[table.rows[i]]))[:limit]
    return order, scores


def explain(table: FeatureTable, weights: LocaliseWeights, rows: Sequence[int]) -> dict[int, dict[str, float]]:
    """Node row -> each feature's contribution to its score (as `rank` traces it), for the
    `rows` the table holds; for a ranking re-ordered after `rank` (the co-change walk) that
    explains only its final top."""
    if not len(table.rows):
        return {}
    at = {int(r): i for i, r in enumerate(table.rows.tolist())}
    plain = table.scores(weights)
    scores = library_first(plain, table.demoted()) if LIBRARY_FIRST else plain
    why = _contributions(table, weights, [at[r] for r in rows if r in at], plain, scores)
    return {int(table.rows[i]): c for i, c in why.items()}


def library_first(scores: np.ndarray, demoted: np.ndarray) -> np.ndarray:
    """`scores` with every `demoted` row moved below every other row, order kept within each
    group: a test, example or build file never outranks library code the report did not
    lead away from (fixes change library code; a linear weight can only lower such files,
    and on the dev sets examples and site scripts still came first)."""
    if not demoted.any() or demoted.all():
        return scores
    span = float(scores.max() - scores.min()) + 1.0
    return scores - span * demoted


def normalised(hits, n: int, minmax: bool = False) -> dict[int, float]:
    """Row -> score scaled to [0, 1] by the run's best score (min-max for cosine scores)."""
    if hits is None:
        return {}
    rows, scores = hits
    rows = np.asarray(rows).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    keep = (rows >= 0) & (rows < n) & np.isfinite(scores)
    rows, scores = rows[keep], scores[keep]
    if rows.size == 0:
        return {}
    hi = float(scores.max())
    lo = float(scores.min()) if minmax else 0.0
    if hi - lo <= 0:
        return {int(r): 1.0 for r in rows.tolist()}
    return {int(r): (float(s) - lo) / (hi - lo) for r, s in zip(rows.tolist(), scores.tolist())}


# --- helpers ---------------------------------------------------------------------------------

def _contributions(table: FeatureTable, weights: LocaliseWeights, positions: Sequence[int], plain: np.ndarray,
                   scores: np.ndarray) -> dict[int, dict[str, float]]:
    """Table position -> the non-zero weighted features (and the copy cap and library shift)."""
    if not positions:
        return {}
    w = weights.vector()
    capped = {i for i, _ in table.below}
    out = {}
    for i in positions:
        parts = table.X[i] * w
        contrib = {FEATURES[c]: round(float(parts[c]), 4) for c in np.flatnonzero(parts).tolist()}
        raw = float(table.X[i] @ w)
        if i in capped and plain[i] < raw:
            contrib["copy_below_source"] = round(float(plain[i]) - raw, 4)
        if scores[i] != plain[i]:
            contrib["library_first"] = round(float(scores[i] - plain[i]), 4)
        out[i] = contrib
    return out


def _graph_scores(graph, seeds: Mapping[int, float], nodes) -> dict[int, float]:
    """Proximity to the mentioned nodes: a seed itself (hop 0) scores its confidence; one hop
    over calls/references/inherits/imports, both directions, shares it among the seed's
    neighbours (1/sqrt of their number)."""
    out: dict[int, float] = {}
    if graph is None:
        return out
    for v, conf in sorted(seeds.items()):
        # Without hop 0 a mention lifts its neighbours' files and never its own: a report
        # that names one definition (a linked line) put every file but the named one up.
        if nodes.kind[v] != "file":
            out[v] = min(1.0, out.get(v, 0.0) + min(1.0, conf))
        near: dict[int, int] = {}
        for u, k in graph.successors_idx(v, GRAPH_EDGES) + graph.predecessors_idx(v, GRAPH_EDGES):
            if u != v and nodes.kind[u] != "file":
                near[u] = near.get(u, 0) + k
        if not near:
            continue
        kept = sorted(near, key=lambda u: (-near[u], u))[:GRAPH_PER_SEED]
        share = min(1.0, conf) / math.sqrt(len(near))
        for u in kept:
            out[u] = min(1.0, out.get(u, 0.0) + share)
    return out


def trace_of(scored: Sequence[Scored], nodes, top: int = 10) -> list[dict[str, Any]]:
    """The trace of the top results: each signal's contribution."""
    return [{"node_id": nodes.node_id[s.row], "score": round(s.score, 4), "contributions": s.contributions}
            for s in scored[:top]]
