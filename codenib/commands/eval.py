"""`codenib eval --results RESULTS_DIR --qrels QRELS.parquet`: evaluate a run and report."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from codenib.commands.command import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    from codenib.eval.metrics import DEFAULT_LEVELS, DEFAULT_MEASURES, LEVELS

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
    p.add_argument("--groups", metavar="GROUPS",
                   help="each query's repository: a Parquet or JSONL file with qid (or instance_id) and repo, "
                        "e.g. a data set's instances file; gives the breakdown by repository and the mean "
                        "over repositories with the worst one, and by language where it has a language column "
                        "(default: the --queries file's repo column)")
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
    p.add_argument("--levels", default=",".join(DEFAULT_LEVELS),
                   help="comma-separated levels: " + "; ".join(f"{n}: {lv.about}" for n, lv in LEVELS.items())
                        + " (default: " + ", ".join(DEFAULT_LEVELS) + "; file Acc@k and function_name Acc@k are "
                        "Multi-SWE-bench's file and function accuracy)")
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


@dataclass(frozen=True)
class EvalCommandOptions:
    """Every option of `codenib eval`, typed once: from the command line (`from_args`) or
    from a job spec's [eval] table and the results folder it ran into (`from_table`)."""

    results: str
    qrels: str | None = None
    out: str | None = None
    queries: str | None = None
    groups: str | None = None
    auto: str | None = None
    compare: str | None = None
    plan: str | None = None
    allow_partial: bool = False
    export_trec: str | None = None
    tag: str | None = None
    measures: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()
    permutations: int = 10_000
    seed: int = 0
    no_plots: bool = False
    html: bool = False
    force: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "EvalCommandOptions":
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls) if f.name not in ("measures", "levels")},
                   measures=_measures(args.measures), levels=_measures(args.levels))

    @classmethod
    def from_table(cls, table: Mapping[str, Any], results: str, where: str = "[eval]") -> "EvalCommandOptions":
        """The options of a job spec's [eval] table (keys: `codenib.commands.jobs.EVAL_KEYS`,
        checked when the spec was read) for the results folder `results`."""
        from codenib.core.errors import BadInputError
        from codenib.eval.metrics import DEFAULT_LEVELS, DEFAULT_MEASURES

        kinds = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {"results": results, "measures": _measures(",".join(DEFAULT_MEASURES)),
                                  "levels": DEFAULT_LEVELS}
        for key, value in table.items():
            if kinds.get(key) == "bool":
                if not isinstance(value, bool):
                    raise BadInputError(f"`{key}` must be true or false, got {value!r}", path=where,
                                        fix=f"write {key} = true")
                values[key] = value
            elif key in ("measures", "levels"):
                items = value if isinstance(value, list) else [value]
                if any(isinstance(v, (bool, list, dict)) for v in items):
                    example = '["R@10", "nDCG@10"]' if key == "measures" else '["file", "function_name"]'
                    raise BadInputError(f"`{key}` must be a list of names or one comma-separated string, got "
                                        f"{value!r}", path=where, fix=f"write {key} = {example}")
                values[key] = _measures(",".join(str(v) for v in items))
            else:
                if isinstance(value, (bool, list, dict)):
                    raise BadInputError(f"`{key}` must be a string, got {value!r}", path=where,
                                        fix=f'write {key} = "..."')
                values[key] = str(value)
        return cls(**values)

    def validate(self) -> None:
        """The checks made before any work (BadInputError, exit 2)."""
        from codenib.core.errors import BadInputError
        from codenib.core.outputs import refuse_uri

        if self.permutations < 1:
            raise BadInputError(f"--permutations must be at least 1, got {self.permutations}",
                                fix="pass --permutations 10000")
        if not self.measures:
            raise BadInputError("--measures is empty", fix="pass e.g. --measures R@10,nDCG@10")
        if self.levels:
            from codenib.eval.metrics import parse_levels

            parse_levels(self.levels)
        if self.qrels is None and self.export_trec is None:
            raise BadInputError("--qrels is required to evaluate",
                                fix="pass --qrels QRELS.parquet (or only --export-trec FILE to convert)")
        if self.html and (self.out is None or self.qrels is None):
            raise BadInputError("--html writes report.html into the report folder, so it needs --out and --qrels",
                                fix="pass --out REPORT_DIR and --qrels QRELS (or drop --html)")
        refuse_uri(self.out, "codenib eval --out",
                   "write the report to a local folder (the results and the runs it reads may be URIs)")
        refuse_uri(self.export_trec, "codenib eval --export-trec", "write the TREC run to a local file")


def _measures(text: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in text.split(",") if m.strip())


def run(args: argparse.Namespace) -> int:
    return evaluate(EvalCommandOptions.from_args(args))


def evaluate(opts: EvalCommandOptions) -> int:
    """`codenib eval` with its options typed (`EvalCommandOptions`); returns the exit status."""
    import dataclasses

    from codenib.eval import markdown, report
    from codenib.eval.reportdata import EvalOptions
    from codenib.eval.qrels import read_qrels
    from codenib.eval.queries import read_groups, read_queries
    from codenib.eval.runs import read_results
    from codenib.eval.trec import trec_rows, write_trec_run

    opts.validate()
    if opts.export_trec:
        _check_export(Path(opts.export_trec), opts.force)
    groups = read_groups(opts.groups) if opts.groups and opts.qrels is not None else None
    if opts.out and opts.qrels is not None:
        # Before any work: a report folder that holds someone's files stops here, untouched.
        report.check_report_dir(Path(opts.out).absolute(), opts.force)
    import tempfile

    local = tempfile.TemporaryDirectory(prefix="codenib-eval-")
    opts = dataclasses.replace(opts, **{name: _local_results(getattr(opts, name), local.name)
                                        for name in ("results", "auto", "compare")})
    results = read_results(opts.results, allow_partial=opts.allow_partial)
    if opts.export_trec:
        rows = trec_rows(results.run(opts.plan), results.run_scores(opts.plan),
                         opts.tag or results.run_tag or results.label)
        n = write_trec_run(rows, opts.export_trec)
        print(f"wrote {n} lines ({len({r.qid for r in rows})} queries) to {opts.export_trec}",
              file=sys.stderr)
        if opts.qrels is None:
            return 0
    options = EvalOptions(measures=opts.measures, permutations=opts.permutations,
                          seed=opts.seed, plan=opts.plan, **({"levels": opts.levels} if opts.levels else {}))
    evaluation = report.evaluate_results(
        results, read_qrels(opts.qrels),
        queries=read_queries(opts.queries) if opts.queries else None,
        auto=read_results(opts.auto, allow_partial=opts.allow_partial) if opts.auto else None,
        compare=read_results(opts.compare, allow_partial=opts.allow_partial) if opts.compare else None,
        options=options, groups=groups,
    )
    if opts.out:
        out = report.write_report(evaluation, opts.out, plots=not opts.no_plots, force=opts.force,
                                  html=opts.html)
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
