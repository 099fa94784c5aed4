"""What a JavaScript or TypeScript file imports: `import` and `export ... from` statements,
`require('x')` (and the names its declaration binds) and `import('x')` calls, as
(module specifier, how, ((imported name, local name), ...)) for the graph stage."""

from __future__ import annotations

from collections.abc import Sequence

from codenib.compiler.lang.base import field_text, node_text, unquote


def statement_imports(node, src: bytes) -> Sequence[tuple[str, str, tuple]]:
    """An `import_statement` or `export_statement` with a source: what it imports."""
    source = node.child_by_field_name("source")
    if source is None:
        return ()
    spec = unquote(node_text(source, src))
    names = []
    if node.type == "import_statement":
        for clause in node.named_children:
            if clause.type != "import_clause":
                continue
            for part in clause.named_children:
                if part.type == "identifier":
                    names.append(("default", node_text(part, src)))
                elif part.type == "namespace_import":
                    ids = [c for c in part.named_children if c.type == "identifier"]
                    if ids:
                        names.append(("*", node_text(ids[-1], src)))
                elif part.type == "named_imports":
                    names.extend(_specifiers(part, "import_specifier", src))
        return [(spec, "import", tuple(names))]
    for clause in node.named_children:
        if clause.type == "export_clause":
            names.extend(_specifiers(clause, "export_specifier", src))
        elif clause.type == "namespace_export":
            ids = [c for c in clause.named_children if c.type in ("identifier", "string")]
            if ids:
                names.append(("*", unquote(node_text(ids[-1], src))))
    return [(spec, "export_from", tuple(names))]


def call_imports_of(node, fn, src: bytes) -> Sequence[tuple[str, str, tuple]]:
    """`require('x')` and `import('x')`: the callee decides before the arguments are read
    (this is asked about every call)."""
    how = fn.type
    if how == "identifier":
        if src[fn.start_byte:fn.end_byte] != b"require":
            return ()
    elif how != "import":
        return ()
    args = node.child_by_field_name("arguments")
    if args is None or args.named_child_count < 1:
        return ()
    first = args.named_children[0]
    if first.type not in ("string", "template_string") or "${" in node_text(first, src):
        return ()
    spec = unquote(node_text(first, src))
    if how == "import":
        return [(spec, "dynamic_import", ())]
    return [(spec, "require", _require_names(node, src))]


def _specifiers(clause, kind: str, src: bytes) -> list[tuple[str, str]]:
    out = []
    for spec in clause.named_children:
        if spec.type == kind:
            name = unquote(field_text(spec, "name", src))
            alias = unquote(field_text(spec, "alias", src)) or name
            out.append((name, alias))
    return out


def _require_names(call, src: bytes) -> tuple[tuple[str, str], ...]:
    """`const x = require(...)` binds the module; `const {a, b: c} = require(...)` its keys,
    `const c = require(...).b` one key."""
    parent = call.parent
    if parent is not None and parent.type == "member_expression" and parent.parent is not None \
            and parent.parent.type == "variable_declarator":
        key = field_text(parent, "property", src)
        name = parent.parent.child_by_field_name("name")
        if key and name is not None and name.type == "identifier":
            return ((key, node_text(name, src)),)
        return ()
    if parent is None or parent.type != "variable_declarator":
        return ()
    name = parent.child_by_field_name("name")
    if name is None:
        return ()
    if name.type == "identifier":
        return (("*", node_text(name, src)),)
    out = []
    if name.type == "object_pattern":
        for part in name.named_children:
            if part.type == "shorthand_property_identifier_pattern":
                out.append((node_text(part, src), node_text(part, src)))
            elif part.type == "pair_pattern":
                value = part.child_by_field_name("value")
                if value is not None and value.type == "identifier":    # not `{w: [v]}`: no one name
                    out.append((unquote(field_text(part, "key", src)), node_text(value, src)))
    return tuple(out)

