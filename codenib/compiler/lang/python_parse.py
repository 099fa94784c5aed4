"""Parse one Python file with `ast` into nodes (file, class, function, method); the
Python reader (`codenib.compiler.lang.python`) answers the build and `--history` with these."""

from __future__ import annotations

import ast
import bisect
import dataclasses
import functools
import hashlib
import io
import tokenize
from dataclasses import dataclass, field

from codenib.compiler.lang.python_newer import parse_newer
from codenib.compiler.span_text import LONG_LINE_CHARS
from codenib.compiler.walk import SourceFile
from codenib.core.types import Node, UniqueQualnames, make_node_id, plain_qualname, source_lines

#: Bumped whenever the nodes parsed from the same bytes change: a later build reuses an
#: earlier index's nodes only when its version is the same.
PARSE_VERSION = 3     # 3: Python 3.12 syntax (PEP 695, 701) parses (`python_newer`); 2: long def lines cut
#: Indexed text is capped: giant generated functions would otherwise dominate BM25 lengths.
MAX_TEXT_CHARS = 16_000
#: File nodes carry module-level statements only, capped tighter (their defs have own nodes).
MAX_FILE_TEXT_CHARS = 6_000

_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: Fields that hold statements, or the except handlers and match cases that hold them.
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


@dataclass(slots=True)
class Definition:
    """A class or function definition with its node id and enclosing definition."""

    node_id: str
    qualname: str
    kind: str                       # class | function | method
    tree: ast.AST                   # the ClassDef / FunctionDef node
    parent: "Definition | None"


@dataclass(slots=True)
class ParsedFile:
    """Everything the resolver needs from one file."""

    rel_path: str
    nodes: list[Node]
    tree: ast.Module | None = None
    definitions: list[Definition] = field(default_factory=list)
    parse_error: str | None = None
    # Lines holding `:=`, ascending (scanning walks a statement's expressions for walrus
    # targets only when it spans one); None: not known, walk every statement.
    walrus_lines: tuple[int, ...] | None = None
    text: str | None = None         # the decoded source (resolution hashes its units' text)
    # (definitions list, id() of each definition's tree -> its node id): made once per file
    # by `def_ids`, not once per unit (that was quadratic in a file's definitions).
    _def_ids: tuple[list, dict[int, str]] | None = field(default=None, repr=False, compare=False)

    def def_ids(self) -> dict[int, str]:
        """id() of each definition's tree -> its node id (kept while `definitions` is the same list)."""
        cached = self._def_ids
        if cached is None or cached[0] is not self.definitions:
            cached = self._def_ids = (self.definitions, {id(d.tree): d.node_id for d in self.definitions})
        return cached[1]

    @property
    def file_node(self) -> Node:
        return self.nodes[0]

    @property
    def facts(self) -> None:
        """None: the Python graph stage parses the file's bytes again (`parse_syntax`), or
        takes this read, tree and all, when the build keeps it in-process."""
        return None


def parse_source(rel_path: str, raw: bytes) -> ParsedFile:
    """Parse the bytes of one file into nodes; errors become the file node's `parse_error`."""
    text, error = _decode(raw)
    lines = source_lines(text)
    tree, error = _parse(rel_path, text, error)
    file_node = Node(
        node_id=make_node_id(rel_path),
        kind="file",
        file=rel_path,
        qualname="",
        name=rel_path.rsplit("/", 1)[-1],
        start_line=1,
        end_line=max(1, len(lines)),
        signature="",
        docstring=(ast.get_docstring(tree, clean=True) or "") if tree else "",
        text=_file_text(rel_path, tree, lines, text),
        content_sha256=hashlib.sha256(raw).hexdigest(),
        parse_error=error,
    )
    parsed = ParsedFile(rel_path=rel_path, nodes=[file_node], tree=tree, parse_error=error,
                        walrus_lines=_walrus_lines(text, lines), text=text)
    if tree is not None:
        parsed.definitions = _definitions(rel_path, tree)
        parsed.nodes.extend(_def_node(rel_path, d, lines) for d in parsed.definitions)
    return parsed


def parse_syntax(rel_path: str, raw: bytes) -> ParsedFile:
    """The tree and definitions `parse_source` finds in the same bytes, without the nodes.

    The resolver's second look at a file whose nodes are already built: parsing again is
    cheaper than holding every file's tree until the graph is done.
    """
    text, error = _decode(raw)
    tree, error = _parse(rel_path, text, error)
    parsed = ParsedFile(rel_path=rel_path, nodes=[], tree=tree, parse_error=error,
                        walrus_lines=_walrus_lines(text), text=text)
    if tree is not None:
        parsed.definitions = _definitions(rel_path, tree)
    return parsed


@dataclass(frozen=True, slots=True)
class Outline:
    """Where a Python text's top-level statements, the statements of its top-level classes,
    and its definitions lie: what `definition_spans` reports, kept so that a neighbouring
    version of the file can be outlined by parsing only the statements a diff touches
    (`codenib.compiler.lang.python_delta`)."""

    tops: tuple[tuple[int, int], ...]                   # each top-level statement's first and last line
    bodies: tuple[tuple[tuple[int, int], ...], ...]     # per top: a class's body statements, else ()
    defs: tuple[tuple[str, int, int, int, int], ...]    # (qualname without #N, first line, last line,
                                                        #  top, body statement of a class top or -1)
    lines: int                                          # the text's line count ("\n" count + 1)


def definition_spans(rel_path: str, raw: bytes) -> list[tuple[str, int, int]]:
    """(node id, start line, end line) of each definition node `parse_source` makes of `raw`,
    in its order, without building the nodes (what `--history` needs of past versions)."""
    outline = source_outline(rel_path, raw)
    return outline_spans(rel_path, outline) if outline is not None else []


def source_outline(rel_path: str, raw: bytes) -> Outline | None:
    """The outline of a file's bytes, decoded as `parse_source` does; None when it has no
    definitions because it cannot be decoded or parsed."""
    text, error = _decode(raw)
    if error is not None:
        return None
    return text_outline(text, rel_path)


def text_outline(text: str, rel_path: str = "<region>", first_line: int = 1) -> Outline | None:
    """The outline of decoded source `text` whose first line is line `first_line` of its
    file (None: it does not parse)."""
    tree, _ = _parse(rel_path, text, None)
    if tree is None:
        return None
    shift = first_line - 1
    tops, bodies = [], []
    for stmt in tree.body:
        start, end = _span(stmt)
        tops.append((start + shift, end + shift))
        bodies.append(tuple((s + shift, e + shift) for s, e in map(_span, stmt.body))
                      if isinstance(stmt, ast.ClassDef) else ())
    starts = [start for start, _ in tops]
    defs = []
    for d in _definitions(rel_path, tree):
        start, end = _span(d.tree)
        start, end = start + shift, end + shift
        top = bisect.bisect_right(starts, start) - 1
        member = -1
        if bodies[top] and d.tree is not tree.body[top]:
            member = bisect.bisect_right(bodies[top], (start, float("inf"))) - 1
        defs.append((plain_qualname(d.qualname), start, end, top, member))
    return Outline(tuple(tops), tuple(bodies), tuple(defs), text.count("\n") + 1)


def outline_spans(rel_path: str, outline: Outline) -> list[tuple[str, int, int]]:
    """(node id, start line, end line) of the outline's definitions, named as the reader names
    them (the second `f` of a scope is `f#2`, counted over the whole file)."""
    names = UniqueQualnames()
    return [(make_node_id(rel_path, names.add(qual)), start, end) for qual, start, end, *_ in outline.defs]


def parse_file(source: SourceFile) -> ParsedFile:
    """Read and parse a file found by `walk_repository`."""
    try:
        raw = source.abs_path.read_bytes()
    except OSError as exc:
        return parse_unreadable(source.rel_path, f"unreadable: {exc.strerror}")
    return parse_source(source.rel_path, raw)


def parse_unreadable(rel_path: str, error: str) -> ParsedFile:
    """The file node of a file that could not be read."""
    parsed = parse_source(rel_path, b"")
    parsed.parse_error = error
    parsed.nodes[0] = dataclasses.replace(parsed.nodes[0], parse_error=error)
    return parsed


# --- helpers ---------------------------------------------------------------------------------

def _decode(raw: bytes) -> tuple[str, str | None]:
    """Decode source bytes as Python would (BOM, coding cookie); never raises."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as dec:
            return raw.decode("utf-8", errors="replace"), f"not valid utf-8 and no coding declaration: {dec}"
        return raw.decode("utf-8", errors="replace"), f"bad encoding declaration: {exc}"
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return raw.decode("utf-8", errors="replace"), f"not valid {encoding}: {exc}"
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\0" in text:
        return text.replace("\0", " "), "source contains a NUL byte"
    return text, None


def _walrus_lines(text: str, lines: list[str] | None = None) -> tuple[int, ...]:
    """The 1-based numbers of the lines that hold `:=` (the token never spans lines)."""
    if ":=" not in text:
        return ()
    return tuple(i for i, line in enumerate(lines if lines is not None else source_lines(text), 1)
                 if ":=" in line)


def _parse(rel_path: str, text: str, error: str | None) -> tuple[ast.Module | None, str | None]:
    """The module's tree, or None and why not (a decoding `error` stops it before parsing)."""
    if error is not None:
        return None, error
    try:
        return ast.parse(text, filename=rel_path, type_comments=False), None
    except SyntaxError as exc:
        tree = parse_newer(text, rel_path)       # Python 3.12 syntax, rewritten for this parser
        if tree is not None:
            return tree, None
        return None, f"SyntaxError: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _definitions(rel_path: str, tree: ast.Module) -> list[Definition]:
    """Every class and function of the tree, outer before inner, in order of appearance."""
    definitions: list[Definition] = []
    _visit(tree.body, None, rel_path, definitions, UniqueQualnames())
    return definitions


def _visit(block: list, parent: Definition | None, rel_path: str, definitions: list[Definition],
           names: UniqueQualnames) -> None:
    """Append the definitions of a statement block to `definitions` (`names`: the qualified
    names given so far). A module-level function, not a closure: a closure that calls
    itself is a reference cycle holding `definitions`, so every tree it walked stayed alive
    until the cycle collector ran (`--history` parses thousands of blobs with it paused)."""
    # Definitions are statements: only statement blocks (and the handlers and match
    # cases that hold them) are walked, in the order of their fields in the tree.
    for child in block:
        if isinstance(child, _DEF_TYPES):
            plain_parent = plain_qualname(parent.qualname) if parent else ""
            qual = f"{plain_parent}.{child.name}" if plain_parent else child.name
            unique = names.add(qual)
            if isinstance(child, ast.ClassDef):
                kind = "class"
            elif parent is not None and parent.kind == "class":
                kind = "method"
            else:
                kind = "function"
            d = Definition(make_node_id(rel_path, unique), unique, kind, child, parent)
            definitions.append(d)
            _visit(child.body, d, rel_path, definitions, names)
            continue
        for name in _block_fields(type(child)):
            _visit(getattr(child, name), parent, rel_path, definitions, names)


@functools.lru_cache(maxsize=None)
def _block_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that hold statements, handlers or match cases, in order."""
    return tuple(f for f in kind._fields if f in _BLOCK_FIELDS)


def _def_node(rel_path: str, d: Definition, lines: list[str]) -> Node:
    tree = d.tree
    start, end = _span(tree)
    segment = _segment(tree, start, end, lines)
    signature = _signature(tree)
    docstring = ast.get_docstring(tree, clean=True) or ""
    if isinstance(tree, ast.ClassDef):
        body = _class_outline(tree, lines)
    else:
        body = segment
    header = f"{rel_path} {plain_qualname(d.qualname)}"
    return Node(
        node_id=d.node_id,
        kind=d.kind,
        file=rel_path,
        qualname=d.qualname,
        name=tree.name,
        start_line=start,
        end_line=end,
        signature=signature,
        docstring=docstring,
        text=f"{header}\n{body}"[:MAX_TEXT_CHARS],
        content_sha256=hashlib.sha256(segment.encode("utf-8", "surrogatepass")).hexdigest(),
        decorators=tuple(_unparse(dec) for dec in tree.decorator_list),
    )


def _segment(tree: ast.AST, start: int, end: int, lines: list[str]) -> str:
    """A definition's lines; a first or last line longer than `LONG_LINE_CHARS` is cut to the
    definition's own columns (before a def or decorator there is only indentation)."""
    segment = lines[start - 1:end]
    if not segment or (len(segment[0]) <= LONG_LINE_CHARS and len(segment[-1]) <= LONG_LINE_CHARS):
        return "\n".join(segment)
    last = segment[-1]
    if len(last) > LONG_LINE_CHARS and tree.end_col_offset is not None and tree.end_lineno == end:
        cut = tree.end_col_offset
        if not last.isascii():      # ast columns count UTF-8 bytes
            cut = len(last.encode("utf-8", "surrogatepass")[:cut].decode("utf-8", "replace"))
        segment[-1] = last[:cut]
    if len(segment[0]) > LONG_LINE_CHARS:
        segment[0] = segment[0].lstrip(" \t\f")
    return "\n".join(segment)


def _span(tree: ast.AST) -> tuple[int, int]:
    """A statement's first line (a definition's first decorator's) and last line."""
    decorators = getattr(tree, "decorator_list", None)
    start = min([tree.lineno] + [dec.lineno for dec in decorators]) if decorators else tree.lineno
    return start, tree.end_lineno or tree.lineno


def _signature(tree: ast.AST) -> str:
    # A def's signature appears in its node, its class's outline and its file's text:
    # unparsed once, kept on the tree (the costliest part of building nodes).
    cached = getattr(tree, "_codenib_signature", None)
    if cached is None:
        cached = tree._codenib_signature = _unparse_signature(tree)
    return cached


def _unparse_signature(tree: ast.AST) -> str:
    name = tree.name + getattr(tree, "_codenib_type_params", "")   # PEP 695 `[T]`, as written
    if isinstance(tree, ast.ClassDef):
        bases = [_unparse(b) for b in tree.bases] + [_unparse(k) for k in tree.keywords]
        return f"class {name}({', '.join(bases)})" if bases else f"class {name}"
    prefix = "async def" if isinstance(tree, ast.AsyncFunctionDef) else "def"
    returns = f" -> {_unparse(tree.returns)}" if tree.returns is not None else ""
    return f"{prefix} {name}({_unparse(tree.args)}){returns}"


def _class_outline(tree: ast.ClassDef, lines: list[str]) -> str:
    """The class as a reader skims it: header, docstring, attributes and method signatures."""
    start = min([tree.lineno] + [dec.lineno for dec in tree.decorator_list])
    first_body = tree.body[0].lineno if tree.body else tree.lineno + 1
    parts = lines[start - 1:first_body - 1]
    size = _joined_size(parts, 0)
    for stmt in tree.body:
        if size > MAX_TEXT_CHARS:
            break       # the text is cut before here (statements sharing a line repeat it)
        had = len(parts)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(stmt, clean=True) or ""
            first = doc.strip().split("\n\n")[0].replace("\n", " ") if doc else ""
            parts.append(f"    {_signature(stmt)}" + (f"  # {first}" if first else ""))
        elif isinstance(stmt, ast.ClassDef):
            parts.append(f"    {_signature(stmt)}")
        else:
            parts.extend(lines[stmt.lineno - 1:(stmt.end_lineno or stmt.lineno)])
        size += _joined_size(parts, had)
    return "\n".join(parts)


def _joined_size(parts: list[str], start: int) -> int:
    """How many characters `parts[start:]` add to `"\n".join(parts)` (an upper bound by one)."""
    return sum(len(p) + 1 for p in parts[start:])


def _file_text(rel_path: str, tree: ast.Module | None, lines: list[str], text: str) -> str:
    """A file node indexes its path, docstring, module-level statements and def signatures."""
    if tree is None:
        return f"{rel_path}\n{text}"[:MAX_FILE_TEXT_CHARS]
    parts = [rel_path]
    size = len(rel_path)
    for stmt in tree.body:
        if size > MAX_FILE_TEXT_CHARS:
            break       # the text is cut before here (statements sharing a line repeat it)
        had = len(parts)
        if isinstance(stmt, _DEF_TYPES):
            parts.append(_signature(stmt))
        else:
            parts.extend(lines[stmt.lineno - 1:(stmt.end_lineno or stmt.lineno)])
        size += _joined_size(parts, had)
    return "\n".join(parts)[:MAX_FILE_TEXT_CHARS]


def _unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of exotic nodes must not stop a build
        return ""
