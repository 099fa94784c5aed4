"""The nodes the tree-sitter sweep (`codenib.compiler.lang.sweep`) makes of what it found: a
file's node (its outline: each top-level definition replaced by its signature) and each
definition's (its lines, a class's outline; a long first or last line cut to the definition's
own columns), both capped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from codenib.compiler.lang.base import Found, slot_constructor
from codenib.compiler.span_text import LONG_LINE_CHARS
from codenib.core.types import Node, make_node_id

#: The same caps as the Python reader (`codenib.compiler.lang.python_parse`): giant generated
#: definitions must not dominate BM25 lengths, and a file node holds an outline only.
MAX_TEXT_CHARS = 16_000
MAX_FILE_TEXT_CHARS = 6_000

_Node = slot_constructor(Node)


@dataclass(slots=True)
class SweepDef:
    """One definition the sweep found: its names, kind, spans, doc comment and signature."""

    node_id: str
    qualname: str
    plain: str
    name: str
    kind: str
    found: Found
    ts_node: object
    nested: bool        # inside another definition (a parent reference would make a cycle)
    start: int          # 1-based span (attributes included)
    end: int
    text_start: int     # the doc comment's first line (or `start`)
    doc: str
    decorators: tuple[str, ...]
    signature: str
    text_byte: int = 0  # where its text starts (doc comment, attribute or itself) and ends
    end_byte: int = 0
    children: list = field(default_factory=list)


def file_node(rel_path: str, lines: list[str], raw: bytes, top: list[SweepDef], docstring: str, language: str,
              error: str | None) -> Node:
    """A file's node: its outline (each of the `top` definitions replaced by its signature), capped."""
    return _Node(
        node_id=make_node_id(rel_path), kind="file", file=rel_path, qualname="", name=rel_path.rsplit("/", 1)[-1],
        start_line=1, end_line=max(1, len(lines)), signature="", docstring=docstring,
        text=_outline(rel_path, lines, 1, len(lines), top)[:MAX_FILE_TEXT_CHARS],
        content_sha256=hashlib.sha256(raw).hexdigest(), language=language, parse_error=error,
    )


def definition_node(rel_path: str, lines: list[str], raw: bytes, d: SweepDef, language: str) -> Node:
    """A definition's node: its lines (a class: its outline), capped, under its path and name."""
    segment = _segment(lines, raw, d)
    if d.kind == "class" and d.children:
        body = _outline(None, lines, d.text_start, d.end, d.children)
    else:
        body = segment
    return _Node(
        node_id=d.node_id, kind=d.kind, file=rel_path, qualname=d.qualname, name=d.name,
        start_line=d.start, end_line=d.end, signature=d.signature, docstring=d.doc,
        text=_capped(f"{rel_path} {d.plain}\n", body, MAX_TEXT_CHARS),
        content_sha256=hashlib.sha256(segment.encode("utf-8", "surrogatepass")).hexdigest(),
        language=language, decorators=d.decorators,
    )


# --- helpers ---------------------------------------------------------------------------------

def _segment(lines: list[str], raw: bytes, d: SweepDef) -> str:
    """A definition's lines; a first or last line longer than `LONG_LINE_CHARS` is cut to the
    definition's own columns (read from the bytes, so the cost is its own span, not the line's)."""
    first, last = d.text_start, d.end
    head_long = len(lines[first - 1]) > LONG_LINE_CHARS if first <= len(lines) else False
    tail_long = len(lines[last - 1]) > LONG_LINE_CHARS if last <= len(lines) else False
    if not (head_long or tail_long):
        return "\n".join(lines[first - 1:last])
    start, end = d.text_byte, d.end_byte
    while end > start and raw[end - 1] in b"\r\n":
        end -= 1        # a span that ends on the next line's first column (a line comment)
    if first == last:
        return _line_text(raw[start:end])
    head = _line_text(raw[start:raw.find(b"\n", start, end)]) if head_long else lines[first - 1]
    tail = _line_text(raw[raw.rfind(b"\n", start, end) + 1:end]) if tail_long else lines[last - 1]
    return "\n".join([head, *lines[first:last - 1], tail])


def _line_text(part: bytes) -> str:
    """Bytes within one line as `read_tree` decodes its lines (a span may end on the line break)."""
    return part.decode("utf-8", errors="replace").rstrip("\r\n")


def _capped(head: str, body: str, cap: int) -> str:
    """`(head + body)[:cap]` without first copying the whole of a long body."""
    return (head + body[:cap - len(head)]) if len(head) < cap else head[:cap]


def _outline(head: str | None, lines: list[str], first: int, last: int, inner: list[SweepDef]) -> str:
    """Lines `first..last` with each of the `inner` definitions (doc comment included)
    replaced by its signature: a class as a reader skims it, or a file's outline."""
    parts = [head] if head else []
    at = first
    for d in sorted(inner, key=lambda d: d.text_start):
        if d.text_start < at or d.end > last:
            continue        # overlapping spans (a macro-mangled parse): keep the text as it is
        parts.extend(lines[at - 1:d.text_start - 1])
        indent = lines[d.start - 1][:len(lines[d.start - 1]) - len(lines[d.start - 1].lstrip())] \
            if d.start - 1 < len(lines) else ""
        first_doc = d.doc.split("\n\n")[0].replace("\n", " ") if d.doc else ""
        parts.append(f"{indent}{d.signature}" + (f"  // {first_doc}" if first_doc else ""))
        at = d.end + 1
    parts.extend(lines[at - 1:last])
    return "\n".join(parts)
