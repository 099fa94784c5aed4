"""`codenib demo`: the main job on an embedded default.

Indexes a bundled sample (CodeNib's own source), runs a small bundled query set through
the batch job, evaluates it against bundled judgments, and prints where everything is. The
set's 15 queries are fewer than the job's `--local-below` (256), so on a workstation they are
answered in this process without starting Ray; submitted to a cluster (`jobs/demo.toml`), the
job joins it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codenib.commands.command import Command
from codenib.core.errors import BadInputError
from codenib.core.outputs import foreign_files, refuse_foreign, refuse_unknown, remove_foreign


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="codenib-demo", help="folder for the demo's index, results and report")
    p.add_argument("--no-dense", action="store_true", help="skip dense vectors (faster; semantic queries degrade)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--force", action="store_true",
                   help="go on in a demo folder that also holds files CodeNib did not write (deleting them)")


#: The folders a demo writes in its --out.
DEMO_PARTS = ("index", "results", "report")


def sample_repository() -> Path:
    """The bundled sample: the installed `codenib` package's own source."""
    import codenib

    return Path(codenib.__file__).resolve().parent


def data_file(name: str) -> Path:
    return Path(__file__).resolve().parents[1] / "data" / name


def run(args: argparse.Namespace) -> int:
    import shutil

    from codenib.core.artifact import is_index_dir
    from codenib.batch.driver import RunOptions, run_job
    from codenib.compiler import build
    from codenib.compiler.build_options import BuildOptions
    from codenib.eval import markdown, report
    from codenib.eval.qrels import read_qrels
    from codenib.eval.queries import read_queries
    from codenib.eval.runs import read_results
    from codenib.core.outputs import refuse_uri
    from codenib.core.results import check_results_dir

    refuse_uri(args.out, "codenib demo --out", "pass a local folder")
    out = Path(args.out)
    index_dir, results_dir, report_dir = out / "index", out / "results", out / "report"
    # Before any work: a folder holding files an earlier demo did not write stops here, untouched.
    foreign = check_demo_dir(out, args.force)
    if args.force:
        remove_foreign(out, foreign)
    progress = not args.quiet   # a bar on a terminal, progress lines elsewhere
    reuse = index_dir if is_index_dir(index_dir) and not args.no_dense else None
    _say(f"1/3  indexing the bundled sample {sample_repository()} -> {index_dir}")
    summary = build.build_index(sample_repository(), index_dir,
                                BuildOptions(dense=not args.no_dense, progress=progress, reuse=reuse,
                                                   force=args.force))
    print(summary.render(), file=sys.stderr)

    _say(f"2/3  running {data_file('demo_queries.jsonl').name} through the batch job")
    # A fresh results folder each time: the index may have changed since the last demo. It is
    # checked again right before: the build took minutes.
    if results_dir.exists():
        check_results_dir(results_dir, args.force)
        shutil.rmtree(results_dir)
    job = run_job(RunOptions(queries=str(data_file("demo_queries.jsonl")), index=str(index_dir),
                             out=str(results_dir), shard_size=8, progress=progress))
    print(job.render(), file=sys.stderr)

    _say("3/3  evaluating against the bundled judgments")
    results = read_results(results_dir)
    evaluation = report.evaluate_results(results, read_qrels(data_file("demo_qrels.txt")),
                                         queries=read_queries(data_file("demo_queries.jsonl")))
    report.write_report(evaluation, report_dir, force=args.force)
    print(markdown.render_summary(evaluation), file=sys.stderr)

    _show_examples(results_dir)
    print(f"\nindex:   {index_dir}\nresults: {results_dir}  (part-*.parquet, plans.parquet)\n"
          f"report:  {report_dir}  (report.md, metrics.json, plots)\n"
          f"try:     codenib query {index_dir} \"who calls build_index?\"")
    return 0


def check_demo_dir(out: Path, force: bool) -> list[str]:
    """Check (reading only) that `out` is new, empty or an earlier demo's folder; returns the
    files in it that CodeNib did not write (relative paths; non-empty only with `force`).

    Raises:
        BadInputError: `out` or a part of it is a file or not CodeNib's, or it holds files
            CodeNib did not write (the first one named) and `force` is off.
    """
    from codenib.core.artifact import check_output_dir, index_ownership, is_index_dir
    from codenib.eval.report import check_report_dir, report_ownership
    from codenib.core.results import MANIFEST, RESULTS_OWNERSHIP, check_results_dir

    if out.exists() and not out.is_dir():
        raise BadInputError("the demo path exists and is a file", path=str(out), fix="pass a folder to --out")
    if not out.is_dir() or not any(out.iterdir()):
        return []
    parts = {name: out / name for name in DEMO_PARTS}
    if not (is_index_dir(parts["index"]) or (parts["results"] / MANIFEST).is_file()
            or (parts["report"].is_dir() and report_ownership(parts["report"]) is not None)):
        refuse_unknown(out, "CodeNib demo folder")
    # Each part on its own terms (a file, or a folder that is not CodeNib's, stops here) ...
    check_output_dir(parts["index"], force=True)
    check_results_dir(parts["results"], force=True)
    check_report_dir(parts["report"], force=True)
    # ... then every file CodeNib did not write, wherever it is, in one list.
    foreign = [p.name + ("/" if p.is_dir() and not p.is_symlink() else "") for p in out.iterdir()
               if p.name not in DEMO_PARTS or p.is_symlink() or not p.is_dir()]
    owners = {"index": index_ownership(parts["index"]), "results": RESULTS_OWNERSHIP,
              "report": report_ownership(parts["report"]) if parts["report"].is_dir() else None}
    for name, ownership in owners.items():
        if ownership is not None and parts[name].is_dir() and not parts[name].is_symlink():
            foreign += [f"{name}/{rel}" for rel in foreign_files(parts[name], ownership)]
    foreign.sort()
    refuse_foreign(out, foreign, "the demo folder", force)
    return foreign


def _show_examples(results_dir: Path) -> None:
    from codenib.core.results import ResultsFolder
    from codenib.core.specs import read_jsonl

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
                  "query set through the batch job (in this process: it is smaller than --local-below), "
                  "evaluate it.", add_arguments, run)
