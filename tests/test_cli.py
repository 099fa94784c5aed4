"""The command line as a Unix tool: a reader of stdout that goes away (`codenib ... | head -1`)
ends the command quietly, not as bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codenib.commands.cli import EXIT_READER_GONE

REPO = Path(__file__).resolve().parents[1]
COMMAND_TIMEOUT_S = 300  # a cold start of the packaged model on a loaded 2-CPU machine


def run_with_closed_stdout(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `codenib ARGS` with stdout a pipe whose reader has already gone, as after `| head -1`."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "codenib.commands.cli", *args], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=COMMAND_TIMEOUT_S, env=env)
    finally:
        os.close(write_end)


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    spec = tmp_path / "jobs" / "job.toml"
    spec.write_text('[run]\nqueries = "q.parquet"\nindex = "idx/x"\nout = "runs/x"\n')
    return spec


@pytest.mark.parametrize("command", ["query", "query-json", "submit-dry-run", "eval-bad-input"])
def test_a_closed_stdout_ends_the_command_quietly(command, sparse_only_index_dir, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    args = {
        "query": ["query", str(sparse_only_index_dir), "who calls echo?"],
        "query-json": ["query", str(sparse_only_index_dir), "who calls echo?", "--json"],
        "submit-dry-run": ["submit", str(_spec(tmp_path)), "--dry-run"],
        # Bad input still says so: the closed stdout is never reached.
        "eval-bad-input": ["eval", "--results", str(tmp_path / "missing")],
    }[command]
    done = run_with_closed_stdout(args, env)
    if command == "eval-bad-input":
        assert done.returncode == 2 and "error:" in done.stderr
        return
    assert done.returncode == EXIT_READER_GONE, done.stderr[-2000:]
    assert "Broken pipe" not in done.stderr and "error" not in done.stderr.lower()
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_head_takes_the_first_line_and_codenib_exits_quietly(sparse_only_index_dir):
    # The pipeline, through a real shell; -k 200 makes more output than one pipe buffer.
    script = (f'{sys.executable} -m codenib.commands.cli query "{sparse_only_index_dir}" "who calls echo?" '
              '-k 200 --json | head -1; echo "status=${PIPESTATUS[0]}" >&2')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    assert done.stdout == "{\n"
    status = int(done.stderr.rsplit("status=", 1)[1])
    assert status in (0, EXIT_READER_GONE), done.stderr   # 0 when all fitted before head left
    assert "error" not in done.stderr.lower() and "Traceback" not in done.stderr


def test_a_broken_pipe_elsewhere_is_still_an_error(monkeypatch, capsys):
    from codenib.commands.command import execute

    def run(args):
        raise BrokenPipeError(32, "Broken pipe")  # e.g. a server that hung up; stdout is fine

    assert execute("query", run, None) == 2
    assert "error: Broken pipe" in capsys.readouterr().err


def test_the_console_script_finalizes_s3_before_the_interpreter_exits():
    """`entry` shuts pyarrow's S3 subsystem down after the command, even with a filesystem
    still held by a reference cycle: no S3 client is left for interpreter teardown."""
    script = """
import sys
import pyarrow.fs as pafs
from codenib.commands import cli

class Holder:
    pass

h = Holder()
h.fs = pafs.S3FileSystem(endpoint_override="127.0.0.1:9", scheme="http", anonymous=True)
h.me = h   # a cycle: only the cyclic collector frees it
del h
cli.main = lambda argv=None: 0
code = cli.entry()
try:
    pafs.S3FileSystem(anonymous=True)
except Exception as exc:
    print("after:", type(exc).__name__, str(exc).splitlines()[0])
sys.exit(code)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    assert "after:" in done.stdout and "finalized" in done.stdout.lower(), done.stdout
