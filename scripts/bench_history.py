"""Time `--history` on a real repository: a full read of about N commits, then the next
snapshot's read with the first as `--reuse` (only the new commits), as `codenib index` does.

    python scripts/bench_history.py --mirror /work/.mirror/sphinx-doc+sphinx/repo \\
        --commits 10000 --step 20 --jobs 2 [--check]

The older snapshot is the first-parent ancestor of the newer one `--step` commits back; the
newer one is the first-parent commit of REV whose history holds about `--commits` commits.
`--old OLD --new NEW` time a given pair instead (a dev set's consecutive base commits: the
largest gaps are fmt c03f55e..7f7504b (932 new commits), sphinx 7ca279e..7bdc11e (2,391),
pylint 182cc53..0a4204f (666)).
`--instances PARQUET --repo NAME` reads a dev set's snapshots instead, as `codenib index
--reuse` would build them one after another: the base commits of NAME's instances in commit
order, the first (and any that does not descend from the one before, e.g. on a maintenance
branch) read in full, each other with the one before as `--reuse`, one worker pool for all
(as a build's); it prints each snapshot's new commits, seconds and milliseconds per new commit,
then the median and largest later read and how many took over 5 s. `--speed` times a fixed
pure-Python loop before and after (this machine's speed drifts by 1.5-2x within an hour:
compare timings of different runs only next to it).
`--check` also reads the newer snapshot in full and compares the tables (incremental = full).
`--rounds N` times the incremental read N more times each way, alternating: as shipped
(a version outlined from its neighbour's outline and the diff: Python's `python_delta`,
tree-sitter's `sweep_delta`) and with every version parsed in full, and prints the median
speed-up.
Each phase prints wall seconds and CPU seconds (this process and its workers): on a machine
shared with other work the wall time says little, the CPU time divided by the workers is
what 2 idle cores would take for the parallel part.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pygit2

from codenib.compiler.history import HistorySpec, manifest_entry, read_history, resolve, write_history
from codenib.compiler.lang.python import PythonReader
from codenib.compiler.lang.sweep_reader import SweepReader
from codenib.compiler.workers import Workers

from benchkit import Stopwatch


#: The readers whose `derive` `--rounds` switches off.
DERIVING = (PythonReader, SweepReader)


def _count(repo: pygit2.Repository, oid) -> int:
    return sum(1 for _ in repo.walk(oid, pygit2.enums.SortMode.NONE))


def _snapshot(repo: pygit2.Repository, rev: str, commits: int) -> str:
    """The first-parent ancestor of `rev` whose history holds at most `commits` commits (the
    newest such one, by bisection along the first-parent chain)."""
    chain = []
    c = repo.revparse_single(rev).peel(pygit2.Commit)
    while True:
        chain.append(c.id)
        if not c.parents:
            break
        c = c.parents[0]
    lo, hi = 0, len(chain) - 1          # chain[0] newest; counts fall as the index grows
    if _count(repo, chain[0]) <= commits:
        return str(chain[0])
    while lo < hi:
        mid = (lo + hi) // 2
        if _count(repo, chain[mid]) <= commits:
            hi = mid
        else:
            lo = mid + 1
    return str(chain[lo])


def _write(folder: Path, tables):
    """The tables and a manifest naming them under `folder`: a later read's `--reuse`."""
    write_history(folder, tables)
    (folder / "manifest.json").write_text(json.dumps({"history": manifest_entry(tables)}))
    return tables


def _mapper(workers: Workers):
    """`map_chunks` as a build passes it to `read_history`: in `workers`, or here with one."""
    def map_chunks(fn, chunks):
        return workers.map_runs(fn, chunks, "history", "chunk", False) if workers.size > 1 else [fn(c) for c in chunks]

    return map_chunks


def _timed(jobs: int, work):
    """Run `work(map_chunks)` with its own worker pool (closed, so its CPU time is counted)."""
    with Stopwatch() as sw, Workers(jobs) as workers:
        result = work(_mapper(workers))
    return result, {"wall_seconds": round(sw.wall, 2), "cpu_seconds": round(sw.cpu, 2)}


def _derived_vs_full(args, new: str, here: Path, out: Path, want, log) -> dict:
    """The incremental read again, `args.rounds` times each way in alternation: versions
    outlined from a neighbour's outline (every reader's `derive`, as shipped) and every
    version parsed in full (derive switched off; the workers fork after the switch): wall
    and CPU seconds and their ratios."""
    derive = {cls: cls.derive for cls in DERIVING}
    walls: dict[str, list[float]] = {"derived": [], "full_parses": []}
    cpus: dict[str, list[float]] = {"derived": [], "full_parses": []}
    for i in range(2 * args.rounds):
        side = ("derived", "full_parses")[(i + i // 2) % 2]         # D F F D D F ...: drift hits both
        for cls in DERIVING:
            cls.derive = derive[cls] if side == "derived" else (lambda self, base, path, raw, hunks: None)
        try:
            again, timing = _timed(args.jobs, lambda m: read_history(
                resolve(HistorySpec(Path(args.mirror), new), here), set(), here, m, log))
        finally:
            for cls in DERIVING:
                cls.derive = derive[cls]
        if not (again.commits.equals(want.commits) and again.changes.equals(want.changes)):
            raise SystemExit(f"bench_history: the {side} read gave other tables")
        walls[side].append(timing["wall_seconds"])
        cpus[side].append(timing["cpu_seconds"])
    median = {side: statistics.median(w) for side, w in walls.items()}
    cpu = {side: statistics.median(w) for side, w in cpus.items()}
    return {"derived_wall_seconds": walls["derived"], "full_parses_wall_seconds": walls["full_parses"],
            "derived_cpu_seconds": cpus["derived"], "full_parses_cpu_seconds": cpus["full_parses"],
            "median_speedup": round(median["full_parses"] / median["derived"], 2),
            "median_cpu_speedup": round(cpu["full_parses"] / cpu["derived"], 2)}


def _speed() -> float:
    """Seconds of a fixed 20 M-step pure-Python loop (this machine's speed at the moment)."""
    t0 = time.perf_counter()
    total = 0
    for i in range(20_000_000):
        total += i
    return round(time.perf_counter() - t0, 2)


def _bases(repo: pygit2.Repository, instances: str, name: str) -> list[str]:
    """The distinct base commits of `name`'s instances, oldest commit first."""
    import pyarrow.parquet as pq

    rows = pq.read_table(instances, columns=["repo", "base_commit"]).to_pylist()
    oids = {repo.revparse_single(r["base_commit"]).peel(pygit2.Commit).id for r in rows if r["repo"] == name}
    if not oids:
        raise SystemExit(f"bench_history: {instances} has no instance of repo {name!r}")
    return [str(o) for o in sorted(oids, key=lambda o: (repo[o].commit_time, str(o)))]


def _sequence(args, repo: pygit2.Repository, log) -> dict:
    """Each snapshot of a dev set read as consecutive `--reuse` builds would (see the module
    docstring): rows of (base, new commits, seconds, full read or not)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Workers(args.jobs) as workers:
        map_chunks = _mapper(workers)
        previous = None
        for i, base in enumerate(_bases(repo, args.instances, args.repo)):
            here = Path(tmp) / str(i)
            here.mkdir()
            t0 = time.perf_counter()
            tables = read_history(resolve(HistorySpec(Path(args.mirror), base), here), set(), previous,
                                  map_chunks, log)
            seconds = time.perf_counter() - t0
            _write(here, tables)
            full = tables.info["reused"] == 0
            rows.append({"base": base[:12], "new_commits": tables.info["read"], "seconds": round(seconds, 2),
                         "ms_per_commit": round(1000 * seconds / max(1, tables.info["read"]), 1), "full": full})
            log(f"{base[:12]}: {tables.info['read']} commits in {seconds:.2f} s{' (full read)' if full else ''}")
            previous = here
    later = sorted(r["seconds"] for r in rows if not r["full"])
    summary = {"later_snapshots": len(later)}
    if later:
        summary.update(median_seconds=statistics.median(later), max_seconds=later[-1],
                       over_5_seconds=sum(s > 5 for s in later))
    return {"snapshots": rows, "summary": summary}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", required=True, help="a bare mirror or .git folder")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--step", type=int, default=20, help="first-parent commits between the two snapshots")
    ap.add_argument("--old", help="the older snapshot (default: --step first-parent commits before the newer)")
    ap.add_argument("--new", help="the newer snapshot (default: the one --rev and --commits name)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="also read the newer snapshot in full and compare")
    ap.add_argument("--rounds", type=int, default=0,
                    help="also time the incremental read N times with derived Python outlines and N times "
                         "parsing every version in full, alternating (same tables asserted)")
    ap.add_argument("--instances", help="a dev set's instances.parquet: time its snapshots of --repo in order")
    ap.add_argument("--repo", help="with --instances: the instances' repo (e.g. fmtlib/fmt)")
    ap.add_argument("--speed", action="store_true", help="time a fixed pure-Python loop before and after")
    args = ap.parse_args()
    if bool(args.instances) != bool(args.repo):
        ap.error("--instances and --repo go together")
    repo = pygit2.Repository(args.mirror)
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    if args.instances:
        speed = _speed() if args.speed else None
        results = {"mirror": args.mirror, "repo": args.repo, "jobs": args.jobs, **_sequence(args, repo, log)}
        if args.speed:
            results["loop_seconds_before_after"] = [speed, _speed()]
        print(json.dumps(results, indent=2))
        return 0
    new = str(repo.revparse_single(args.new).peel(pygit2.Commit).id) if args.new else \
        _snapshot(repo, args.rev, args.commits)
    old = str(repo.revparse_single(args.old or f"{new}~{args.step}").peel(pygit2.Commit).id)
    results = {"mirror": args.mirror, "old": old, "new": new, "jobs": args.jobs}
    with tempfile.TemporaryDirectory() as tmp:
        here = Path(tmp)
        first, results["full"] = _timed(args.jobs, lambda m: _write(here, read_history(
            resolve(HistorySpec(Path(args.mirror), old), here), set(), None, m, log)))
        results["full"].update(commits=first.commits.num_rows, changes=first.changes.num_rows)
        out = here / "next"
        out.mkdir()
        second, results["incremental"] = _timed(args.jobs, lambda m: _write(out, read_history(
            resolve(HistorySpec(Path(args.mirror), new), here), set(), here, m, log)))
        results["incremental"].update(read=second.info["read"], commits=second.commits.num_rows)
        if args.rounds:
            results["derived_vs_full_parses"] = _derived_vs_full(args, new, here, out, second, log)
        if args.check:
            full, results["full_new"] = _timed(args.jobs, lambda m: read_history(
                resolve(HistorySpec(Path(args.mirror), new), here), set(), None, m, log))
            results["incremental_equals_full"] = (full.commits.equals(second.commits)
                                                  and full.changes.equals(second.changes))
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
