"""`codenib query INDEX_DIR "TEXT"`: answer one query and show its plan, why, and the ranked
nodes; the full trace with --explain or --json."""

from __future__ import annotations

import argparse
import json
import sys

from codenib.commands.command import Command
from codenib.engines.backends import BACKENDS
from codenib.model.planner import MODES, RERANKERS
from codenib.model.planspec import BUDGETS
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", metavar="INDEX_DIR", help="an index folder built by `codenib index`")
    p.add_argument("text", metavar="TEXT", help="the question, a symbol name, or a bug report")
    p.add_argument("--budget", choices=tuple(BUDGETS), default="balanced",
                   help="how much work the query may cost")
    p.add_argument("--mode", choices=MODES, default="auto",
                   help="auto lets the planner choose (long bug reports get bug_localisation, which only auto "
                        "picks); the others force one plan")
    p.add_argument("--rerank", choices=RERANKERS, default=None,
                   help="force a reranker (default: the budget decides)")
    p.add_argument("--llm-config", metavar="TOML_OR_JSON",
                   help="LLM reranker settings (endpoint, model, ...); the key comes from $CODENIB_LLM_API_KEY")
    p.add_argument("--localise-weights", metavar="FILE",
                   help="bug-report localisation weights (JSON; default: the index's fitted weights "
                        "(codenib index --fit-weights), else the packaged ones)")
    p.add_argument("--encoder", choices=tuple(BACKENDS), default=None,
                   help="query encoder backend (default: the index's own; another one is refused)")
    p.add_argument("-k", type=int, default=10, help="results to show")
    p.add_argument("--json", action="store_true",
                   help="machine-readable output on stdout: the plan, the results and the full trace")
    p.add_argument("--explain", action="store_true",
                   help="also print how the planner read the query (each signal, the symbol-table matches of "
                        "the candidate targets with their specificity, the rule that fired) and the full trace")


def run(args: argparse.Namespace) -> int:
    from codenib.core.errors import QueryError
    from codenib.core.querytext import clean_query_text
    from codenib.index.loaded import check_encoder
    from codenib.model.planspec import BUDGETS, PlanOptions
    from codenib.model.session import RetrievalSession

    if args.k < 1:
        raise QueryError(f"-k must be at least 1, got {args.k}", fix="pass -k 10")
    # Undecodable bytes of the argument arrive as lone surrogates; cleaned as a query set's are.
    cleaned = clean_query_text(args.text)
    if cleaned.changed:
        print(f"codenib query: warning: the query text was cleaned: {cleaned.describe()}", file=sys.stderr)
    text = cleaned.text
    if not text.strip():
        raise QueryError("the query text is empty", fix='pass a question, e.g. codenib query IDX "who calls main?"')
    weights = None
    if args.localise_weights:
        from codenib.model.weights import load_weights

        weights = tuple(sorted(load_weights(args.localise_weights).values.items()))
    llm = _llm_config(args.llm_config)   # a bad config fails before the index loads
    # The options argparse checked, typed once.
    options = PlanOptions(BUDGETS[args.budget], args.mode, args.rerank)
    session = RetrievalSession.load(args.index, llm=llm, weights=weights)
    check_encoder(session.index.manifest, args.encoder, args.index)
    session.check()
    # Planned here, in-process, as the batch driver plans; the executor runs the plan.
    result = session.search(text, options, k=args.k)
    if result.error:
        raise QueryError(result.error, fix="rephrase the query")
    if result.rerank_error:
        # The results stand (in their order before the rerank where it failed); exit 0.
        print(f"codenib query: warning: {result.rerank_error[:500]} (the results keep their order "
              f"before the rerank where it failed)", file=sys.stderr)
    if cleaned.changed:
        result.trace["query_text"] = cleaned.changes()
    if args.json:
        json.dump({
            "query": result.query, "plan": result.plan, "latency_ms": result.latency_ms,
            "results": [{"rank": i, "node_id": c.node_id, "file": c.file, "kind": c.kind,
                         "start_line": c.start_line, "end_line": c.end_line, "score": c.score,
                         "source": c.source} for i, c in enumerate(result.candidates, start=1)],
            "trace": result.trace,
        }, sys.stdout, indent=2)
        print()
        return 0
    for line in summary_lines(result):
        print(line)
    if args.explain:
        print()
        for line in explain_lines(result.trace):
            print(line)
        print("trace:")
        print(json.dumps(result.trace, indent=2, default=str))
    return 0


#: The plain output's bounds: why-lines shown (the rest under --explain) and their length.
WHY_LINES = 2
WHY_CHARS = 160


def summary_lines(result) -> list[str]:
    """The plain output of one query: its plan, a short why and the ranked results (rank,
    score, node id, lines); the trace is left to --explain and --json."""
    out = [f"plan: {result.plan}   ({result.latency_ms:.1f} ms)"]
    reasons = [str(r) for r in result.trace.get("reasons", [])]
    for reason in reasons[:WHY_LINES]:
        out.append("  why: " + (reason if len(reason) <= WHY_CHARS else reason[:WHY_CHARS - 3] + "..."))
    if len(reasons) > WHY_LINES:
        out.append(f"  ({len(reasons) - WHY_LINES} more reason(s): --explain)")
    if not result.candidates:
        out.append("  (no results)")
    for i, c in enumerate(result.candidates, start=1):
        out.append(f"{i:3d}. {c.score:9.4f}  {c.node_id}  (lines {c.start_line}-{c.end_line})")
    return out


def explain_lines(trace: dict) -> list[str]:
    """How the planner read a query, as lines: signals, intent, symbol-table evidence, choice."""
    s = trace.get("signals", {})
    yes = lambda v: "yes" if v else "no"  # noqa: E731
    out = ["signals:",
           f"  lexical {s.get('lexical')}  semantic {s.get('semantic')}  structural {s.get('structural')}  "
           f"words {s.get('words')}  long text {yes(s.get('long_text'))}  about tests {yes(s.get('about_tests'))}",
           f"  relation {s.get('relation') or '-'}  direction {s.get('direction') or '-'}  "
           f"target {s.get('target') or '-'}  targets {', '.join(s.get('targets') or []) or '-'}",
           f"  reading: {s.get('rule') or '-'}"]
    keywords = {k: v for k, v in (s.get("keywords") or {}).items() if v}
    if keywords:
        out.append("  keywords: " + "; ".join(f"{k} {', '.join(v[:5])}" for k, v in keywords.items()))
    evidence = s.get("evidence") or []
    out.append("symbol table (candidate targets, best first):")
    if not evidence:
        out.append("  (none)")
    else:
        width = max(len(e["word"]) for e in evidence)
        out.append(f"  {'word':<{width}}  code  level            defs  specificity  score")
        for e in evidence:
            out.append(f"  {e['word']:<{width}}  {yes(e['code_like']):<4}  {e['level'] or '-':<15}  "
                       f"{e['definitions']:>4}  {e['specificity']:>11.3f}  {e['score']:.3f}")
    out.append(f"choice: mode {trace.get('mode')}, intended {trace.get('intended')}, plan {trace.get('plan')}, "
               f"budget {trace.get('budget')}")
    return out


def _llm_config(path: str | None):
    """The `LLMConfig` of `--llm-config` (BadInputError naming the file), its key's route checked."""
    if not path:
        return None
    from codenib.commands.llm_config import read_llm_config

    config = read_llm_config(path)
    config.check_key_route()   # before the index loads
    return config


COMMAND = Command("Answer one query against an index; print the plan, why it was chosen and the ranked nodes "
                  "(the full trace with --explain or --json).",
                  add_arguments, run)
