"""What a tree-sitter language reader is: the `TreeReader` ABC, the `Found` it answers with,
the `ForeignParse` a file's read gives, and text helpers for the language modules.

A language module subclasses `TreeReader` with a query that captures `@def` (definitions
and containers), `@call` and `@import` nodes, and says what each captured node is
(`define`, `call`, `imports`; `call_site` where `call` and `call_imports` share work;
`call_sites` where finer captures than `@call` give the call sites more cheaply, e.g. from
the callee's text with `identifier_sites` and `member_sites`).
Everything else is shared, in `codenib.compiler.lang.sweep`: the nesting of definitions, node
ids, spans, signatures, doc comments, node texts and parse errors.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterable

from codenib.compiler.lang.facts import ForeignFacts
from codenib.core.types import Node

#: A `@def` capture in a query pattern's source (not `@definition`, not `@def.x`).
_DEF_CAPTURE = re.compile(rb"@def(?![\w.])")
#: Roles a language gives a captured node (`Found.role`).
ROLES = ("type", "function", "namespace", "impl")


def slot_constructor(cls):
    """A constructor of a frozen slots dataclass that fills the slots directly.

    It takes the same arguments as `cls(...)` and gives an equal object of class `cls`; a
    frozen dataclass's own `__init__` goes through `object.__setattr__` once per field, which
    made building the facts and nodes (one per call site) a fifth of a reader's Python time.
    The object is made as a plain twin class with the same slots (stores into them are the
    interpreter's cheapest attribute writes) and then given `cls` as its class, which Python
    allows between classes of one layout: half the cost of calling each slot's setter.
    Classes with a `__post_init__` or without slots get `cls` itself.
    """
    if not (dataclasses.is_dataclass(cls) and "__slots__" in cls.__dict__) or hasattr(cls, "__post_init__") \
            or cls.__bases__ != (object,):
        return cls
    twin = type(f"_{cls.__name__}Slots", (), {"__slots__": cls.__slots__})
    env = {"_new": object.__new__, "_cls": cls, "_twin": twin, "_missing": dataclasses.MISSING}
    params, body = [], []
    for i, f in enumerate(dataclasses.fields(cls)):
        if f.default is not dataclasses.MISSING:
            env[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_missing")
            body.append(f"    if {f.name} is _missing: {f.name} = _factory{i}()")
        else:
            params.append(f.name)
        body.append(f"    self.{f.name} = {f.name}")
    source = (f"def make({', '.join(params)}):\n    self = _new(_twin)\n" + "\n".join(body)
              + "\n    self.__class__ = _cls\n    return self\n")
    exec(source, env)       # noqa: S102 - generated from the field names alone, as dataclasses does
    make = env["make"]
    make.__doc__ = f"`{cls.__name__}(...)`, faster (see `slot_constructor`)."
    return make


@dataclass(frozen=True, slots=True)
class Found:
    """What a language says a captured `@def` node is.

    `type` and `function` become nodes; `namespace` and `impl` only add `name` (dotted when
    several segments, e.g. C++ `namespace a::b`) to the qualified names of what they hold.
    `qualifier` is a container the syntax names outside the nesting (C++ `A::f`, a Go
    receiver, JavaScript `A.prototype.f`); a function with one is a method.
    """

    role: str
    name: str
    qualifier: tuple[str, ...] = ()
    outer: object = None        # the node whose span, doc comment and signature count (wrapper)
    body: object = None         # the signature ends where this starts (None: no body)
    bases: tuple[tuple[str, str], ...] = ()     # (base text, relation), see facts.BaseFact


#: `Found(...)`, faster: the language modules make one per captured definition.
new_found = slot_constructor(Found)


@dataclass(frozen=True, slots=True)
class ForeignParse:
    """One non-Python file read: its nodes (file node first) and its facts."""

    rel_path: str
    nodes: list[Node]
    facts: ForeignFacts
    parse_error: str | None = None

    @property
    def file_node(self) -> Node:
        return self.nodes[0]


class TreeReader(ABC):
    """A tree-sitter reader; subclasses set the class attributes and the three hooks."""

    language: str = ""
    version: int = 1
    query_source: str = ""
    comment_types: frozenset[str] = frozenset({"comment"})
    attribute_types: frozenset[str] = frozenset()       # siblings before a def that belong to it

    def __init__(self) -> None:
        self._local = threading.local()

    # --- hooks ---------------------------------------------------------------------------
    @abstractmethod
    def grammar(self):
        """The compiled grammar's language pointer (from its wheel; nothing is downloaded)."""

    def grammar_key(self, rel_path: str) -> str:
        """Which of the language's grammars reads a file ('' when it has one)."""
        return ""

    def grammar_for(self, key: str):
        """The grammar for a `grammar_key` (TypeScript has a second one for `.tsx`)."""
        return self.grammar()

    @abstractmethod
    def define(self, node, src: bytes) -> Found | None:
        """What a `@def` capture is, or None when it is no definition (e.g. unnamed)."""

    def folded(self, node, src: bytes) -> bool:
        """A namespace the file's outline shows by its signature alone, its body left out:
        test code kept inside a source file (Rust's `#[cfg(test)] mod tests`)."""
        return False

    def call(self, node, src: bytes) -> tuple[str, str, str] | None:
        """(callee, receiver, kind) of a `@call` capture, or None (computed callee)."""
        return None

    def imports(self, node, src: bytes) -> Iterable[tuple[str, str, tuple]]:
        """(spec, kind, names) of each import an `@import` capture makes."""
        return ()

    def call_imports(self, node, src: bytes) -> Iterable[tuple[str, str, tuple]]:
        """Imports made by a call (`require('x')`); most languages have none."""
        return ()

    def scopes(self, defs: list[tuple[str, object]], captures: dict, src: bytes,
               calls: list) -> list:
        """`ScopeFact`s of a file's definitions ((node id, captured node) in source order),
        from the captures and its `CallFact`s; most languages give none."""
        return []

    def call_site(self, node, src: bytes) -> tuple[tuple[str, str, str] | None, Iterable[tuple[str, str, tuple]]]:
        """(`call`, `call_imports`) of a `@call` capture at once: a reader whose two hooks
        look at the same parts overrides it (it is asked once per call site)."""
        return self.call(node, src), self.call_imports(node, src)

    def call_sites(self, captures: dict, src: bytes) -> list[tuple[int, int, tuple | None, Iterable]]:
        """(start byte, -end byte, `call`, `call_imports`) of each call site, in source order
        (outer before inner; ties in capture order; a node captured twice once).

        By default from the `@call` captures, through `call_site`; a reader may override it
        to read call sites from finer captures (the callee itself), giving any span that
        starts where the call does and orders the sites as their call nodes' spans do.
        """
        nodes = captures.get("call", ())
        if not nodes:
            return []
        spans, order = order_nodes(nodes)
        append = (out := []).append
        if type(self).call_site is not TreeReader.call_site:
            call_site = self.call_site
            for i in order:
                start, neg_end = spans[i]
                got, made = call_site(nodes[i], src)
                append((start, neg_end, got, made))
        elif type(self).call_imports is not TreeReader.call_imports:
            call, call_imports = self.call, self.call_imports
            for i in order:
                start, neg_end = spans[i]
                append((start, neg_end, call(nodes[i], src), call_imports(nodes[i], src)))
        else:       # most languages: no call makes an import
            call = self.call
            for i in order:
                start, neg_end = spans[i]
                append((start, neg_end, call(nodes[i], src), ()))
        return out

    # --- machinery -----------------------------------------------------------------------
    def tools(self, rel_path: str, definitions_only: bool = False):
        """(parser, query, query cursor) for this thread and grammar, made once each
        (compiling the query costs far more than parsing a file; a cursor is reused).
        `definitions_only`: the query with every pattern that captures no `@def` disabled
        (the same `@def` captures, no call or import ones)."""
        key = self.grammar_key(rel_path)
        cache = getattr(self._local, "tools", None)
        if cache is None:
            cache = self._local.tools = {}
        tools = cache.get((key, definitions_only))
        if tools is None:
            import tree_sitter as ts

            language = ts.Language(self.grammar_for(key))
            query = ts.Query(language, self.query_source)
            if definitions_only:
                for i in range(query.pattern_count):
                    pattern = self.query_source.encode()[query.start_byte_for_pattern(i):query.end_byte_for_pattern(i)]
                    if not _DEF_CAPTURE.search(pattern):
                        query.disable_pattern(i)
            tools = cache[(key, definitions_only)] = (ts.Parser(language), query, ts.QueryCursor(query))
        return tools


# --- helpers for the language modules ------------------------------------------------------

def order_nodes(nodes) -> tuple[list[tuple[int, int]], list[int]]:
    """(start byte, -end byte) of each node, and the indexes of the nodes to keep in that order
    (ties in capture order; a node captured twice once).

    Sorting indexes by their span tuples keeps the Python work per node to two attribute
    reads (this runs once per call site); ids are compared only where spans tie.
    """
    spans = [(n.start_byte, -n.end_byte) for n in nodes]
    order = sorted(range(len(spans)), key=spans.__getitem__)
    if len(set(spans)) == len(spans):
        return spans, order
    kept: list[int] = []
    for i in order:
        if kept and spans[kept[-1]] == spans[i]:
            ids = {nodes[k].id for k in kept if spans[k] == spans[i]}
            if nodes[i].id in ids:
                continue
        kept.append(i)
    return spans, kept


#: The characters that may end a member callee's object when nothing but the operator
#: separates it from the member (not whitespace, nor the `/` of a comment before the operator).
_GAP_END = frozenset(" \t\r\n\f\v/\ufeff")


def member_sites(nodes, src: bytes, separators: tuple[str, ...], fallback, kind: str = "call") -> list:
    """(start byte, -end byte, (member, object, kind), ()) of each member callee node
    (`a.b`, `a->b`), read from its text: the object is the text before the last separator
    and the member the name after it, when nothing else touches the separator (the object
    as `drop_generics` gives it). A callee the text cannot settle (a comment or line break
    at the separator, a recovered syntax error) is answered by `fallback(node, src)`.

    A member that is an identifier holds no whitespace or comment: it is the member's name.
    """
    out = []
    append = out.append
    ascii_only = src.isascii()      # then byte offsets are string offsets
    whole = src.decode("ascii") if ascii_only and nodes else ""
    sep = separators[0] if len(separators) == 1 else None
    for node in nodes:
        start, end = node.start_byte, node.end_byte
        text = whole[start:end] if ascii_only else src[start:end].decode("utf-8", "replace")
        if sep is not None:
            obj, found, member = text.rpartition(sep)
        else:
            at, width = -1, 0
            for one in separators:
                where = text.rfind(one)
                if where > at:
                    at, width = where, len(one)
            obj, found, member = (text[:at], True, text[at + width:]) if at >= 0 else ("", False, "")
        if found and obj and member.isidentifier() and obj[-1] not in _GAP_END and not node.has_error:
            if not obj.isidentifier():
                obj = " ".join(obj.split()) if "<" not in obj else drop_generics(obj)
            append((start, -end, (member, obj, kind), ()))
        else:
            append((start, -end, fallback(node, src), ()))
    return out


def identifier_sites(nodes, src: bytes, kind: str = "call") -> list:
    """(start byte, -end byte, (text, "", kind), ()) of each callee that is a plain name."""
    if not (nodes and src.isascii()):
        return [(node.start_byte, -node.end_byte, (node_text(node, src), "", kind), ()) for node in nodes]
    whole = src.decode("ascii")         # byte offsets are string offsets
    out = []
    append = out.append
    for node in nodes:
        start, end = node.start_byte, node.end_byte
        append((start, -end, (whole[start:end], "", kind), ()))
    return out


def node_text(node, raw: bytes) -> str:
    """The source text of a node."""
    return raw[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def collapse(text: str) -> str:
    """Whitespace runs as single spaces."""
    return _collapse(text)


def drop_generics(text: str) -> str:
    """`Foo<T, Bar<U>>::baz` -> `Foo::baz`: template and generic arguments removed."""
    if "<" not in text:
        return _collapse(text)
    out = []
    depth = 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return _collapse("".join(out))


def field_text(node, name: str, raw: bytes) -> str:
    """The text of a node's field, '' when absent."""
    child = node.child_by_field_name(name)
    return node_text(child, raw) if child is not None else ""


def field_ids(grammar, *names: str) -> tuple[int, ...]:
    """The ids of fields of a grammar: `child_by_field_id` skips the search of the grammar's
    field names that `child_by_field_name` makes on every call (a third of its cost).
    Only for hooks that read one grammar (not those TypeScript or C++ inherit)."""
    import tree_sitter as ts

    language = ts.Language(grammar)
    ids = tuple(language.field_id_for_name(name) for name in names)
    missing = [name for name, i in zip(names, ids) if i is None]
    if missing:
        raise ValueError(f"grammar has no field {missing}")
    return ids


def field_id_text(node, field_id: int, raw: bytes) -> str:
    """`field_text` by field id."""
    child = node.child_by_field_id(field_id)
    return raw[child.start_byte:child.end_byte].decode("utf-8", "replace") if child is not None else ""


def unquote(text: str) -> str:
    """A string literal's contents (quotes of any kind removed)."""
    text = text.strip()
    if len(text) >= 2 and text[0] in "\"'`<" and text[-1] in "\"'`>":
        return text[1:-1]
    return text

