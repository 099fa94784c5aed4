"""C (`.c` and `.h`): functions and named structs, unions and enums (a typedef names an
anonymous one); `#include "..."` and `<...>`, calls."""

from __future__ import annotations

from operator import itemgetter

from codenib.compiler.lang.base import (TreeReader, drop_generics, field_text, identifier_sites, member_sites,
                                        new_found, node_text, unquote)

#: Words that never name a function: a definition "named" one is a macro misparse.
KEYWORDS = frozenset("if else for while do switch case return sizeof goto namespace using template "
                     "typedef struct union enum class extern static const".split())
_DECLARATOR_WRAPPERS = frozenset({"function_declarator", "pointer_declarator", "reference_declarator",
                                  "parenthesized_declarator", "attributed_declarator"})


class CReader(TreeReader):
    language = "c"
    version = 5      # 2: a `.h` with C++ lines goes to the C++ reader; 3: keyword-named "functions" are macro misparses; 4: unique ids, long lines cut, nesting capped; 5: an anonymous type is no node
    type_nodes = ("struct_specifier", "union_specifier", "enum_specifier")
    query_source = """
    (function_definition) @def
    (struct_specifier body: (_)) @def
    (union_specifier body: (_)) @def
    (enum_specifier body: (_)) @def
    (call_expression function: (identifier) @call.name)
    (call_expression function: (field_expression) @call.member)
    (preproc_include) @import
    """

    def grammar(self):
        import tree_sitter_c

        return tree_sitter_c.language()

    def define(self, node, src):
        outer = _outer(node)
        if node.type == "function_definition":
            segments = _name_segments(_declared(node.child_by_field_name("declarator")), src)
            if not segments:
                return None
            if segments[-1] in KEYWORDS:
                # An unknown macro before a statement or a block (`GUARD(1) if (x) {`,
                # `FMT_BEGIN_NAMESPACE namespace detail {`) parses as a function the keyword names.
                return self.keyword_block(node, segments[-1], src)
            return new_found("function", segments[-1], qualifier=tuple(segments[:-1]), outer=outer,
                         body=node.child_by_field_name("body"))
        if node.type in self.type_nodes or node.type == "class_specifier":
            name_node = node.child_by_field_name("name")
            segments = _name_segments(name_node, src) if name_node is not None else []
            parent = node.parent if not segments else None
            if parent is not None and parent.type == "type_definition":
                segments = _name_segments(_declared(parent.child_by_field_name("declarator")), src)
            if not segments:
                return None
            return new_found("type", segments[-1], qualifier=tuple(segments[:-1]), outer=outer,
                         body=node.child_by_field_name("body"), bases=self.bases(node, src))
        return self.define_other(node, src)

    def define_other(self, node, src):
        return None

    def keyword_block(self, node, keyword: str, src):
        """What a "function" named by a keyword is (a macro misparse): nothing in C."""
        return None

    def bases(self, node, src):
        return ()

    def call(self, node, src):
        fn = node.child_by_field_name("function")
        if fn is None:
            return None
        if fn.type == "template_function":
            fn = fn.child_by_field_name("name") or fn
        if fn.type == "identifier":
            return node_text(fn, src), "", "call"
        if fn.type == "field_expression":
            return field_text(fn, "field", src), drop_generics(field_text(fn, "argument", src)), "call"
        if fn.type == "qualified_identifier":
            segments = _name_segments(fn, src)
            return (segments[-1], "::".join(segments[:-1]), "call") if segments else None
        return None

    def call_sites(self, captures, src):
        # Calls of a name or of `a.f` / `a->f` (nearly all) are read from the captured
        # callee's text in place of asking the call node for its fields; calls of other
        # callees (`(*fp)(x)`) make no fact and are not captured (C++ captures its `A::f`
        # and `f<T>` calls whole). A callee starts where its call does and of two calls
        # starting together the outer one's callee holds the inner call, so the callees'
        # spans order the sites as the calls' spans do.
        sites = super().call_sites(captures, src)
        sites += identifier_sites(captures.get("call.name", ()), src)
        sites += member_sites(captures.get("call.member", ()), src, (".", "->"), _member_call)
        sites.sort(key=_SPAN)
        return sites

    def imports(self, node, src):
        path = node.child_by_field_name("path")
        if path is None:
            return ()
        kind = "include_system" if path.type == "system_lib_string" else "include_local"
        return [(unquote(node_text(path, src)), kind, ())]


_SPAN = itemgetter(0, 1)


def _member_call(fn, src: bytes):
    """`call` of a field callee whose text does not settle it."""
    return field_text(fn, "field", src), drop_generics(field_text(fn, "argument", src)), "call"


def _outer(node):
    """`template <...>` and `typedef` around a definition are part of it."""
    outer, parent = node, node.parent       # each `.parent` walks down from the root
    while parent is not None and parent.type in ("template_declaration", "type_definition"):
        outer, parent = parent, parent.parent
    return outer


def _declared(decl):
    """The name node inside a declarator (`*f(int)` -> `f`)."""
    while decl is not None and decl.type in _DECLARATOR_WRAPPERS:
        inner = decl.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in decl.named_children if c.type not in ("type_qualifier", "ms_call_modifier")),
                         None)
        decl = inner
    return decl


def _name_segments(node, src: bytes) -> list[str]:
    """`ns::A<T>::f` -> ["ns", "A", "f"]; `~A` and `operator==` stay whole."""
    if node is None:
        return []
    t = node.type
    if t == "qualified_identifier":
        scope = node.child_by_field_name("scope")
        return (_name_segments(scope, src) if scope is not None else []) + \
            _name_segments(node.child_by_field_name("name"), src)
    if t in ("template_type", "template_function", "template_method"):
        return _name_segments(node.child_by_field_name("name"), src)
    if t in ("identifier", "field_identifier", "type_identifier", "namespace_identifier",
             "destructor_name", "operator_name", "primitive_type"):
        return [" ".join(node_text(node, src).split())]
    return []


READER = CReader()
