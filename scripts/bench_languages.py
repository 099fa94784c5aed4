#!/usr/bin/env python3
"""Parse speed per language on real repositories: CodeNib's parse stage (nodes, spans, texts
and facts of each file, `codenib.compiler.lang.read_foreign`) against a bare tree-sitter parse
of the same bytes with the same grammar, in the same run; and the time to index a large
repository without vectors.

    python scripts/bench_languages.py                                # dev-set checkouts
    python scripts/bench_languages.py --languages go,java             # only these languages
    python scripts/bench_languages.py --large /tmp/grpc-go-head      # + `codenib index --no-dense`

Per language it takes the snapshot (one per repository, the newest instance of each in the
multi-language dev set's checkouts) holding the most files of that language, reads the files
into memory, then times the two parsers over them in `--repeat` interleaved rounds (the order
rotates each round). The ratio is bare time / CodeNib time per round, the median over rounds,
on this process's CPU seconds (what decides it: the machine is shared, so wall time mostly
measures the others) and, beside it, on wall seconds. Both sides parse the same bytes with the
same grammar (`.tsx` with TSX, a `.h` by its bytes, as CodeNib chooses) and drop each tree
after its file. files/s are CPU medians; nodes/s counts CodeNib's nodes, so its ratio equals
the files/s ratio. The issue's target is a CPU ratio of at least 0.5.
`--large` indexes a checkout from scratch (`--no-dense --no-cache`) in a
fresh process and prints wall and CPU seconds (target: a ~1,000-file Go or Rust repository
under a minute on 2 cores); make one with `git --git-dir=MIRROR archive HEAD | tar -x -C DIR`.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devsets  # noqa: E402
from benchkit import Stopwatch, Timing, cpu_seconds, fmt_ratio, render_table, timed_rounds  # noqa: E402

TARGET_RATIO = 0.5
HEAD = ("language", "snapshot", "files", "MB", "nodes", "bare files/s", "codenib files/s", "nodes/s",
        "CPU ratio", "wall ratio")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkouts", default="/tmp/mswe-dev/checkouts", help="<qid>/ snapshot folders")
    ap.add_argument("--data", default=str(devsets.default_data("mswe-dev", HERE)),
                    help="the set whose instances name the checkouts (one snapshot per repository)")
    ap.add_argument("--repeat", type=int, default=9,
                    help="interleaved rounds, each timing both parsers (the ratio is the median of the rounds')")
    ap.add_argument("--languages", help="comma-separated languages to time (default: every language found)")
    ap.add_argument("--large", help="a checkout to index without vectors, timed")
    a = ap.parse_args(argv)
    try:
        from codenib.compiler.lang import read_foreign, reader_for
        from codenib.compiler.walk import walk_repository
        from codenib.engines.languages import language_of
    except ImportError as exc:
        print(f"bench_languages: this CodeNib has no tree-sitter readers ({exc})", file=sys.stderr)
        return 2

    if a.repeat < 1:
        print(f"bench_languages: --repeat {a.repeat}: give at least 1 round", file=sys.stderr)
        return 2
    from codenib.compiler.lang import READERS

    wanted = set(a.languages.split(",")) if a.languages else set(READERS)
    if not wanted <= set(READERS):
        print(f"bench_languages: --languages {a.languages}: unknown {sorted(wanted - set(READERS))}; "
              f"choose from {', '.join(sorted(READERS))}", file=sys.stderr)
        return 2
    snapshots = _snapshots(Path(a.data), Path(a.checkouts))
    files: dict[str, dict[str, list[tuple[str, bytes]]]] = defaultdict(dict)
    for snap in snapshots:
        found, _ = walk_repository(snap)
        per: dict[str, list[tuple[str, bytes]]] = defaultdict(list)
        for f in found:
            if reader_for(f.rel_path) is None:
                continue
            raw = f.abs_path.read_bytes()
            # By its bytes, as CodeNib reads it: a C++ `.h` counts as C++.
            per[language_of(f.rel_path, raw)].append((f.rel_path, raw))
        for lang, items in per.items():
            files[lang][snap.name] = items
    print(_load_line("before"))
    rows, ratios = [], {}
    for lang in sorted(set(files) & wanted):
        snap, items = max(files[lang].items(), key=lambda kv: len(kv[1]))
        bare, ours, n_nodes = _time(items, read_foreign, reader_for, a.repeat)
        ratios[lang] = ours.cpu_saving_over(bare)
        mb = sum(len(raw) for _, raw in items) / 1e6
        rows.append((lang, snap, len(items), f"{mb:.1f}", n_nodes, f"{len(items) / bare.cpu_median:.0f}",
                     f"{len(items) / ours.cpu_median:.0f}", f"{n_nodes / ours.cpu_median:.0f}",
                     fmt_ratio(ratios[lang]), fmt_ratio(ours.speedup_over(bare))))
    print(render_table(HEAD, rows, right=range(2, len(HEAD))))
    print(_load_line("after"))
    missed = [lang for lang, r in ratios.items() if not r >= TARGET_RATIO]
    print(f"target >= {TARGET_RATIO}x of the bare parse (CPU): " + ("met by every language" if not missed
                                                                      else "MISSED by " + ", ".join(missed)))
    if a.large:
        _index_large(Path(a.large))
    return 0


def _snapshots(data: Path, checkouts: Path) -> list[Path]:
    """The newest instance's checkout of each repository in the set."""
    dev = devsets.read_set(data)
    newest: dict[str, str] = {}
    for qid in devsets.order(dev.instances, lambda r: r["repo"]):
        if (checkouts / qid).is_dir():
            newest[dev.instances[qid]["repo"]] = qid
    return [checkouts / qid for qid in sorted(newest.values())]


def _time(items, read_foreign, reader_for, repeat: int) -> tuple[Timing, Timing, int]:
    """Interleaved rounds of a bare tree-sitter pass and of a CodeNib pass over `items` (wall
    and CPU seconds of this process), and the number of nodes CodeNib made."""
    plan = _bare_plan(items, reader_for)

    def bare() -> None:
        # Each tree dropped after its file, as CodeNib's pass drops its own: a list of every
        # tree would hold them all and free them at the end of the pass.
        for parser, raw in plan:
            parser.parse(raw)

    counted: list[int] = []
    timing = timed_rounds({
        "bare": bare,
        "ours": lambda: counted.append(sum(len(read_foreign(rel, raw).nodes) for rel, raw in items)),
    }, repeat, progress=False, cpu=cpu_seconds)
    return timing["bare"], timing["ours"], counted[-1]


def _bare_plan(items, reader_for) -> list:
    """(parser, bytes) of each file: the reader and grammar CodeNib's pass uses (by the bytes
    for `.h`, TSX for `.tsx`), a parser of its own per grammar."""
    from tree_sitter import Parser

    parsers: dict[tuple[str, str], Parser] = {}
    plan = []
    for rel, raw in items:
        reader = reader_for(rel, raw)
        # Keyed by name: a grammar wheel hands out a new pointer on every call.
        key = (reader.language, reader.grammar_key(rel))
        if key not in parsers:
            parsers[key] = Parser(_language(reader.grammar_for(key[1])))
        plan.append((parsers[key], raw))
    return plan


def _load_line(when: str) -> str:
    """The load average (1, 5, 15 minutes) and the CPU count, for the record."""
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = "unknown"
    return f"load average {when}: {load} on {os.cpu_count()} CPUs"


def _language(grammar):
    from tree_sitter import Language

    return grammar if isinstance(grammar, Language) else Language(grammar)


def _index_large(repo: Path) -> None:
    """`codenib index --no-dense --no-cache` of `repo` in a fresh process: wall and CPU seconds."""
    with tempfile.TemporaryDirectory(prefix="bench-languages-") as tmp:
        with Stopwatch() as sw:
            done = subprocess.run([devsets.codenib(), "index", str(repo), "--out", str(Path(tmp) / "idx"),
                                   "--no-dense", "--no-cache"], check=True, capture_output=True, text=True)
    wall, cpu = sw.wall, sw.cpu
    summary = [ln.strip() for ln in (done.stdout + done.stderr).splitlines() if re.match(r"\s+(files|nodes|languages|time)\b", ln)]
    print(f"\nindex {repo} without vectors: {wall:.1f}s wall, {cpu:.1f}s CPU (target: under 60s on 2 cores)")
    for line in summary:
        print(f"  {line}")


if __name__ == "__main__":
    raise SystemExit(main())
