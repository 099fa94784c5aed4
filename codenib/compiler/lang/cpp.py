"""C++: what the C reader reads, plus classes, namespaces as containers (inline and anonymous
ones are transparent), out-of-line `A::f` as `A.f`, templates (arguments dropped), base
classes and `new`."""

from __future__ import annotations

from codenib.compiler.lang.base import new_found, drop_generics, node_text
from codenib.compiler.lang.c import CReader


class CppReader(CReader):
    language = "cpp"
    version = 4      # 2: `MACRO namespace x {` is the namespace x; 3: unique ids, long lines cut, nesting capped;
                     # 4: an anonymous type is no node (its id was its scope's: a file's twice)
    query_source = CReader.query_source + """
    (class_specifier body: (_)) @def
    (namespace_definition) @def
    (call_expression function: [(qualified_identifier) (template_function)]) @call
    (new_expression) @call
    """

    def grammar(self):
        import tree_sitter_cpp

        return tree_sitter_cpp.language()

    def define_other(self, node, src):
        if node.type != "namespace_definition":
            return None
        name = node.child_by_field_name("name")
        if name is None or any(c.type == "inline" for c in node.children):
            return new_found("namespace", "")       # `inline namespace v11`: users never spell it
        return new_found("namespace", node_text(name, src).replace("::", ".").replace(" ", ""))

    def keyword_block(self, node, keyword, src):
        # `MACRO namespace detail {...}`: the name sits in an ERROR node after the keyword.
        if keyword != "namespace":
            return None
        name = next((g for c in node.children if c.type == "ERROR"
                     for g in c.children if g.type in ("identifier", "namespace_identifier")), None)
        return new_found("namespace", node_text(name, src) if name is not None else "")

    def bases(self, node, src):
        out = []
        for child in node.named_children:
            if child.type == "base_class_clause":
                for part in child.named_children:
                    if part.type not in ("access_specifier", "virtual"):
                        out.append((drop_generics(node_text(part, src)), "extends"))
        return tuple(out)

    def call(self, node, src):
        if node.type == "new_expression":
            typ = node.child_by_field_name("type")
            if typ is None:
                return None
            receiver, _, callee = drop_generics(node_text(typ, src)).rpartition("::")
            return callee, receiver, "new"
        return super().call(node, src)


READER = CppReader()
