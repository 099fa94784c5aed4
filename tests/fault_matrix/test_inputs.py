"""Fault matrix, inputs (issue 12, part B): for each bad input, the exit status, the first line
of the message on stderr, and that no byte of any file the user already had changed.

One row per case in CASES. A case runs `codenib` in this process (the real command line,
`main(argv)`, on the real fixture indexes and a real local Ray), or in a subprocess where
only a process shows the fault (argument bytes that are not UTF-8, a closed stdout). Every
case works on its own copy of a "user folder" (indexes under an index root, an index outside
it, query sets, configs, a job spec) whose files are hashed before and after. Nothing here
opens a connection beyond 127.0.0.1: submit cases are dry runs, and in-process cases run
with connections to anything but loopback refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codenib.commands.cli import main
from codenib.core.results import read_results

#: A cold process that loads the packaged model, on a loaded 2-CPU machine.
SUBPROCESS_TIMEOUT_S = 300
#: What a shell reports for a tool ended by SIGPIPE; codenib ends with it when stdout's reader left.
READER_GONE = 141
#: A key a test exports; it must never reach a plain-http endpoint on another machine.
SECRET = "sk-fault-matrix-3b9c"


@dataclass(frozen=True)
class Case:
    """One bad input: the command line (`{user}` and `{out}` filled in), how it runs, and what
    must come of it."""

    name: str
    argv: tuple[str, ...]
    exit_code: int
    first_line: str | None             # must open stderr's first line ("": stderr is empty; None: unchecked)
    run: str = "in-process"            # in-process | subprocess | closed-stdout
    env: dict[str, str] = field(default_factory=dict)
    plan_errors: dict[str, str | None] = field(default_factory=dict)   # qid -> text in its error (None: no error)
    setup: str = ""                    # what the case adds to its user folder (see _setup)
    after: str = ""                    # what must hold afterwards besides (see _after)


CASES = [
    # Item 4: text no tokenizer takes is cleaned once, recorded, and answered.
    Case("query: argument bytes not UTF-8 (Latin-1), dense",
         ("query", "{user}/indexes/dense", "caf\udce9 editor", "--mode", "dense", "-k", "3"),
         0, "codenib query: warning: the query text was cleaned: 1 undecodable byte(s)", run="subprocess"),
    Case("run: JSONL with a lone surrogate, NUL and ESC in queries",
         ("run", "--queries", "{user}/q/nasty.jsonl", "--index", "{user}/indexes/dense", "--out", "{out}",
          "--mode", "hybrid", "--rerank", "embedding", "--quiet"),
         0, "warning: {user}/q/nasty.jsonl: 1 queries have empty text; they become error rows",
         plan_errors={"only-controls": "empty query text", "latin1": None, "nul": None, "fine": None}),
    Case("run: Parquet query bytes that are not UTF-8",
         ("run", "--queries", "{user}/q/latin1.parquet", "--index", "{user}/indexes/dense", "--out", "{out}",
          "--mode", "dense", "--quiet"),
         0, "warning: {user}/q/latin1.parquet: the text of 1 queries was cleaned",
         plan_errors={"latin1": None, "fine": None}),
    # Item 5: index names stay under --index-root.
    Case("run: index '../idx/click' (parent of the root)",
         ("run", "--queries", "{user}/q/parent.parquet", "--index-root", "{user}/indexes", "--out", "{out}",
          "--quiet"),
         0, "warning: {user}/q/parent.parquet: index '../idx/click' is not a name under --index-root",
         plan_errors={"escape": "is not a name under --index-root", "ok": None}),
    Case("run: index as an absolute path",
         ("run", "--queries", "{user}/q/absolute.parquet", "--index-root", "{user}/indexes", "--out", "{out}",
          "--quiet"),
         0, "warning: {user}/q/absolute.parquet: index '{user}/idx/click' is not a name under --index-root",
         plan_errors={"escape": "is not a name under --index-root", "ok": None}, setup="absolute"),
    Case("run: index '../../../tmp/x'",
         ("run", "--queries", "{user}/q/tmp.parquet", "--index-root", "{user}/indexes", "--out", "{out}",
          "--quiet"),
         0, "warning: {user}/q/tmp.parquet: index '../../../tmp/x' is not a name under --index-root",
         plan_errors={"escape": "is not a name under --index-root", "ok": None}),
    Case("run: index through a symlink leading out of the root",
         ("run", "--queries", "{user}/q/link.parquet", "--index-root", "{user}/indexes", "--out", "{out}",
          "--quiet"),
         0, "warning: {user}/q/link.parquet: index 'outside' is not a name under --index-root",
         plan_errors={"escape": "leads outside --index-root", "ok": None}, setup="link"),
    # Item 6 (part): column types are checked and named.
    Case("run: `query` column stored as binary",
         ("run", "--queries", "{user}/q/binary.parquet", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/binary.parquet: column `query` has type binary; expected string"),
    Case("run: `query` column of integers (JSONL)",
         ("run", "--queries", "{user}/q/numbers.jsonl", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/numbers.jsonl: column `query` has type int64; expected string"),
    Case("run: `qid` column stored as binary",
         ("run", "--queries", "{user}/q/binary-qid.parquet", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/binary-qid.parquet: column `qid` has type binary; expected string or "
            "integer"),
    # Item 7: a closed stdout is not bad input.
    Case("query: stdout closed by its reader (| head -1)",
         ("query", "{user}/indexes/click", "who calls echo?"), READER_GONE, "", run="closed-stdout"),
    Case("submit --dry-run: stdout closed by its reader",
         ("submit", "{user}/jobs/job.toml", "--dry-run"), READER_GONE, "", run="closed-stdout"),
    # Item 8: plain http only to loopback.
    Case("submit: http:// to another machine",
         ("submit", "{user}/jobs/job.toml", "--address", "http://10.0.0.5:8265", "--dry-run"),
         2, "codenib submit: error: http://10.0.0.5:8265 (from --address) is plain http to another machine",
         env={"RAY_AUTH_TOKEN": SECRET}),
    Case("submit: http:// to another machine, --insecure",
         ("submit", "{user}/jobs/job.toml", "--address", "http://10.0.0.5:8265", "--dry-run", "--insecure"),
         0, "codenib submit: warning: --insecure: the job and the cluster token (if any) go in clear text",
         env={"RAY_AUTH_TOKEN": SECRET}),
    # Item 9: which variable may hold a key, and where a key may go.
    Case("query --rerank llm: api_key_env names another variable",
         ("query", "{user}/indexes/click", "who calls echo?", "--rerank", "llm", "--llm-config",
          "{user}/llm-any-variable.toml"),
         2, "codenib query: error: {user}/llm-any-variable.toml: LLM reranker api_key_env must be "
            "CODENIB_LLM_API_KEY or CODENIB_LLM_API_KEY_<NAME>",
         env={"AWS_SECRET_ACCESS_KEY": SECRET}),
    Case("query --rerank llm: a key and a plain-http endpoint on another machine",
         ("query", "{user}/indexes/click", "who calls echo?", "--rerank", "llm", "--llm-config",
          "{user}/llm-http-remote.toml"),
         2, "codenib query: error: the API key in $CODENIB_LLM_API_KEY would go in clear text over http to 10.0.0.5",
         env={"CODENIB_LLM_API_KEY": SECRET}),
    # Issue 27, item 2: an S3 endpoint that accepts connections and never answers ends the job.
    Case("run --out s3://: an endpoint that accepts and never answers",
         ("run", "--queries", "{user}/q/plain.jsonl", "--index", "{user}/indexes/click", "--out", "s3://b/out",
          "--local-below", "0"),
         2, "codenib run: error: the S3 endpoint http://127.0.0.1:{silent} did not answer (to reach the bucket of "
            "s3://b/out; 1 attempt(s)", run="subprocess",
         env={"CODENIB_S3_ENDPOINT": "http://127.0.0.1:{silent}", "CODENIB_S3_CONNECT_TIMEOUT": "2",
              "CODENIB_S3_REQUEST_TIMEOUT": "2", "CODENIB_S3_ATTEMPTS": "1", "AWS_ACCESS_KEY_ID": "fault-matrix",
              "AWS_SECRET_ACCESS_KEY": "fault-matrix", "AWS_EC2_METADATA_DISABLED": "true"}),
    # A cluster address nothing listens at: Ray itself retries it without end.
    Case("run --address: nothing listens there",
         ("run", "--queries", "{user}/q/plain.jsonl", "--index", "{user}/indexes/click", "--out", "{out}",
          "--address", "127.0.0.1:{closed}"),
         2, "codenib run: error: no Ray cluster answers at --address 127.0.0.1:{closed}", run="subprocess"),
    # Item 3: the embedded Ray's temp folder is this user's alone (Ray makes its folders 777).
    Case("run --local-below 0: the embedded Ray's folders are private",
         ("run", "--queries", "{user}/q/plain.jsonl", "--index", "{user}/indexes/click", "--out", "{out}",
          "--local-below", "0", "--quiet"),
         0, None, run="subprocess", env={"TMPDIR": "{raytmp}"}, after="ray-private"),
    # Item 7: output never crashes on the terminal's encoding.
    Case("query: PYTHONIOENCODING=ascii, a non-ASCII query",
         ("query", "{user}/indexes/click", "who calls \u00e9ch\u00f6?"), 0, "", run="subprocess",
         env={"PYTHONIOENCODING": "ascii"}, after="escaped-stdout"),
    # Item 8: a full disk is not bad input, and the message names what was being written.
    Case("query: stdout on a full disk (> /dev/full)",
         ("query", "{user}/indexes/click", "who calls echo?", "--json"),
         1, "codenib query: error: cannot write standard output: No space left on device", run="full-stdout"),
    # Item 10: every file an index reads stays inside its folder, not only the folder name.
    Case("query: a file of the index is a link out of its folder",
         ("query", "{user}/indexes/click", "who calls echo?"),
         2, "codenib query: error: {user}/indexes/click/edges.parquet: edges.parquet leads to "
            "{user}/idx/click/edges.parquet through a symbolic link, outside the index folder", setup="file-link"),
    Case("run --index-root: a file of an index is a link out of the root",
         ("run", "--queries", "{user}/q/file-link.parquet", "--index-root", "{user}/indexes", "--out", "{out}",
          "--quiet"),
         0, "warning: {user}/indexes/linked/edges.parquet: edges.parquet leads to "
            "{user}/idx/click/edges.parquet through a symbolic link, outside the index folder",
         plan_errors={"escape": "outside the index folder", "ok": None}, setup="file-link-root"),
    # Issue 27 item 5: JSONL fields are checked as Parquet columns are, naming the line.
    Case("run: JSONL `qid` that is an object",
         ("run", "--queries", "{user}/q/qid-object.jsonl", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/qid-object.jsonl: column `qid` has type struct; expected string or integer "
            "(line 2 holds a JSON object)"),
    Case("run: JSONL `qid` that is a list",
         ("run", "--queries", "{user}/q/qid-list.jsonl", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/qid-list.jsonl: column `qid` has type list; expected string or integer "
            "(line 1 holds a JSON array)"),
    Case("run: JSONL `query` that is an object",
         ("run", "--queries", "{user}/q/query-object.jsonl", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/query-object.jsonl: column `query` has type struct; expected string "
            "(line 1 holds a JSON object)"),
    Case("run: JSONL qids of mixed types",
         ("run", "--queries", "{user}/q/qid-mixed.jsonl", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/qid-mixed.jsonl: column `qid` mixes types: int64 (line 1) and string "
            "(line 2); a column has one type"),
    Case("run: JSONL `query` NaN",
         ("run", "--queries", "{user}/q/query-nan.jsonl", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/query-nan.jsonl: column `query` has type double; expected string "
            "(line 2 holds NaN)"),
    Case("run: JSONL bytes that are not UTF-8",
         ("run", "--queries", "{user}/q/latin1.jsonl", "--index", "{user}/indexes/click", "--out", "{out}"),
         2, "codenib run: error: {user}/q/latin1.jsonl: line 2 is not UTF-8 text"),
    # Issue 27 item 6: the key's route is checked before any work (no folder, no Ray, no connection).
    Case("run --llm-config: a key and a plain-http endpoint on another machine",
         ("run", "--queries", "{user}/q/parent.parquet", "--index", "{user}/indexes/click", "--out", "{out}",
          "--llm-config", "{user}/llm-http-remote.toml", "--local-below", "0", "--quiet"),
         2, "codenib run: error: the API key in $CODENIB_LLM_API_KEY would go in clear text over http to 10.0.0.5",
         env={"CODENIB_LLM_API_KEY": SECRET}),
    # Issue 27, item 9: a skipped file is named, with the reason and the option that lifts the limit.
    Case("index: a repository of one file over 1 MiB",
         ("index", "{user}/repos/big", "--out", "{out}", "--no-dense", "--no-cache", "--quiet"),
         2, "warning: big.py: skipped: larger than 1048576 bytes (1048577 bytes; see --max-file-bytes)",
         setup="big-repo"),
    # Issue 27, item 11: a path holding `::` would share node ids with another file's definitions.
    Case("index: a file named like a node id (x.py::C.py beside x.py defining C.py)",
         ("index", "{user}/repos/colon", "--out", "{out}", "--no-dense", "--no-cache", "--quiet"),
         0, "warning: x.py::C.py: skipped: path contains '::', which separates a node id's file from its name",
         setup="colon-repo"),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory, fixture_index_dir, sparse_only_index_dir):
    """The user folder every case starts from (copied per case)."""
    user = tmp_path_factory.mktemp("fault-inputs") / "user"
    shutil.copytree(sparse_only_index_dir, user / "indexes" / "click")
    shutil.copytree(fixture_index_dir, user / "indexes" / "dense")
    shutil.copytree(sparse_only_index_dir, user / "idx" / "click")   # an index outside the root
    q = user / "q"
    q.mkdir()
    nasty = [{"qid": "latin1", "query": "caf\udce9 editor"}, {"qid": "nul", "query": "who calls\x00 slugify?"},
             {"qid": "only-controls", "query": "\x00\x1b\x07"}, {"qid": "fine", "query": "Store an item"}]
    (q / "nasty.jsonl").write_text("".join(json.dumps(r) + "\n" for r in nasty))
    latin1 = pa.array([t.encode("latin-1") for t in ("café editor", "Store an item")], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"qid": ["latin1", "fine"], "query": latin1}), q / "latin1.parquet")
    for name, index in (("parent", "../idx/click"), ("tmp", "../../../tmp/x"), ("link", "outside")):
        pq.write_table(pa.table({"qid": ["escape", "ok"], "query": ["helper", "helper"], "index": [index, "click"]}),
                       q / f"{name}.parquet")
    pq.write_table(pa.table({"qid": ["a", "b"], "query": pa.array([b"who calls helper?", b"slugify"], pa.binary())}),
                   q / "binary.parquet")
    pq.write_table(pa.table({"qid": pa.array([b"a", b"b"], pa.binary()), "query": ["helper", "slugify"]}),
                   q / "binary-qid.parquet")
    (q / "numbers.jsonl").write_text('{"qid": "a", "query": 1}\n{"qid": "b", "query": 2}\n')
    (q / "plain.jsonl").write_text('{"qid": "a", "query": "who calls slugify"}\n{"qid": "b", "query": "Store an item"}\n')
    pq.write_table(pa.table({"qid": ["escape", "ok"], "query": ["helper", "helper"], "index": ["linked", "click"]}),
                   q / "file-link.parquet")
    for name, lines in (("qid-object", ['{"qid": "a", "query": "helper"}', '{"qid": {"id": 2}, "query": "slugify"}']),
                        ("qid-list", ['{"qid": ["a"], "query": "helper"}']),
                        ("query-object", ['{"qid": "a", "query": {"text": "helper"}}']),
                        ("qid-mixed", ['{"qid": 1, "query": "helper"}', '{"qid": "b", "query": "slugify"}']),
                        ("query-nan", ['{"qid": "a", "query": "helper"}', '{"qid": "b", "query": NaN}'])):
        (q / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    (q / "latin1.jsonl").write_bytes(b'{"qid": "a", "query": "helper"}\n{"qid": "b", "query": "caf\xe9"}\n')
    (user / "llm-any-variable.toml").write_text('[llm]\nendpoint = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
                                                'api_key_env = "AWS_SECRET_ACCESS_KEY"\n')
    (user / "llm-http-remote.toml").write_text('[llm]\nendpoint = "http://10.0.0.5:8000/v1"\nmodel = "m"\n'
                                               'retries = 0\n')
    (user / "jobs").mkdir()
    (user / "pyproject.toml").write_text("[project]\nname = 'user'\n")
    (user / "jobs" / "job.toml").write_text('[run]\nqueries = "q/parent.parquet"\nindex = "indexes/click"\n'
                                            'out = "runs/x"\n')
    return user


@pytest.fixture(scope="module")
def local_ray():
    """The batch tests' local Ray if it is up, else one of this module's (2 CPUs, 127.0.0.1)."""
    import ray

    if ray.is_initialized():
        yield ray
        return
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1",
             configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def silent_endpoint():
    """A port on 127.0.0.1 that accepts connections and never answers (a hung S3 endpoint)."""
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.fixture
def closed_port():
    """A port on 127.0.0.1 that nothing listens at (bound, then released)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        return server.getsockname()[1]


@pytest.fixture
def raytmp():
    """A short TMPDIR (Ray's socket paths must stay under 108 bytes), removed afterwards."""
    import tempfile

    path = tempfile.mkdtemp(prefix="cnfm", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault_matrix_inputs(case, template, local_ray, tmp_path, monkeypatch, capsys, request):
    if case.run == "full-stdout" and not Path("/dev/full").is_char_device():
        pytest.skip("no /dev/full on this system")
    user = tmp_path / "user"
    shutil.copytree(template, user, symlinks=True)
    _setup(case.setup, user)
    out = tmp_path / "out"
    slots = {"user": user, "out": out}
    if "{silent}" in repr(case):
        slots["silent"] = request.getfixturevalue("silent_endpoint")
    if "{closed}" in repr(case):
        slots["closed"] = request.getfixturevalue("closed_port")
    if "{raytmp}" in repr(case):
        slots["raytmp"] = request.getfixturevalue("raytmp")
    argv = [a.format(**slots) for a in case.argv]
    case = dataclasses.replace(case, env={k: v.format(**slots) for k, v in case.env.items()})
    before = _hashes(user)
    code, first = _run(case, argv, monkeypatch, capsys)
    if case.first_line is None:          # stderr's first line is Ray's or the job's, not checked
        assert code == case.exit_code, f"stderr first line: {first!r}"
    else:
        expected = case.first_line.format(**slots)
        assert (code, first if not expected else first[:len(expected)]) == (case.exit_code, expected), \
            f"stderr first line: {first!r}"
    _after(case.after, slots)
    assert _hashes(user, keys=before) == before, "a file of the user's changed"
    if case.exit_code == 2:
        assert not out.exists(), "bad input left output behind"
    if case.plan_errors:
        plans = {p["qid"]: p for p in pq.read_table(out / "plans.parquet").to_pylist()}
        for qid, text in case.plan_errors.items():
            assert (plans[qid]["error"] is None) if text is None else (text in (plans[qid]["error"] or "")), plans[qid]
        # No query was answered from an index outside the root.
        answered = {r["qid"] for r in read_results(out).to_pylist()}
        assert not answered & {q for q, t in case.plan_errors.items() if t and "index-root" in t}


def test_fault_matrix_covers_every_item_of_part_b():
    # Items 4-9 each have at least one row (10 and 11 are not inputs: tests/test_submit.py,
    # tests/batch/test_reaper.py).
    names = " ".join(c.name for c in CASES)
    for needle in ("not UTF-8", "../idx/click", "absolute", "../../../tmp/x", "binary", "stdout closed",
                   "http:// to another machine", "api_key_env", "plain-http endpoint"):
        assert needle in names, needle
    # Issue 27's items 2, 3, 7, 8 and 10.
    for needle in ("never answers", "Ray's folders are private", "PYTHONIOENCODING=ascii", "full disk",
                   "a link out of its folder", "a link out of the root"):
        assert needle in names, needle


def test_fault_matrix_covers_items_5_and_6_of_issue_27():
    # Items 1 and 4 are outputs: tests/fault_matrix/test_outputs.py.
    names = " ".join(c.name for c in CASES)
    for needle in ("`qid` that is an object", "`qid` that is a list", "`query` that is an object",
                   "qids of mixed types", "`query` NaN", "run --llm-config: a key and a plain-http endpoint"):
        assert needle in names, needle


def test_fault_matrix_covers_items_9_and_11_of_issue_27():
    names = " ".join(c.name for c in CASES)
    for needle in ("over 1 MiB", "named like a node id"):
        assert needle in names, needle


# --- helpers ---------------------------------------------------------------------------------------

def _after(what: str, slots: dict) -> None:
    """The checks of `Case.after`."""
    if what == "ray-private":
        # The embedded Ray ran under TMPDIR: its root there is 0700, and no folder under TMPDIR
        # (Ray's session, logs/, sockets/, runtime_resources/) is writable by group or others.
        tmp = Path(slots["raytmp"])
        root = tmp / f"codenib-ray-{os.getuid()}"
        assert root.is_dir() and (root.stat().st_mode & 0o777) == 0o700, sorted(p.name for p in tmp.iterdir())
        assert any(root.rglob("session_*")), "the embedded Ray did not use the private folder"
        open_to_others = [str(p) for p in [tmp, *tmp.rglob("*")]
                          if p.is_dir() and not p.is_symlink() and p.stat().st_mode & 0o022]
        assert not open_to_others, open_to_others
    elif what == "escaped-stdout":
        assert "ch\\xf6" in _LAST_STDOUT[0], _LAST_STDOUT[0][-400:]   # the query's own words, escaped


_LAST_STDOUT = [""]


def _setup(what: str, user: Path) -> None:
    """Files that name the case's own copy of the user folder (made before hashing)."""
    if what in ("file-link", "file-link-root"):
        # Same bytes as the file it replaces, so checksums pass: only where it leads is wrong.
        index = user / "indexes" / ("click" if what == "file-link" else "linked")
        if what == "file-link-root":
            shutil.copytree(user / "indexes" / "click", index)
        (index / "edges.parquet").unlink()
        (index / "edges.parquet").symlink_to(user / "idx" / "click" / "edges.parquet")
    elif what == "absolute":
        pq.write_table(pa.table({"qid": ["escape", "ok"], "query": ["helper", "helper"],
                                 "index": [str(user / "idx" / "click"), "click"]}), user / "q" / "absolute.parquet")
    elif what == "link":
        (user / "indexes" / "outside").symlink_to(user / "idx" / "click", target_is_directory=True)
    elif what == "big-repo":
        (user / "repos" / "big").mkdir(parents=True)
        (user / "repos" / "big" / "big.py").write_bytes(b"#" * ((1 << 20) + 1))
    elif what == "colon-repo":
        (user / "repos" / "colon").mkdir(parents=True)
        (user / "repos" / "colon" / "x.py").write_text("class C:\n    def py(self):\n        return 1\n")
        (user / "repos" / "colon" / "x.py::C.py").write_text("def g():\n    return 2\n")


def _run(case: Case, argv: list[str], monkeypatch, capsys) -> tuple[int, str]:
    """Exit status and stderr's first line ('' when stderr is empty)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RAY_") and k not in ("CODENIB_LLM_API_KEY", "AWS_SECRET_ACCESS_KEY")}
    env.update(case.env)
    if case.run == "in-process":
        for k in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE", "CODENIB_LLM_API_KEY",
                  "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(k, raising=False)
        for k, v in case.env.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setattr(socket, "create_connection", _loopback_only(socket.create_connection))
        capsys.readouterr()
        code = main(argv)
        err = capsys.readouterr().err
    else:
        command = [sys.executable.encode(), b"-m", b"codenib.commands.cli"]
        # os.fsencode turns the lone surrogates of an undecodable argument back into its bytes.
        command += [os.fsencode(a) for a in argv]
        if case.run == "closed-stdout":
            read_end, write_end = os.pipe()
            os.close(read_end)
            try:
                done = subprocess.run(command, stdout=write_end, stderr=subprocess.PIPE, env=env,
                                      timeout=SUBPROCESS_TIMEOUT_S)
            finally:
                os.close(write_end)
        elif case.run == "full-stdout":
            # stdout is the file descriptor of /dev/full: every write fails with ENOSPC. (Never
            # a path: a command that renames into place, run as root, would replace the device.)
            with open("/dev/full", "wb") as full:
                done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, env=env,
                                      timeout=SUBPROCESS_TIMEOUT_S)
        else:
            done = subprocess.run(command, capture_output=True, env=env, timeout=SUBPROCESS_TIMEOUT_S)
            _LAST_STDOUT[0] = done.stdout.decode("ascii", "replace")
        code, err = done.returncode, done.stderr.decode("utf-8", "replace")
    assert SECRET not in err
    lines = [line for line in err.splitlines() if line.strip()]
    return code, lines[0] if lines else ""


def _loopback_only(connect):
    def guarded(address, *args, **kwargs):
        host = address[0]
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise AssertionError(f"a case tried to connect to {host}")
        return connect(address, *args, **kwargs)
    return guarded


def _hashes(folder: Path, keys: dict[str, str] | None = None) -> dict[str, str]:
    """sha256 of every file under `folder` (links not followed), or of the files in `keys`
    (a file that is gone hashes as 'missing')."""
    paths = [folder / k for k in keys] if keys is not None else \
        [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    out = {}
    for p in paths:
        rel = p.relative_to(folder).as_posix()
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "missing"
    return out
