"""Java: classes, interfaces, enums, records and annotation types; methods and constructors
(a constructor is named as its class); package, imports, calls, `new`, extends/implements."""

from __future__ import annotations

import re

import tree_sitter_java

from codenib.compiler.lang.base import (TreeReader, drop_generics, field_id_text, field_ids, new_found, node_text,
                                        order_nodes)

_NAME, _BODY, _OBJECT, _CONSTRUCTOR, _TYPE = field_ids(
    tree_sitter_java.language(), "name", "body", "object", "constructor", "type")

_TYPES = frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                    "record_declaration", "annotation_type_declaration"})


class JavaReader(TreeReader):
    language = "java"
    version = 2     # 2: unique ids, long lines cut, nesting capped
    comment_types = frozenset({"line_comment", "block_comment"})
    query_source = """
    (class_declaration) @def
    (interface_declaration) @def
    (enum_declaration) @def
    (record_declaration) @def
    (annotation_type_declaration) @def
    (method_declaration) @def
    (constructor_declaration) @def
    (compact_constructor_declaration) @def
    (method_invocation) @call
    (object_creation_expression) @call
    (explicit_constructor_invocation) @call
    (import_declaration) @import
    (package_declaration) @import
    """

    def grammar(self):
        return tree_sitter_java.language()

    def define(self, node, src):
        name = field_id_text(node, _NAME, src)
        if not name:
            return None
        body = node.child_by_field_id(_BODY)
        if node.type in _TYPES:
            return new_found("type", name, body=body, bases=_bases(node, src))
        return new_found("function", name, body=body)

    def call(self, node, src):
        t = node.type
        if t == "method_invocation":
            obj = node.child_by_field_id(_OBJECT)
            return field_id_text(node, _NAME, src), drop_generics(node_text(obj, src)) if obj is not None else "", "call"
        if t == "explicit_constructor_invocation":
            ctor = node.child_by_field_id(_CONSTRUCTOR)
            return (node_text(ctor, src), "", "call") if ctor is not None else None
        typ = drop_generics(field_id_text(node, _TYPE, src))
        if not typ:
            return None
        receiver, _, callee = typ.rpartition(".")
        return callee, receiver, "new"

    def call_sites(self, captures, src):
        # A call that starts with `a.b.f(` (nearly all) or `new a.B(` is read from that text
        # in place of asking the node for its fields. The `(` is this call's own only when no
        # other call starts where it does (`a.f(x).g(y)`: the outer call starts with the
        # inner one's text): of the calls starting together, only the innermost (the last in
        # source order) is read so. `super` in the text (`A.super.f()`, `o.super()`) and
        # recovered syntax errors go to the node's fields too.
        nodes = captures.get("call", ())
        if not nodes:
            return []
        spans, order = order_nodes(nodes)
        out = []
        append = out.append
        # An ASCII file (nearly all) is matched as a str, its byte offsets being string
        # offsets: the groups come out as text, with no decoding per call.
        if src.isascii():
            text, chain, new = src.decode("ascii"), _CHAIN_TEXT.match, _NEW_TEXT.match
        else:
            text, chain, new = src, _CHAIN.match, _NEW.match
        call = self.call
        last = len(order) - 1       # a call is the innermost of those starting together when
        # it is the last or the next one in source order starts elsewhere
        for k, i in enumerate(order):
            start, neg_end = spans[i]
            node = nodes[i]
            if (k == last or spans[order[k + 1]][0] != start) and not node.has_error:
                m = chain(text, start, -neg_end)
                if m is not None:
                    obj, name = m.groups()
                    if text is src:
                        name, obj = name.decode("ascii"), obj.decode("ascii") if obj else ""
                    append((start, neg_end, (name, obj or "", "call"), ()))
                    continue
                m = new(text, start, -neg_end)
                if m is not None:
                    typ = m.group(1)
                    receiver, _, callee = (typ.decode("ascii") if text is src else typ).rpartition(".")
                    append((start, neg_end, (callee, receiver, "new"), ()))
                    continue
            append((start, neg_end, call(node, src), ()))
        return out

    def imports(self, node, src):
        names = [c for c in node.named_children if c.type in ("scoped_identifier", "identifier")]
        if not names:
            return ()
        spec = node_text(names[0], src)
        if node.type == "package_declaration":
            return [(spec, "package", ())]
        glob = any(c.type == "asterisk" for c in node.children)
        static = any(c.type == "static" for c in node.children)
        last = spec.rsplit(".", 1)[-1]
        return [(spec + (".*" if glob else ""), "import_static" if static else "import",
                 () if glob else ((last, last),))]


#: `a.b.f(` at a call's start: the object (None when there is none) and the method name,
#: ASCII, no `super` among them (the lookaheads).
_CHAIN = re.compile(rb"(?:((?!super[.(])[A-Za-z_$][A-Za-z0-9_$]*(?:\.(?!super[.(])[A-Za-z_$][A-Za-z0-9_$]*)*)\.)?"
                    rb"(?!super\()([A-Za-z_$][A-Za-z0-9_$]*)\(")
#: `new a.B(` at a call's start: the class as written (no type arguments or annotations).
_NEW = re.compile(rb"new[ \t\r\n]+([A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*)\(")
#: The two as str patterns, for ASCII files.
_CHAIN_TEXT = re.compile(_CHAIN.pattern.decode("ascii"))
_NEW_TEXT = re.compile(_NEW.pattern.decode("ascii"))


def _bases(node, src: bytes) -> tuple[tuple[str, str], ...]:
    out = []
    for child in node.named_children:
        if child.type == "superclass":
            out.extend((drop_generics(node_text(t, src)), "extends") for t in child.named_children)
        elif child.type in ("super_interfaces", "extends_interfaces"):
            relation = "implements" if child.type == "super_interfaces" else "extends"
            for lst in child.named_children:
                out.extend((drop_generics(node_text(t, src)), relation) for t in lst.named_children)
    return tuple(out)


READER = JavaReader()
