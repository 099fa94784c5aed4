"""`codenib demo`: the main job on an embedded default.

Indexes a bundled sample (CodeNib's own source), runs a small bundled query set through
the batch job on an embedded local Ray, evaluates it against bundled judgments, and
prints where everything is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codenib.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="codenib-demo", help="folder for the demo's index, results and report")
    p.add_argument("--no-dense", action="store_true", help="skip dense vectors (faster; semantic queries degrade)")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def sample_repository() -> Path:
    """The bundled sample: the installed `codenib` package's own source."""
    import codenib

    return Path(codenib.__file__).resolve().parent


def data_file(name: str) -> Path:
    return Path(__file__).resolve().parents[1] / "data" / name


def run(args: argparse.Namespace) -> int:
    from codenib.artifact import is_index_dir
    from codenib.batch.driver import RunOptions, run_job
    from codenib.compiler.build import BuildOptions, build_index
    from codenib.errors import BadInputError
    from codenib.eval import markdown, report
    from codenib.eval.qrels import read_qrels
    from codenib.eval.queries import read_queries
    from codenib.eval.runs import read_results

    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not (out / "index").exists():
        raise BadInputError("the demo folder exists and holds something else", path=str(out),
                            fix="pass another --out or remove that folder")
    progress = not args.quiet   # a bar on a terminal, progress lines elsewhere
    index_dir, results_dir, report_dir = out / "index", out / "results", out / "report"
    reuse = index_dir if is_index_dir(index_dir) and not args.no_dense else None
    _say(f"1/3  indexing the bundled sample {sample_repository()} -> {index_dir}")
    summary = build_index(sample_repository(), index_dir,
                          BuildOptions(dense=not args.no_dense, progress=progress, reuse=reuse))
    print(summary.render(), file=sys.stderr)

    _say(f"2/3  running {data_file('demo_queries.jsonl').name} through the batch job on a local Ray")
    # A fresh results folder each time: the index may have changed since the last demo.
    if results_dir.exists():
        import shutil

        shutil.rmtree(results_dir)
    job = run_job(RunOptions(queries=str(data_file("demo_queries.jsonl")), index=str(index_dir),
                             out=str(results_dir), shard_size=8, progress=progress))
    print(job.render(), file=sys.stderr)

    _say("3/3  evaluating against the bundled judgments")
    results = read_results(results_dir)
    evaluation = report.evaluate_results(results, read_qrels(data_file("demo_qrels.txt")),
                                         queries=read_queries(data_file("demo_queries.jsonl")))
    report.write_report(evaluation, report_dir)
    print(markdown.render_summary(evaluation), file=sys.stderr)

    _show_examples(results_dir)
    print(f"\nindex:   {index_dir}\nresults: {results_dir}  (part-*.parquet, plans.parquet)\n"
          f"report:  {report_dir}  (report.md, metrics.json, plots)\n"
          f"try:     codenib query {index_dir} \"who calls build_index?\"")
    return 0


def _show_examples(results_dir: Path) -> None:
    from codenib.results import ResultsFolder
    from codenib.specs import read_jsonl

    queries = {rec["qid"]: rec["query"] for rec in read_jsonl(data_file("demo_queries.jsonl"))}
    folder = ResultsFolder(results_dir)
    plans = {p["qid"]: p["plan"] for p in folder.plans().to_pylist()}
    top: dict[str, list[str]] = {}
    for r in folder.rows().to_pylist():
        if r["rank"] <= 3:
            top.setdefault(r["qid"], []).append(r["node_id"])
    print("\nexamples (top 3):")
    for qid in ("demo-lex-01", "demo-sem-02", "demo-str-01"):
        print(f"  {queries[qid]!r}  [{plans.get(qid)}]")
        for nid in top.get(qid, []):
            print(f"      {nid}")


def _say(msg: str) -> None:
    print(f"\n== demo {msg}", file=sys.stderr, flush=True)


COMMAND = Command("The main job on an embedded default: index CodeNib's own source, run a bundled "
                  "query set through the batch job on a local Ray, evaluate it.", add_arguments, run)
