"""Many snapshots of one repository indexed two ways, side by side in one run:

- chain: today's way, a checkout per snapshot and `codenib index CHECKOUT --reuse PREVIOUS`,
  one after another in commit order;
- set: `codenib index-set` over the same commits, read from git objects as Ray tasks that
  share one per-file store.

Prints CPU seconds, wall seconds and disk for each, their ratios, and whether every
snapshot's nodes and edges are equal both ways. Snapshots are the mirror's first-parent
commits, evenly spaced over the last `--over` of them.

    python scripts/bench_snapshots.py --mirror /work/.mirror/sphinx-doc+sphinx/repo \\
        --snapshots 8 --over 400 --workdir /tmp/bench-snapshots

CPU of the set run is the sum over its process tree (the CLI, Ray and its workers), sampled
with psutil every `SAMPLE_S`: a process that lives shorter than that is missed (labelled in
the output). Vectors are off in both (`--no-dense`).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

#: How often the set run's process tree is sampled for CPU time.
SAMPLE_S = 0.2
REPO_ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", required=True, help="a bare mirror or a clone's .git")
    ap.add_argument("--snapshots", type=int, default=8, help="how many snapshots (default 8)")
    ap.add_argument("--over", type=int, default=400, help="spread over the last N first-parent commits")
    ap.add_argument("--workdir", required=True, help="scratch folder (emptied first)")
    args = ap.parse_args(argv)
    if args.snapshots < 1 or args.over < args.snapshots:
        print("bench_snapshots: need 1 <= --snapshots <= --over", file=sys.stderr)
        return 2
    import pygit2

    try:
        repo = pygit2.Repository(args.mirror)
    except pygit2.GitError as exc:
        print(f"bench_snapshots: {args.mirror}: not a git repository ({exc})", file=sys.stderr)
        return 2
    commits = _first_parent(repo, args.over)
    step = len(commits) / args.snapshots
    chosen = [commits[min(len(commits) - 1, int(i * step))] for i in range(args.snapshots)]
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    names = [f"s{i:03d}" for i in range(len(chosen))]

    chain = _chain(repo, chosen, names, work)
    snapshots = work / "set.jsonl"
    snapshots.write_text("".join(json.dumps({"index": n, "repo": str(Path(args.mirror).absolute()), "rev": c}) + "\n"
                                 for n, c in zip(names, chosen)), encoding="utf-8")
    sets = _set(snapshots, work / "set")
    equal = _equal(work / "chain", work / "set", names)

    print(f"{len(chosen)} snapshots of {args.mirror} over its last {len(commits)} first-parent commits, no vectors")
    print(f"{'':24s} {'chain --reuse':>14s} {'index-set':>12s} {'set/chain':>10s}")
    for label, a, b in (("CPU seconds", chain["cpu"], sets["cpu"]), ("wall seconds", chain["wall"], sets["wall"]),
                        ("disk MB (indexes+store)", chain["disk"], sets["disk"])):
        print(f"{label:24s} {a:14.1f} {b:12.1f} {b / a if a else float('nan'):10.2f}")
    print(f"checkouts for the chain: {chain['checkout_wall']:.1f} s wall, {chain['checkout_disk']:.1f} MB (not in the "
          "chain's figures above)")
    print("set CPU by process: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(sets["by_kind"].items())))
    print(f"nodes and edges equal in every snapshot: {equal}")
    print(f"set CPU sampled every {SAMPLE_S}s over its process tree (processes shorter than that are missed)")
    return 0 if equal else 1


def _first_parent(repo, n: int) -> list[str]:
    """The last `n` first-parent commits of HEAD, oldest first."""
    out = []
    commit = repo.head.peel()
    while commit is not None and len(out) < n:
        out.append(str(commit.id))
        commit = commit.parents[0] if commit.parents else None
    return out[::-1]


def _chain(repo, commits: list[str], names: list[str], work: Path) -> dict:
    sys.path.insert(0, str(REPO_ROOT))
    from tests.git_history import archive

    cpu = wall = checkout_wall = 0.0
    previous = None
    for name, commit in zip(names, commits):
        t0 = time.perf_counter()
        checkout = archive(repo, commit, work / "checkouts" / name)
        checkout_wall += time.perf_counter() - t0
        out = work / "chain" / name
        argv = [sys.executable, "-m", "codenib.commands.cli", "index", str(checkout), "--out", str(out),
                "--no-dense", "--no-cache", "--quiet"] + (["--reuse", str(previous)] if previous else [])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall += time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        previous = out
    return {"cpu": cpu, "wall": wall, "disk": _mb(work / "chain"), "checkout_wall": checkout_wall,
            "checkout_disk": _mb(work / "checkouts")}


def _set(snapshots: Path, root: Path) -> dict:
    import psutil

    argv = [sys.executable, "-m", "codenib.commands.cli", "index-set", str(snapshots), "--index-root", str(root),
            "--no-dense", "--quiet"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[int, float] = {}
    kinds: dict[int, str] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                tree = [psutil.Process(proc.pid)] + psutil.Process(proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                break
            for p in tree:
                try:
                    t = p.cpu_times()
                    seen[p.pid] = max(seen.get(p.pid, 0.0), t.user + t.system)
                    # A worker is named once it has started a task: ask again until then.
                    if kinds.get(p.pid) not in ("ray worker (build_run)", "index-set command (driver)"):
                        kinds[p.pid] = _kind(p, proc.pid)
                except psutil.Error:
                    continue
            stop.wait(SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"index-set failed ({proc.returncode}):\n{err[-2000:]}")
    by_kind: dict[str, float] = {}
    for pid, cpu in seen.items():
        by_kind[kinds.get(pid, "other")] = by_kind.get(kinds.get(pid, "other"), 0.0) + cpu
    return {"cpu": sum(seen.values()), "wall": time.perf_counter() - t0, "disk": _mb(root), "by_kind": by_kind}


def _kind(p, root_pid: int) -> str:
    """What a process of the set run is: the command itself, a Ray worker that built
    snapshots, or one of Ray's own services (raylet, GCS, dashboard, log monitor...)."""
    if p.pid == root_pid:
        return "index-set command (driver)"
    try:
        name = " ".join(p.cmdline())    # Ray sets a worker's title there (`ray::build_run`)
    except psutil_error():
        name = ""
    if name.startswith("ray::build_run"):
        return "ray worker (build_run)"
    if name.startswith("ray::"):
        return "ray worker (idle)"
    return "ray services"


def psutil_error() -> type:
    import psutil

    return psutil.Error


def _equal(a: Path, b: Path, names: list[str]) -> bool:
    import pyarrow.parquet as pq

    return all(pq.read_table(a / n / t).equals(pq.read_table(b / n / t))
               for n in names for t in ("nodes.parquet", "edges.parquet"))


def _mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


if __name__ == "__main__":
    sys.exit(main())
