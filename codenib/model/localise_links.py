"""Localisation evidence along the graph's `copies` and `declares` edges: a generated or
vendored copy's evidence credited to the definition it copies and a copy never ranked above
its source (`fold_copies`, `copy_sources_of`, `copy_caps`); companions (a header and its
source, a `.d.ts` and its JavaScript, an interface method and its implementation) sharing
evidence (`companion_files`, `companion_nodes`). On a graph without those edges (most, and
every index built before them) each function returns at once with nothing."""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from codenib.model.localise_inputs import LocaliseInputs

#: The edge along which a generated or vendored copy's evidence flows to its source
#: (`codenib.compiler.copies`).
COPY_EDGE = "copies"
#: The edge that links companions (`codenib.compiler.lang.companions`: a header and its
#: source, a `.d.ts` and its JavaScript, an interface method and its implementation); the
#: files and definitions whose companions are scored (the best, by `COMPANION_OF` and the node
#: runs): `f_companion` / `n_companion` are the best such seed's evidence.
COMPANION_EDGE = "declares"
COMPANION_FILE_SEEDS = 20
COMPANION_NODE_SEEDS = 50
COMPANION_OF = ("f_bm25", "f_title", "f_prose", "f_mention", "f_literal")


def fold_copies(inputs: LocaliseInputs, node_runs: Mapping[str, dict[int, float]], graph,
                nodes) -> tuple[LocaliseInputs, dict[str, dict[int, float]]]:
    """A generated or vendored copy's evidence credited to the definition it copies too
    (`copies` edges): each run's score (the best of the two), its mentions and the literals
    it holds. Without `copies` edges (older indexes) the inputs come back as they are."""
    if not _has_edges(graph, COPY_EDGE):
        return inputs, dict(node_runs)
    reached = {r for scores in node_runs.values() for r in scores}
    reached |= {p.row for p in inputs.priors if p.row is not None}
    reached |= {r for lit in inputs.literals for r in lit.rows}
    source = {r: s[0] for r in reached if nodes.kind[r] != "file"
              for s in [_linked(graph, r, COPY_EDGE, out=True)] if len(s) == 1}
    if not source:
        return inputs, dict(node_runs)
    runs = {}
    for name, scores in node_runs.items():
        folded = dict(scores)
        for r, v in scores.items():
            if r in source:
                folded[source[r]] = max(folded.get(source[r], 0.0), v)
        runs[name] = folded
    priors = inputs.priors + tuple(dataclasses.replace(p, file=nodes.file[source[p.row]], row=source[p.row])
                                   for p in inputs.priors if p.row in source)
    literals = tuple(dataclasses.replace(lit, rows=tuple(sorted(set(lit.rows) | {source[r] for r in lit.rows
                                                                                 if r in source})))
                     for lit in inputs.literals)
    return dataclasses.replace(inputs, priors=priors, literals=literals), runs


def copy_sources_of(graph, rows, nodes) -> set[int]:
    """The sources of the copies among `rows`: a copied definition's source, a copy file's
    source files (so that a copy is never ranked where its source is not)."""
    if not _has_edges(graph, COPY_EDGE):
        return set()
    return {s for r in rows for s in _linked(graph, r, COPY_EDGE, out=True)}


def copy_caps(graph, rows: np.ndarray, nodes) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """`FeatureTable.below`: each candidate that copies others, with its sources' candidate
    positions (a definition: the one it copies; a file: the files it copies from)."""
    if not _has_edges(graph, COPY_EDGE):
        return ()
    at = {int(r): i for i, r in enumerate(rows.tolist())}
    out = []
    for r, i in at.items():
        sources = tuple(at[s] for s in _linked(graph, r, COPY_EDGE, out=True) if s in at)
        if sources:
            out.append((i, sources))
    return tuple(out)


def companion_files(graph, per_file: Mapping[str, Mapping[str, float]], file_rows: Mapping[str, int],
                    nodes) -> dict[str, float]:
    """File -> `f_companion`: the evidence of its strongest companion (`declares` edges
    between file nodes, either way) among the `COMPANION_FILE_SEEDS` best-scored files, a
    file's evidence being the largest of its `COMPANION_OF` features (each capped at 1).
    `per_file`: evidence by group key; only keys that are files (`file_rows`) count."""
    if not _has_edges(graph, COMPANION_EDGE):
        return {}
    strength = {f: max(min(1.0, feats.get(k, 0.0)) for k in COMPANION_OF)
                for f, feats in per_file.items() if f in file_rows}
    out: dict[str, float] = {}
    for f in sorted(strength, key=lambda f: (-strength[f], f))[:COMPANION_FILE_SEEDS]:
        if strength[f] <= 0:
            break
        r = file_rows[f]
        for u in _linked(graph, r, COMPANION_EDGE, out=True) + _linked(graph, r, COMPANION_EDGE, out=False):
            g = nodes.file[u]
            if nodes.kind[u] == "file" and g != f:
                out[g] = max(out.get(g, 0.0), strength[f])
    return out


def companion_nodes(graph, node_runs: Mapping[str, Mapping[int, float]], mention: Mapping[int, float],
                    nodes) -> dict[int, float]:
    """Definition row -> `n_companion`: the evidence (best of the BM25 runs and the mention)
    of its strongest companion definition (`declares` edges, either way) among the
    `COMPANION_NODE_SEEDS` best-scored definitions."""
    if not _has_edges(graph, COMPANION_EDGE):
        return {}
    strength: dict[int, float] = {}
    for scores in (node_runs["bm25"], node_runs["title"], node_runs["prose"], mention):
        for r, v in scores.items():
            if nodes.kind[r] != "file":
                strength[r] = max(strength.get(r, 0.0), min(1.0, v))
    out: dict[int, float] = {}
    for r in sorted(strength, key=lambda r: (-strength[r], r))[:COMPANION_NODE_SEEDS]:
        if strength[r] <= 0:
            break
        for u in _linked(graph, r, COMPANION_EDGE, out=True) + _linked(graph, r, COMPANION_EDGE, out=False):
            if u != r and nodes.kind[u] != "file":
                out[u] = max(out.get(u, 0.0), strength[r])
    return out


# --- helpers ---------------------------------------------------------------------------------

def _has_edges(graph, edge: str) -> bool:
    """Whether the graph holds any `edge` edge (most hold no `copies`: their lookups are skipped)."""
    return graph is not None and graph.edge_counts().get(edge, 0) > 0


def _linked(graph, v: int, edge: str, out: bool) -> list[int]:
    """The vertices one `edge` away from `v` (successors when `out`, else predecessors); none
    without a graph, or with one whose types lack `edge` (a graph loaded by older code)."""
    if graph is None:
        return []
    try:
        pairs = graph.successors_idx(v, (edge,)) if out else graph.predecessors_idx(v, (edge,))
    except ValueError:
        return []
    return [u for u, _ in pairs]
