"""Stack-trace frames in every format a bug report carries them, and their repository files.

`parse_frames` reads CPython, IPython/Jupyter, pytest, Java/Kotlin, Go, Rust, JavaScript/Node,
sanitizer and gdb frames (behind logging prefixes too) into `Frame`s, each placed in its printed
stack with its depth from the innermost frame. The per-format line readers are
`codenib.model.reports.formats`'s, the name normalisers `names`'; `files` maps a frame's path
onto the indexed files.

Linear in the text: every pattern is matched at a line start (only CPython's, unchanged from
the report reader, is searched within a line), no pattern nests unbounded repeats, and lines
longer than `MAX_LINE` are not read for frames.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codenib.model.reports.formats import CONTINUATION, READERS
from codenib.model.reports.names import last_segment

#: A frame line is never longer than this (gdb frames with long argument lists are the longest);
#: longer lines are logs or minified code, and skipping them bounds every pattern's cost.
MAX_LINE = 4000
#: Formats that print the innermost frame last (Python's); every other prints it first.
INNERMOST_LAST = frozenset({"cpython", "ipython", "pytest"})
#: Lines without a frame after which a non-Python stack has ended (Python stacks interleave
#: source lines, so only their headers end them).
STACK_GAP = 10

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
_PYTEST_SEP = re.compile(r"(?:_{3,}|={3,})")
_GO_HEADER = re.compile(r"goroutine \d+ \[[^\]\n]*\]:\s*$")


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
        for reader in READERS:
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
