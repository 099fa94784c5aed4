"""Issue 27, items 2, 3 and 8 at unit level: S3 time limits read from the environment, the
embedded Ray's private temp folder, a TREC export to a device or pipe written in place."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from codenib.batch import raydir
from codenib.core.errors import BadInputError, CodeNibError
from codenib.core.storage import ATTEMPTS, CONNECT_TIMEOUT_S, REQUEST_TIMEOUT_S, StorageConfig


def test_s3_limits_default_and_from_environment():
    assert StorageConfig.from_env({}) == StorageConfig(None, None, CONNECT_TIMEOUT_S, REQUEST_TIMEOUT_S, ATTEMPTS)
    config = StorageConfig.from_env({"CODENIB_S3_ENDPOINT": "http://127.0.0.1:9", "CODENIB_S3_CONNECT_TIMEOUT": "1.5",
                                     "CODENIB_S3_REQUEST_TIMEOUT": "7", "CODENIB_S3_ATTEMPTS": "2"})
    assert (config.connect_timeout, config.request_timeout, config.attempts) == (1.5, 7.0, 2)
    assert "the S3 endpoint http://127.0.0.1:9 did not answer" in config.no_answer("s3://b/x", "read", "timeout")


@pytest.mark.parametrize("name,value", [("CODENIB_S3_CONNECT_TIMEOUT", "0"), ("CODENIB_S3_REQUEST_TIMEOUT", "-1"),
                                        ("CODENIB_S3_REQUEST_TIMEOUT", "nan"), ("CODENIB_S3_ATTEMPTS", "1.5"),
                                        ("CODENIB_S3_ATTEMPTS", "many")])
def test_s3_limits_that_are_not_positive_numbers_are_bad_input(name, value):
    with pytest.raises(BadInputError, match=rf"\${name} is '{value}'"):
        StorageConfig.from_env({name: value})


def test_lock_client_gets_the_limits():
    pytest.importorskip("boto3")
    from codenib.batch.objsink import _s3_client

    client = _s3_client(StorageConfig("http://127.0.0.1:9", None, 1.5, 7.0, 2))
    assert (client.meta.config.connect_timeout, client.meta.config.read_timeout) == (1.5, 7.0)
    assert client.meta.config.retries["total_max_attempts"] == 2


def test_private_root_is_0700_and_short(tmp_path):
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="cnrd", dir="/tmp"))
    try:
        root = raydir.private_root({"TMPDIR": str(short)})
        assert root.parent == short and stat.S_IMODE(root.stat().st_mode) == 0o700
        # A TMPDIR that would push Ray's socket paths past the limit falls back to /tmp.
        deep = tmp_path / ("d" * 60)
        far = raydir.private_root({"TMPDIR": str(deep)})
        assert far.parent == Path("/tmp")
        assert len(os.fsencode(raydir.ray_temp_dir(far))) + raydir.SOCKET_TAIL <= raydir.SOCKET_MAX
    finally:
        for p in sorted(short.rglob("*"), reverse=True):
            p.rmdir()
        short.rmdir()


def test_private_root_refuses_a_planted_link(tmp_path):
    import tempfile

    short = Path(tempfile.mkdtemp(prefix="cnrd", dir="/tmp"))   # short enough to be used as is
    try:
        (short / f"codenib-ray-{os.getuid()}").symlink_to(tmp_path)
        with pytest.raises(CodeNibError, match="is not a folder"):
            raydir.private_root({"TMPDIR": str(short)})
    finally:
        (short / f"codenib-ray-{os.getuid()}").unlink()
        short.rmdir()


def test_seal_takes_group_and_other_off_every_folder(tmp_path):
    (tmp_path / "r" / "session_x" / "logs").mkdir(parents=True)
    for p in [tmp_path / "r", tmp_path / "r" / "session_x", tmp_path / "r" / "session_x" / "logs"]:
        os.chmod(p, 0o777)
    raydir.seal(tmp_path)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in tmp_path.rglob("*") if p.is_dir())


def test_trec_export_to_a_pipe_is_written_in_place(tmp_path):
    from codenib.eval.trec import TrecRow, write_trec_run

    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert write_trec_run([TrecRow("q1", "a.py::f", 1, 2.0, "tag")], fifo) == 1
    reader.join(timeout=60)
    assert got == [b"q1 Q0 a.py::f 1 2.0 tag\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)   # still the pipe, not a file renamed over it


def test_an_embedded_ray_that_fails_to_start_leaves_no_results_folder(sparse_only_index_dir, tmp_path, monkeypatch):
    # Issue 38 item 13: the folder the job had created stayed behind, empty but for its manifest.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from codenib.batch import job
    from codenib.batch.driver import RunOptions, run_job

    def refuse(*args, **kwargs):
        raise RuntimeError("ray did not start (raylet died)")

    monkeypatch.setattr(job, "start_ray", refuse)
    queries = tmp_path / "q.parquet"
    pq.write_table(pa.Table.from_pylist([{"qid": "q1", "query": "slugify"}]), queries)
    out = tmp_path / "results"
    with pytest.raises(RuntimeError, match="ray did not start"):
        run_job(RunOptions(queries=str(queries), index=str(sparse_only_index_dir), out=str(out), local_below=0,
                           progress=False))
    assert not out.exists()
