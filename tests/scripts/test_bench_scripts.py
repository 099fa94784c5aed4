"""The benchmarks (scripts/bench_*.py) end to end on tiny inputs, and their shared helper
scripts/benchkit.py: each prints its tables with the expected columns and finite ratios.
Those that run on Ray run in this process, on the tests' one local Ray (its start-up is
most of a Ray benchmark's time at these sizes)."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch.conftest import QUERIES, ray_session, write_queries  # noqa: F401 - the one local Ray

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


def table(stdout: str, first: str) -> list[list[str]]:
    """The body rows (cells) of each fixed-width or Markdown table whose header starts with
    `first`, in order."""
    lines = stdout.splitlines()
    rows: list[list[str]] = []
    for i, line in enumerate(lines):
        if cells_of(line)[:1] != [first]:
            continue
        for body in lines[i + 2:]:
            if " | " not in body:
                break
            rows.append(cells_of(body))
    assert rows, f"no table headed {first!r} in:\n{stdout}"
    return rows


def cells_of(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def finite_ratio(cell: str) -> float:
    """A ratio cell (`1.23x`) as a number; fails unless it is one and finite."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)x", cell)
    assert m, f"not a ratio: {cell!r}"
    value = float(m.group(1))
    assert math.isfinite(value) and value > 0
    return value


def summary_ratios(stdout: str) -> dict[str, float]:
    """Each summary row's metric and ratio (rows without a ratio left out)."""
    rows = table(stdout.split("== summary:")[1], "metric")
    return {r[0]: finite_ratio(r[3]) for r in rows if r[3] != "-"}


def rate_ratios(stdout: str) -> dict[str, float]:
    """The sides and ratios of the first `benchkit.rate_table`."""
    assert header_cells(stdout, "side") == ["side", "median s", "best s", "rate (median)", "ratio"]
    return {r[0]: finite_ratio(r[4]) for r in table(stdout, "side")}


def run_main(monkeypatch, capsys, name: str, *args: str) -> str:
    """`main(args)` of scripts/NAME in this process (on the tests' Ray); its stdout."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"bench_script_{Path(name).stem}", SCRIPTS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    capsys.readouterr()
    assert module.main(list(args)) == 0
    return capsys.readouterr().out


@pytest.fixture
def query_file(tmp_path) -> Path:
    return write_queries(tmp_path / "queries.parquet", QUERIES)


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


def test_benchkit_ratios_keep_three_digits_below_a_tenth(monkeypatch):
    # A tiny job on Ray against an in-process loop is a few thousandths: once printed "0.00x".
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import benchkit

    assert [benchkit.fmt_ratio(v) for v in (1.234, 0.1, 0.0042, 0.05)] == ["1.23x", "0.10x", "0.00420x", "0.0500x"]
    assert finite_ratio(benchkit.ratio(1.0, 250.0)) == 0.004


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


def test_benchkit_counts_the_cpu_of_descendants_and_tabulates_it(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import benchkit

    # A grandchild whose parent never waits for it, so no rusage counts its CPU: as Ray's
    # raylet does not wait for the workers it starts.
    spin = ("import os, signal, subprocess, sys, time\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
            "pid = subprocess.Popen([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
            "while time.process_time() - t < 0.6: pass']).pid\n"
            "while not time.sleep(0.05):\n    try:\n        os.kill(pid, 0)\n    except ProcessLookupError:\n"
            "        break\n")
    clock = benchkit.TreeClock(interval=0.1)
    timing = benchkit.timed_rounds({"child": lambda: subprocess.run([sys.executable, "-c", spin], check=True),
                                    "none": lambda: None}, 2, progress=False, cpu=clock)
    assert all(c >= 0.4 for c in timing["child"].cpu), timing
    assert timing["none"].cpu_median < 0.5
    table = benchkit.rate_table(timing, 10, "child").splitlines()
    assert cells_of(table[0]) == ["side", "median s", "best s", "rate (median)", "ratio", "CPU s (median)",
                                  "CPU ratio"]
    assert finite_ratio(cells_of(table[2])[6]) == 1.0


def test_bench_ray_data(ray_session, sparse_only_index_dir, monkeypatch, capsys):
    stdout = run_main(monkeypatch, capsys, "bench_ray_data.py", "--index", str(sparse_only_index_dir),
                      "--queries", "12", "--rounds", "1", "--concurrency", "1", "--blocks", "2")
    assert set(rate_ratios(stdout)) == {"codenib run", "ray data adapter"}
    assert set(summary_ratios(stdout)) == {"ray data adapter / codenib run throughput"}
    assert "same rows: True" in stdout


def test_bench_ray_data_gives_every_actor_blocks_of_a_one_file_query_set(ray_session, tmp_path, monkeypatch):
    # A one-row-group Parquet file reads as one block (override_num_blocks does not split it),
    # and one block goes to one actor: the benchmark's adapter ran on one actor of two.
    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location("bench_ray_data_blocks", SCRIPTS / "bench_ray_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = write_queries(tmp_path / "q.parquet", [{"qid": f"q{i}", "query": f"text {i}"} for i in range(40)])
    ds = module.read_query_blocks(path, 4).materialize()
    assert ds.num_blocks() == 4 and ds.count() == 40


def test_bench_batch(ray_session, sparse_only_index_dir, query_file, monkeypatch, capsys):
    stdout = run_main(monkeypatch, capsys, "bench_batch.py", "--index", str(sparse_only_index_dir),
                      "--queries", str(query_file), "--sizes", "8", "--modes", "sparse", "--shard-size", "4",
                      "--ray-data-concurrency", "1")
    assert set(rate_ratios(stdout)) == {"in-process loop", "ray job", "ray data"}
    assert set(summary_ratios(stdout)) == {"8 sparse: ray job / in-process loop", "8 sparse: ray data / ray job"}


def test_bench_many(ray_session, sparse_only_index_dir, monkeypatch, capsys):
    stdout = run_main(monkeypatch, capsys, "bench_many.py", "--index", str(sparse_only_index_dir),
                      "--indexes", "2", "--per-index", "4", "--shard-size", "4", "--workers", "1")
    assert set(rate_ratios(stdout)) == {"1 index", "2 indexes"}
    assert set(summary_ratios(stdout)) == {"2 indexes / 1 index throughput"}


def test_bench_s3(sparse_only_index_dir):
    pytest.importorskip("moto")
    stdout = run_script("bench_s3.py", "--index", str(sparse_only_index_dir), "--queries", "8",
                        "--shard-size", "4", "--rounds", "1")
    assert set(rate_ratios(stdout)) == {"local -> local", "s3 -> s3"}
    assert set(summary_ratios(stdout)) == {"s3 -> s3 / local -> local throughput"}
    assert {"index: copy into the node cache", "index: verified cache hit"} <= set(summary_metrics(stdout))


def test_bench_queries(sparse_only_index_dir):
    stdout = run_script("bench_queries.py", "--index", str(sparse_only_index_dir), "--sizes", "8,16",
                        "--shard-size", "4", "--in-process")
    rows = table(stdout, "queries")
    assert [r[0] for r in rows] == ["8", "16"]
    assert all(finite_ratio(r[8]) for r in rows)
    assert list(summary_ratios(stdout)) == ["driver peak RSS, 16 / 8 queries (target <= 2x)"]


def test_bench_queries_latency_times_bug_reports_on_one_loaded_index(sparse_only_index_dir, tmp_path):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    body = ("The slug comes out wrong after the engine starts. I expected slugify to lower-case the text and "
            "join the words with dashes, but the result keeps the spaces and the capitals, and run_engine then "
            "fails to find the stored item under that name. It worked in the previous release. ") * 3
    reports = tmp_path / "reports.parquet"
    pq.write_table(pa.table({"qid": ["r1", "r2"], "query": [f"slugify keeps spaces\n\n{body}",
                                                             f"Store loses items\n\n{body}"]}), reports)
    dump = tmp_path / "ranked.json"
    stdout = run_script("bench_queries.py", "--latency", "--index", str(sparse_only_index_dir), "--reports",
                        str(reports), "--rounds", "2", "-k", "5", "--dump", str(dump))
    rows = table(stdout, "plan")
    assert [(r[0], r[1]) for r in rows] == [("bug_localisation", "2"), ("bug_localisation", "2")]  # both tables
    assert all(finite_ratio(r[-1]) for r in rows)
    assert summary_metrics(stdout) == [
        "bug_localisation median ms per query, 2 reports (target < 50; ratio: ours / BM25's)"]
    ranked = json.loads(dump.read_text())
    assert sorted(ranked) == ["r1", "r2"] and all(1 <= len(v) <= 5 for v in ranked.values())
    assert any(node_id == "pkg/util.py::slugify" for node_id, _ in ranked["r1"])


def test_bench_graph(fixture_repo):
    stdout = run_script("bench_graph.py", "--repo", str(fixture_repo), "--queries", "5", "--seeds", "2")
    rows = table(stdout, "variant")
    assert [r[0] for r in rows] == ["no hub cap", "hub cap 200"]
    assert all(finite_ratio(r[6]) for r in rows)
    assert set(summary_ratios(stdout)) == {"no hub cap: push PPR vs igraph exact PPR, per query",
                                           "hub cap 200: push PPR vs igraph exact PPR, per query"}


def test_bench_encode(fixture_index_dir, tmp_path):
    stdout = run_script("bench_encode.py", "--indexes", str(fixture_index_dir), "--eval", str(tmp_path),
                        "--texts", "6", "--queries", "6", "--chunk", "3", "--backends", "torch")
    for kind in ("node texts", "queries"):
        rows = table(stdout.split(f"### {kind}:")[1].split("###")[0], "side")
        assert [r[0] for r in rows] == ["sentence-transformers", "codenib torch"]
        assert all(finite_ratio(c) for r in rows for c in r[2:5])


LANGUAGE_FILES = {
    "src/app.tsx": "export function App(props: {name: string}) {\n  return <div className=\"x\">{props.name}</div>;\n}\n",
    "src/util.ts": "export class Box<T> {\n  constructor(public value: T) {}\n  get(): T { return this.value; }\n}\n",
    "include/shape.h": "namespace geo {\nclass Shape {\n public:\n  virtual double area() const = 0;\n};\n}\n",
    "src/main.go": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
}


def _language_set(root: Path) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data, checkouts = root / "data", root / "checkouts"
    data.mkdir()
    for rel, text in LANGUAGE_FILES.items():
        path = checkouts / "acme__mixed-1" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    pq.write_table(pa.Table.from_pylist([{"qid": "acme__mixed-1", "query": "q", "index": "acme__mixed-1"}]),
                   data / "queries.parquet")
    pq.write_table(pa.Table.from_pylist([{"qid": "acme__mixed-1", "repo": "acme/mixed", "language": "go",
                                          "base_commit": "0" * 40}]), data / "instances.parquet")
    return data, checkouts


def test_bench_languages(tmp_path):
    pytest.importorskip("tree_sitter")
    data, checkouts = _language_set(tmp_path)
    stdout = run_script("bench_languages.py", "--data", str(data), "--checkouts", str(checkouts), "--repeat", "3")
    assert header_cells(stdout, "language") == ["language", "snapshot", "files", "MB", "nodes", "bare files/s",
                                                "codenib files/s", "nodes/s", "CPU ratio", "wall ratio"]
    rows = {r[0]: r for r in table(stdout, "language")}
    # The C++ header counts as C++ (by its bytes, as CodeNib reads it), not as C.
    assert set(rows) == {"cpp", "go", "typescript"}
    assert rows["typescript"][2] == "2"
    for row in rows.values():
        finite_ratio(row[8]), finite_ratio(row[9])
    assert "load average before:" in stdout and "target >= 0.5x" in stdout


def test_bench_languages_times_only_the_languages_asked_for(tmp_path):
    pytest.importorskip("tree_sitter")
    data, checkouts = _language_set(tmp_path)
    stdout = run_script("bench_languages.py", "--data", str(data), "--checkouts", str(checkouts), "--repeat", "1",
                        "--languages", "go,cpp")
    assert {r[0] for r in table(stdout, "language")} == {"cpp", "go"}
    done = subprocess.run([sys.executable, str(SCRIPTS / "bench_languages.py"), "--data", str(data),
                           "--checkouts", str(checkouts), "--languages", "go,cobol"],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert done.returncode == 2 and "cobol" in done.stderr


def test_bench_languages_parses_with_the_grammar_codenib_uses(monkeypatch):
    # The bare side parsed `.tsx` with the TypeScript grammar (JSX then reads as errors) and a
    # C++ `.h` with C's: not the same work as CodeNib's pass over the same bytes.
    pytest.importorskip("tree_sitter")
    from codenib.compiler.lang import reader_for

    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location("bench_script_languages", SCRIPTS / "bench_languages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    items = [(rel, LANGUAGE_FILES[rel].encode()) for rel in ("src/app.tsx", "include/shape.h")]
    for (rel, raw), (parser, planned) in zip(items, module._bare_plan(items, reader_for)):
        assert planned == raw
        assert not parser.parse(raw).root_node.has_error, rel


def test_bench_snapshots_names_each_process_of_the_set_run(monkeypatch):
    # The set's CPU is split by process: the command, workers that built, idle workers, Ray.
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import bench_snapshots

    class Proc:
        def __init__(self, pid: int, cmdline: list[str]):
            self.pid, self._cmdline = pid, cmdline

        def cmdline(self) -> list[str]:
            return self._cmdline

    kinds = [bench_snapshots._kind(p, 10) for p in (
        Proc(10, ["python", "-m", "codenib.commands.cli", "index-set"]), Proc(11, ["ray::build_run", ""]),
        Proc(12, ["ray::IDLE"]), Proc(13, ["/venv/ray/core/src/ray/raylet/raylet", "--raylet_socket_name"]))]
    assert kinds == ["index-set command (driver)", "ray worker (build_run)", "ray worker (idle)", "ray services"]


def test_bench_snapshots_reads_snapshot_sets_and_chains_each_repository_in_commit_order(monkeypatch, tmp_path):
    # --set: rows of two repositories, given out of order, become one chain per repository in
    # commit order, each build reusing only the previous snapshot of its own repository.
    import json

    import pygit2

    from tests.git_history import git_commit

    monkeypatch.syspath_prepend(str(SCRIPTS))
    import bench_snapshots

    commits = {}
    for name in ("alpha", "beta"):
        repo = pygit2.init_repository(str(tmp_path / name))
        c1 = git_commit(repo, {"m.py": "def f():\n    return 1\n"}, "one", 1_700_000_000, [])
        c2 = git_commit(repo, {"m.py": "def f():\n    return 2\n"}, "two", 1_700_000_100, [c1])
        commits[name] = (str(tmp_path / name / ".git"), str(c1), str(c2))
    rows = [{"index": "b2", "repo": commits["beta"][0], "rev": commits["beta"][2]},
            {"index": "a2", "repo": commits["alpha"][0], "rev": commits["alpha"][2]},
            {"index": "b1", "repo": commits["beta"][0], "rev": commits["beta"][1]}]
    first = tmp_path / "first.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    second = tmp_path / "second.jsonl"
    second.write_text(json.dumps({"index": "a1", "repo": commits["alpha"][0], "rev": commits["alpha"][1]}) + "\n",
                      encoding="utf-8")

    items, label = bench_snapshots._from_sets([str(first), str(second)], None)
    assert [name for *_, name in items] == ["a1", "a2", "b1", "b2"]
    assert label.startswith("4 snapshots of 2 repositories")
    with pytest.raises(ValueError, match="more than one set"):
        bench_snapshots._from_sets([str(first), str(first)], None)

    work = tmp_path / "work"
    out = bench_snapshots._chain(items, work)
    reused = {n: json.loads((work / "chain" / n / "manifest.json").read_text()).get("reuse")
              for n in ("a1", "a2", "b1", "b2")}
    assert [n for n, r in reused.items() if r] == ["a2", "b2"]
    assert out["cpu"] > 0 and out["checkout_disk"] > 0 and not (work / "checkouts" / "a1").exists()
