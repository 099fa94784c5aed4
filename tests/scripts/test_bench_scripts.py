"""The index benchmarks (scripts/bench_*.py) end to end on a tiny corpus, and their shared
helper scripts/benchkit.py: each prints its tables with the expected columns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
SUMMARY = ["metric", "ours", "baseline", "ratio", "target", "pass/fail"]


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory) -> Path:
    """A five-file package with docstrings (queries are drawn from them) and calls."""
    pkg = tmp_path_factory.mktemp("corpus") / "tinypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A tiny package for benchmark smoke tests."""\n')
    for i in range(1, 5):
        (pkg / f"mod{i}.py").write_text(
            f'"""Module {i} of the tiny package."""\n\n\n'
            f"def parse_value{i}(text):\n"
            '    """Parse the value out of a text line and return it as an integer."""\n'
            "    return int(text.strip())\n\n\n"
            f"def format_value{i}(value):\n"
            '    """Format a value for printing in the report table."""\n'
            f"    return parse_value{i}(str(value)) + {i}\n\n\n"
            f"class Reader{i}:\n"
            '    """Read records from a stream of lines one at a time."""\n\n'
            "    def read(self, stream):\n"
            '        """Return the next record from the stream or None at the end."""\n'
            f"        return format_value{i}(next(stream, None))\n")
    return pkg


def run_script(name: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(SCRIPTS / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def header_cells(stdout: str, first: str) -> list[str]:
    """The cells of the table header line that starts with `first`."""
    line = next(ln for ln in stdout.splitlines() if ln.split(" | ")[0].strip() == first)
    return [c.strip() for c in line.split(" | ")]


def summary_metrics(stdout: str) -> list[str]:
    lines = stdout.split("== summary:")[1].splitlines()[3:]
    return [ln.split(" | ")[0].strip() for ln in lines if " | " in ln]


def test_bench_bm25(tiny_corpus):
    stdout = run_script("bench_bm25.py", "--corpus", str(tiny_corpus), "--queries", "20",
                        "--rank-bm25-queries", "5", "-k", "5", "--repeats", "1")
    assert header_cells(stdout, "metric") == SUMMARY
    metrics = summary_metrics(stdout)
    assert any(m.startswith("BM25 batch search") for m in metrics)
    assert any(m.startswith("BM25 vs naive") for m in metrics)


def test_bench_dense(tiny_corpus):
    stdout = run_script("bench_dense.py", "--corpus", str(tiny_corpus), "--queries", "10", "--dense-queries", "5",
                        "--dense-sample", "6", "--encode-sample", "4", "-k", "5", "--repeats", "1")
    assert header_cells(stdout, "metric") == SUMMARY
    metrics = summary_metrics(stdout)
    assert any(m.startswith("encode documents") for m in metrics)
    assert any(m.startswith("dense search faiss") for m in metrics)


def test_bench_build_with_reuse(tiny_corpus):
    stdout = run_script("bench_build.py", "--corpus", str(tiny_corpus), "--dense-sample", "6",
                        "--reuse", "--reuse-nodes", "10")
    assert header_cells(stdout, "metric") == SUMMARY
    metrics = summary_metrics(stdout)
    assert "build: parse" in metrics and "reuse: second-commit build total" in metrics


def test_bench_incremental_synthetic(tiny_corpus):
    stdout = run_script("bench_incremental.py", "--synthetic", "--corpus", str(tiny_corpus), "--snapshots", "2",
                        "--modify-fraction", "0.5")
    assert header_cells(stdout, "#") == ["#", "snapshot", "changed files (bytes)", "build", "parse", "graph",
                                         "sparse", "total", "wall", "peak RSS", "reused", "identical"]
    assert header_cells(stdout, "metric") == SUMMARY
    assert "snapshots: incremental build, all stages" in summary_metrics(stdout)


def test_bench_far_apart(tiny_corpus):
    stdout = run_script("bench_far_apart.py", "--corpus", str(tiny_corpus))
    assert header_cells(stdout, "stage") == ["stage", "fresh", "reuse", "reuse/fresh"]
    assert header_cells(stdout, "metric") == SUMMARY
    assert "far apart: reuse build, all stages" in summary_metrics(stdout)


def test_benchkit_tables_and_rounds(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import benchkit

    fixed = benchkit.render_table(("a", "bb"), [("x", 1), ("yyy", 22)], right=(1,))
    assert fixed.splitlines() == ["a   | bb", "----+---", "x   |  1", "yyy | 22"]
    assert benchkit.render_table(("a", "b"), [(1, 2)], markdown=True).splitlines() == [
        "| a | b |", "|---|---|", "| 1 | 2 |"]
    calls: list[str] = []
    timing = benchkit.timed_rounds({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3,
                                   progress=False)
    assert calls == ["a", "b", "b", "a", "a", "b"]          # the order rotates every round
    assert {name: len(t.times) for name, t in timing.items()} == {"a": 3, "b": 3}
    assert benchkit.Timing((1.0, 2.0, 4.0)).speedup_over(benchkit.Timing((2.0, 2.0, 2.0))) == 1.0
    rows = [benchkit.Row("m", "1 s", "2 s", 2.0, 1.5), benchkit.Row("n", "3", status="FAIL")]
    table = benchkit.summary_table(rows).splitlines()
    assert [c.strip() for c in table[0].split(" | ")] == SUMMARY
    assert table[2].rstrip().endswith("pass") and table[3].rstrip().endswith("FAIL")
    with benchkit.Stopwatch() as sw:
        sum(range(1000))
    assert sw.wall >= 0 and sw.cpu >= 0
