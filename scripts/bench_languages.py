#!/usr/bin/env python3
"""Parse speed per language on real repositories: CodeNib's parse stage (nodes, spans, texts
and facts of each file, `codenib.compiler.lang.read_foreign`) against a bare tree-sitter parse
of the same bytes with the same grammar, in the same run; and the time to index a large
repository without vectors.

    python scripts/bench_languages.py                                # dev-set checkouts
    python scripts/bench_languages.py --large /tmp/grpc-go-head      # + `codenib index --no-dense`

Per language it takes the snapshot (one per repository, the newest instance of each in the
multi-language dev set's checkouts) holding the most files of that language, reads the files
into memory, then alternates the two parsers over them `--repeat` times and keeps each one's
best pass (the machine is shared: the best pass is the least disturbed). nodes/s counts
CodeNib's nodes for both, so its ratio equals the files/s ratio. The issue's target is a ratio
of at least 0.5. `--large` indexes a checkout from scratch (`--no-dense --no-cache`) in a
fresh process and prints wall and CPU seconds (target: a ~1,000-file Go or Rust repository
under a minute on 2 cores); make one with `git --git-dir=MIRROR archive HEAD | tar -x -C DIR`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devsets  # noqa: E402
from benchkit import Stopwatch, timed_rounds  # noqa: E402

TARGET_RATIO = 0.5


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkouts", default="/tmp/mswe-dev/checkouts", help="<qid>/ snapshot folders")
    ap.add_argument("--data", default=str(devsets.default_data("mswe-dev", HERE)),
                    help="the set whose instances name the checkouts (one snapshot per repository)")
    ap.add_argument("--repeat", type=int, default=3, help="passes per parser (the best is kept)")
    ap.add_argument("--large", help="a checkout to index without vectors, timed")
    a = ap.parse_args(argv)
    try:
        from codenib.compiler.lang import read_foreign, reader_for
        from codenib.compiler.walk import walk_repository
        from codenib.engines.languages import language_of
    except ImportError as exc:
        print(f"bench_languages: this CodeNib has no tree-sitter readers ({exc})", file=sys.stderr)
        return 2

    snapshots = _snapshots(Path(a.data), Path(a.checkouts))
    files: dict[str, dict[str, list[Path]]] = defaultdict(dict)
    for snap in snapshots:
        found, _ = walk_repository(snap)
        per: dict[str, list[Path]] = defaultdict(list)
        for f in found:
            lang = language_of(f.rel_path)
            if lang and reader_for(f.rel_path) is not None:
                per[lang].append(f)
        for lang, fs in per.items():
            files[lang][snap.name] = fs
    print(f"{'language':<11} {'snapshot':<30} {'files':>5} {'MB':>5} {'nodes':>6}  "
          f"{'bare files/s':>12} {'codenib files/s':>15} {'nodes/s':>8} {'ratio':>6}")
    ratios = {}
    for lang in sorted(files):
        snap, fs = max(files[lang].items(), key=lambda kv: len(kv[1]))
        items = [(f.rel_path, f.abs_path.read_bytes()) for f in fs]
        bare, ours, n_nodes = _time(items, read_foreign, reader_for, a.repeat)
        ratios[lang] = bare / ours
        mb = sum(len(raw) for _, raw in items) / 1e6
        print(f"{lang:<11} {snap:<30} {len(items):>5} {mb:>5.1f} {n_nodes:>6}  {len(items) / bare:>12.0f} "
              f"{len(items) / ours:>15.0f} {n_nodes / ours:>8.0f} {bare / ours:>5.2f}x")
    missed = [lang for lang, r in ratios.items() if r < TARGET_RATIO]
    print(f"target >= {TARGET_RATIO}x of the bare parse: " + ("met by every language" if not missed
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


def _time(items, read_foreign, reader_for, repeat: int) -> tuple[float, float, int]:
    """Best seconds of a bare tree-sitter pass and of a CodeNib pass over `items`, and the
    number of nodes CodeNib made."""
    from tree_sitter import Parser

    parsers: dict[tuple[str, str], Parser] = {}
    plan = []
    for rel, raw in items:
        # Keyed by language and suffix: a grammar wheel hands out a new pointer on every call.
        key = (reader_for(rel).language, Path(rel).suffix)
        if key not in parsers:
            parsers[key] = Parser(_language(reader_for(rel).grammar_for(rel)))
        plan.append((parsers[key], raw))
    counted: list[int] = []
    timing = timed_rounds({
        "bare": lambda: [parser.parse(raw) for parser, raw in plan],
        "ours": lambda: counted.append(sum(len(read_foreign(rel, raw).nodes) for rel, raw in items)),
    }, repeat, progress=False)
    return timing["bare"].best, timing["ours"].best, counted[-1]


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
