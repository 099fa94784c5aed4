"""Many snapshots of one repository indexed two ways, side by side in one run:

- chain: today's way, a checkout per snapshot and `codenib index CHECKOUT --reuse PREVIOUS`,
  one after another in commit order;
- set: `codenib index-set` over the same commits, read from git objects as Ray tasks that
  share one per-file store (`--layout store` by default: each snapshot keeps its edges and
  names its files' store entries; `--layout full`: whole folders).

Prints CPU seconds, wall seconds and disk for each, their ratios, and whether every
snapshot's nodes and edges are equal both ways; then loads a sample of snapshots both ways
(`--load-sample`) and prints the load seconds and whether their BM25 searches agree.
Snapshots are the mirror's first-parent commits, evenly spaced over the last `--over` of
them; or, with `--set` (repeatable), the
rows of snapshot sets as `codenib index-set` reads them (SWE-bench-shaped files with
`--mirror-root`), the chain then running per repository in commit order.

    python scripts/bench_snapshots.py --mirror /work/.mirror/sphinx-doc+sphinx/repo \\
        --snapshots 8 --over 400 --workdir /tmp/bench-snapshots
    python scripts/bench_snapshots.py --set ../shared/eval/swebench-dev/instances.parquet \\
        --set ../shared/eval/mswe-dev/instances.parquet --mirror-root /work/.mirror --workdir W

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
    ap.add_argument("--mirror", help="a bare mirror or a clone's .git (its first-parent commits)")
    ap.add_argument("--snapshots", type=int, default=8, help="how many snapshots (default 8)")
    ap.add_argument("--over", type=int, default=400, help="spread over the last N first-parent commits")
    ap.add_argument("--set", action="append", default=[], metavar="FILE",
                    help="a snapshot set instead of --mirror (repeatable): index, repo, rev or SWE-bench rows")
    ap.add_argument("--mirror-root", help="where --set's repo names are found (owner+name/repo)")
    ap.add_argument("--layout", choices=("store", "full"), default="store", help="index-set's --layout (default store)")
    ap.add_argument("--load-sample", type=int, default=10, metavar="N",
                    help="load N snapshots (evenly spread) from both and compare searches (default 10)")
    ap.add_argument("--workdir", required=True, help="scratch folder (emptied first)")
    args = ap.parse_args(argv)
    if bool(args.mirror) == bool(args.set):
        print("bench_snapshots: pass --mirror or --set (one of them)", file=sys.stderr)
        return 2
    if args.mirror and (args.snapshots < 1 or args.over < args.snapshots):
        print("bench_snapshots: need 1 <= --snapshots <= --over", file=sys.stderr)
        return 2
    import pygit2

    if args.set:
        from codenib.core.errors import CodeNibError

        try:
            items, label = _from_sets(args.set, args.mirror_root)
        except (CodeNibError, KeyError, ValueError, pygit2.GitError) as exc:
            print(f"bench_snapshots: {exc}", file=sys.stderr)
            return 2
    else:
        try:
            repo = pygit2.Repository(args.mirror)
        except pygit2.GitError as exc:
            print(f"bench_snapshots: {args.mirror}: not a git repository ({exc})", file=sys.stderr)
            return 2
        commits = _first_parent(repo, args.over)
        step = len(commits) / args.snapshots
        chosen = [commits[min(len(commits) - 1, int(i * step))] for i in range(args.snapshots)]
        items = [(repo, str(Path(args.mirror).absolute()), c, f"s{i:03d}") for i, c in enumerate(chosen)]
        label = f"{len(chosen)} snapshots of {args.mirror} over its last {len(commits)} first-parent commits"
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    names = [name for _, _, _, name in items]

    chain = _chain(items, work)
    snapshots = work / "set.jsonl"
    snapshots.write_text("".join(json.dumps({"index": n, "repo": gitdir, "rev": c}) + "\n"
                                 for _, gitdir, c, n in items), encoding="utf-8")
    sets = _set(snapshots, work / "set", args.layout)
    equal = _equal(work / "chain", work / "set", names)
    sample = names[::max(1, len(names) // max(1, args.load_sample))][:args.load_sample]
    loads = _loads(work / "chain", work / "set", sample)

    print(f"{label}, no vectors; index-set --layout {args.layout}")
    print(f"{'':24s} {'chain --reuse':>14s} {'index-set':>12s} {'set/chain':>10s}")
    for label, a, b in (("CPU seconds", chain["cpu"], sets["cpu"]), ("wall seconds", chain["wall"], sets["wall"]),
                        ("disk MB (indexes+store)", chain["disk"], sets["disk"]),
                        ("  in 4 KiB blocks (du)", chain["blocks"], sets["blocks"]),
                        (f"load s ({len(sample)} indexes)", loads["chain"], loads["set"])):
        print(f"{label:24s} {a:14.1f} {b:12.1f} {b / a if a else float('nan'):10.2f}")
    print(f"set disk: store {sets['store_disk']:.1f} MB, snapshot folders {sets['disk'] - sets['store_disk']:.1f} MB")
    print(f"checkouts for the chain: {chain['checkout_wall']:.1f} s wall, {chain['checkout_disk']:.1f} MB (not in the "
          "chain's figures above)")
    print("set CPU by process: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(sets["by_kind"].items())))
    print(f"nodes and edges equal in every snapshot: {equal}")
    print(f"BM25 and whole-file BM25 searches equal in the {len(sample)} loaded: {loads['equal']}")
    print(f"set CPU sampled every {SAMPLE_S}s over its process tree (processes shorter than that are missed)")
    return 0 if equal and loads["equal"] else 1


def _first_parent(repo, n: int) -> list[str]:
    """The last `n` first-parent commits of HEAD, oldest first."""
    out = []
    commit = repo.head.peel()
    while commit is not None and len(out) < n:
        out.append(str(commit.id))
        commit = commit.parents[0] if commit.parents else None
    return out[::-1]


def _from_sets(files: list[str], mirror_root: str | None) -> tuple[list[tuple], str]:
    """(pygit2 repo, git dir, commit, index name) of every row of the sets, each repository's
    in commit order (commit time, then id: as index-set orders its runs), and a label."""
    import pygit2

    from codenib.batch.snapshot_set import read_snapshot_set

    rows, seen, repos = [], set(), {}
    for f in files:
        for snap in read_snapshot_set(f, mirror_root):
            if snap.index in seen:
                raise ValueError(f"index {snap.index!r} is in more than one set")
            seen.add(snap.index)
            repo = repos.get(snap.gitdir) or repos.setdefault(snap.gitdir, pygit2.Repository(snap.gitdir))
            commit = repo.revparse_single(snap.rev).peel(pygit2.Commit)
            rows.append((snap.gitdir, int(commit.commit_time), str(commit.id), snap.index))
    rows.sort()
    items = [(repos[g], g, c, name) for g, _, c, name in rows]
    return items, f"{len(items)} snapshots of {len(repos)} repositories from {', '.join(files)}"


def _chain(items: list[tuple], work: Path) -> dict:
    """A checkout and `codenib index --reuse` of the previous snapshot of the same repository,
    one after another in the order given."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.git_history import archive

    cpu = wall = checkout_wall = checkout_disk = 0.0
    previous, previous_repo = None, None
    for repo, gitdir, commit, name in items:
        if gitdir != previous_repo:
            previous, previous_repo = None, gitdir
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
        # Checkouts are not in the chain's figures; it needs only the one it is indexing.
        checkout_disk += _mb(checkout)
        shutil.rmtree(checkout, ignore_errors=True)
    return {"cpu": cpu, "wall": wall, "disk": _mb(work / "chain"), "blocks": _mb(work / "chain", blocks=True),
            "checkout_wall": checkout_wall,
            "checkout_disk": checkout_disk}


def _set(snapshots: Path, root: Path, layout: str) -> dict:
    import psutil

    argv = [sys.executable, "-m", "codenib.commands.cli", "index-set", str(snapshots), "--index-root", str(root),
            "--no-dense", "--quiet", "--layout", layout]
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
    return {"cpu": sum(seen.values()), "wall": time.perf_counter() - t0, "disk": _mb(root),
            "blocks": _mb(root, blocks=True), "by_kind": by_kind,
            "store_disk": _mb(root / ".codenib-store")}


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


def _equal(chain: Path, sets: Path, names: list[str]) -> bool:
    """Each snapshot's nodes (read back from the store in the store layout) and edges equal."""
    import pyarrow.parquet as pq

    from codenib.core.artifact import read_manifest
    from codenib.core.store_layout import read_nodes

    return all(pq.read_table(chain / n / "nodes.parquet").equals(read_nodes(sets / n, read_manifest(sets / n)))
               and pq.read_table(chain / n / "edges.parquet").equals(pq.read_table(sets / n / "edges.parquet"))
               for n in names)


#: Queries of the load check: a symbol, a phrase, an issue-like text.
_QUERIES = ("build", "read the configuration file", "TypeError when the option is None in the parser")


def _loads(chain: Path, sets: Path, names: list[str]) -> dict:
    """Seconds to load each index both ways, and whether their node and file BM25 agree."""
    from codenib.index.loaded import load_index

    seconds = {"chain": 0.0, "set": 0.0}
    equal = True
    for n in names:
        results = []
        for side, root in (("chain", chain), ("set", sets)):
            t0 = time.perf_counter()
            index = load_index(root / n, dense=False)
            seconds[side] += time.perf_counter() - t0
            results.append((index.sparse.search(list(_QUERIES), 50), index.file_sparse.search(list(_QUERIES), 10)))
        equal &= all((x == y).all() for pa, pb in zip(*results) for x, y in zip(pa, pb))
    return {**seconds, "equal": equal}


def _mb(folder: Path, blocks: bool = False) -> float:
    """MB of the files under `folder`: their bytes, or (`blocks`) what they take on disk, as `du`."""
    files = [p.stat() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(s.st_blocks * 512 if blocks else s.st_size for s in files) / 1e6


if __name__ == "__main__":
    sys.exit(main())
