"""Fault matrix, outputs: every command that writes a folder, and loading a tampered index.

Each row: a bad input, the exit status, the first line of the message (a regex), and what
must hold afterwards. A refused command (exit 2) leaves every byte of the case's folder as it
was: the folder is hashed before and after. The `--force` and clean rows are the controls.
Helpers stay in this file (tests/fault_matrix/ has no shared conftest).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codenib.core import artifact
from codenib.commands.cli import main

QUERIES = [{"qid": "q1", "query": "where is run_engine defined"},
           {"qid": "q2", "query": "callers of slugify"},
           {"qid": "q3", "query": "Store an item"}]
QRELS = [{"qid": "q1", "node_id": "pkg/core.py::run_engine", "relevance": 1},
         {"qid": "q2", "node_id": "pkg/util.py::slugify", "relevance": 1}]


@dataclass(frozen=True)
class World:
    """What the cases start from (built once per module; cases copy what they change)."""

    repo: Path
    index: Path          # sparse-only index of the fixture repository
    queries: Path        # QUERIES as Parquet
    qrels: Path
    run: Path            # a complete results folder of `codenib run` over QUERIES
    report: Path         # `codenib eval --out` of that run


@dataclass(frozen=True)
class Case:
    """One row of the matrix. `setup(world, tmp)` writes the case's files under `tmp` and
    returns the argv; `after(tmp)` checks a control row (refusals: the hash check only)."""

    name: str
    setup: Callable[[World, Path], list[str]]
    exit: int
    first_line: str
    after: Callable[[Path], None] | None = None
    fault: Callable[[pytest.MonkeyPatch], None] | None = None   # a failure injected while it runs


# --- the world -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def world(fixture_repo, sparse_only_index_dir, tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("world")
    queries = root / "queries.parquet"
    pq.write_table(pa.Table.from_pylist(QUERIES), queries)
    qrels = root / "qrels.parquet"
    pq.write_table(pa.Table.from_pylist(QRELS), qrels)
    run, report = root / "run", root / "report"
    assert main(["run", "--queries", str(queries), "--index", str(sparse_only_index_dir), "--out", str(run),
                 "--budget", "fast", "--quiet"]) == 0
    assert main(["eval", "--results", str(run), "--qrels", str(qrels), "--out", str(report), "--no-plots"]) == 0
    return World(fixture_repo, sparse_only_index_dir, queries, qrels, run, report)


@pytest.fixture
def no_build(monkeypatch):
    """Demo rows: a demo that gets past its checks fails the row at once instead of indexing."""
    def refuse(*args, **kwargs):
        raise AssertionError("the demo started building")

    monkeypatch.setattr("codenib.compiler.build.build_index", refuse)


# --- helpers of the rows ---------------------------------------------------------------------

def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _put(path: Path, text: str = "the user's own words") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _index_argv(w: World, out: Path, *extra: str) -> list[str]:
    return ["index", str(w.repo), "--out", str(out), "--no-dense", "--quiet", *extra]


def _run_argv(w: World, out: Path, *extra: str, queries: Path | None = None) -> list[str]:
    return ["run", "--queries", str(queries or w.queries), "--index", str(w.index), "--out", str(out),
            "--budget", "fast", "--quiet", *extra]


def _eval_argv(w: World, out: Path, *extra: str) -> list[str]:
    return ["eval", "--results", str(w.run), "--qrels", str(w.qrels), "--out", str(out), "--no-plots", *extra]


def _edit_manifest(index: Path, edit: Callable[[dict], None], reseal: bool = False) -> None:
    path = index / artifact.MANIFEST
    manifest = json.loads(path.read_text())
    edit(manifest)
    if reseal:
        manifest[artifact.SELF_CHECKSUM] = artifact.manifest_checksum(manifest)
    path.write_text(json.dumps(manifest))


def _flip(path: Path, at: int = -16, n: int = 8) -> None:
    raw = bytearray(path.read_bytes())
    for i in range(at, at + n):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def _hold_lock(run: Path) -> None:
    """This test process holds the folder, as a running job would (released at exit)."""
    from codenib.batch.sink import ParquetSink

    manifest = json.loads((run / "_manifest.json").read_text())
    sink = ParquetSink(run, manifest["fingerprint"], {}, manifest["total_shards"], log=lambda m: None)
    sink.open()
    _HELD.append(sink)


_HELD: list = []


# --- setups -----------------------------------------------------------------------------------

def index_with_notes(w, tmp):
    out = _copy(w.index, tmp / "idx")
    _put(out / "NOTES.txt")
    return _index_argv(w, out)


def index_with_file_in_sparse(w, tmp):
    out = _copy(w.index, tmp / "idx")
    _put(out / "sparse" / "mine.txt")
    return _index_argv(w, out)


def index_over_foreign_folder(w, tmp):
    _put(tmp / "thesis" / "chapter1.tex")
    return _index_argv(w, tmp / "thesis")


def index_out_is_a_file(w, tmp):
    return _index_argv(w, _put(tmp / "out.txt"))


def index_with_notes_forced(w, tmp):
    return index_with_notes(w, tmp) + ["--force"]


def query_edited_manifest_and_flipped_bytes(w, tmp):
    out = _copy(w.index, tmp / "idx")
    _edit_manifest(out, lambda m: m["artifacts"].pop("edges.parquet"))
    _flip(out / "edges.parquet", at=200)
    return ["query", str(out), "who calls slugify"]


def query_resealed_manifest_unlisted_file(w, tmp):
    out = _copy(w.index, tmp / "idx")
    name = next(n for n in json.loads((out / artifact.MANIFEST).read_text())["artifacts"] if n.startswith("sparse/"))
    _edit_manifest(out, lambda m: m["artifacts"].pop(name), reseal=True)
    _flip(out / name, at=-8, n=4)
    return ["query", str(out), "who calls slugify"]


def query_manifest_without_self_checksum(w, tmp):
    out = _copy(w.index, tmp / "idx")
    _edit_manifest(out, lambda m: m.pop(artifact.SELF_CHECKSUM))
    return ["query", str(out), "who calls slugify"]


def run_tampered_index(w, tmp):
    out = _copy(w.index, tmp / "idx")
    _edit_manifest(out, lambda m: m["counts"].update(nodes=1))
    return ["run", "--queries", str(w.queries), "--index", str(out), "--out", str(tmp / "results"), "--quiet"]


def run_complete_with_staging_file(w, tmp):
    out = _copy(w.run, tmp / "results")
    _put(out / "_staging" / "draft.txt")
    return _run_argv(w, out)


def run_complete_with_notes(w, tmp):
    out = _copy(w.run, tmp / "results")
    _put(out / "NOTES.txt")
    return _run_argv(w, out)


def run_into_foreign_folder(w, tmp):
    _put(tmp / "mine" / "data.csv", "a,b\n")
    return _run_argv(w, tmp / "mine")


def run_into_held_folder(w, tmp):
    out = _copy(w.run, tmp / "results")
    _hold_lock(out)
    return _run_argv(w, out)


def run_empty_parquet_queries(w, tmp):
    path = tmp / "empty.parquet"
    pq.write_table(pa.table({"qid": pa.array([], pa.string()), "query": pa.array([], pa.string())}), path)
    return _run_argv(w, tmp / "results", queries=path)


def run_empty_jsonl_queries(w, tmp):
    return _run_argv(w, tmp / "results", queries=_put(tmp / "empty.jsonl", ""))


def run_complete_with_staging_file_forced(w, tmp):
    return run_complete_with_staging_file(w, tmp) + ["--force"]


def run_complete_clean(w, tmp):
    return _run_argv(w, _copy(w.run, tmp / "results"))


def _truncate(part: Path) -> None:
    pq.write_table(pq.read_table(part).slice(0, 1), part)


def run_complete_part_missing(w, tmp):
    out = _copy(w.run, tmp / "results")
    (out / "part-00000.parquet").unlink()
    return _run_argv(w, out)


def run_complete_part_with_fewer_rows(w, tmp):
    out = _copy(w.run, tmp / "results")
    _truncate(out / "part-00000.parquet")
    return _run_argv(w, out)


def eval_part_missing(w, tmp):
    out = _copy(w.run, tmp / "results")
    (out / "part-00000.parquet").unlink()
    return ["eval", "--results", str(out), "--qrels", str(w.qrels), "--out", str(tmp / "report"), "--no-plots"]


def eval_part_with_fewer_rows(w, tmp):
    out = _copy(w.run, tmp / "results")
    _truncate(out / "part-00000.parquet")
    return ["eval", "--results", str(out), "--qrels", str(w.qrels), "--out", str(tmp / "report"), "--no-plots"]


def _cut_bytes(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])    # a copy cut short


def run_complete_plans_cut_short(w, tmp):
    out = _copy(w.run, tmp / "results")
    _cut_bytes(out / "plans.parquet")
    return _run_argv(w, out)


def run_complete_plans_with_fewer_rows(w, tmp):
    out = _copy(w.run, tmp / "results")
    _truncate(out / "plans.parquet")
    return _run_argv(w, out)


def eval_plans_cut_short(w, tmp):
    out = _copy(w.run, tmp / "results")
    _cut_bytes(out / "plans.parquet")
    return ["eval", "--results", str(out), "--qrels", str(w.qrels), "--out", str(tmp / "report"), "--no-plots"]


def eval_plans_missing(w, tmp):
    out = _copy(w.run, tmp / "results")
    (out / "plans.parquet").unlink()
    return ["eval", "--results", str(out), "--qrels", str(w.qrels), "--out", str(tmp / "report"), "--no-plots"]


def rerank_of_a_source_with_plans_cut_short(w, tmp):
    source = _copy(w.run, tmp / "results")
    _cut_bytes(source / "plans.parquet")
    return ["rerank", "--results", str(source), "--out", str(tmp / "reranked"), "--quiet"]


def rerank_of_a_source_missing_a_part(w, tmp):
    source = _copy(w.run, tmp / "results")
    (source / "_plans" / "part-00000.parquet").unlink()
    return ["rerank", "--results", str(source), "--out", str(tmp / "reranked"), "--quiet"]


def eval_export_trec_over_a_file(w, tmp):
    trec = _put(tmp / "mine.trec", "q1 Q0 a.py 1 1.0 mine\n")
    return ["eval", "--results", str(w.run), "--export-trec", str(trec)]


def eval_export_trec_over_a_file_forced(w, tmp):
    return eval_export_trec_over_a_file(w, tmp) + ["--force"]


def rerank_into_foreign_folder(w, tmp):
    _put(tmp / "mine" / "data.csv", "a,b\n")
    # The LLM reranker: the world's index has no vectors, which the embedding one refuses first.
    _put(tmp / "llm.json", '{"endpoint": "http://127.0.0.1:9/v1", "model": "m"}')
    return ["rerank", "--results", str(w.run), "--out", str(tmp / "mine"), "--reranker", "llm",
            "--llm-config", str(tmp / "llm.json"), "--quiet"]


def eval_report_with_notes(w, tmp):
    out = _copy(w.report, tmp / "report")
    _put(out / "NOTES.txt")
    return _eval_argv(w, out)


def eval_over_foreign_folder(w, tmp):
    _put(tmp / "mine" / "summary.md")
    return _eval_argv(w, tmp / "mine")


def eval_report_with_notes_forced(w, tmp):
    return eval_report_with_notes(w, tmp) + ["--force"]


def demo_results_with_thesis(w, tmp):
    demo = tmp / "demo"
    _copy(w.index, demo / "index")
    _copy(w.run, demo / "results")
    _copy(w.report, demo / "report")
    _put(demo / "results" / "thesis.txt")
    return ["demo", "--out", str(demo), "--no-dense", "--quiet"]


def demo_report_with_notes(w, tmp):
    argv = demo_results_with_thesis(w, tmp)
    (tmp / "demo" / "results" / "thesis.txt").unlink()
    _put(tmp / "demo" / "report" / "NOTES.txt")
    return argv


def demo_over_foreign_folder(w, tmp):
    _put(tmp / "mine" / "thesis.txt")
    return ["demo", "--out", str(tmp / "mine"), "--no-dense", "--quiet", "--force"]


DEMO_SETUPS = (demo_results_with_thesis, demo_report_with_notes, demo_over_foreign_folder)


def run_fresh(w, tmp):
    return _run_argv(w, tmp / "results")


def eval_export_trec(w, tmp):
    return ["eval", "--results", str(w.run), "--export-trec", str(tmp / "run.trec")]


def index_fresh(w, tmp):
    return _index_argv(w, tmp / "idx")


# --- issue 38 item 1: a write through a link never replaces the link ------------------------

#: An open file of the process the links below name through /proc (as /dev/stdout does).
_FD_FILES: list = []


def eval_export_trec_through_a_link_forced(w, tmp):
    _put(tmp / "t.trec", "q1 Q0 a.py 1 1.0 mine\n")
    os.symlink("t.trec", tmp / "l.trec")
    return ["eval", "--results", str(w.run), "--export-trec", str(tmp / "l.trec"), "--force"]


def trec_written_through_the_link(tmp):
    assert (tmp / "l.trec").is_symlink() and os.readlink(tmp / "l.trec") == "t.trec"
    lines = (tmp / "t.trec").read_text().splitlines()
    assert lines and not any(line.endswith(" mine") for line in lines)


def eval_export_trec_through_proc_fd_forced(w, tmp):
    # `--export-trec /dev/stdout` as root replaced the system's /dev/stdout: a link through
    # /proc/self/fd to an open file of this process plays it here, harmlessly.
    fh = open(tmp / "stdout.txt", "w")
    _FD_FILES.append(fh)
    os.symlink(f"/proc/self/fd/{fh.fileno()}", tmp / "out.trec")
    return ["eval", "--results", str(w.run), "--export-trec", str(tmp / "out.trec"), "--force"]


def trec_written_through_proc(tmp):
    while _FD_FILES:
        _FD_FILES.pop().close()
    assert (tmp / "out.trec").is_symlink()
    assert (tmp / "stdout.txt").read_text().startswith("q")


def index_through_a_link_forced(w, tmp):
    _copy(w.index, tmp / "real_idx")
    os.symlink("real_idx", tmp / "idx")
    return _index_argv(w, tmp / "idx") + ["--force"]


def index_rebuilt_behind_the_link(tmp):
    assert (tmp / "idx").is_symlink() and os.readlink(tmp / "idx") == "real_idx"
    assert artifact.is_index_dir(tmp / "real_idx")
    assert not [p for p in tmp.iterdir() if ".staging-" in p.name or ".old-" in p.name]


def eval_report_through_a_link(w, tmp):
    _copy(w.report, tmp / "real_report")
    os.symlink("real_report", tmp / "report")
    return _eval_argv(w, tmp / "report")


def report_rewritten_behind_the_link(tmp):
    assert (tmp / "report").is_symlink() and (tmp / "real_report" / "metrics.json").is_file()


def index_out_is_a_link_loop(w, tmp):
    os.symlink("b", tmp / "a")
    os.symlink("a", tmp / "b")
    return _index_argv(w, tmp / "a")


# --- injected faults (issue 27, item 8: a full disk) -------------------------------------------

def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))   # as write() raises it: no file name


def disk_full_on_parquet(monkeypatch):
    monkeypatch.setattr("pyarrow.parquet.write_table", _enospc)


def disk_full_on_trec(monkeypatch):
    replace = os.replace

    def full(src, dst, *args, **kwargs):
        if str(dst).endswith(".trec"):
            _enospc()
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full)


def disk_full_on_json(monkeypatch):
    """The BM25 parameters file of an index build fails half-way through (bm25s writes it
    with json.dump)."""
    dump = json.dump

    def full(obj, fh, *args, **kwargs):
        if str(getattr(fh, "name", "")).endswith("params.index.json"):
            fh.write("{")            # half-written, then the disk is full
            fh.flush()
            _enospc()
        return dump(obj, fh, *args, **kwargs)

    monkeypatch.setattr(json, "dump", full)


# --- checks of the control rows ------------------------------------------------------------

def index_rebuilt_without_notes(tmp):
    assert not (tmp / "idx" / "NOTES.txt").exists()
    artifact.read_manifest(tmp / "idx")


def report_rewritten_without_notes(tmp):
    assert not (tmp / "report" / "NOTES.txt").exists() and (tmp / "report" / "report.md").is_file()


def run_resumed_without_draft(tmp):
    assert not (tmp / "results" / "_staging" / "draft.txt").exists()
    assert (tmp / "results" / "_SUCCESS").is_file() and not (tmp / "results" / "_LOCK").exists()


def run_left_as_it_was(tmp):
    assert (tmp / "results" / "_SUCCESS").is_file() and not (tmp / "results" / "_LOCK").exists()


def run_redone_whole(tmp):
    from codenib.core.results import damaged_parts, digest_file

    out = tmp / "results"
    run_left_as_it_was(tmp)
    manifest = json.loads((out / "_manifest.json").read_text())
    assert damaged_parts(manifest, lambda rel: digest_file(out / rel)) == []
    assert {r["qid"] for r in pq.read_table(out / "part-00000.parquet").to_pylist()} == {q["qid"] for q in QUERIES}
    assert pq.read_table(out / "plans.parquet").num_rows == len(QUERIES)


def trec_replaced(tmp):
    lines = (tmp / "mine.trec").read_text().splitlines()
    assert lines and not any(line.endswith(" mine") for line in lines)


def nothing_written(tmp):
    assert not (tmp / "results").exists()


def nothing_half_written(tmp):
    """Nothing of the failed write stays: no staged or partial file, no lock."""
    left = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
    assert not [p for p in left if p.endswith(".tmp") or "_staging/" in p or p.endswith("_LOCK")
                or "staging-" in p or ".trec" in p], left


# --- the matrix --------------------------------------------------------------------------------

FOREIGN = r"holds a file CodeNib did not write"
CASES = [
    Case("index over an index holding NOTES.txt", index_with_notes, 2, rf"idx/NOTES.txt: the index folder .*{FOREIGN}"),
    Case("index over an index with a file in sparse/", index_with_file_in_sparse, 2,
         rf"idx/sparse/mine.txt: the index folder .*{FOREIGN}"),
    Case("index over a folder that is not an index", index_over_foreign_folder, 2, r"is not a CodeNib index"),
    Case("index --out names a file", index_out_is_a_file, 2, r"exists and is a file"),
    Case("query: manifest entry removed, bytes flipped", query_edited_manifest_and_flipped_bytes, 2,
         r"manifest.json: the manifest's own checksum .* does not match"),
    Case("query: resealed manifest omits a file read", query_resealed_manifest_unlisted_file, 2,
         r"sparse/.*: the loader reads sparse/.*, but the manifest does not list it"),
    Case("query: manifest without self_sha256", query_manifest_without_self_checksum, 2,
         r"manifest.json: the manifest has no self_sha256"),
    Case("run --index with an edited manifest", run_tampered_index, 2, r"manifest's own checksum"),
    Case("run over a complete folder, file in _staging/", run_complete_with_staging_file, 2,
         rf"results/_staging/draft.txt: the results folder .*{FOREIGN}"),
    Case("run over a complete folder holding NOTES.txt", run_complete_with_notes, 2,
         rf"results/NOTES.txt: the results folder .*{FOREIGN}"),
    Case("run into a folder that is not a results folder", run_into_foreign_folder, 2,
         r"is not a CodeNib results folder"),
    Case("run into a folder another live job holds", run_into_held_folder, 2,
         r"another job \(pid \d+ on .+\) is writing to this results folder"),
    Case("run with an empty Parquet query set", run_empty_parquet_queries, 2,
         r"empty.parquet: the query set is empty", nothing_written),
    Case("run with an empty JSONL query set", run_empty_jsonl_queries, 2,
         r"empty.jsonl: the query set is empty", nothing_written),
    # Issue 27 item 1: every committed part is checked (present, rows, sha256 of its commit).
    Case("eval of a complete folder missing part-00000", eval_part_missing, 2,
         r"results/part-00000.parquet: this committed part is missing; the manifest recorded \d+ rows and sha256"),
    Case("eval of a complete folder, part-00000 with 1 row", eval_part_with_fewer_rows, 2,
         r"results/part-00000.parquet: this committed part holds 1 rows; the manifest recorded \d+ rows"),
    Case("rerank of a source missing _plans/part-00000", rerank_of_a_source_missing_a_part, 2,
         r"results/_plans/part-00000.parquet: this committed part is missing"),
    # Issue 27 item 4: an existing TREC file is not overwritten without --force.
    Case("eval --export-trec over an existing file", eval_export_trec_over_a_file, 2,
         r"mine.trec: --export-trec would overwrite this existing file; nothing was written"),
    # Issue 38 item 12: plans.parquet is checked like the parts (readable, every committed plan
    # row, the sha256 recorded when it was written); a re-run writes it again.
    Case("eval of a complete folder, plans.parquet cut short", eval_plans_cut_short, 2,
         r"results/plans.parquet: this committed file is not a readable Parquet file; the manifest recorded 3 rows"),
    Case("eval of a complete folder missing plans.parquet", eval_plans_missing, 2,
         r"results/plans.parquet: this committed file is missing; the manifest recorded 3 rows"),
    Case("rerank of a source with plans.parquet cut short", rerank_of_a_source_with_plans_cut_short, 2,
         r"results/plans.parquet: this committed file is not a readable Parquet file"),
    Case("rerank into a folder that is not a results folder", rerank_into_foreign_folder, 2,
         r"is not a CodeNib results folder"),
    Case("eval --out over a report holding NOTES.txt", eval_report_with_notes, 2,
         rf"report/NOTES.txt: the report folder .*{FOREIGN}"),
    Case("eval --out over a folder that is not a report", eval_over_foreign_folder, 2, r"is not a CodeNib report"),
    Case("demo over a demo folder with results/thesis.txt", demo_results_with_thesis, 2,
         rf"results/thesis.txt: the demo folder .*{FOREIGN}"),
    Case("demo over a demo folder with report/NOTES.txt", demo_report_with_notes, 2,
         rf"report/NOTES.txt: the demo folder .*{FOREIGN}"),
    Case("demo --force over a folder that is not a demo's", demo_over_foreign_folder, 2,
         r"is not a CodeNib demo folder"),
    # Controls: --force goes on and deletes only the files CodeNib did not write; a clean re-run works.
    Case("index --force over an index holding NOTES.txt", index_with_notes_forced, 0, r"", index_rebuilt_without_notes),
    Case("eval --force over a report holding NOTES.txt", eval_report_with_notes_forced, 0, r"",
         report_rewritten_without_notes),
    Case("run --force over a complete folder, file in _staging/", run_complete_with_staging_file_forced, 0, r"",
         run_resumed_without_draft),
    Case("run over a complete folder, nothing foreign", run_complete_clean, 0, r"already complete", run_left_as_it_was),
    # Issue 27, item 8: a full disk is not bad input (exit 1), and the message names the file.
    Case("run: the disk is full when a shard is written", run_fresh, 1,
         r"^codenib run: error: cannot write \S*/results/part-00000\.parquet: No space left on device",
         nothing_half_written, disk_full_on_parquet),
    Case("eval --export-trec: the disk is full", eval_export_trec, 1,
         r"^codenib eval: error: cannot write \S*/run\.trec: No space left on device", nothing_half_written,
         disk_full_on_trec),
    Case("index: the disk is full half-way through a file", index_fresh, 1,
         r"^codenib index: error: cannot write \S*/idx/sparse/params\.index\.json: No space left on device",
         nothing_half_written, disk_full_on_json),
    # Issue 27 item 1: a resumed run redoes the damaged shard, naming its part.
    Case("run over a complete folder missing part-00000", run_complete_part_missing, 0,
         r"part-00000.parquet is missing; the manifest recorded .*; shard 0 runs again", run_redone_whole),
    Case("run over a complete folder, part-00000 with 1 row", run_complete_part_with_fewer_rows, 0,
         r"part-00000.parquet holds 1 rows; the manifest recorded .*; shard 0 runs again", run_redone_whole),
    Case("run over a complete folder, plans.parquet cut short", run_complete_plans_cut_short, 0,
         r"plans.parquet is not a readable Parquet file; the manifest recorded 3 rows.*; plans.parquet is written again",
         run_redone_whole),
    Case("run over a complete folder, plans.parquet with 1 row", run_complete_plans_with_fewer_rows, 0,
         r"plans.parquet holds 1 rows; the manifest recorded 3 rows.*; plans.parquet is written again",
         run_redone_whole),
    Case("eval --force --export-trec over an existing file", eval_export_trec_over_a_file_forced, 0, r"wrote \d+ lines",
         trec_replaced),
    # Issue 38 item 1: through a link (to a file, through /proc, to a folder) the target is
    # written and the link stays a link.
    Case("eval --force --export-trec through a link to a file", eval_export_trec_through_a_link_forced, 0,
         r"wrote \d+ lines", trec_written_through_the_link),
    Case("eval --force --export-trec through a /proc/self/fd link", eval_export_trec_through_proc_fd_forced, 0,
         r"wrote \d+ lines", trec_written_through_proc),
    Case("index --force through a link to an index", index_through_a_link_forced, 0, r"",
         index_rebuilt_behind_the_link),
    Case("eval --out through a link to a report", eval_report_through_a_link, 0, r"",
         report_rewritten_behind_the_link),
    Case("index --out is a symlink loop", index_out_is_a_link_loop, 2, r"a: the output path is a symbolic link that loops"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outputs(case: Case, world: World, tmp_path: Path, request, capsys):
    if case.setup in DEMO_SETUPS:
        request.getfixturevalue("no_build")
    try:
        argv = case.setup(world, tmp_path)
        if case.fault is not None:
            case.fault(request.getfixturevalue("monkeypatch"))
        capsys.readouterr()
        before = _hashes(tmp_path)
        code = main(argv)
        err = capsys.readouterr().err
        first = next((line for line in err.splitlines() if line.strip()), "")
        assert code == case.exit, f"{case.name}: exit {code}, stderr:\n{err}"
        if case.exit == 2:
            assert re.search(r"^codenib \w+: error: ", first), first
            assert re.search(case.first_line, first), f"{case.name}: first line {first!r}"
            assert "(fix: " in first, first
            assert _hashes(tmp_path) == before, f"{case.name}: the refused command changed files"
        elif case.first_line:
            assert re.search(case.first_line, err, re.MULTILINE), err
        if case.after is not None:
            case.after(tmp_path)
    finally:
        while _HELD:
            _HELD.pop().close()


def _hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder`, by relative path (links by their target)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[rel + "/"] = "dir"
    return out


# --- issue 38 item 10: an output option takes a URI or refuses it, never a local `s3:` folder ---

URI_REFUSALS = [
    ("eval --out", lambda w: ["eval", "--results", str(w.run), "--qrels", str(w.qrels), "--out", "s3://b/rep"]),
    ("eval --export-trec", lambda w: ["eval", "--results", str(w.run), "--export-trec", "s3://b/run.trec"]),
    ("index --out", lambda w: ["index", str(w.repo), "--out", "s3://b/idx", "--no-dense", "--quiet"]),
    ("demo --out", lambda w: ["demo", "--out", "gs://b/demo", "--quiet"]),
]


@pytest.mark.parametrize("flag,argv", URI_REFUSALS, ids=[f for f, _ in URI_REFUSALS])
def test_an_output_uri_is_refused_where_only_local_paths_are_written(flag, argv, world, tmp_path, monkeypatch,
                                                                     capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv(world)) == 2
    first = capsys.readouterr().err.strip().splitlines()[0]
    assert f"{flag} writes a local path only" in first and "(fix: " in first, first
    assert list(tmp_path.iterdir()) == []
