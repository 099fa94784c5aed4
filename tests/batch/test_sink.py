"""The results folder: commits, failed shards retried on resume, one writer at a time."""

import json
import os
import socket

import pyarrow as pa
import pytest

from codenib.batch.sink import ParquetSink
from codenib.errors import BadInputError
from codenib.results import LOCK, read_results
from codenib.types import PLANS_SCHEMA, RESULTS_SCHEMA


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


def test_one_writer_per_folder(tmp_path):
    out = tmp_path / "out"
    first = ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1)
    first.open()
    # Another live process on this host holds the folder: refused, nothing touched.
    (out / LOCK).write_text(json.dumps({"pid": 1, "host": socket.gethostname()}))
    with pytest.raises(BadInputError, match="another job .* is writing"):
        ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1).open()
    # A lock left by a dead process is taken over.
    (out / LOCK).write_text(json.dumps({"pid": 2**22 + 12345, "host": socket.gethostname()}))
    second = ParquetSink(out, "fp", {"run_id": "r"}, total_shards=1)
    second.open()
    assert json.loads((out / LOCK).read_text())["pid"] == os.getpid()
    second.close()
    assert not (out / LOCK).exists()
