"""The per-format readers of stack-trace lines (IPython/Jupyter, pytest, Java/Kotlin, Go, Rust,
JavaScript/Node and browsers, sanitizer and gdb), in the order `READERS` tries them.

A reader sees the body of one line (logging prefixes removed) and the parser's registers
(`LineState`); it emits the frames it reads and says what the line was. The patterns keep
`codenib.model.reports.traces`'s bound: matched at the start of the body, no unbounded nested
repeats.
"""

from __future__ import annotations

import re
from typing import Callable, Protocol

from codenib.model.reports.names import go_name, js_name, native_name, python_name, rust_name

#: Lines after a multi-line frame's first line that may complete it (gdb's wrapped arguments,
#: an old Rust panic's message, a Rust backtrace's `at` line).
CONTINUATION = {"gdb": 6, "rust_panic": 12, "rust": 2, "ipython": 40}


class LineState(Protocol):
    """What a reader sees of the line parser (`codenib.model.reports.traces`): its frames so far, the
    line it is on, the previous line, and the multi-line frames still open."""

    out: list[list]                     # [path, line, function, format, start, end, trace]
    lineno: int
    last_def: str | None
    prev: str
    prev_start: int
    prev_was: str | None
    open: dict[str, tuple[int, int]]

    def emit(self, path, line, function, fmt, start, end) -> int: ...

    def open_frame(self, kind: str) -> list | None: ...

    def new_trace(self) -> None: ...


# --- patterns ----------------------------------------------------------------------------------

_IPY_FILE = re.compile(r"File ([^\s,]+\.pyx?):(\d+)(?:, in ([\w.<>]+))?")
_IPY_OLD = re.compile(r"([^\s]+\.pyx?) in ([\w.<>]+)")
_IPY_ARROW = re.compile(r"-{0,8}> ?(\d+)\b")
_PYTEST = re.compile(r"([^\s:]+\.pyx?):(\d+): ?(?:in ([\w.<>]+)|[\w.]+)?\s*$")
_PY_DEF = re.compile(r"\s*(?:async\s+)?def (\w+)\(")
_JAVA = re.compile(r"at ([\w$.<>/]+)\(([^()\n]*)\)")
_JAVA_FILE = re.compile(r"([\w$-]+\.(?:java|kt|kts|scala|groovy)):(\d+)")
_LOCATION = re.compile(r"([^\s()]+?):(\d+)(?::(\d+))?")
_FIREFOX = re.compile(r"([\w$.<>/]{0,200})@(webpack://[^\s@]+|[^\s@]+\.(?:[cm]?js|jsx|tsx?))")
_GO_FILE = re.compile(r"([^\s]+\.go):(\d+)(?: \+0x[0-9a-fA-F]+)?\s*$")
_RUST_PANIC = re.compile(r"thread '[^'\n]{0,200}' panicked at ")
_RUST_NEW = re.compile(r"([^\s']+\.rs):(\d+):(\d+):?\s*$")
_RUST_OLD_TAIL = re.compile(r"""['"], ([^\s,'"]+\.rs):(\d+):(\d+)\s*$""")
_RUST_FRAME = re.compile(r"(\d{1,5}):\s+(?:0x[0-9a-fA-F]+ - )?(\S.{0,1000})$")
_RUST_NAME = re.compile(r"[\w:<>$.,&*\[\]{}' #-]+")
_SANITIZER = re.compile(r"#(\d{1,5}) 0x[0-9a-fA-F]+ in (\S.*)$")
_GDB = re.compile(r"#(\d{1,5})\s+(?:0x[0-9a-fA-F]+ in )?([^\s(][^(]{0,500}?)\s*\(")
_GDB_AT = re.compile(r"([^\s()]+):(\d+)\s*$")


def _in_context(p: LineState, indented: bool, fmt: str) -> bool:
    """An `at ...` line is a frame when indented as printed, or when it follows a frame or an
    exception header (a trace pasted flush left); a sentence starting "at" is not."""
    return indented or p.prev_was in (f"frame:{fmt}", "header")


# --- readers: each takes (parser, body, offset of body, indented) and returns what it read ----
# (a frame read: "frame:<format>"; an exception header: "header"; not read: None)

def _read_ipython(p: LineState, body: str, off: int, indented: bool) -> str | None:
    m = _IPY_FILE.match(body)
    if m is None:
        m2 = _IPY_OLD.match(body)
        if m2 is None or not (m2.end() == len(body) or body[m2.end()] == "("):
            arrow = _IPY_ARROW.match(body)
            last = p.open_frame("ipython") if arrow else None
            if last is not None and last[1] is None:
                last[1] = int(arrow.group(1))
                last[5] = off + arrow.end(1)
                return "frame:ipython"
            return None
        i = p.emit(m2.group(1), None, python_name(m2.group(2)), "ipython", off, off + m2.end())
    else:
        i = p.emit(m.group(1), int(m.group(2)), python_name(m.group(3)), "ipython", off, off + m.end())
    p.open["ipython"] = (i, p.lineno)
    return "frame:ipython"


def _read_pytest(p: LineState, body: str, off: int, indented: bool) -> str | None:
    m = _PYTEST.match(body)
    if m is None:
        d = _PY_DEF.match(body)
        if d is not None:
            p.last_def = d.group(1)
        return None
    func = m.group(3) or p.last_def
    p.emit(m.group(1), int(m.group(2)), python_name(func), "pytest", off, off + m.end())
    p.last_def = None
    return "frame:pytest"


def _read_at(p: LineState, body: str, off: int, indented: bool) -> str | None:
    """`at ...`: a Rust backtrace's location, a Java frame or a JavaScript frame."""
    if not body.startswith("at "):
        return None
    rest = body[3:].strip()
    rust = p.open_frame("rust")
    loc = _LOCATION.fullmatch(rest)
    if rust is not None and rust[0] is None and loc is not None:
        rust[0], rust[1] = loc.group(1), int(loc.group(2))
        rust[5] = off + len(body.rstrip())
        p.open.pop("rust", None)
        return "frame:rust"
    if loc is not None and loc.group(1).endswith(".rs"):
        p.emit(loc.group(1), int(loc.group(2)), None, "rust", off, off + len(body.rstrip()))
        return "frame:rust"
    m = _JAVA.match(body)
    if m is not None and _in_context(p, indented, "java"):
        return _java_frame(p, m, off)
    if _in_context(p, indented, "javascript"):
        return _js_frame(p, rest, off + (len(body) - len(body[3:].lstrip())), off + len(body.rstrip()))
    return None


def _java_frame(p: LineState, m: re.Match, off: int) -> str:
    qualified = m.group(1).rsplit("/", 1)[-1]          # `java.base/java.lang.Thread.run`, `app//a.B.c`
    where = _JAVA_FILE.fullmatch(m.group(2).strip())
    parts = qualified.split(".")
    package = parts[:-2]
    if where is not None:
        fname, line = where.group(1), int(where.group(2))
    elif len(parts) >= 2:                                # Unknown Source / Native Method
        fname, line = parts[-2].split("$")[0] + ".java", None
    else:
        fname, line = None, None
    path = "/".join(package + [fname]) if fname else None
    p.emit(path, line, qualified, "java", off, off + m.end())
    return "frame:java"


def _js_frame(p: LineState, rest: str, start: int, end: int) -> str | None:
    func = None
    if rest.endswith(")") and " (" in rest:
        cut = rest.rfind(" (")
        func, rest = rest[:cut], rest[cut + 2:-1]
    loc = _LOCATION.fullmatch(rest)
    if loc is None and rest not in ("<anonymous>", "native") and func is None:
        return None
    path = loc.group(1) if loc else None
    line = int(loc.group(2)) if loc else None
    p.emit(path, line, js_name(func), "javascript", start, end)
    return "frame:javascript"


def _read_browser(p: LineState, body: str, off: int, indented: bool) -> str | None:
    """Firefox/Safari `func@file.js:N:M` frames and a bare `webpack:///./src/x.ts:N:M`."""
    m = _FIREFOX.match(body) if "@" in body[:202] else None
    target = body[m.start(2):] if m else (body if body.startswith("webpack://") else None)
    if target is None:
        return None
    loc = _LOCATION.fullmatch(target.rstrip())
    if loc is None:
        return None
    p.emit(loc.group(1), int(loc.group(2)), js_name(m.group(1) if m else None), "javascript",
           off, off + len(body.rstrip()))
    return "frame:javascript"


def _read_go(p: LineState, body: str, off: int, indented: bool) -> str | None:
    m = _GO_FILE.match(body)
    if m is None or not indented:
        return None
    func, start = None, off
    if p.prev_was in (None, "header") and p.prev.endswith(")"):     # the function line printed above
        func = go_name(p.prev)
        start = p.prev_start
    elif p.prev.startswith("created by "):
        func = go_name(p.prev[len("created by "):].split(" in goroutine ")[0])
        start = p.prev_start
    p.emit(m.group(1), int(m.group(2)), func, "go", start, off + m.end())
    return "frame:go"


def _read_rust_panic(p: LineState, body: str, off: int, indented: bool) -> str | None:
    """`thread 'main' panicked at src/x.rs:N:M:` (Rust 1.73 on) and the older
    `panicked at 'message', src/x.rs:N:M`, whose message may run over several lines."""
    m = _RUST_PANIC.match(body) if body.startswith("thread '") else None
    if m is None:
        if p.open_frame("rust_panic") is None or ".rs:" not in body:
            return None
        tail = _RUST_OLD_TAIL.search(body)
        if tail is None:
            return None
        p.open.pop("rust_panic", None)
        p.new_trace()
        p.emit(tail.group(1), int(tail.group(2)), None, "rust", off + tail.start(1), off + tail.end(3))
        return "frame:rust"
    rest = body[m.end():]
    new = _RUST_NEW.fullmatch(rest)
    if new is not None:
        p.new_trace()
        p.emit(new.group(1), int(new.group(2)), None, "rust", off + m.end(), off + m.end() + new.end(3))
        return "frame:rust"
    if not rest.startswith(("'", '"')):
        return None
    tail = _RUST_OLD_TAIL.search(rest)
    p.new_trace()
    if tail is not None:
        p.emit(tail.group(1), int(tail.group(2)), None, "rust", off + m.end() + tail.start(1),
               off + m.end() + tail.end(3))
        return "frame:rust"
    p.open["rust_panic"] = (-1, p.lineno)
    return "header"


def _read_rust_frame(p: LineState, body: str, off: int, indented: bool) -> str | None:
    m = _RUST_FRAME.match(body)
    if m is None:
        return None
    name = m.group(2).rstrip()
    if "::" not in name and not name.startswith(("rust_begin_unwind", "__rust")):
        return None
    if not _RUST_NAME.fullmatch(name) or (" " in name and not name.startswith("<")):
        return None
    if m.group(1) == "0":
        p.new_trace()
    i = p.emit(None, None, rust_name(name), "rust", off, off + len(body.rstrip()))
    p.open["rust"] = (i, p.lineno)
    return "frame:rust"


def _read_native(p: LineState, body: str, off: int, indented: bool) -> str | None:
    """Sanitizer (`#N 0x.. in f file.c:N:M`, `#N 0x.. in f (bin+0x..)`) and gdb frames
    (`#N  0x.. in f (args) at file.c:N`, `#N  f (args) at file.c:N`, arguments wrapped over lines)."""
    if not body.startswith("#"):
        cont = p.open_frame("gdb")
        if cont is None or cont[0] is not None or ") at " not in body:
            return None
        return _gdb_location(p, cont, body, off)
    end = off + len(body.rstrip())
    tail = body.rstrip()
    gdb_shaped = ") at " in body or " from " in body or tail.endswith(("(", ","))
    san = None if gdb_shaped else _SANITIZER.match(body)
    if san is not None:
        rest = san.group(2).rstrip()
        func, path, line, fmt = rest, None, None, "sanitizer"
        if rest.endswith(")") and " (" in rest:              # `(binary+0x1234)`: no source file
            cut = rest.rfind(" (")
            func = rest[:cut]
            if "+0x" not in rest[cut:]:
                fmt = "gdb"                                  # gdb's `f (args)` without a file
        elif " " in rest:
            head, _, loc = rest.rpartition(" ")
            where = _LOCATION.fullmatch(loc)
            if where is not None:
                func, path, line = head, where.group(1), int(where.group(2))
        name = native_name(func)
        if name is None:
            return None
        if san.group(1) == "0":
            p.new_trace()
        p.emit(path, line, name, fmt, off, end)
        return f"frame:{fmt}"
    gdb = _GDB.match(body)
    if gdb is None:
        return None
    func = gdb.group(2).strip()
    name = None if func == "??" else native_name(func)
    if name is None and func != "??":
        return None
    if gdb.group(1) == "0":
        p.new_trace()
    i = p.emit(None, None, name, "gdb", off, end)
    p.open["gdb"] = (i, p.lineno)
    _gdb_location(p, p.out[i], body, off)
    return "frame:gdb"


def _gdb_location(p: LineState, frame: list, body: str, off: int) -> str:
    cut = body.rfind(") at ")
    if cut >= 0:
        where = _GDB_AT.fullmatch(body[cut + 5:].rstrip())
        if where is not None:
            frame[0], frame[1] = where.group(1), int(where.group(2))
            frame[5] = off + len(body.rstrip())
            p.open.pop("gdb", None)
    return "frame:gdb"


#: Line readers, tried in order; the first that reads a line wins.
READERS: tuple[Callable[[LineState, str, int, bool], str | None], ...] = (
    _read_native, _read_rust_panic, _read_at, _read_go, _read_ipython, _read_pytest,
    _read_rust_frame, _read_browser,
)
