#!/usr/bin/env python3
"""Benchmark: the driver's peak memory against the size of the query set (issue 13, item 4).

For each size (default 10k, 100k and 1M generated queries over one small index) a fresh
Python process runs one sparse-only `codenib run` job (`run_job`, on an embedded Ray unless
--in-process) and reports its own peak RSS (`resource.getrusage`, the driver process only:
Ray's actors are other processes) and its RSS once imports are done. Prints one line per
size (wall and CPU seconds: `benchkit.Stopwatch`) and the ratio of the largest size's peak
to the smallest's (target: 1M within 2x of 10k).

Without --index, the tests' fixture repository (tests/fixture_repo.py) is written to a
temporary folder and indexed with `codenib index REPO --out X --no-dense`.

Usage:
    python scripts/bench_queries.py [--index IDX] [--sizes 10000,100000,1000000] [--in-process]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", help="an index folder (default: the fixture repository, built --no-dense)")
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated query counts")
    ap.add_argument("--shard-size", type=int, default=256)
    ap.add_argument("--in-process", action="store_true", help="run the shards in the driver (no Ray)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when the growth misses the target")
    ap.add_argument("--child", nargs=3, metavar=("QUERIES", "INDEX", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(*args.child, args.shard_size, args.in_process)
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
