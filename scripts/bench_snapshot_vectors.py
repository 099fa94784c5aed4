"""Texts encoded for a snapshot set with vectors, against encoding every snapshot on its own.

Runs `codenib index-set SNAPSHOTS` with vectors (the packaged model) into a fresh index root
and reads its report: the texts it encoded (`texts_encoded`) beside the nodes of every
snapshot (what separate indexes encode, one body text per node), and the ratio. Then runs
the same set again into a second root that shares the first's store, in the store layout: a
later job over the same file versions should encode nothing, and its snapshots keep no
vectors of their own (the store's vector entries hold them). Prints the disk of both: the
first job's whole folders (what separate indexes weigh) against the second's folders plus the
store.

    python scripts/bench_snapshot_vectors.py --snapshots dayjs.jsonl --workdir /tmp/bench-vectors

SNAPSHOTS is an index-set input (rows `index`, `repo`, `rev`). Prints one line per job and
the ratios; CPU seconds are the job's process tree, sampled as `bench_snapshots.py` does not
(this bench counts texts, which do not depend on the machine).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshots", required=True, help="an index-set input file (index, repo, rev)")
    ap.add_argument("--workdir", required=True, help="scratch folder (emptied first)")
    args = ap.parse_args(argv)
    import pyarrow.parquet as pq

    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    store = work / "store"
    print(f"{'job':28s} {'snapshots':>9s} {'nodes':>9s} {'encoded':>9s} {'encoded/nodes':>13s} {'wall s':>7s}")
    totals = {}
    roots = {}
    for job, layout in (("first job", "full"), ("second job, same store", "store")):
        root = roots[layout] = work / job.split(",")[0].replace(" ", "-")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "codenib.commands.cli", "index-set", args.snapshots,
                               "--index-root", str(root), "--store", str(store), "--quiet", "--layout", layout],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return proc.returncode
        report = pq.read_table(root / "_index_set.parquet").to_pylist()
        built = [r for r in report if r["status"] == "built"]
        nodes = sum(r["nodes"] or 0 for r in built)
        encoded = sum(r["texts_encoded"] or 0 for r in built)
        totals[job] = (nodes, encoded)
        print(f"{job:28s} {len(built):9d} {nodes:9d} {encoded:9d} {encoded / nodes if nodes else float('nan'):13.3f} "
              f"{wall:7.1f}")
        errors = [r for r in report if r["status"] == "error"]
        for r in errors:
            print(f"  error row {r['index']}: {r['error']}")
    nodes, encoded = totals["first job"]
    print(f"texts encoded / texts of separate indexes: {encoded}/{nodes} = {encoded / nodes:.3f} (target <= 0.2)")
    whole, folders, shared = _mb(roots["full"]), _mb(roots["store"]), _mb(store)
    print(f"disk: whole folders {whole:.1f} MB; store layout {folders:.1f} MB of folders + {shared:.1f} MB of "
          f"store (entries and vectors) = {(folders + shared) / whole:.3f} of the whole folders (target <= 0.125)")
    return 0


def _mb(folder: Path) -> float:
    """Bytes of the files under `folder`, in MB."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6 if folder.exists() else 0.0


if __name__ == "__main__":
    sys.exit(main())
