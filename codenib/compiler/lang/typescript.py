"""TypeScript (`.ts` with the typescript grammar, `.tsx` with tsx): what JavaScript's reader
reads, plus interfaces, enums, abstract classes and their method signatures, namespaces and
modules as containers, and `implements`."""

from __future__ import annotations

from codenib.compiler.lang.base import drop_generics, node_text
from codenib.compiler.lang.javascript import FUNCTION_VALUES, PARAMETER_PATTERNS, JavaScriptReader

TS_PARAMETER_PATTERNS = """
    (required_parameter pattern: [(identifier) @bind (rest_pattern (identifier) @bind)])
    (optional_parameter pattern: (identifier) @bind)
    (arrow_function parameter: (identifier) @bind)
    """


class TypeScriptReader(JavaScriptReader):
    language = "typescript"
    version = 3     # 2: unique ids, long lines cut, nesting capped; 3: scopes, `require(x).y`
    # JavaScript's patterns but its `field_definition` (TypeScript's is public_field_definition)
    # and its parameters (each wrapped in a node of its own).
    query_source = JavaScriptReader.query_source.replace(
        f"(field_definition property: (_) value: {FUNCTION_VALUES}) @def", "").replace(
        PARAMETER_PATTERNS, TS_PARAMETER_PATTERNS) + f"""
    (abstract_class_declaration) @def
    (interface_declaration) @def
    (enum_declaration) @def
    (internal_module) @def
    (module) @def
    (method_signature) @def
    (abstract_method_signature) @def
    (public_field_definition name: (_) value: {FUNCTION_VALUES}) @def
    """

    type_nodes = frozenset({"class_declaration", "class", "abstract_class_declaration",
                           "interface_declaration", "enum_declaration"})
    namespace_nodes = frozenset({"internal_module", "module"})

    def grammar(self):
        import tree_sitter_typescript

        return tree_sitter_typescript.language_typescript()

    def grammar_key(self, rel_path: str) -> str:
        return "tsx" if rel_path.endswith(".tsx") else ""

    def grammar_for(self, key: str):
        if key == "tsx":
            import tree_sitter_typescript

            return tree_sitter_typescript.language_tsx()
        return self.grammar()

    def heritage(self, node, src):
        out = []
        for child in node.named_children:
            if child.type == "class_heritage":
                for clause in child.named_children:
                    relation = "implements" if clause.type == "implements_clause" else "extends"
                    for part in clause.named_children:
                        if part.type not in ("type_arguments",):
                            out.append((drop_generics(node_text(part, src)), relation))
            elif child.type == "extends_type_clause":       # interface I extends K, L
                for part in child.named_children:
                    out.append((drop_generics(node_text(part, src)), "extends"))
        return tuple(out)


READER = TypeScriptReader()
