"""Go: types (any named `type` spec), functions, methods (`Receiver.Method`, pointer and
generic receivers alike) and interface methods; imports, package clause, calls, embeddings."""

from __future__ import annotations

from operator import itemgetter

import tree_sitter_go

from codenib.compiler.lang.base import (TreeReader, drop_generics, field_id_text, field_ids, field_text,
                                        identifier_sites, member_sites, new_found, node_text, unquote)

_NAME, _BODY, _TYPE, _FUNCTION, _FIELD, _OPERAND, _RECEIVER = field_ids(
    tree_sitter_go.language(), "name", "body", "type", "function", "field", "operand", "receiver")


class GoReader(TreeReader):
    language = "go"
    version = 2     # 2: unique ids, long lines cut, nesting capped
    query_source = """
    (function_declaration) @def
    (method_declaration) @def
    (type_spec) @def
    (method_elem) @def
    (call_expression function: (identifier) @call.name)
    (call_expression function: (selector_expression) @call.member)
    (call_expression function: (index_expression)) @call
    (import_spec) @import
    (package_clause) @import
    """

    def grammar(self):
        return tree_sitter_go.language()

    def define(self, node, src):
        t = node.type
        name = field_id_text(node, _NAME, src)
        if not name:
            return None
        if t == "type_spec":
            parent = node.parent
            # A lone `type X struct{}` carries its doc comment on the declaration.
            outer = parent if parent is not None and parent.type == "type_declaration" \
                and parent.named_child_count == 1 else node
            typ = node.child_by_field_id(_TYPE)
            return new_found("type", name, outer=outer, body=_type_body(typ), bases=_embedded(typ, src))
        if t == "method_elem":
            return new_found("function", name)
        if t == "method_declaration":
            receiver = _receiver_type(node, src)
            return new_found("function", name, qualifier=(receiver,) if receiver else (),
                             body=node.child_by_field_id(_BODY))
        return new_found("function", name, body=node.child_by_field_id(_BODY))

    def call(self, node, src):
        fn = node.child_by_field_id(_FUNCTION)
        if fn is None:
            return None
        t = fn.type
        if t in ("generic_type", "index_expression"):      # F[int](x)
            fn = fn.child_by_field_id(_TYPE) or fn.child_by_field_id(_OPERAND) or fn
            t = fn.type
        if t == "identifier":
            return src[fn.start_byte:fn.end_byte].decode("utf-8", "replace"), "", "call"
        if t == "selector_expression":
            return field_id_text(fn, _FIELD, src), drop_generics(field_id_text(fn, _OPERAND, src)), "call"
        return None

    def call_sites(self, captures, src):
        # Calls of a name or of `x.f` (nearly all) are read from the captured callee's text
        # in place of asking the call node for its fields; calls of other callees than these
        # and `F[int]` make no fact and are not captured (a `generic_type` callee does not
        # parse). A callee starts where its call does and of two calls starting together the
        # outer one's callee holds the inner call, so the callees' spans order the sites as
        # the calls' spans do.
        sites = super().call_sites(captures, src)
        sites += identifier_sites(captures.get("call.name", ()), src)
        sites += member_sites(captures.get("call.member", ()), src, (".",), _member_call)
        sites.sort(key=_SPAN)
        return sites

    def imports(self, node, src):
        if node.type == "package_clause":
            for child in node.named_children:
                return [(node_text(child, src), "package", ())]
            return []
        path = unquote(field_text(node, "path", src))
        alias = field_text(node, "name", src)
        return [(path, "import", (("*", alias),) if alias else ())]


_SPAN = itemgetter(0, 1)


def _member_call(fn, src: bytes):
    """`call` of a selector callee whose text does not settle it."""
    return field_id_text(fn, _FIELD, src), drop_generics(field_id_text(fn, _OPERAND, src)), "call"


def _receiver_type(node, src: bytes) -> str:
    """`(r *Client[T])` -> `Client`."""
    receiver = node.child_by_field_id(_RECEIVER)
    if receiver is None:
        return ""
    for i in range(receiver.named_child_count):     # the first (nearly always the only) one
        typ = receiver.named_child(i).child_by_field_id(_TYPE)
        if typ is not None:
            return _base_name(typ, src)
    return ""


def _base_name(typ, src: bytes) -> str:
    text = node_text(typ, src)
    if "[" in text:
        text = text.replace("[", "<").replace("]", ">")
    return drop_generics(text).lstrip("*& ").strip()


def _type_body(typ):
    if typ is not None and typ.type in ("struct_type", "interface_type"):
        for child in typ.named_children:
            if child.type == "field_declaration_list":
                return child
    return None


def _embedded(typ, src: bytes) -> tuple[tuple[str, str], ...]:
    """Embedded struct fields and embedded interfaces."""
    if typ is None:
        return ()
    out = []
    if typ.type == "struct_type":
        for lst in typ.named_children:
            for f in lst.named_children:
                if f.type == "field_declaration" and f.child_by_field_id(_NAME) is None:
                    t = f.child_by_field_id(_TYPE)
                    if t is not None:
                        out.append((_base_name(t, src), "embeds"))
    elif typ.type == "interface_type":
        for f in typ.named_children:
            if f.type == "type_elem":
                text = node_text(f, src)
                if "|" not in text and "~" not in text:     # constraint unions embed nothing
                    out.append((_base_name(f, src), "embeds"))
    return tuple(out)


READER = GoReader()
