"""Core records, node ids and Parquet schemas shared by every layer (no heavy imports)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa

#: Bumped whenever the on-disk index layout changes incompatibly.
FORMAT_VERSION = 1

NodeKind = Literal["file", "class", "function", "method"]
NODE_KINDS: tuple[str, ...] = ("file", "class", "function", "method")

EdgeType = Literal["contains", "imports", "calls", "inherits", "references", "copies", "declares"]
#: `copies`: a generated or vendored copy's definition (or file) to the one it copies
#: (`codenib.compiler.copies`); `declares`: a declaration to its definition, a header to its
#: source, a `.d.ts` to the JavaScript it types, a base method to its override
#: (`codenib.compiler.lang.companions`). New types go last: a graph keeps types by position.
EDGE_TYPES: tuple[str, ...] = ("contains", "imports", "calls", "inherits", "references", "copies", "declares")

ID_SEP = "::"


def make_node_id(path: str, qualname: str | None = None) -> str:
    """Node id of `qualname` in the file `path` (posix, relative); the bare path for a file."""
    return path if not qualname else f"{path}{ID_SEP}{qualname}"


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DUP_SUFFIX = re.compile(r"#\d+(?=\.|$)")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """Lines as Python's tokenizer counts them (\\n, \\r\\n, \\r only).

    `str.splitlines` also splits on form feeds and Unicode separators, which `ast` line
    numbers do not count: spans would drift after a page break.
    """
    if not text:
        return []
    if not keepends:
        parts = _LINE_BREAK.split(text)
        return parts[:-1] if parts[-1] == "" else parts
    out, start = [], 0
    for m in _LINE_BREAK.finditer(text):
        out.append(text[start:m.end()])
        start = m.end()
    if start < len(text):
        out.append(text[start:])
    return out


class UniqueQualnames:
    """The qualified names of one file's definitions, made unique in order of appearance.

    The first `f` is `f`, later ones `f#2`, `f#3`, ...; a counted name never equals a name
    given before (a JavaScript key may itself be `"f#2"`): the count goes on until it is free.
    Every reader names its definitions through this, so ids follow one rule in every language.
    """

    __slots__ = ("_count", "_taken")

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._taken: set[str] = set()

    def add(self, plain: str) -> str:
        """The unique qualified name of the next definition named `plain`."""
        n = self._count.get(plain, 0) + 1
        qual = plain if n == 1 else f"{plain}#{n}"
        while qual in self._taken:
            n += 1
            qual = f"{plain}#{n}"
        self._count[plain] = n
        self._taken.add(qual)
        return qual


def plain_qualname(qualname: str) -> str:
    """A qualified name without its `#N` duplicate counters (`A.f#2.g` -> `A.f.g`)."""
    return _DUP_SUFFIX.sub("", qualname)


def file_of(node_id: str) -> str:
    """The relative file path of any node id (the part before ``::``)."""
    return node_id.split(ID_SEP, 1)[0]


def qualname_of(node_id: str) -> str:
    """The dotted qualified name of a node id ('' for a file node)."""
    parts = node_id.split(ID_SEP, 1)
    return parts[1] if len(parts) == 2 else ""


@dataclass(frozen=True, slots=True)
class Node:
    """One file, class, function or method of an indexed repository."""

    node_id: str
    kind: str
    file: str
    qualname: str
    name: str
    start_line: int
    end_line: int
    signature: str = ""
    docstring: str = ""
    text: str = ""
    content_sha256: str = ""
    language: str = "python"
    parse_error: str | None = None
    decorators: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed, counted edge between two node ids."""

    src: str
    dst: str
    type: str
    count: int = 1


NODES_SCHEMA = pa.schema(
    [
        ("node_id", pa.string()),
        ("kind", pa.string()),
        ("file", pa.string()),
        ("qualname", pa.string()),
        ("name", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("signature", pa.string()),
        ("docstring", pa.string()),
        ("text", pa.string()),
        ("content_sha256", pa.string()),
        ("language", pa.string()),
        ("parse_error", pa.string()),
        ("decorators", pa.list_(pa.string())),
    ]
)

EDGES_SCHEMA = pa.schema(
    [("src", pa.string()), ("dst", pa.string()), ("type", pa.string()), ("count", pa.int32())]
)

RESULTS_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("rank", pa.int32()),
        ("node_id", pa.string()),
        ("file", pa.string()),
        ("score", pa.float64()),
        ("plan", pa.string()),
        ("index", pa.string()),
        ("run_tag", pa.string()),
    ]
)

PLANS_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("plan", pa.string()),
        ("signals", pa.string()),       # JSON
        ("budget", pa.string()),
        ("capabilities", pa.string()),  # JSON
        ("trace", pa.string()),         # JSON
        ("latency_ms", pa.float64()),
        ("error", pa.string()),
        ("index", pa.string()),
        ("mode", pa.string()),
    ]
)


def nodes_to_table(nodes: list[Node]) -> pa.Table:
    """Arrow table of `nodes` in NODES_SCHEMA column order."""
    cols = {name: [] for name in NODES_SCHEMA.names}
    for n in nodes:
        for name in NODES_SCHEMA.names:
            value = getattr(n, name)
            cols[name].append(list(value) if name == "decorators" else value)
    return pa.table(cols, schema=NODES_SCHEMA)


def edges_to_table(edges: list[Edge]) -> pa.Table:
    """Arrow table of `edges` in EDGES_SCHEMA column order."""
    return pa.table(
        {
            "src": [e.src for e in edges],
            "dst": [e.dst for e in edges],
            "type": [e.type for e in edges],
            "count": [e.count for e in edges],
        },
        schema=EDGES_SCHEMA,
    )
