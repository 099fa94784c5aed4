"""Stack-trace frames in every format a bug report carries them, and their repository files.

`parse_frames` reads CPython, IPython/Jupyter, pytest, Java/Kotlin, Go, Rust, JavaScript/Node,
sanitizer and gdb frames (behind logging prefixes too) into `Frame`s, each placed in its printed
stack with its depth from the innermost frame. `repository_files` maps a frame's path onto the
indexed files by suffix, trusting no absolute or vendored prefix.

Linear in the text: every pattern is matched at a line start (only CPython's, unchanged from
the report reader, is searched within a line), no pattern nests unbounded repeats, and lines
longer than `MAX_LINE` are not read for frames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

#: A frame line is never longer than this (gdb frames with long argument lists are the longest);
#: longer lines are logs or minified code, and skipping them bounds every pattern's cost.
MAX_LINE = 4000
#: Formats that print the innermost frame last (Python's); every other prints it first.
INNERMOST_LAST = frozenset({"cpython", "ipython", "pytest"})
#: Lines without a frame after which a non-Python stack has ended (Python stacks interleave
#: source lines, so only their headers end them).
STACK_GAP = 10
#: Lines after a multi-line frame's first line that may complete it (gdb's wrapped arguments,
#: an old Rust panic's message, a Rust backtrace's `at` line).
CONTINUATION = {"gdb": 6, "rust_panic": 12, "rust": 2, "ipython": 40}

# --- patterns (each matched at the start of a line's body; see the module docstring) ----------

#: CPython's frame, as the report reader always found it (searched: it is unanchored there).
CPYTHON = re.compile(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?')
#: Logging prefixes before a frame: timestamps, levels, `[thread]`, logcat tags, docker compose's
#: `service  | `, quoting.
_LOG_PIECE = re.compile(
    r"(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]?"
    r"|\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?"
    r"|\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|SEVERE|FATAL|CRITICAL)\b\]?(?::[\w.]{0,80}:)?"
    r"|\[[^\]\n]{1,80}\]"
    r"|[VDIWEF]/[\w.$-]{1,80}\(\s{0,8}\d{1,9}\):"
    r"|[\w.-]{1,60} {0,20}\|(?= )"
    r"|>(?= ))[ \t:|-]*")
_HEADER = re.compile(r"(?:Exception in thread |Caused by: |Suppressed: |Uncaught )"
                     r"|[\w$.]{0,200}(?:Error|Exception|Throwable)\b")
_PY_HEADER = ("Traceback (most recent call last)", "During handling of the above exception",
              "The above exception was the direct cause")
_IPY_FILE = re.compile(r"File ([^\s,]+\.pyx?):(\d+)(?:, in ([\w.<>]+))?")
_IPY_OLD = re.compile(r"([^\s]+\.pyx?) in ([\w.<>]+)")
_IPY_ARROW = re.compile(r"-{0,8}> ?(\d+)\b")
_PYTEST = re.compile(r"([^\s:]+\.pyx?):(\d+): ?(?:in ([\w.<>]+)|[\w.]+)?\s*$")
_PYTEST_SEP = re.compile(r"(?:_{3,}|={3,})")
_PY_DEF = re.compile(r"\s*(?:async\s+)?def (\w+)\(")
_JAVA = re.compile(r"at ([\w$.<>/]+)\(([^()\n]*)\)")
_JAVA_FILE = re.compile(r"([\w$-]+\.(?:java|kt|kts|scala|groovy)):(\d+)")
_LOCATION = re.compile(r"([^\s()]+?):(\d+)(?::(\d+))?")
_FIREFOX = re.compile(r"([\w$.<>/]{0,200})@(webpack://[^\s@]+|[^\s@]+\.(?:[cm]?js|jsx|tsx?))")
_WEBPACK = re.compile(r"webpack://\S+")
_GO_HEADER = re.compile(r"goroutine \d+ \[[^\]\n]*\]:\s*$")
_GO_FILE = re.compile(r"([^\s]+\.go):(\d+)(?: \+0x[0-9a-fA-F]+)?\s*$")
_RUST_PANIC = re.compile(r"thread '[^'\n]{0,200}' panicked at ")
_RUST_NEW = re.compile(r"([^\s']+\.rs):(\d+):(\d+):?\s*$")
_RUST_OLD_TAIL = re.compile(r"""['"], ([^\s,'"]+\.rs):(\d+):(\d+)\s*$""")
_RUST_FRAME = re.compile(r"(\d{1,5}):\s+(?:0x[0-9a-fA-F]+ - )?(\S.{0,1000})$")
_RUST_NAME = re.compile(r"[\w:<>$.,&*\[\]{}' #-]+")
_SANITIZER = re.compile(r"#(\d{1,5}) 0x[0-9a-fA-F]+ in (\S.*)$")
_GDB = re.compile(r"#(\d{1,5})\s+(?:0x[0-9a-fA-F]+ in )?([^\s(][^(]{0,500}?)\s*\(")
_GDB_AT = re.compile(r"([^\s()]+):(\d+)\s*$")
_NATIVE_NAME = re.compile(r"[\w:~.$]{1,300}(?:operator\S{0,4})?|operator\S{1,4}")
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")


@dataclass(frozen=True, slots=True)
class Frame:
    """One printed stack frame: where it points and where it stands in its stack."""

    path: str | None           # the file as printed (None: the frame printed no file)
    line: int | None
    function: str | None       # the function or qualified name as printed, normalised
    format: str                # cpython | ipython | pytest | java | go | rust | javascript | sanitizer | gdb
    start: int                 # character span in the text
    end: int
    trace: int = 0             # which printed stack it belongs to, in text order
    depth: int = 0             # 0: the innermost frame of its stack

    @property
    def name(self) -> str | None:
        """The function's own name (the last segment), as a node of the file would be named."""
        return last_segment(self.function, self.format) if self.function else None


def parse_frames(text: str) -> tuple[Frame, ...]:
    """Every frame of every stack trace in `text`, in text order. Never raises."""
    p = _Parser(text)
    p.run()
    return p.frames()


# --- the line reader ---------------------------------------------------------------------------

class _Parser:
    """One pass over the lines; a few registers hold multi-line frames until they complete."""

    def __init__(self, text: str):
        self.text = text
        self.out: list[list] = []          # [path, line, function, format, start, end, trace]
        self.trace = -1
        self.trace_format: str | None = None
        self.last_frame_line = -(10 ** 9)
        self.last_def: str | None = None   # pytest: the function whose source was printed last
        self.prev = ""                     # the previous non-blank line's body
        self.prev_start = 0
        self.prev_was: str | None = None   # "frame:<format>" or "header"
        self.open: dict[str, tuple[int, int]] = {}   # multi-line frame kind -> (frame index, line no)
        self.lineno = 0

    def frames(self) -> tuple[Frame, ...]:
        sizes: dict[int, int] = {}
        for f in self.out:
            sizes[f[6]] = sizes.get(f[6], 0) + 1
        seen: dict[int, int] = {}
        result = []
        for f in self.out:
            i = seen.get(f[6], 0)
            seen[f[6]] = i + 1
            depth = sizes[f[6]] - 1 - i if f[3] in INNERMOST_LAST else i
            result.append(Frame(f[0], f[1], f[2], f[3], f[4], f[5], f[6], depth))
        result.sort(key=lambda fr: fr.start)
        return tuple(result)

    def run(self) -> None:
        pos = 0
        for raw in self.text.split("\n"):
            if raw.strip():
                self.line(pos, raw)
            pos += len(raw) + 1
            self.lineno += 1

    # -- bookkeeping --

    def new_trace(self) -> None:
        self.trace_format = None

    def emit(self, path, line, function, fmt, start, end) -> int:
        gap = self.lineno - self.last_frame_line
        if fmt != self.trace_format or (fmt not in INNERMOST_LAST and gap > STACK_GAP):
            self.trace += 1
            self.trace_format = fmt
        self.last_frame_line = self.lineno
        self.out.append([path, line, function, fmt, start, end, self.trace])
        return len(self.out) - 1

    def open_frame(self, kind: str) -> list | None:
        """The frame a continuation line may complete, while it is recent enough."""
        got = self.open.get(kind)
        if got is None or self.lineno - got[1] > CONTINUATION[kind]:
            return None
        return self.out[got[0]] if got[0] >= 0 else [None] * 7

    def line(self, start: int, raw: str) -> None:
        had_cpython = False
        # CPython first, exactly as the report reader always searched it.
        for m in (CPYTHON.finditer(raw) if 'File "' in raw else ()):
            self.emit(m.group(1), int(m.group(2)), m.group(3), "cpython", start + m.start(), start + m.end())
            had_cpython = True
        body = raw.rstrip("\r") if len(raw) <= MAX_LINE else ""
        stripped = body.lstrip()
        if not stripped:
            if had_cpython or len(raw) > MAX_LINE:
                self._remember("", start, "frame:cpython" if had_cpython else None)
            return
        offset = start + len(body) - len(stripped)
        logged = False
        for _ in range(6):   # a bounded number of prefix pieces: timestamp, level, thread, ...
            m = _LOG_PIECE.match(stripped)
            if m is None:
                break
            logged = True
            offset += m.end()
            stripped = stripped[m.end():]
        indented = logged or body[:1] in (" ", "\t")
        if any(h in stripped for h in _PY_HEADER) or _PYTEST_SEP.match(stripped) \
                or _GO_HEADER.match(stripped):
            self.new_trace()
            self.last_def = None
            self.open.clear()
            self._remember(stripped, offset, "header")
            return
        kind = None
        for reader in _READERS:
            kind = reader(self, stripped, offset, indented)
            if kind:
                break
        if kind is None and had_cpython:
            kind = "frame:cpython"
        if kind is None and _HEADER.match(stripped):
            self.new_trace()
            kind = "header"
        self._remember(stripped, offset, kind)

    def _remember(self, body: str, offset: int, kind: str | None) -> None:
        self.prev, self.prev_start, self.prev_was = body, offset, kind


def _in_context(p: _Parser, indented: bool, fmt: str) -> bool:
    """An `at ...` line is a frame when indented as printed, or when it follows a frame or an
    exception header (a trace pasted flush left); a sentence starting "at" is not."""
    return indented or p.prev_was in (f"frame:{fmt}", "header")


# --- readers: each takes (parser, body, offset of body, indented) and returns what it read ----

def _read_ipython(p: _Parser, body: str, off: int, indented: bool) -> str | None:
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
        i = p.emit(m2.group(1), None, _python_name(m2.group(2)), "ipython", off, off + m2.end())
    else:
        i = p.emit(m.group(1), int(m.group(2)), _python_name(m.group(3)), "ipython", off, off + m.end())
    p.open["ipython"] = (i, p.lineno)
    return "frame:ipython"


def _read_pytest(p: _Parser, body: str, off: int, indented: bool) -> str | None:
    m = _PYTEST.match(body)
    if m is None:
        d = _PY_DEF.match(body)
        if d is not None:
            p.last_def = d.group(1)
        return None
    func = m.group(3) or p.last_def
    p.emit(m.group(1), int(m.group(2)), _python_name(func), "pytest", off, off + m.end())
    p.last_def = None
    return "frame:pytest"


def _read_at(p: _Parser, body: str, off: int, indented: bool) -> str | None:
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


def _java_frame(p: _Parser, m: re.Match, off: int) -> str:
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


def _js_frame(p: _Parser, rest: str, start: int, end: int) -> str | None:
    func = None
    if rest.endswith(")") and " (" in rest:
        cut = rest.rfind(" (")
        func, rest = rest[:cut], rest[cut + 2:-1]
    loc = _LOCATION.fullmatch(rest)
    if loc is None and rest not in ("<anonymous>", "native") and func is None:
        return None
    path = loc.group(1) if loc else None
    line = int(loc.group(2)) if loc else None
    p.emit(path, line, _js_name(func), "javascript", start, end)
    return "frame:javascript"


def _read_browser(p: _Parser, body: str, off: int, indented: bool) -> str | None:
    """Firefox/Safari `func@file.js:N:M` frames and a bare `webpack:///./src/x.ts:N:M`."""
    m = _FIREFOX.match(body) if "@" in body[:202] else None
    target = body[m.start(2):] if m else (body if body.startswith("webpack://") else None)
    if target is None:
        return None
    loc = _LOCATION.fullmatch(target.rstrip())
    if loc is None:
        return None
    p.emit(loc.group(1), int(loc.group(2)), _js_name(m.group(1) if m else None), "javascript",
           off, off + len(body.rstrip()))
    return "frame:javascript"


def _read_go(p: _Parser, body: str, off: int, indented: bool) -> str | None:
    m = _GO_FILE.match(body)
    if m is None or not indented:
        return None
    func, start = None, off
    if p.prev_was in (None, "header") and p.prev.endswith(")"):     # the function line printed above
        func = _go_name(p.prev)
        start = p.prev_start
    elif p.prev.startswith("created by "):
        func = _go_name(p.prev[len("created by "):].split(" in goroutine ")[0])
        start = p.prev_start
    p.emit(m.group(1), int(m.group(2)), func, "go", start, off + m.end())
    return "frame:go"


def _read_rust_panic(p: _Parser, body: str, off: int, indented: bool) -> str | None:
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


def _read_rust_frame(p: _Parser, body: str, off: int, indented: bool) -> str | None:
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
    i = p.emit(None, None, _rust_name(name), "rust", off, off + len(body.rstrip()))
    p.open["rust"] = (i, p.lineno)
    return "frame:rust"


def _read_native(p: _Parser, body: str, off: int, indented: bool) -> str | None:
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
        name = _native_name(func)
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
    name = None if func == "??" else _native_name(func)
    if name is None and func != "??":
        return None
    if gdb.group(1) == "0":
        p.new_trace()
    i = p.emit(None, None, name, "gdb", off, end)
    p.open["gdb"] = (i, p.lineno)
    _gdb_location(p, p.out[i], body, off)
    return "frame:gdb"


def _gdb_location(p: _Parser, frame: list, body: str, off: int) -> str:
    cut = body.rfind(") at ")
    if cut >= 0:
        where = _GDB_AT.fullmatch(body[cut + 5:].rstrip())
        if where is not None:
            frame[0], frame[1] = where.group(1), int(where.group(2))
            frame[5] = off + len(body.rstrip())
            p.open.pop("gdb", None)
    return "frame:gdb"


#: Line readers, tried in order; the first that reads a line wins.
_READERS: tuple[Callable[[_Parser, str, int, bool], str | None], ...] = (
    _read_native, _read_rust_panic, _read_at, _read_go, _read_ipython, _read_pytest,
    _read_rust_frame, _read_browser,
)


# --- names -------------------------------------------------------------------------------------

def _python_name(name: str | None) -> str | None:
    return None if not name or name.startswith("<") else name


def _js_name(name: str | None) -> str | None:
    if not name:
        return None
    name = name.strip()
    for word in ("async ", "new "):
        name = name.removeprefix(word)
    name = name.split(" [as ")[0].strip()
    if not name or "<anonymous>" in name or name in ("Object", "Module"):
        return None
    return name


def _go_name(line: str) -> str | None:
    """`github.com/o/r/pkg.(*T).Method(0xc0, ...)` -> `pkg.T.Method`."""
    cut = line.rfind("(")
    head = line[:cut] if line.endswith(")") and cut > 0 else line
    head = head.rsplit("/", 1)[-1].replace("(*", "").replace(")", "").replace("(", "")
    head = re.sub(r"\[[^\]]{0,200}\]", "", head)
    parts = [x for x in head.split(".") if x and not re.fullmatch(r"(?:func|gowrap)\d+", x)]
    return ".".join(parts) or None


def _rust_name(name: str) -> str:
    name = _RUST_HASH.sub("", name.strip())
    parts = [x for x in name.split("::") if x and x != "{{closure}}"]
    return "::".join(parts)


def _native_name(name: str) -> str | None:
    """A C/C++ function name without template arguments; None for words that are no name
    (`#12 was fixed in ...` is an issue reference, not a frame)."""
    name = _strip_templates(name.strip())
    return name if _NATIVE_NAME.fullmatch(name) else None


def _strip_templates(name: str) -> str:
    """`fmt::v5::format<char>` -> `fmt::v5::format`; `operator<<` kept (linear)."""
    out, depth, i = [], 0, 0
    while i < len(name):
        if name.startswith("operator", i):
            j = i + 8
            while j < len(name) and name[j] in "<>=!+-*/%&|^[]()~," and j - i < 12:
                j += 1
            if depth == 0:
                out.append(name[i:j])
            i = j
            continue
        c = name[i]
        if c == "<":
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
        i += 1
    return "".join(out).strip()


def last_segment(function: str, fmt: str) -> str | None:
    """The definition's own name in a printed function (`lambda$run$0` -> `run`,
    `<init>` -> the class, `ns::f` -> `f`)."""
    name = function.replace("::", ".")
    parts = [x for x in re.split(r"[.]", name) if x]
    if not parts:
        return None
    last = parts[-1]
    if fmt == "java":
        if last in ("<init>", "<clinit>") and len(parts) >= 2:
            return parts[-2].split("$")[-1]
        if last.startswith("lambda$"):
            bits = last.split("$")
            return bits[1] if len(bits) > 1 and bits[1] else None
    return None if last.startswith("<") else last


# --- repository files --------------------------------------------------------------------------

#: Roots whose files are the toolchain's, never a repository's, whatever their suffix shares with
#: one: the Rust standard library, the C headers and runtime, Go's GOROOT, Node's internals.
_FOREIGN = re.compile(r"(?:/rustc/[0-9a-f]{7,}/|/usr/(?:local/)?include/|/usr/lib/gcc/|/usr/local/go/src/"
                      r"|/usr/lib/go[^/\s]{0,20}/src/|/hostedtoolcache/go/|/libexec/src/|/sysdeps/"
                      r"|^node:|^internal/|^<)")
_SCHEME = re.compile(r"^[a-zA-Z][\w+.-]{0,20}://+")


def clean_path(path: str) -> str | None:
    """The path a frame prints, without URL scheme, host, drive, `~` or `./`; None when it
    names a toolchain file (`/rustc/<hash>/library/...`, `/usr/include/...`, `node:internal`)."""
    p = path.strip().replace("\\", "/")
    if _FOREIGN.search(p):
        return None
    m = _SCHEME.match(p)
    if m is not None:
        scheme = p[:m.end()].lower()
        p = p[m.end():]
        if scheme.startswith(("http", "https")):
            p = p.partition("/")[2]                   # the host is not a directory
    if len(p) > 1 and p[1] == ":":                    # a Windows drive
        p = p[2:]
    parts = [x for x in p.split("/") if x and x not in (".", "..", "~")]
    return "/".join(parts) or None


def repository_files(path: str, symbols) -> list[str]:
    """Indexed files a frame's path names: the longest suffix that is an indexed file.

    A path of several directories that shares only its file name with an indexed file in a
    directory is not that file (`/usr/lib/python3/json/decoder.py` is not `pkg/decoder.py`); a
    bare file name (`Bar.java`, `abort.c`) may be any file of that name.
    """
    cleaned = clean_path(path)
    if cleaned is None:
        return []
    files = symbols.files_matching(cleaned)
    if not files:
        return []
    parts = cleaned.split("/")
    if len(parts) > 1:
        tail = files[0].split("/")
        if _common_tail(parts, tail) < 2 and len(tail) > 1:
            return []
    return files


def _common_tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n
