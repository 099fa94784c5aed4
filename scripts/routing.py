#!/usr/bin/env python3
"""Routing accuracy of the planner on a labelled question set, grounded in real indexes.

Usage:
    python scripts/routing.py QUESTIONS.jsonl --index-root ~/.cache/codenib-dev/idx [--misses]

Each line: {"package": "click", "query": "...", "category": "graph" | "lookup" | "behaviour",
"relation": "calls" | ... (graph), "direction": "incoming" | "outgoing" (graph)}. The
planner plans every question with the symbol table of `INDEX_ROOT/<package>` (and, for
comparison, without it). A graph question is routed right when it gets `structural_graph`
with the labelled direction; a look-up when it gets `fast_lexical`; a behaviour question
when it gets `semantic` or `hybrid_fusion`. Relation agreement is reported on its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from codenib.index.loaded import load_symbols
from codenib.model.planner import RetrievalPlanner
from codenib.model.signals import query_signals

EXPECTED_PLANS = {"graph": ("structural_graph",), "lookup": ("fast_lexical",),
                  "behaviour": ("semantic", "hybrid_fusion")}


def route(rows: list[dict], tables: dict) -> list[dict]:
    """Plan every row; add `plan`, `direction_got`, `relation_got` and `ok`."""
    planner = RetrievalPlanner()
    out = []
    for row in rows:
        s = query_signals(row["query"], tables.get(row.get("package")))
        plan = planner.plan(s)[0].plan
        ok = plan in EXPECTED_PLANS[row["category"]]
        if row["category"] == "graph":
            ok = ok and s.direction == row.get("direction")
        out.append({**row, "plan": plan, "direction_got": s.direction, "relation_got": s.relation,
                    "rule": s.rule, "ok": ok})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("questions", type=Path, help="labelled questions (JSONL)")
    ap.add_argument("--index-root", type=Path, default=Path.home() / ".cache/codenib-dev/idx",
                    help="folder with one index per package")
    ap.add_argument("--misses", action="store_true", help="list the questions routed wrong")
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    bad = [i for i, r in enumerate(rows, 1) if r.get("category") not in EXPECTED_PLANS]
    if bad:
        print(f"error: {args.questions}: line {bad[0]}: field 'category' must be one of "
              f"{', '.join(EXPECTED_PLANS)}", file=sys.stderr)
        return 2
    tables = {p: load_symbols(args.index_root / p) for p in sorted({r.get("package") for r in rows})
              if (args.index_root / str(p) / "manifest.json").is_file()}
    with_table, without = route(rows, tables), route(rows, {})
    print("| group | questions | routed right (with symbol table) | without table | relation agrees |")
    print("|---|---|---|---|---|")
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(with_table):
        groups["all"].append(i)
        groups[r["category"]].append(i)
        if r["category"] == "graph":
            groups[f"graph: {r.get('relation')} {r.get('direction')}"].append(i)
    for name in sorted(groups, key=lambda g: (g != "all", not g.startswith(("lookup", "behaviour", "graph")) , g)):
        idx = groups[name]
        acc = sum(with_table[i]["ok"] for i in idx) / len(idx)
        base = sum(without[i]["ok"] for i in idx) / len(idx)
        graph = [i for i in idx if rows[i]["category"] == "graph"]
        rel = (f"{sum(with_table[i]['relation_got'] == rows[i].get('relation') for i in graph) / len(graph):.3f}"
               if graph else "-")
        print(f"| {name} | {len(idx)} | {acc:.3f} | {base:.3f} | {rel} |")
    if args.misses:
        for r in with_table:
            if not r["ok"]:
                print(f"MISS [{r['category']} {r.get('relation') or ''} {r.get('direction') or ''}] {r['query']!r} -> "
                      f"{r['plan']} {r['relation_got']} {r['direction_got']} ({r['rule']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
