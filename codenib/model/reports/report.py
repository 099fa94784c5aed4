"""Reading a bug report: the code it mentions (traceback frames, paths, modules, symbols),
with spans, resolved against an index's symbol table into file and node priors.

Pure and deterministic: `read_report` sees only the text, `resolve_mentions` only a
`SymbolIndex` and the node table; neither loads anything. Stack frames of every format come
from `codenib.model.reports.traces`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from codenib.model.reports.files import repository_files
from codenib.model.reports.traces import parse_frames
from codenib.core.querytext import CODE_IDENTIFIER

#: Mention kinds, with the confidence that a resolved mention of that kind points at the fix.
#: Traceback frames and paths are what the failing run printed; identifiers in prose are
#: what the reporter thinks is involved; code-block identifiers are often the user's own code.
KIND_CONFIDENCE = {
    "frame": 1.0,
    "path": 0.9,
    "module": 0.8,
    "qualified": 0.8,
    "backtick": 0.6,
    "exception": 0.3,
    "identifier": 0.4,
    "code": 0.25,
}
#: A symbol defined in more places than this is too common to point anywhere (`__init__`, `run`).
MAX_DEFINITIONS = 12
#: Mentions kept per report: a 200 KB log must not cost more than a normal report.
MAX_MENTIONS = 400
#: Reports are read up to this many characters (logs beyond it add nothing but time).
MAX_CHARS = 100_000

#: A fence line, indented within its line only (`\s*` ran over blank lines: quadratic, 63 s for 100k).
_FENCE = re.compile(r"^[^\S\n]*(```|~~~)", re.MULTILINE)
#: Formats whose frames print the module's own path: a frame whose file is indexed but whose
#: line is past that file's end (and whose function the file does not define) is in another
#: version or package's file of that name, so its function's name is not looked up elsewhere in
#: the repository (other formats' frames may print a build output's name, `index.js:794`).
_PATH_ONLY_FORMATS = frozenset({"cpython", "ipython", "pytest"})
#: Path-less frames (`3: mytool::main`, `#2 0x.. in f (bin+0x..)`) name no file; their function
#: resolves by name only when the name is this long and not an entry point every program has.
_COMMON_ENTRY = frozenset({"main", "run", "start", "call", "call_once", "new", "init"})
#: Suffixes of the source files a report's paths name: Python's and those of the other
#: languages CodeNib reads (`src/main.rs:42:5`, `(JsonParser.java:123)`, `include/fmt/format.h`);
#: plain text here, so reading a report loads no reader. Longer alternatives first.
_SOURCE_SUFFIX = r"(?:pyx?|[cm]?js|jsx|tsx?|go|java|rs|cpp|cxx|cc|c|hpp|hxx|hh|h|ipp|inl)"
_PATH_LINE = re.compile(r"(?<![\w/.\\-])((?:[\w.-]+[/\\])*[\w.-]+\." + _SOURCE_SUFFIX + r")(?::(\d+))?(?![\w])")
#: A link to a file on a source-hosting site (`https://github.com/o/r/blob/<ref>/src/x.ts#L61`,
#: GitLab's `/-/blob/`, `blame`, `raw`, Bitbucket's `src`): the path after the ref, and the
#: line of a `#L61` anchor. `_PATH_LINE` never starts inside a URL.
_SOURCE_LINK = re.compile(r"https?://[^\s/]+/(?:[^\s/]+/)+?(?:-/)?(?:blob|blame|raw|src)/[^\s/]+/"
                          r"((?:[\w.-]+/)*[\w.-]+\." + _SOURCE_SUFFIX + r")(?![\w/])(?:#L(\d+))?")
_DOTTED = re.compile(r"(?<![\w./\\-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/\\(-]|\.\w)")
_DOTTED_CALL = re.compile(r"(?<![\w./\\-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\(")
_BACKTICK = re.compile(r"(?<!`)`([^`\n]{1,120})`(?!`)")
#: A quoted string: '...' or "..." opened after a non-word character (so the apostrophes of
#: "don't ... it's" never pair up), on one line.
_QUOTED = re.compile(r"(?<![\w])([\"'])([^\"'\n]{4,120})\1")
#: Literals kept per report: each costs one scan of the index's text.
MAX_LITERALS = 30
#: A line of an installed-package listing (`pip list`, `pip freeze`, `conda list`): a name and
#: a version, perhaps a location. Hundreds of package names are no evidence about the code.
_PACKAGE_LINE = re.compile(r"^[ \t]*(?:[A-Za-z0-9][\w.\-]*(?:\[[\w,]+\])?[ \t]{2,}v?\d[\w.+\-!]*(?:[ \t]+\S+)?"
                           r"|[A-Za-z0-9][\w.\-]*==\d[\w.+\-]*)[ \t]*\r?$\n?", re.MULTILINE)
#: A report holds a package listing when this many of its lines look like one.
LISTING_LINES = 3
_EXCEPTION = re.compile(r"(?<![\w.])([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning))(?![\w])")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SYMBOLISH = re.compile(r"[A-Za-z_][\w.]*")
_TEST_WORDS = re.compile(r"\b(test suite|(unit |our |the )tests? (fail|break|are|is))", re.IGNORECASE)
_LOG_LINE = re.compile(r"^(\s{4,}|\t|E\s|>|\$ |\.\.\.|[\w./\\-]+:\d+:|Traceback|\*{3,}|-{3,}|={3,})")


@dataclass(frozen=True, slots=True)
class Mention:
    """A piece of a report that names code."""

    kind: str                  # frame | path | module | qualified | backtick | exception | identifier | code
    text: str                  # the symbol or path as written (normalised: no `()`, no quotes)
    start: int                 # character span in the report
    end: int
    line: int | None = None    # a frame's or `path:line` mention's line number
    function: str | None = None  # a frame's function name
    format: str | None = None  # a frame's trace format (`codenib.model.reports.traces.Frame.format`)
    trace: int = -1            # a frame's stack, in text order
    depth: int = 0             # a frame's place in its stack: 0 is the innermost
    located: bool = True       # a frame printed a file (else `text` is its function)



@dataclass(frozen=True, slots=True)
class BugReport:
    """What `read_report` found: the title, the mentions in order, and whether the report is
    about test code itself."""

    title: str
    prose: str                 # the text without code blocks and log lines
    mentions: tuple[Mention, ...]
    words: frozenset[str]      # every identifier-like word, as written
    chars: int
    truncated: bool
    literals: tuple[str, ...] = ()   # quoted strings worth finding verbatim in the code (`_literals`)
    body: str = ""                   # the text read, installed-package listings removed

    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for m in self.mentions:
            out[m.kind] = out.get(m.kind, 0) + 1
        return out


@dataclass(frozen=True, slots=True)
class Prior:
    """A resolved mention: the file (and node row, when a symbol resolved) it points at."""

    file: str
    row: int | None
    confidence: float
    mention: Mention


@lru_cache(maxsize=256)
def read_report(text: str) -> BugReport:
    """Find the code a bug report mentions. Never raises on any string.

    Cached: a plan reads a report when it names its searches and again when it assembles
    (the result is immutable)."""
    text = text or ""
    truncated = len(text) > MAX_CHARS
    text = text[:MAX_CHARS]
    title = next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]
    code_spans = _code_spans(text)
    found: list[Mention] = []
    # Characters already inside a mention (a frame's path is not a second path mention):
    # a mask keeps this linear in the text, logs of thousands of lines included.
    taken = bytearray(len(text) + 1)

    def add(m: Mention) -> None:
        if taken[m.start]:
            return
        found.append(m)
        taken[m.start:m.end] = b"\x01" * (m.end - m.start)

    for fr in parse_frames(text):
        if fr.format == "cpython":
            func = fr.function if fr.function and not fr.function.startswith("<") else None
            add(Mention("frame", fr.path, fr.start, fr.end, fr.line, func, fr.format, fr.trace, fr.depth))
        elif fr.path or fr.function:
            add(Mention("frame", fr.path or fr.function, fr.start, fr.end, fr.line, fr.function, fr.format,
                        fr.trace, fr.depth, located=fr.path is not None))
    for m in _SOURCE_LINK.finditer(text):
        line = int(m.group(2)) if m.group(2) else None
        add(Mention("path", m.group(1), m.start(1), m.end(), line))
    for m in _PATH_LINE.finditer(text):
        line = int(m.group(2)) if m.group(2) else None
        add(Mention("path", m.group(1).replace("\\", "/"), m.start(1), m.end(), line))
    for m in _BACKTICK.finditer(text):
        inner = m.group(1).strip().strip("'\"").removesuffix("()")
        if _SYMBOLISH.fullmatch(inner):
            add(Mention("backtick", inner, m.start(), m.end()))
    for pattern in (_DOTTED_CALL, _DOTTED):
        for m in pattern.finditer(text):
            s = m.group(1) if pattern is _DOTTED_CALL else m.group(0)
            if _is_noise_dotted(s):
                continue
            kind = "qualified" if any(p[:1].isupper() for p in s.split(".")) else "module"
            add(Mention(kind, s, m.start(), m.start() + len(s)))
    for m in _EXCEPTION.finditer(text):
        add(Mention("exception", m.group(1), m.start(1), m.end(1)))
    for m in CODE_IDENTIFIER.finditer(text):
        kind = "code" if _inside(m.start(), code_spans) else "identifier"
        add(Mention(kind, m.group(0), m.start(), m.end()))
    found.sort(key=lambda m: m.start)
    body = _without_listings(text)
    words = frozenset(_WORDS.findall(body))
    return BugReport(title, _prose(text, code_spans), tuple(found[:MAX_MENTIONS]), words, len(text), truncated,
                     _literals(text), body)


def about_tests(report: BugReport) -> bool:
    """Whether the report is about the project's own tests (then tests are not demoted).

    Only the title decides: reports name their own test files all the time (`test_foo.py`
    in a traceback) without the fix being in the project's tests.
    """
    return bool(_TEST_WORDS.search(report.title))


def resolve_mentions(report: BugReport, symbols, nodes, max_definitions: int = MAX_DEFINITIONS) -> list[Prior]:
    """Map each mention to the files and nodes it names, with a confidence in (0, 1].

    A mention that several definitions share spreads its confidence over them (one
    definition: full weight; many: little), so an ambiguous name becomes several weak seeds
    rather than a guess. Frames and `path:line` mentions point at the node whose span holds
    the line (else, for a frame, at the definition of its function's name in the file).

    A frame of any format maps to the repository by the longest suffix of its path that is an
    indexed file (`files.repository_files`), and weighs by its place in its stack: the
    innermost frame that resolves has full confidence, the k-th after it 1/(k+1).

    Args:
        symbols: the index's `SymbolIndex`.
        nodes: the index's node table (file, kind, start_line, end_line columns).
    """
    out: list[Prior] = []
    seen: dict[tuple[str, int | None, str], int] = {}
    spans = _SpanLookup(nodes)
    stacks = _stack_priors(report.mentions, symbols, nodes, spans, max_definitions)
    for i, m in enumerate(report.mentions):
        base = KIND_CONFIDENCE[m.kind]
        if m.kind == "frame":
            for p in stacks.get(i, ()):
                _add(out, seen, p, keep_best=True)
            continue
        if m.kind == "path":
            files = symbols.files_matching(m.text)
            if not files or len(files) > max_definitions:
                continue
            for f in files:
                row = spans.innermost(f, m.line) if m.line is not None else None
                _add(out, seen, Prior(f, row, base / len(files), m))
            continue
        matches = symbols.lookup(m.text)
        if not matches:
            continue
        if matches[0].level in ("name_nocase", "qualname_nocase"):
            continue   # words that happen to spell a symbol in another case
        rows = [x.row for x in matches]
        if len(rows) > max_definitions:
            continue
        for r in rows:
            _add(out, seen, Prior(nodes.file[r], None if nodes.kind[r] == "file" else r,
                                  base / len(rows), m))
    return out


# --- helpers ---------------------------------------------------------------------------------

def _add(out: list[Prior], seen: dict, p: Prior, keep_best: bool = False) -> None:
    """Append `p` unless its (file, row, text) is in already; `keep_best`: a stronger one
    replaces it (a stack's inner frame in the same function as an outer one)."""
    key = (p.file, p.row, p.mention.text)
    at = seen.get(key)
    if at is None:
        seen[key] = len(out)
        out.append(p)
    elif keep_best and p.confidence > out[at].confidence:
        out[at] = p


def _stack_priors(mentions, symbols, nodes, spans: "_SpanLookup",
                  max_definitions: int) -> dict[int, list[Prior]]:
    """Priors of the frames, by mention position.

    Frames resolve first (a frame that names no indexed file or definition is dropped); then
    each stack's resolved frames rank from the innermost out, so the innermost repository
    frame is the strongest evidence whatever the format prints first.
    """
    from codenib.model.reports.names import last_segment

    hits: dict[int, list[tuple[str, int | None]]] = {}
    files_of: dict[str, list[str]] = {}
    for i, m in enumerate(mentions):
        if m.kind != "frame":
            continue
        name = last_segment(m.function, m.format) if m.function else None
        if m.located:
            if m.text not in files_of:
                files_of[m.text] = repository_files(m.text, symbols)
            files = files_of[m.text]
            if not files or len(files) > max_definitions:
                continue
            found = []
            for f in files:
                row = spans.innermost(f, m.line) if m.line is not None else None
                if row is None and name:
                    row = spans.named(f, name, symbols)
                # A line past the file's end is in some other file of that name: a build
                # output (a bundled `index.js`) or another project's file.
                if row is not None or m.line is None or m.line <= spans.last_line(f):
                    found.append((f, row))
            if found:
                hits[i] = found
                continue
            if m.format in _PATH_ONLY_FORMATS:
                continue
        if name and len(name) >= 4 and name not in _COMMON_ENTRY:
            matches = symbols.lookup(m.function.replace("::", "."))
            if matches and not matches[0].level.endswith("nocase") and len(matches) <= max_definitions:
                hits[i] = [(nodes.file[x.row], None if nodes.kind[x.row] == "file" else x.row)
                           for x in matches]
    by_stack: dict[int, list[int]] = {}
    for i in hits:
        by_stack.setdefault(mentions[i].trace, []).append(i)
    out: dict[int, list[Prior]] = {}
    base = KIND_CONFIDENCE["frame"]
    for members in by_stack.values():
        for k, i in enumerate(sorted(members, key=lambda j: mentions[j].depth)):
            conf = base / (1 + k) / len(hits[i])
            out[i] = [Prior(f, row, conf, mentions[i]) for f, row in hits[i]]
    return out


class _SpanLookup:
    """Nodes by file, for `path:line` -> innermost node."""

    def __init__(self, nodes):
        self.nodes = nodes
        self._by_file: dict[str, list[int]] | None = None
        self._last: dict[str, int] | None = None

    def _rows(self, f: str) -> list[int]:
        if self._by_file is None:
            by: dict[str, list[int]] = {}
            for r, (fi, kind) in enumerate(zip(self.nodes.file, self.nodes.kind)):
                if kind != "file":
                    by.setdefault(fi, []).append(r)
            self._by_file = by
        return self._by_file.get(f, [])

    def last_line(self, f: str) -> int:
        """The file's last line (0 for a file the index lacks)."""
        if self._last is None:
            self._last = {fi: e for fi, kind, e in zip(self.nodes.file, self.nodes.kind, self.nodes.end_line)
                          if kind == "file"}
        return self._last.get(f, 0)

    def innermost(self, f: str, line: int) -> int | None:
        best, width = None, None
        for r in self._rows(f):
            s, e = self.nodes.start_line[r], self.nodes.end_line[r]
            if s <= line <= e and (width is None or e - s < width):
                best, width = r, e - s
        return best

    def named(self, f: str, name: str, symbols) -> int | None:
        rows = [r for r in self._rows(f) if self.nodes.qualname[r].split(".")[-1] == name]
        return rows[0] if len(rows) == 1 else None


def _literals(text: str) -> tuple[str, ...]:
    """The report's quoted and backticked strings that are more than a name (a flag such as
    `--collect-only`, a message with spaces, a pattern): names are mentions already. In text
    order, each once."""
    out: dict[str, None] = {}
    for pattern, group in ((_BACKTICK, 1), (_QUOTED, 2)):
        for m in pattern.finditer(text):
            s = m.group(group).strip()
            if len(s) >= 4 and not _SYMBOLISH.fullmatch(s.removesuffix("()")):
                out.setdefault(s, None)
    return tuple(sorted(out, key=text.find))[:MAX_LITERALS]


def _without_listings(text: str) -> str:
    """The text without its installed-package listings (`_PACKAGE_LINE`), when it has one."""
    if len(_PACKAGE_LINE.findall(text)) < LISTING_LINES:
        return text
    return _PACKAGE_LINE.sub("", text)


def _prose(text: str, code_spans: Sequence[tuple[int, int]]) -> str:
    """The report's own words: fenced blocks and log-looking lines dropped."""
    kept, pos = [], 0
    for s, e in code_spans:
        kept.append(text[pos:s])
        pos = e
    kept.append(text[pos:])
    lines = "".join(kept).splitlines()
    return "\n".join(line for line in lines if line.strip() and not _LOG_LINE.match(line))


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges of fenced code blocks (an unclosed fence runs to the end)."""
    marks = [m.start() for m in _FENCE.finditer(text)]
    spans = []
    for i in range(0, len(marks), 2):
        spans.append((marks[i], marks[i + 1] if i + 1 < len(marks) else len(text)))
    return spans


def _inside(pos: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(s <= pos < e for s, e in spans)


def _is_noise_dotted(s: str) -> bool:
    """Version numbers, `e.g.`, domains and file names are not symbols."""
    low = s.lower()
    if re.fullmatch(r"[\d.]+", s) or low in ("e.g", "i.e", "etc", "vs"):
        return True
    if low.endswith((".py", ".pyx", ".txt", ".cfg", ".toml", ".ini", ".rst", ".md", ".com", ".org",
                     ".io", ".html", ".json", ".yaml", ".yml")):
        return True
    return False
