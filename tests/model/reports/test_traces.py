"""Stack traces in every format: hand-written frames per format, the innermost frame of each
stack, the path-suffix mapping onto repository files, and the priors a report's frames give
on a real multi-language index."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.commands.cli import main
from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.index.loaded import load_index
from codenib.index.symbols import SymbolIndex
from codenib.model.localise import LocaliseWeights
from codenib.model.reports.report import read_report, resolve_mentions
from codenib.model.reports.files import clean_path, repository_files
from codenib.model.reports.traces import parse_frames
from tests.fixture_repo import write_repo
from tests.model.reports.trace_fixtures import TRACES


def _tuples(frames):
    return [(f.path, f.line, f.function, f.format) for f in frames]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_each_format_reads_its_hand_written_frames(name):
    text, expected, innermost = TRACES[name]
    frames = parse_frames(text)
    assert _tuples(frames) == expected
    assert _tuples(f for f in frames if f.depth == 0) == innermost
    for f in frames:
        assert 0 <= f.start < f.end <= len(text)
        if f.line is not None:
            assert str(f.line) in text[f.start:f.end]


def test_frames_become_frame_mentions_and_keep_their_place_in_the_stack():
    rep = read_report("Parser fails on odd names\n\n" + TRACES["java"][0])
    frames = [m for m in rep.mentions if m.kind == "frame"]
    assert [(m.text, m.line, m.format, m.depth) for m in frames][:2] == [
        ("com/fasterxml/jackson/core/json/ReaderBasedJsonParser.java", 1765, "java", 0),
        ("com/fasterxml/jackson/core/json/ReaderBasedJsonParser.java", 120, "java", 1)]
    # The frame replaces the bare `(ReaderBasedJsonParser.java:1765)` path mention it holds.
    assert not [m for m in rep.mentions if m.kind == "path"]


#: The CPython frame pattern the report reader used before the other formats: its frames must
#: come out exactly as before (text, span, line, function), so reports without the other
#: formats resolve and rank as they did.
_LEGACY = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(['File "', '/a/b.py', '", line ', "12", ", in ", "f", "<module>", "\n", " ",
                                 '"', "x", "\tat a.B.c(B.java:1)", "#0 0x1 in f a.c:1", "\r"]), max_size=40))
def test_cpython_frames_are_read_exactly_as_before(parts):
    text = "".join(parts)
    old = [(m.group(1), m.start(), m.end(), int(m.group(2)),
            m.group(3) if m.group(3) and not m.group(3).startswith("<") else None) for m in _LEGACY.finditer(text)]
    new = [(m.text, m.start, m.end, m.line, m.function) for m in read_report(text).mentions
           if m.kind == "frame" and m.format == "cpython"]
    assert new == old


FILES = ["src/main/java/com/acme/core/Parser.java", "src/jv.c", "pkg/decoder.py", "src/shop/cart.py",
         "setup.py", "src/walk.rs", "internal/conn/conn.go", "web/src/ui/App.tsx", "src/util.js"]


@pytest.mark.parametrize("printed, expected", [
    ("/home/u/code/proj/src/main/java/com/acme/core/Parser.java", ["src/main/java/com/acme/core/Parser.java"]),
    ("com/acme/core/Parser.java", ["src/main/java/com/acme/core/Parser.java"]),
    ("~/miniconda3/lib/python3.10/site-packages/shop/cart.py", ["src/shop/cart.py"]),
    ("/home/u/go/pkg/mod/github.com/acme/server@v1.4.0/internal/conn/conn.go", ["internal/conn/conn.go"]),
    ("webpack:///./src/ui/App.tsx", ["web/src/ui/App.tsx"]),
    ("file:///home/u/proj/src/util.js", ["src/util.js"]),
    ("http://localhost:3000/src/util.js", ["src/util.js"]),
    ("C:\\Users\\u\\proj\\src\\jv.c", ["src/jv.c"]),
    ("./src/walk.rs", ["src/walk.rs"]),
    ("/home/u/proj/setup.py", ["setup.py"]),
    ("jv.c", ["src/jv.c"]),                                   # a bare name may be any file of that name
    # Only the file name in common: another project's file, not the repository's.
    ("/usr/lib/python3.11/json/decoder.py", []),
    ("/home/u/other/util.js", []),
    # Toolchain roots never name a repository file, whatever suffix they share.
    ("/rustc/90c541806f23a127002de5b4038be731ba1458ca/library/std/src/walk.rs", []),
    ("/usr/include/x86_64-linux-gnu/src/jv.c", []),
    ("node:internal/src/util.js", []),
    ("/usr/local/go/src/internal/conn/conn.go", []),
    ("<anonymous>", []),
])
def test_frame_paths_map_to_repository_files_by_their_longest_suffix(printed, expected):
    symbols = SymbolIndex(FILES, ["file"] * len(FILES), FILES, FILES, FILES)
    assert repository_files(printed, symbols) == expected


def test_clean_path_drops_schemes_hosts_drives_and_dots():
    assert clean_path("webpack://app/./src/x.ts") == "app/src/x.ts"
    assert clean_path("https://cdn.example.com/a/b.js") == "a/b.js"
    assert clean_path("D:/proj/../src/x.c") == "proj/src/x.c"
    assert clean_path("/rustc/0123abcd/library/core/src/x.rs") is None


# --- priors on a real multi-language index --------------------------------------------------

REPO = {
    "src/main/java/com/acme/core/Parser.java": (
        "package com.acme.core;\n\npublic class Parser {\n    public Parser() {\n        reset();\n    }\n\n"
        "    public Object parse(String text) {\n        if (text == null) {\n            throw new IllegalStateException(\"null\");\n"
        "        }\n        return text.trim();\n    }\n\n    void reset() {\n    }\n}\n"),
    "src/main/java/com/acme/App.java": (
        "package com.acme;\n\nimport com.acme.core.Parser;\n\npublic class App {\n"
        "    public static void main(String[] args) {\n        new Parser().parse(args[0]);\n    }\n}\n"),
    "internal/conn/conn.go": (
        "package conn\n\n// Conn is one client connection.\ntype Conn struct {\n\tbuf    []byte\n\tclosed bool\n}\n\n"
        "// Close releases the buffer.\nfunc (c *Conn) Close() error {\n\tc.buf = c.buf[:0]\n\tc.closed = true\n\treturn nil\n}\n"),
    "internal/pool/pool.go": (
        "package pool\n\nimport \"github.com/acme/server/internal/conn\"\n\n// Pool keeps idle connections.\n"
        "type Pool struct {\n\tidle []*conn.Conn\n}\n\n// Shutdown closes the idle connections.\nfunc (p *Pool) Shutdown() {\n"
        "\tfor _, c := range p.idle {\n\t\tc.Close()\n\t}\n\tp.idle = nil\n}\n"),
    "src/walk.rs": "pub fn spawn_senders(n: usize) -> usize {\n    let v: Option<usize> = None;\n    v.unwrap() + n\n}\n",
    "src/main.rs": "mod walk;\n\nfn main() {\n    walk::spawn_senders(2);\n}\n",
    "src/lib/parser.js": "export function parse(text) {\n  const t = text.trim()\n  return t.split(',')\n}\n",
    "src/routes/user.js": "import { parse } from '../lib/parser.js'\n\nexport function handler(req) {\n  return parse(req.body)\n}\n",
    "src/jv.c": "#include <stdlib.h>\n\nvoid jv_free(void *p) {\n  free(p);\n}\n\nint jv_number_value(int j) {\n  return j * 2;\n}\n",
    "src/jv_alloc.c": "#include <stdlib.h>\n\nvoid jv_mem_free(void *p) {\n  free(p);\n}\n",
    "src/shop/cart.py": "def total(prices):\n    amount = sum(prices)\n    return round_all(amount)\n\n\ndef round_all(x):\n    return round(x, 2)\n",
}

#: name -> (trace whose printed first frame is outside the repository, the node id of its
#: innermost repository frame, the node id of the next repository frame out)
STACKS = {
    "java": ("java.lang.IllegalStateException: null\n"
             "\tat java.base/java.util.Objects.requireNonNull(Objects.java:233)\n"
             "\tat com.acme.core.Parser.parse(Parser.java:10)\n"
             "\tat com.acme.App.main(App.java:7)\n",
             "src/main/java/com/acme/core/Parser.java::Parser.parse", "src/main/java/com/acme/App.java::App.main"),
    "go": ("goroutine 1 [running]:\nruntime.panicmem()\n\t/usr/local/go/src/runtime/panic.go:261 +0x6c\n"
           "github.com/acme/server/internal/conn.(*Conn).Close(0x0)\n"
           "\t/home/dev/go/pkg/mod/github.com/acme/server@v1.4.0/internal/conn/conn.go:11 +0x1c\n"
           "github.com/acme/server/internal/pool.(*Pool).Shutdown(0xc000010000)\n"
           "\t/home/dev/go/pkg/mod/github.com/acme/server@v1.4.0/internal/pool/pool.go:13 +0x4f\n",
           "internal/conn/conn.go::Conn.Close", "internal/pool/pool.go::Pool.Shutdown"),
    "rust": ("stack backtrace:\n   0: rust_begin_unwind\n             at /rustc/90c541806f23a127002de5b4038be731ba1458ca/"
             "library/std/src/panicking.rs:578:5\n   1: fd::walk::spawn_senders\n             at ./src/walk.rs:3:5\n"
             "   2: fd::main\n             at ./src/main.rs:4:5\n",
             "src/walk.rs::spawn_senders", "src/main.rs::main"),
    "javascript": ("TypeError: text is undefined\n    at String.trim (<anonymous>)\n"
                   "    at parse (/srv/app/src/lib/parser.js:2:17)\n"
                   "    at handler (/srv/app/src/routes/user.js:4:10)\n",
                   "src/lib/parser.js::parse", "src/routes/user.js::handler"),
    "sanitizer": ("==1==ERROR: AddressSanitizer: attempting double-free\n"
                  "    #0 0x4a0b in free (/usr/lib/x86_64-linux-gnu/libasan.so.5+0x10d7cf)\n"
                  "    #1 0x5613e8 in jv_mem_free /src/jq/src/jv_alloc.c:4:3\n"
                  "    #2 0x5613e9 in jv_free /src/jq/src/jv.c:4:3\n",
                  "src/jv_alloc.c::jv_mem_free", "src/jv.c::jv_free"),
    "gdb": ("#0  0x00007ffff729da28 in __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:55\n"
            "#1  0x0000555555555189 in jv_number_value (j=...) at src/jv.c:8\n"
            "#2  0x0000555555555190 in jv_free (p=0x0) at src/jv.c:4\n",
            "src/jv.c::jv_number_value", "src/jv.c::jv_free"),
    # Python formats print the innermost frame last.
    "pytest": ("    def total(prices):\n        amount = sum(prices)\n>       return round_all(amount)\n\n"
               "src/shop/cart.py:3: \n_ _ _ _ _ _\n\n    def round_all(x):\n>       return round(x, 2)\n"
               "E       TypeError: type str doesn't define __round__ method\n\nsrc/shop/cart.py:7: TypeError\n"
               "/usr/lib/python3.11/decimal.py:12: TypeError\n",
               "src/shop/cart.py::round_all", "src/shop/cart.py::total"),
    # The innermost frame is the standard library's `ast.parse`: not a repository file, so it is
    # dropped, though its name is also a function of the repository's.
    "cpython": ("Traceback (most recent call last):\n"
                '  File "/home/dev/run.py", line 3, in <module>\n    main()\n'
                '  File "/srv/venv/lib/python3.11/site-packages/shop/cart.py", line 3, in total\n'
                "    return round_all(amount)\n"
                '  File "/srv/venv/lib/python3.11/site-packages/shop/cart.py", line 7, in round_all\n'
                "    return round(x, 2)\n"
                '  File "/usr/lib/python3.11/ast.py", line 50, in parse\n'
                "    return compile(source, filename, mode, flags)\n"
                "TypeError: type str doesn't define __round__ method\n",
                "src/shop/cart.py::round_all", "src/shop/cart.py::total"),
    "ipython": ("TypeError                                 Traceback (most recent call last)\n"
                "File ~/venv/lib/python3.11/site-packages/shop/cart.py:3, in total(prices)\n"
                "----> 3     return round_all(amount)\n\n"
                "File ~/venv/lib/python3.11/site-packages/shop/cart.py:7, in round_all(x)\n"
                "----> 7     return round(x, 2)\n",
                "src/shop/cart.py::round_all", "src/shop/cart.py::total"),
}


@pytest.fixture(scope="module")
def lang_index(tmp_path_factory):
    root = write_repo(tmp_path_factory.mktemp("langrepo"), REPO)
    out = tmp_path_factory.mktemp("langidx") / "idx"
    build_index(root, out, BuildOptions(dense=False, progress=False, use_cache=False))
    return load_index(out)


@pytest.mark.parametrize("name", sorted(STACKS))
def test_the_innermost_repository_frame_is_the_strongest_prior(lang_index, name):
    text, inner, outer = STACKS[name]
    priors = [p for p in resolve_mentions(read_report("It crashes\n\n" + text), lang_index.symbols, lang_index.nodes)
              if p.mention.kind == "frame"]
    ids = lang_index.nodes.node_id
    conf = {ids[p.row] if p.row is not None else p.file: p.confidence for p in priors}
    # Frames outside the repository are dropped; the innermost one inside it weighs 1, the next 1/2.
    assert conf[inner] == pytest.approx(1.0)
    assert conf[outer] == pytest.approx(0.5)
    assert max(conf, key=conf.get) == inner
    assert all(p.file in REPO for p in priors)


def _query(idx: str, report: str, capsys, *args: str) -> dict:
    assert main(["query", idx, report, "--json", "-k", "5", *args]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plan"] == "bug_localisation"
    return out


_NEUTRAL = ("Startup fails since 2.3\n\nOur service no longer starts after the upgrade; "
            "the log shows this and nothing else:\n\n")


def test_a_java_trace_ranks_its_innermost_repository_file_first(lang_index, capsys):
    """End to end through `codenib query`: the report's words point nowhere in particular; its
    trace passes through App.java into Parser.java (after a JDK frame), which comes first."""
    out = _query(str(lang_index.path), _NEUTRAL + STACKS["java"][0], capsys)
    priors = out["trace"]["detail"]["priors"]
    assert [(p["node_id"], p["confidence"]) for p in priors if p["kind"] == "frame"] == [
        ("src/main/java/com/acme/core/Parser.java::Parser.parse", 1.0),
        ("src/main/java/com/acme/App.java::App.main", 0.5)]
    assert out["results"][0]["node_id"].startswith("src/main/java/com/acme/core/Parser.java")


def test_a_go_trace_with_absolute_paths_ranks_its_innermost_repository_file_first(lang_index, tmp_path, capsys):
    """Go prints absolute paths (GOPATH, module cache), which no path mention ever resolved.
    With weights that count mention evidence (the hand-set ones), the innermost repository
    frame's file, conn.go, comes before pool.go, the next frame out. The packaged weights
    (fitted on CPython reports) give mentions almost no weight: there the frames only show in
    the trace's priors."""
    report = _NEUTRAL + STACKS["go"][0]
    weights = tmp_path / "w.json"
    weights.write_text(json.dumps({"weights": LocaliseWeights().to_dict()}))
    out = _query(str(lang_index.path), report, capsys, "--localise-weights", str(weights))
    assert out["results"][0]["node_id"].startswith("internal/conn/conn.go")
    priors = _query(str(lang_index.path), report, capsys)["trace"]["detail"]["priors"]
    assert [(p["node_id"], p["confidence"]) for p in priors if p["kind"] == "frame"] == [
        ("internal/conn/conn.go::Conn.Close", 1.0), ("internal/pool/pool.go::Pool.Shutdown", 0.5)]


@pytest.mark.parametrize("unit, frames", [
    ("at ", 0), ("#0 0x1 in ", 0), (") at ", 0), ("a:1", 0), ("-> 1", 0), ("thread '", 0), ("0: a::", 0),
    ("@", 0), ("webpack://", 0), ("[", 0), ("x.py:1: ", 0), ("\tat a(", 0), ("' panicked at '", 0), ("#", 0),
    ("<", 0), ("x.py in ", 0), ("File a.py:1", 0), ('File "', 0), ("2024-01-01 00:00:00 ", 0), ("\n", 0),
    ("---> 1\n", 0), ("thread 'a' panicked at 'x\n", 0),
    ("#0 0x1 in f (\n", 21428), ("\tat a.B.c(B.java:1)\n", 15000), ("\ta.go:1 +0x1\n", 23077),
    ("x.py:1: in f\n", 23077), ("#1 0x1 in f a.c:1\n", 16667),
])
def test_long_runs_are_read_in_linear_time(unit, frames):
    """300,000 characters of one repeated unit: every frame pattern is anchored at a line start
    with no nested unbounded repeat, so a run is read once (a quadratic pattern would take
    minutes here). The report reader reads its first 100,000 characters and keeps 400 mentions."""
    text = (unit * (300_000 // len(unit) + 1))[:300_000]
    assert len(parse_frames(text)) == frames
    assert len([m for m in read_report(text).mentions if m.kind == "frame"]) == min(frames, 400)
