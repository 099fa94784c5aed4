"""`codenib query INDEX_DIR "TEXT"`: answer one query and show the plan and its trace."""

from __future__ import annotations

import argparse
import json
import sys

from codenib.commands import Command
from codenib.engines.backends import BACKENDS
from codenib.model.planner import BUDGETS, MODES, RERANKERS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("index", metavar="INDEX_DIR", help="an index folder built by `codenib index`")
    p.add_argument("text", metavar="TEXT", help="the question, a symbol name, or a bug report")
    p.add_argument("--budget", choices=tuple(BUDGETS), default="balanced",
                   help="how much work the query may cost")
    p.add_argument("--mode", choices=MODES, default="auto",
                   help="auto lets the planner choose; the others force one plan")
    p.add_argument("--rerank", choices=RERANKERS, default=None,
                   help="force a reranker (default: the budget decides)")
    p.add_argument("--llm-config", metavar="TOML_OR_JSON",
                   help="LLM reranker settings (endpoint, model, ...); the key comes from $CODENIB_LLM_API_KEY")
    p.add_argument("--localise-weights", metavar="FILE",
                   help="bug-report localisation weights (JSON; default: the packaged ones)")
    p.add_argument("--encoder", choices=tuple(BACKENDS), default=None,
                   help="query encoder backend (default: the index's own; another one is refused)")
    p.add_argument("-k", type=int, default=10, help="results to show")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def run(args: argparse.Namespace) -> int:
    from codenib.errors import QueryError
    from codenib.index.loaded import check_encoder, load_index
    from codenib.model.pipelines import RetrieveRerankPipeline

    if args.k < 1:
        raise QueryError(f"-k must be at least 1, got {args.k}", fix="pass -k 10")
    if not args.text.strip():
        raise QueryError("the query text is empty", fix='pass a question, e.g. codenib query IDX "who calls main?"')
    weights = None
    if args.localise_weights:
        from codenib.model.localise import load_weights

        weights = load_weights(args.localise_weights)
    index = load_index(args.index)
    check_encoder(index.manifest, args.encoder, args.index)
    llm = _llm(args.llm_config)
    pipe = RetrieveRerankPipeline(index, retrieval_mode=args.mode, budget=args.budget, rerank=args.rerank, llm=llm,
                                  localise_weights=weights)
    # Planned here, in-process, as the batch driver plans; the pipeline executes the plan.
    result = pipe.execute([args.text], pipe.plan([args.text]), k=args.k)[0]
    if result.error:
        raise QueryError(result.error, fix="rephrase the query")
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
    print(f"plan: {result.plan}   ({result.latency_ms:.1f} ms)")
    for reason in result.trace.get("reasons", []):
        print(f"  why: {reason}")
    width = max((len(c.node_id) for c in result.candidates), default=10)
    for i, c in enumerate(result.candidates, start=1):
        print(f"{i:3d}. {c.node_id:<{width}}  {c.start_line}-{c.end_line}  {c.score:.4f}  [{c.source}]")
    if not result.candidates:
        print("  (no results)")
    print("trace: " + json.dumps({k: v for k, v in result.trace.items() if k != "signals"}, default=str))
    return 0


def _llm(path: str | None):
    if not path:
        return None
    from codenib.ops.llm import LLMReranker
    from codenib.ops.llm_client import LLMConfig
    from codenib.specs import read_config_file

    return LLMReranker(LLMConfig.from_dict(read_config_file(path, section="llm")))


COMMAND = Command("Answer one query against an index; print ranked nodes, the plan and its trace.",
                  add_arguments, run)
