#!/usr/bin/env python3
"""Benchmark: the driver's peak memory against the size of the query set (issue 13, item 4);
with --latency, the per-query latency of bug reports on one loaded index (issue 41).

For each size (default 10k, 100k and 1M generated queries over one small index) a fresh
Python process runs one sparse-only `codenib run` job (`run_job`, on an embedded Ray unless
--in-process) and reports its own peak RSS (`resource.getrusage`, the driver process only:
Ray's actors are other processes) and its RSS once imports are done. Prints one line per
size (wall and CPU seconds: `benchkit.Stopwatch`) and the ratio of the largest size's peak
to the smallest's (target: 1M within 2x of 10k).

Without --index, the tests' fixture repository (tests/fixture_repo.py) is written to a
temporary folder and indexed with `codenib index REPO --out X --no-dense`.

--latency loads one index (`--index`, built `--no-dense` for the plan bug reports get) and
runs every report of `--reports` (a queries parquet: `query` column, `qid` if any; default the
SWE-bench dev set's 39) one at a time through `RetrievalSession.search` (what `codenib query`
runs; the batch actors execute the same plans), mode auto, budget balanced, k 100, after one
warm-up report that is not in the set (the per-index caches: the literal scan's joined text,
the name-word cache). Prints the median / p90 / max ms per query by plan (wall clock around
plan + execute, and the executor's own `latency_ms`), next to a plain BM25 query over the same
index (`index.sparse.search` of the whole report, top 100: bm25s's scores), and the ratio;
the target is a `bug_localisation` median under 50 ms. `--dump FILE` writes every report's
(node id, score) list as JSON, to check that a speed-up leaves the rankings identical;
`--profile N` prints cProfile's top functions (cumulative) over the reports, N rows.

Usage:
    python scripts/bench_queries.py [--index IDX] [--sizes 10000,100000,1000000] [--in-process]
    python scripts/bench_queries.py --latency --index IDX [--reports queries.parquet] [--dump out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import Row, Stopwatch, finish, log, out, peak_rss_mb, render_table

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ["where is run_engine defined", "who calls Engine.prepare?", "what does Engine.start call?",
             "Turn the given text into a lowercase slug.", "Store an item", "helper", "callers of slugify"]


def _rss_now() -> int:
    """This process's resident set size in bytes (from /proc; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _status() -> dict[str, int]:
    """RssAnon (the heap: what the driver itself holds), RssFile and RssShmem (pages of Ray's
    shared-memory object store the driver has touched) in bytes, from /proc/self/status."""
    out = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def child(queries: str, index: str, out: str, shard_size: int, in_process: bool) -> int:
    """One job in this (fresh) process; prints a JSON line with its memory and time."""
    import threading

    from codenib.batch.driver import RunOptions, run_job

    peaks: dict[str, int] = {}
    stop = threading.Event()

    def sample() -> None:   # the largest of each part of the RSS, twice a second
        while not stop.wait(0.5):
            for k, v in _status().items():
                peaks[k] = max(peaks.get(k, 0), v)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    baseline = _rss_now()
    with Stopwatch() as sw:
        summary = run_job(RunOptions(queries=queries, index=index, out=out, mode="sparse", shard_size=shard_size,
                                     local_below=10**12 if in_process else 0, progress=True),
                          log=lambda m: print(m, file=sys.stderr, flush=True))
    stop.set()
    sampler.join()
    print(json.dumps({"queries": summary.queries, "peak_rss": peak_rss_mb() * 2**20, "rss_after_imports": baseline,
                      "seconds": sw.wall, "cpu_seconds": sw.cpu, "errors": summary.errors, "runner": summary.runner,
                      "peaks": peaks}), flush=True)
    return 0


def write_queries(path: Path, n: int) -> None:
    """`n` generated queries (distinct qids, texts cycling through QUESTIONS), in row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("qid", pa.string()), ("query", pa.string())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, n, 100_000):
            ids = range(start, min(n, start + 100_000))
            writer.write_table(pa.table({"qid": [f"q{i:08d}" for i in ids],
                                         "query": [f"{QUESTIONS[i % len(QUESTIONS)]} {i % 1000}" for i in ids]},
                                        schema=schema))


def _default_reports() -> Path:
    """The SWE-bench dev set's queries, in `shared/eval` beside the checkout or a folder above."""
    for up in ROOT.parents:
        if (up / "shared" / "eval" / "swebench-dev" / "queries.parquet").exists():
            return up / "shared" / "eval" / "swebench-dev" / "queries.parquet"
    return ROOT.parent / "shared" / "eval" / "swebench-dev" / "queries.parquet"


def build_index(work: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.fixture_repo import write_repo

    repo = write_repo(work / "repo")
    out = work / "index"
    subprocess.run([sys.executable, "-m", "codenib.commands.cli", "index", str(repo), "--out", str(out), "--no-dense"],
                   check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    return out


#: The largest query set's driver peak RSS within this factor of the smallest's.
GROWTH_TARGET = 2.0
#: Issue 41: the `bug_localisation` plan's median per query on a loaded index, in ms.
LATENCY_TARGET_MS = 50.0
#: The warm-up report (not in any set): long enough for the planner to read it as a bug report.
WARMUP_REPORT = (
    "Crash when the configuration file has an empty section\n\n"
    "Since upgrading, building the project fails when the configuration file contains an empty section. "
    "I expected the build to skip the section and go on, but it raises instead and nothing is written. "
    "The same configuration worked with the previous release, so this looks like a regression in how "
    "sections are read and merged with the defaults before the build starts.\n\n"
    "```\nTraceback (most recent call last):\n  File \"main.py\", line 10, in <module>\n    build(config)\n"
    "KeyError: 'options'\n```\n\nSteps to reproduce: add an empty section, run the build, see the error.")


def latency(index: str, reports: str, k: int, dump: str | None, profile: int, strict: bool, rounds: int = 1) -> int:
    """Time every report of `reports` on the index loaded once (see the module docstring)."""
    import pyarrow.parquet as pq
    import numpy as np

    from codenib.model.planner import plan_options
    from codenib.model.session import RetrievalSession

    rows = pq.read_table(reports).to_pylist()
    qids = [str(r.get("qid", i)) for i, r in enumerate(rows)]
    texts = [r["query"] for r in rows]
    with Stopwatch() as load:
        session = RetrievalSession.load(index, dense=False)
    options = plan_options("balanced", "auto")
    with Stopwatch() as warm:
        session.search(WARMUP_REPORT, options, k=k)
    sparse = session.index.sparse
    sparse.search([WARMUP_REPORT], k)
    out(f"bug-report latency on one loaded index: {index} ({len(session.index.nodes.node_id)} nodes), "
        f"{len(texts)} reports from {reports}; loaded in {load.wall:.2f} s, warm-up report {warm.wall * 1000:.0f} ms")
    wall, engine, bm25, plans, ranked = [], [], [], [], {}
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    best_wall, best_bm25 = [math.inf] * len(texts), [math.inf] * len(texts)
    for round_ in range(rounds):
        for i, (qid, text) in enumerate(zip(qids, texts)):
            t0 = time.perf_counter()
            if profiler is not None and round_ == 0:
                profiler.enable()
            result = session.search(text, options, k=k)
            if profiler is not None:
                profiler.disable()
            took = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            sparse.search([text], k)
            took_bm25 = (time.perf_counter() - t0) * 1000
            best_wall[i], best_bm25[i] = min(best_wall[i], took), min(best_bm25[i], took_bm25)
            if round_ == 0:
                wall.append(took)
                bm25.append(took_bm25)
                engine.append(result.latency_ms)
                plans.append(result.plan)
                ranked[qid] = [(c.node_id, c.score) for c in result.candidates]
    if dump:
        Path(dump).write_text(json.dumps(ranked, indent=0))
    table = []
    for plan in sorted(set(plans)):
        idx = [i for i, p in enumerate(plans) if p == plan]
        w, e, b = (np.array([x[i] for i in idx]) for x in (wall, engine, bm25))
        table.append((plan, len(idx), f"{np.median(w):.1f} / {np.percentile(w, 90):.1f} / {w.max():.1f}",
                      f"{np.median(e):.1f} / {np.percentile(e, 90):.1f}",
                      f"{np.median(b):.1f} / {np.percentile(b, 90):.1f}", f"{np.median(w) / np.median(b):.1f}x"))
    out(render_table(("plan", "reports", "ms per query: median / p90 / max", "executor latency_ms median / p90",
                      "BM25 alone median / p90", "median / BM25's"), table, right=(1,)))
    if rounds > 1:
        # Each report's best of the rounds: what the code costs, with less of the machine's other
        # load in it (a report's later rounds find the per-process name caches warm).
        table = []
        for plan in sorted(set(plans)):
            w = np.array([best_wall[i] for i, p in enumerate(plans) if p == plan])
            b = np.array([best_bm25[i] for i, p in enumerate(plans) if p == plan])
            table.append((plan, len(w), f"{np.median(w):.1f} / {np.percentile(w, 90):.1f} / {w.max():.1f}",
                          f"{np.median(b):.1f} / {np.percentile(b, 90):.1f}", f"{np.median(w) / np.median(b):.1f}x"))
        out(f"\neach report's best of {rounds} rounds:")
        out(render_table(("plan", "reports", "ms per query: median / p90 / max", "BM25 alone median / p90",
                          "median / BM25's"), table, right=(1,)))
    if profiler is not None:
        import io
        import pstats

        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(profile)
        out("\ncProfile over the reports (cumulative):\n" + buf.getvalue())
    loc = [w for w, p in zip(wall, plans) if p == "bug_localisation"]
    if not loc:
        out("no report was planned as bug_localisation")
        return 1 if strict else 0
    med = float(np.median(loc))
    base = float(np.median([b for b, p in zip(bm25, plans) if p == "bug_localisation"]))
    return finish([Row(f"bug_localisation median ms per query, {len(loc)} reports (target < {LATENCY_TARGET_MS:g}; "
                       "ratio: ours / BM25's)", f"{med:.1f} ms", f"{base:.1f} ms", med / base,
                       status="pass" if med < LATENCY_TARGET_MS else "FAIL")], "bug-report latency", strict)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", help="an index folder (default: the fixture repository, built --no-dense)")
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated query counts")
    ap.add_argument("--shard-size", type=int, default=256)
    ap.add_argument("--in-process", action="store_true", help="run the shards in the driver (no Ray)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the growth misses the target")
    ap.add_argument("--latency", action="store_true",
                    help="time bug reports one at a time on the --index loaded once (issue 41's latency target)")
    ap.add_argument("--reports", default=str(_default_reports()),
                    help="with --latency: the reports (a queries parquet; default: the SWE-bench dev set)")
    ap.add_argument("-k", type=int, default=100, help="with --latency: results per query (default 100)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="with --latency: run the reports this many times; also report each one's best round")
    ap.add_argument("--dump", metavar="JSON", help="with --latency: write each report's (node id, score) list")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="with --latency: cProfile the reports, print the top N functions")
    ap.add_argument("--child", nargs=3, metavar=("QUERIES", "INDEX", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(*args.child, args.shard_size, args.in_process)
    if args.latency:
        if not args.index:
            ap.error("--latency needs --index IDX (an index built with --no-dense)")
        if args.rounds < 1:
            ap.error("--rounds must be at least 1")
        return latency(args.index, args.reports, args.k, args.dump, args.profile, args.strict, args.rounds)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    out(f"CodeNib driver memory against query-set size: sizes {sizes}, shard size {args.shard_size}, "
        f"{'in the driver (--in-process)' if args.in_process else 'on an embedded Ray'}")
    work = Path(tempfile.mkdtemp(prefix="codenib-bench-queries-"))
    try:
        index = Path(args.index) if args.index else build_index(work)
        results = []
        for n in sizes:
            queries = work / f"q{n}.parquet"
            write_queries(queries, n)
            log(f"{n} queries in a fresh process")
            cmd = [sys.executable, __file__, "--child", str(queries), str(index), str(work / f"out{n}"),
                   "--shard-size", str(args.shard_size)] + (["--in-process"] if args.in_process else [])
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            if proc.returncode != 0:
                out(f"{n:>9} queries: the job failed (exit {proc.returncode})")
                return 1
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            shutil.rmtree(work / f"out{n}", ignore_errors=True)
            queries.unlink()
        lo = results[0]
        mib = 2**20
        out(render_table(
            ("queries", "driver peak RSS", "after imports", "wall s", "cpu s", "q/s", "errors", "runner",
             "peak / smallest's", "peak parts"),
            [(r["queries"], f"{r['peak_rss'] / mib:.1f} MiB", f"{r['rss_after_imports'] / mib:.1f} MiB",
              f"{r['seconds']:.1f}", f"{r['cpu_seconds']:.1f}", f"{r['queries'] / r['seconds']:.0f}", r["errors"],
              r["runner"], f"{r['peak_rss'] / lo['peak_rss']:.2f}x",
              ", ".join(f"{k} {v / mib:.1f} MiB" for k, v in sorted(r.get("peaks", {}).items())) or "-")
             for r in results], right=(1, 2, 3, 4, 5, 6, 8)))
        hi = results[-1]
        growth = hi["peak_rss"] / lo["peak_rss"]
        rows = [Row(f"driver peak RSS, {hi['queries']} / {lo['queries']} queries (target <= {GROWTH_TARGET:g}x)",
                    f"{hi['peak_rss'] / mib:.1f} MiB", f"{lo['peak_rss'] / mib:.1f} MiB", growth,
                    status="pass" if growth <= GROWTH_TARGET else "FAIL")]
        return finish(rows, "driver memory", args.strict)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
