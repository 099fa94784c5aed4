"""Rust: structs, enums, unions and traits; functions, methods (an `impl` block names its
type, `impl Trait for Type` too) and trait method signatures; inline `mod` blocks as
containers; `mod x;`, `use` trees, calls, `impl Trait for Type` and supertraits."""

from __future__ import annotations

import re

import tree_sitter_rust

from codenib.compiler.lang.base import TreeReader, drop_generics, field_id_text, field_ids, field_text, new_found, node_text

_FUNCTION, _FIELD, _VALUE, _PATH, _NAME = field_ids(
    tree_sitter_rust.language(), "function", "field", "value", "path", "name")

_CFG_TEST = re.compile(r"^#\[\s*cfg\s*\(\s*test\s*\)\s*\]")

_TYPES = frozenset({"struct_item", "enum_item", "union_item", "trait_item"})


class RustReader(TreeReader):
    language = "rust"
    version = 3     # 2: a `#[cfg(test)]` module's body is left out of the file outline; 3: unique ids, long lines cut, nesting capped
    comment_types = frozenset({"line_comment", "block_comment"})
    attribute_types = frozenset({"attribute_item"})
    query_source = """
    (struct_item) @def
    (enum_item) @def
    (union_item) @def
    (trait_item) @def
    (function_item) @def
    (function_signature_item) @def
    (impl_item) @def
    (mod_item body: (_)) @def
    (call_expression) @call
    (use_declaration) @import
    (mod_item !body) @import
    (extern_crate_declaration) @import
    """

    def grammar(self):
        return tree_sitter_rust.language()

    def define(self, node, src):
        t = node.type
        if t == "impl_item":
            typ = node.child_by_field_name("type")
            if typ is None:
                return None
            trait = node.child_by_field_name("trait")
            bases = ((drop_generics(node_text(trait, src)), "implements"),) if trait is not None else ()
            return new_found("impl", _type_name(typ, src), bases=bases)
        name = field_text(node, "name", src)
        if not name:
            return None
        if t == "mod_item":
            return new_found("namespace", name)
        body = node.child_by_field_name("body")
        if t in _TYPES:
            bases = ()
            bounds = node.child_by_field_name("bounds")
            if t == "trait_item" and bounds is not None:
                bases = tuple((drop_generics(node_text(b, src)), "supertrait") for b in bounds.named_children
                              if b.type != "lifetime")
            return new_found("type", name, body=body, bases=bases)
        return new_found("function", name, body=body)

    def folded(self, node, src):
        # Unit tests live in a `#[cfg(test)] mod tests` block of the file they test: test
        # fixtures and data would otherwise make the file's outline read like its tests.
        if node.type != "mod_item":
            return False
        prev = node.prev_sibling
        while prev is not None and prev.type in self.attribute_types | self.comment_types:
            if prev.type == "attribute_item" and _CFG_TEST.search(node_text(prev, src)):
                return True
            prev = prev.prev_sibling
        return False

    def call(self, node, src):
        fn = node.child_by_field_id(_FUNCTION)
        if fn is not None and fn.type == "generic_function":
            fn = fn.child_by_field_id(_FUNCTION)
        if fn is None:
            return None
        t = fn.type
        if t in ("identifier", "self"):
            return node_text(fn, src), "", "call"
        if t == "field_expression":
            return field_id_text(fn, _FIELD, src), drop_generics(field_id_text(fn, _VALUE, src)), "call"
        if t == "scoped_identifier":
            path = drop_generics(field_id_text(fn, _PATH, src)).rstrip(":")
            return field_id_text(fn, _NAME, src), path, "call"
        return None

    def imports(self, node, src):
        if node.type == "mod_item":
            return [(field_text(node, "name", src), "mod", ())]
        if node.type == "extern_crate_declaration":
            name = field_text(node, "name", src)
            alias = field_text(node, "alias", src) or name
            return [(name, "extern_crate", ((name, alias),))]
        arg = node.child_by_field_name("argument")
        return [(path, "use", names) for path, names in _use_paths(arg, "", src)] if arg is not None else []


def _join(prefix: str, path: str) -> str:
    return f"{prefix}::{path}" if prefix else path


def _use_paths(node, prefix: str, src: bytes):
    """The leaves of a use tree: `a::{b, c as d, e::*}` -> a::b, a::c (as d), a::e::*."""
    t = node.type
    if t == "use_as_clause":
        path = _join(prefix, field_text(node, "path", src))
        yield path, ((path.rsplit("::", 1)[-1], field_text(node, "alias", src)),)
    elif t == "use_wildcard":
        inner = node.named_children[0] if node.named_children else None
        yield _join(prefix, node_text(inner, src)) + "::*" if inner is not None else _join(prefix, "*"), ()
    elif t == "scoped_use_list":
        path = _join(prefix, field_text(node, "path", src))
        lst = node.child_by_field_name("list")
        if lst is not None:
            yield from _use_paths(lst, path, src)
    elif t == "use_list":
        for child in node.named_children:
            yield from _use_paths(child, prefix, src)
    elif t == "self" and prefix:                # `use a::{self}` imports `a`
        yield prefix, ((prefix.rsplit("::", 1)[-1],) * 2,)
    else:
        path = _join(prefix, node_text(node, src))
        last = path.rsplit("::", 1)[-1]
        yield path, ((last, last),)


def _type_name(typ, src: bytes) -> str:
    """`&'a mut Foo<T>` or `crate::a::Foo<T>` -> `Foo`."""
    text = drop_generics(node_text(typ, src))
    text = text.lstrip("&").replace("mut ", "").replace("dyn ", "").strip()
    if text.startswith("'"):
        text = text.split(" ", 1)[-1]
    return text.rsplit("::", 1)[-1].strip() or text


READER = RustReader()
