"""`codenib eval --results RESULTS_DIR --qrels QRELS.parquet`: evaluate a run and report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codenib.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    from codenib.eval.metrics import DEFAULT_MEASURES

    p.add_argument("--results", required=True, metavar="RESULTS_DIR",
                   help="--out folder of `codenib run` (part-*.parquet, plans.parquet, _SUCCESS), "
                        "or a TREC run file")
    p.add_argument("--qrels", metavar="QRELS",
                   help="judgments: Parquet with qid, node_id and/or file, relevance (int, >0 relevant), "
                        "or a TREC qrels file; required unless only --export-trec is asked for")
    p.add_argument("--out", metavar="REPORT_DIR",
                   help="write metrics.json, per_query.parquet, report.md and PNG plots here "
                        "(replaced atomically); without it metrics.json goes to stdout")
    p.add_argument("--queries", metavar="QUERIES",
                   help="the query set (Parquet or JSONL): restricts evaluation to its qids and "
                        "gives the kind/index breakdowns")
    p.add_argument("--auto", metavar="AUTO_RESULTS_DIR",
                   help="results of a --mode auto run; with a --mode all run as --results, reports "
                        "the planner's regret against the best plan per query")
    p.add_argument("--compare", metavar="RESULTS_DIR",
                   help="a second run on the same queries (folder or TREC run): paired t-test and "
                        "randomization test per measure (delta = results - compare)")
    p.add_argument("--plan", metavar="NAME",
                   help="use only this plan's rankings of a --mode all run")
    p.add_argument("--allow-partial", action="store_true",
                   help="evaluate a results folder without _SUCCESS (unfinished run); missing "
                        "queries count as zero")
    p.add_argument("--export-trec", metavar="FILE",
                   help="also write the results as a TREC run (qid Q0 docno rank score tag), atomically; "
                        "an existing FILE is replaced only with --force")
    p.add_argument("--tag", help="run tag of the TREC export; without it, the results' run_tag "
                                 "or folder name")
    p.add_argument("--measures", default=",".join(DEFAULT_MEASURES),
                   help="comma-separated ir_measures names (R@k, P@k, RR@k, nDCG@k, AP, Success@k) "
                        "and Acc@k (all gold items in the top k) (default: " + ", ".join(DEFAULT_MEASURES) + ")")
    p.add_argument("--permutations", type=int, default=10_000,
                   help="sign flips sampled by the randomization test of --compare")
    p.add_argument("--seed", type=int, default=0, help="seed of the randomization test")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--html", action="store_true",
                   help="also write report.html into --out: one self-contained page (no network) with "
                        "the measures, the plots and a sortable, filterable per-query table that opens "
                        "each query (text, plan, trace, top 10 with gold marked, gold ranks); with "
                        "--compare both runs side by side")
    p.add_argument("--force", action="store_true",
                   help="replace a report folder that also holds files CodeNib did not write (deleting them), "
                        "and an existing --export-trec FILE")


def run(args: argparse.Namespace) -> int:
    from codenib.core.errors import BadInputError
    from codenib.core.outputs import refuse_uri
    from codenib.eval import markdown, report
    from codenib.eval.reportdata import EvalOptions
    from codenib.eval.qrels import read_qrels
    from codenib.eval.queries import read_queries
    from codenib.eval.runs import read_results
    from codenib.eval.trec import trec_rows, write_trec_run

    if args.permutations < 1:
        raise BadInputError(f"--permutations must be at least 1, got {args.permutations}",
                            fix="pass --permutations 10000")
    measures = tuple(m.strip() for m in args.measures.split(",") if m.strip())
    if not measures:
        raise BadInputError("--measures is empty", fix="pass e.g. --measures R@10,nDCG@10")
    if args.qrels is None and args.export_trec is None:
        raise BadInputError("--qrels is required to evaluate",
                            fix="pass --qrels QRELS.parquet (or only --export-trec FILE to convert)")
    if args.html and (args.out is None or args.qrels is None):
        raise BadInputError("--html writes report.html into the report folder, so it needs --out and --qrels",
                            fix="pass --out REPORT_DIR and --qrels QRELS (or drop --html)")
    refuse_uri(args.out, "codenib eval --out",
               "write the report to a local folder (the results and the runs it reads may be URIs)")
    refuse_uri(args.export_trec, "codenib eval --export-trec", "write the TREC run to a local file")
    if args.export_trec:
        _check_export(Path(args.export_trec), args.force)
    if args.out and args.qrels is not None:
        # Before any work: a report folder that holds someone's files stops here, untouched.
        report.check_report_dir(Path(args.out).absolute(), args.force)
    import tempfile

    local = tempfile.TemporaryDirectory(prefix="codenib-eval-")
    for name in ("results", "auto", "compare"):
        setattr(args, name, _local_results(getattr(args, name), local.name))
    results = read_results(args.results, allow_partial=args.allow_partial)
    if args.export_trec:
        rows = trec_rows(results.run(args.plan), results.run_scores(args.plan),
                         args.tag or results.run_tag or results.label)
        n = write_trec_run(rows, args.export_trec)
        print(f"wrote {n} lines ({len({r.qid for r in rows})} queries) to {args.export_trec}",
              file=sys.stderr)
        if args.qrels is None:
            return 0
    options = EvalOptions(measures=measures, permutations=args.permutations,
                          seed=args.seed, plan=args.plan)
    evaluation = report.evaluate_results(
        results, read_qrels(args.qrels),
        queries=read_queries(args.queries) if args.queries else None,
        auto=read_results(args.auto, allow_partial=args.allow_partial) if args.auto else None,
        compare=read_results(args.compare, allow_partial=args.allow_partial) if args.compare else None,
        options=options,
    )
    if args.out:
        out = report.write_report(evaluation, args.out, plots=not args.no_plots, force=args.force,
                                  html=args.html)
        print(f"report written to {out}", file=sys.stderr)
    else:
        print(report.summary_json(evaluation))
    print(markdown.render_summary(evaluation), file=sys.stderr)
    return 0


def _check_export(path: Path, force: bool) -> None:
    """Before any work: the TREC run goes to a new file, or replaces one only with --force."""
    from codenib.core.errors import BadInputError

    if path.is_dir():
        raise BadInputError("--export-trec names a folder", path=str(path),
                            fix="pass a file path for the TREC run, e.g. run.trec")
    if (path.exists() or path.is_symlink()) and not force:
        raise BadInputError("--export-trec would overwrite this existing file; nothing was written", path=str(path),
                            fix="pass another --export-trec FILE, or --force to replace it")


def _local_results(path: str | None, tmp: str) -> str | None:
    """A results prefix on object storage, copied (what its job committed) under `tmp`;
    a local path as it is."""
    from codenib.core.storage import StorageConfig, is_uri

    if not path or not is_uri(path):
        return path
    from codenib.core.results import download_results

    name = path.rstrip("/").rsplit("/", 1)[-1] or "results"
    dest = Path(tmp) / f"{len(list(Path(tmp).iterdir()))}" / name
    return str(download_results(path, StorageConfig.from_env(), dest))


COMMAND = Command("Evaluate a results folder against qrels (node and file level, by plan and kind, "
                  "planner regret, paired comparison); export TREC runs.", add_arguments, run)
