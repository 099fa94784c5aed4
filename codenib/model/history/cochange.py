"""Co-change as the bug_localisation plan's expansion step: from the best-ranked files and
definitions, walk the history's `co_changed` edges (`History.partners`) to what was changed
together with them, and add that evidence to the ranking with one weight.

    evidence(x) = sum over seeds s (the SEED_FILES best files, or the SEED_NODES best
                  definitions, seed i counting 1 / (i + 1)) of weight(s -> x)
    score(n)   += COCHANGE_WEIGHT * (evidence_files(file of n) / max + evidence_nodes(n) / max)

Only candidates the ranking already holds move: a node the walk reaches that no run found
would join without its localisation features, test demotion included (a library file's most
frequent partner is usually its test file).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from codenib.index.history import Evidence
from codenib.model.localise import Scored

#: Seeds of the walk: the best files and the best definitions of the ranking. Deeper seeds
#: are mostly wrong guesses, and their partners would crowd the right ones' out.
SEED_FILES = 5
SEED_NODES = 10
#: The weight of co-change evidence in the bug_localisation plan (0: the edges are not
#: walked). Chosen leave-one-repository-out over the 11 dev repositories (`scripts/
#: dev_history_loo.py`, 160 reports, grid 0, 0.5, 1, 2, 4): 1 in all 11 folds; mean file
#: Acc@5 0.692 -> 0.705 and function Acc@10 0.552 -> 0.593 against no history (fd, fmt, grpc-go
#: and jq gain at functions; jq loses one report at files). On 76 reports 0.5 had moved one
#: report each way and stayed off. See docs/history.md.
COCHANGE_WEIGHT = 1.0


def walk(history, ranked_ids: Sequence[str]) -> Evidence:
    """Co-change evidence from a ranking (node ids, best first; file ids have no `::`)."""
    seen_files: list[str] = []
    seeds_nodes: list[str] = []
    for nid in ranked_ids:
        file = nid.split("::", 1)[0]
        if file not in seen_files and len(seen_files) < SEED_FILES:
            seen_files.append(file)
        if "::" in nid and len(seeds_nodes) < SEED_NODES:
            seeds_nodes.append(nid)
        if len(seen_files) >= SEED_FILES and len(seeds_nodes) >= SEED_NODES:
            break
    return Evidence(_spread(history.partners("file"), seen_files), _spread(history.partners("node"), seeds_nodes))


def _spread(partners: Mapping[str, list[tuple[str, float]]], seeds: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for i, s in enumerate(seeds):
        for dst, w in partners.get(s, ()):
            out[dst] = out.get(dst, 0.0) + w / (i + 1)
    return out


def expand(scored: Sequence[Scored], history, weight: float, nodes, limit: int) -> tuple[list[Scored], dict]:
    """`scored` (every candidate, best first) with co-change evidence added, re-ranked (ties
    by node id), cut to `limit`; and the trace detail (seeds' evidence sizes)."""
    ids = nodes.node_id
    evidence = walk(history, [ids[s.row] for s in scored])
    files = _scaled(evidence.files)
    own = _scaled(evidence.nodes)
    base = {s.row: s for s in scored}
    score: dict[int, float] = {}
    extra: dict[int, float] = {}
    for r, s in base.items():
        extra[r] = v = weight * (files.get(nodes.file[r], 0.0) + own.get(ids[r], 0.0))
        score[r] = s.score + v
    order = sorted(score, key=lambda r: (-score[r], ids[r]))[:limit]
    out = []
    for r in order:
        contrib = dict(base[r].contributions)
        if extra[r]:
            contrib["history:co_change"] = round(extra[r], 4)
        out.append(Scored(r, score[r], contrib))
    detail = {"weight": weight, "files": len(evidence.files), "nodes": len(evidence.nodes)}
    return out, detail


def _scaled(scores: Mapping[str, float]) -> dict[str, float]:
    top = max(scores.values(), default=0.0)
    return {k: v / top for k, v in scores.items()} if top > 0 else {}


__all__ = ["COCHANGE_WEIGHT", "SEED_FILES", "SEED_NODES", "expand", "walk"]
