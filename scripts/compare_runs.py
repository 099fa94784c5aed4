"""Run a fixed set of `codenib run` / `codenib query --json` commands and compare two captures.

Used for "no behaviour change" refactors (issue 26): capture before, capture after, compare.

    python scripts/compare_runs.py capture OUT_DIR --dense-index IDX --sparse-index IDX
    python scripts/compare_runs.py compare BEFORE_DIR AFTER_DIR

What is compared, per command:
- results (part-*.parquet): every column of every row (qid, rank, node_id, file, score,
  plan, index, run_tag), rows sorted by (qid, plan, rank); the canonical table must be equal
  and is hashed (Arrow IPC bytes of the rows; the schema's key-value metadata, which holds
  the run's id and time, is left out);
- plans.parquet: every column but `latency_ms` (wall time), rows sorted by (qid, mode,
  plan); the `trace` JSON compared as text;
- `codenib query --json`: the whole output but `latency_ms`.
Run ids, timestamps, _manifest.json and the job summary vary by design and are not compared.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

#: Queries beyond the packaged demo set: long bug reports (bug_localisation, hybrid's long
#: weights and file prior), structural questions and a few mixed ones.
EXTRA = [
    {"qid": "bug-01", "query": "TypeError in rrf_fuse when weights is shorter than runs\n\nWhen I call "
     "rrf_fuse with three runs and two weights the job crashes:\n\nTraceback (most recent call last):\n"
     "  File \"codenib/ops/retrieve.py\", line 120, in rrf_fuse\n    w = weights[i]\nIndexError: list index "
     "out of range\n\nExpected: a BadInputError naming the weights. This happens in codenib/model/parts.py "
     "fuse as well when the long query weights are swapped in by HybridFusion.assemble. Steps to reproduce: "
     "build an index, run a long query through the hybrid mode and observe the crash in the fusion step."},
    {"qid": "bug-02", "query": "Resume writes duplicate rows after a crash\n\nAfter killing `codenib run` "
     "during the commit of a shard and running it again, the results folder has the same qid twice. "
     "ParquetSink.commit seems to rename the part file before the marker is written, so the resume scan "
     "in codenib/batch/sink.py treats the shard as not done and runs it again. I expected exactly-once "
     "results. Versions: codenib 0.x, pyarrow 15, Linux. The log shows no error, only the warning that "
     "the shard was retried. Please make the commit atomic so a crash between the two steps is safe."},
    {"qid": "bug-03", "query": "Index build fails on a file with a syntax error in a decorator\n\nRunning "
     "codenib index on a repository where one file has `@decorator(` without a closing parenthesis stops "
     "the whole build with a ParseError from build_parse. I would expect the file to be skipped with a "
     "warning, like other unparsable files. The traceback ends in codenib/compiler/lang/python_parse.py in "
     "parse_file and then walk_repository. It looks like the tree-sitter error node is not handled when "
     "the decorator list is incomplete. This blocks indexing large monorepos where a few files are broken."},
    {"qid": "str-01", "query": "who calls plan_query?"},
    {"qid": "str-02", "query": "what calls process_shard"},
    {"qid": "str-03", "query": "subclasses of RetrievalPlan"},
    {"qid": "str-04", "query": "what does execute call?"},
    {"qid": "str-05", "query": "who imports codenib.model.planner"},
    {"qid": "mix-01", "query": "embedding_rerank_batch top_n"},
    {"qid": "mix-02", "query": "how are tests demoted below library code in demote_tests"},
    {"qid": "mix-03", "query": "LLMReranker listwise window"},
    {"qid": "sem-01", "query": "parse a bug report into title, prose and traceback mentions"},
]

#: `codenib query --json` runs: (name, text, extra flags).
QUERIES_JSON = [
    ("q-lex", "where is build_index defined", []),
    ("q-str", "who calls walk_repository?", []),
    ("q-bug", EXTRA[0]["query"], []),
    ("q-hyb", EXTRA[1]["query"], ["--mode", "hybrid"]),
    ("q-emb", "Combine several ranked candidate lists with weighted reciprocal rank fusion.",
     ["--rerank", "embedding", "--budget", "thorough"]),
]


def runs(dense: str, sparse: str) -> list[tuple[str, list[str]]]:
    """(name, `codenib run` arguments) of every captured run."""
    out = []
    for budget in ("fast", "balanced", "thorough"):
        out.append((f"dense-auto-{budget}", ["--index", dense, "--budget", budget]))
    out.append(("dense-all", ["--index", dense, "--mode", "all"]))
    out.append(("dense-all-thorough", ["--index", dense, "--mode", "all", "--budget", "thorough"]))
    out.append(("dense-emb", ["--index", dense, "--rerank", "embedding"]))
    out.append(("dense-hybrid", ["--index", dense, "--mode", "hybrid"]))
    out.append(("sparse-auto", ["--index", sparse]))
    out.append(("sparse-all", ["--index", sparse, "--mode", "all"]))
    # One run through the Ray actors (the others run in-process, fewer than --local-below).
    out.append(("dense-all-ray", ["--index", dense, "--mode", "all", "--local-below", "0", "--workers", "1"]))
    return out


def cli(args: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-m", "codenib.commands.cli", *args], env=env, check=True,
                          capture_output=True, text=True, **kw)


def capture(out: Path, dense: str, sparse: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    queries = out / "queries.jsonl"
    demo = Path(__file__).resolve().parents[1] / "codenib" / "data" / "demo_queries.jsonl"
    lines = [json.loads(x) for x in demo.read_text().splitlines() if x.strip()]
    queries.write_text("".join(json.dumps({"qid": q["qid"], "query": q["query"]}) + "\n" for q in lines + EXTRA))
    for name, args in runs(dense, sparse):
        print(f"run {name}", flush=True)
        cli(["run", "--queries", str(queries), "--out", str(out / name), "--quiet", "--device", "cpu", *args])
    for name, text, flags in QUERIES_JSON:
        print(f"query {name}", flush=True)
        res = cli(["query", dense, text, "--json", "-k", "20", *flags])
        (out / f"{name}.json").write_text(res.stdout)


def results_table(folder: Path) -> pa.Table:
    parts = sorted(folder.glob("part-*.parquet"))
    table = pa.concat_tables([pq.read_table(p) for p in parts]) if parts else None
    return table.sort_by([("qid", "ascending"), ("plan", "ascending"), ("rank", "ascending")])


def plans_table(folder: Path) -> pa.Table:
    table = pq.read_table(folder / "plans.parquet")
    table = table.drop_columns([c for c in ("latency_ms",) if c in table.column_names])
    return table.sort_by([("qid", "ascending"), ("mode", "ascending"), ("plan", "ascending")])


def digest(table: pa.Table) -> str:
    # The rows only: the schema's key-value metadata holds the run's id and time.
    table = table.replace_schema_metadata(None)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table.combine_chunks())
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()[:16]


def query_json(path: Path) -> dict:
    data = json.loads(path.read_text())
    data.pop("latency_ms", None)
    return data


def compare(a: Path, b: Path) -> int:
    bad = 0
    for folder in sorted(p for p in a.iterdir() if p.is_dir()):
        other = b / folder.name
        if not (other / "plans.parquet").is_file():
            print(f"MISSING   {folder.name:22s} (not in {b})")
            bad += 1
            continue
        for what, read in (("results", results_table), ("plans", plans_table)):
            ta, tb = read(folder), read(other)
            same = ta.equals(tb)
            bad += not same
            print(f"{'same' if same else 'DIFFERENT':9s} {folder.name:22s} {what:7s} rows {ta.num_rows:5d} "
                  f"sha {digest(ta)} / {digest(tb)}")
            if not same:
                for col in ta.column_names:
                    if col in tb.column_names and not ta.column(col).equals(tb.column(col)):
                        xa, xb = ta.column(col).to_pylist(), tb.column(col).to_pylist()
                        i = next((i for i, (x, y) in enumerate(zip(xa, xb)) if x != y), min(len(xa), len(xb)))
                        print(f"          column {col}: first difference at row {i}: "
                              f"{str(xa[i] if i < len(xa) else None)[:300]!r} vs {str(xb[i] if i < len(xb) else None)[:300]!r}")
    for path in sorted(a.glob("q-*.json")):
        if not (b / path.name).is_file():
            print(f"MISSING   {path.name:22s} (not in {b})")
            bad += 1
            continue
        same = query_json(path) == query_json(b / path.name)
        bad += not same
        print(f"{'same' if same else 'DIFFERENT':9s} {path.name:22s} query --json")
    print("IDENTICAL" if not bad else f"{bad} DIFFERENCES")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out")
    c.add_argument("--dense-index", required=True)
    c.add_argument("--sparse-index", required=True)
    d = sub.add_parser("compare")
    d.add_argument("before")
    d.add_argument("after")
    args = ap.parse_args()
    if args.cmd == "capture":
        capture(Path(args.out), args.dense_index, args.sparse_index)
        return 0
    return compare(Path(args.before), Path(args.after))


if __name__ == "__main__":
    sys.exit(main())
