"""The results folder: commits, failed shards retried on resume, one writer at a time."""

import json
import multiprocessing
import os
import signal
import socket

import pyarrow as pa
import pytest

from codenib.batch.sink import ParquetSink
from codenib.core.errors import BadInputError
from codenib.core.results import LOCK, read_results
from codenib.core.types import PLANS_SCHEMA, RESULTS_SCHEMA
from tests.batch import lock_race

#: Processes racing for one folder, and rounds of the race (each a new folder).
RACERS = 4
RACE_TRIALS = 1000


def tables(qid, error=None):
    res = pa.table({"qid": [qid], "rank": [1], "node_id": ["a.py::f"], "file": ["a.py"], "score": [1.0],
                    "plan": ["fast_lexical"], "index": ["i"], "run_tag": ["t"]}, schema=RESULTS_SCHEMA)
    plans = pa.table({"qid": [qid], "plan": ["fast_lexical"], "signals": ["{}"], "budget": ["balanced"],
                      "capabilities": ["{}"], "trace": ["{}"], "latency_ms": [1.0], "error": [error],
                      "index": ["i"], "mode": ["auto"]}, schema=PLANS_SCHEMA)
    return res, plans


def test_failed_shards_are_retried_and_success_waits_for_them(tmp_path):
    sink = ParquetSink(tmp_path / "out", "fp", {"run_id": "r"}, total_shards=2)
    assert sink.open() == set()
    sink.commit(0, *tables("q0"))
    sink.commit(1, *tables("q1", "shard failed: actor died"), failed=True)
    sink.finalize()
    sink.close()
    assert not (tmp_path / "out" / "_SUCCESS").exists() and sink.failed_shards == [1]
    again = ParquetSink(tmp_path / "out", "fp", {"run_id": "r"}, total_shards=2)
    assert again.open() == {0}  # shard 1 runs again
    again.commit(1, *tables("q1"))
    again.finalize()
    again.close()
    assert (tmp_path / "out" / "_SUCCESS").exists()
    assert read_results(tmp_path / "out").column("qid").to_pylist() == ["q0", "q1"]


def test_one_writer_per_folder_under_a_real_race(tmp_path):
    """Four processes open a sink on the same new folder at once, TRIALS times: exactly one
    writer each time; the others get exit status 2 naming the holder's pid and host."""
    trials = RACE_TRIALS
    ctx = multiprocessing.get_context("spawn")
    barrier, outcomes = ctx.Barrier(RACERS), ctx.Queue()
    procs = [ctx.Process(target=lock_race.race, args=(str(tmp_path), trials, barrier, outcomes))
             for _ in range(RACERS)]
    for p in procs:
        p.start()
    try:
        by_pid = dict(outcomes.get(timeout=600) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    host = socket.gethostname()
    problems = []
    for trial in range(trials):
        got = {pid: runs[trial] for pid, runs in by_pid.items()}
        winners = [pid for pid, o in got.items() if o[0] == "won"]
        losers = [o for o in got.values() if o[0] != "won"]
        if len(winners) != 1:
            problems.append((trial, "winners", winners, losers))
            continue
        for o in losers:
            if o[0] != "lost" or o[2] != 2 or f"pid {winners[0]} on {host}" not in o[1]:
                problems.append((trial, "loser", o))
    assert not problems, f"{len(problems)} of {trials} trials went wrong, first: {problems[:3]}"
    # Every winner left a whole manifest and let go of the lock.
    for t in range(trials):
        folder = tmp_path / f"t{t:04d}"
        assert json.loads((folder / "_manifest.json").read_text())["fingerprint"] == "fp"
        assert not (folder / LOCK).exists()


def _holder(ctx, out):
    # Only an Event the holder sets: one it waits on would block whoever sets it after a SIGKILL.
    ready = ctx.Event()
    proc = ctx.Process(target=lock_race.hold, args=(str(out), ready, 300.0))
    proc.start()
    assert ready.wait(timeout=120), "the holder never opened the folder"
    return proc


def test_a_live_holder_is_named_and_a_dead_ones_lock_is_taken_over(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    out = tmp_path / "out"
    proc = _holder(ctx, out)
    try:
        with pytest.raises(BadInputError, match=f"pid {proc.pid} on {socket.gethostname()}") as caught:
            ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1).open()
        assert caught.value.exit_code == 2
    finally:
        os.kill(proc.pid, signal.SIGKILL)   # dies holding it: _LOCK stays, naming a dead pid
        proc.join(timeout=60)
    assert json.loads((out / LOCK).read_text())["pid"] == proc.pid
    said = []
    sink = ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1, log=said.append)
    assert sink.open() == set()
    assert any(f"pid {proc.pid}" in m and "no longer running" in m for m in said), said
    assert json.loads((out / LOCK).read_text())["pid"] == os.getpid()
    sink.close()
    assert not (out / LOCK).exists()


@pytest.mark.parametrize("holder", [{"pid": 4242, "host": "elsewhere.example"},   # cannot be checked
                                    {"pid": 1, "host": socket.gethostname()}])     # alive: not flock's
def test_a_lock_file_naming_a_process_that_may_run_is_not_taken_over(tmp_path, holder):
    out = tmp_path / "out"
    sink = ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1)
    sink.open()
    sink.close()
    (out / LOCK).write_text(json.dumps(holder))      # no process holds its flock
    with pytest.raises(BadInputError, match=f"pid {holder['pid']} on {holder['host']}") as caught:
        ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1).open()
    assert f"remove {out / LOCK}" in str(caught.value)
    assert json.loads((out / LOCK).read_text()) == holder


def test_a_rerun_of_a_complete_folder_keeps_a_users_file_in_staging(tmp_path):
    out = tmp_path / "out"
    sink = ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1)
    sink.open()
    sink.commit(0, *tables("q0"))
    sink.finalize()
    sink.close()
    (out / "_staging").mkdir(exist_ok=True)
    (out / "_staging" / "draft.txt").write_text("mine")
    with pytest.raises(BadInputError, match="_staging/draft.txt.*--force"):
        ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1).open()
    assert (out / "_staging" / "draft.txt").read_text() == "mine"
    assert not (out / LOCK).exists()
    # --force: the folder is CodeNib's again, and the job goes on.
    again = ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1, force=True)
    assert again.open() == {0}
    again.close()
    assert not (out / "_staging" / "draft.txt").exists()
