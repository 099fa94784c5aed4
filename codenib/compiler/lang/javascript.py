"""JavaScript: classes, functions, class methods and fields holding functions, functions bound
by `const f = ...`, `obj.f = function ...` (`A.prototype.f` as `A.f`) and object-literal
keys; `import`/`require`/`export ... from`/`import()`, calls and `new`, `extends`; and each
function's scope (`ScopeFact`): the object it is a member of, the names its parameters and
variables bind, and its aliases of `this`."""

from __future__ import annotations

import re
from operator import itemgetter

from codenib.compiler.lang.base import new_found, TreeReader, drop_generics, field_text, node_text, unquote
from codenib.compiler.lang.facts import ScopeFact
from codenib.compiler.lang.javascript_imports import call_imports_of, statement_imports

FUNCTION_VALUES = "[(arrow_function) (function_expression) (generator_function)]"
#: Wrappers whose span, doc comment and signature start belong to the definition inside.
_WRAPPERS = frozenset({"export_statement", "expression_statement", "lexical_declaration",
                       "variable_declaration", "ambient_declaration"})


_SPAN = itemgetter(0, 1)

#: Names that parameters bind (TypeScript wraps each in `required_parameter`/`optional_parameter`).
PARAMETER_PATTERNS = """
    (formal_parameters [(identifier) @bind (assignment_pattern left: (identifier) @bind)
                        (rest_pattern (identifier) @bind)])
    (arrow_function parameter: (identifier) @bind)
    """
#: Names that variables, destructuring, `catch` and `for ... in/of` bind (both grammars).
BINDING_PATTERNS = """
    (variable_declarator name: (identifier) @bind)
    (catch_clause parameter: (identifier) @bind)
    (for_in_statement left: (identifier) @bind)
    (object_pattern [(shorthand_property_identifier_pattern) @bind (pair_pattern value: (identifier) @bind)])
    (array_pattern (identifier) @bind)
    """


class JavaScriptReader(TreeReader):
    language = "javascript"
    version = 3     # 2: unique ids, long lines cut, nesting capped; 3: scopes, `require(x).y`
    query_source = PARAMETER_PATTERNS + BINDING_PATTERNS + f"""
    (class_declaration) @def
    (function_declaration) @def
    (generator_function_declaration) @def
    (method_definition) @def
    (field_definition property: (_) value: {FUNCTION_VALUES}) @def
    (variable_declarator name: (identifier) value: [(arrow_function) (function_expression) (generator_function) (class)]) @def
    (assignment_expression left: (member_expression) right: {FUNCTION_VALUES}) @def
    (pair key: (_) value: {FUNCTION_VALUES}) @def
    (call_expression function: [(identifier) (this) (super) (member_expression) (import)] @call.callee)
    (new_expression constructor: [(identifier) (member_expression) (this) (super)]) @call.new
    (import_statement) @import
    (export_statement source: (_)) @import
    """

    def grammar(self):
        import tree_sitter_javascript

        return tree_sitter_javascript.language()

    def define(self, node, src):
        t = node.type
        if t == "variable_declarator":
            value = node.child_by_field_name("value")
            role = "type" if value.type == "class" else "function"
            return new_found(role, field_text(node, "name", src), outer=_outer(node), body=_body(value),
                         bases=self.heritage(value, src) if role == "type" else ())
        if t == "assignment_expression":
            left = node.child_by_field_name("left")
            name = field_text(left, "property", src)
            obj = left.child_by_field_name("object")
            qualifier = ()
            if obj is not None and obj.type == "member_expression" and field_text(obj, "property", src) == "prototype":
                qualifier = (node_text(obj.child_by_field_name("object"), src).rsplit(".", 1)[-1],)
            return new_found("function", name, qualifier=qualifier, outer=_outer(node),
                         body=_body(node.child_by_field_name("right")))
        if t in ("pair", "field_definition", "public_field_definition"):
            key = node.child_by_field_name("key") or node.child_by_field_name("property") \
                or node.child_by_field_name("name")
            name = unquote(node_text(key, src)) if key is not None else ""
            return new_found("function", name, outer=_outer(node), body=_body(node.child_by_field_name("value"))) \
                if name else None
        name = field_text(node, "name", src)
        if not name:
            return None         # `export default class {}`: no name to give it
        if t in self.type_nodes:
            return new_found("type", name, outer=_outer(node), body=node.child_by_field_name("body"),
                         bases=self.heritage(node, src))
        if t in self.namespace_nodes:
            return new_found("namespace", unquote(name))
        return new_found("function", name, outer=_outer(node), body=node.child_by_field_name("body"))

    type_nodes = frozenset({"class_declaration", "class"})
    namespace_nodes: frozenset[str] = frozenset()

    def heritage(self, node, src) -> tuple[tuple[str, str], ...]:
        """`class A extends B`: (("B", "extends"),)."""
        out = []
        for child in node.named_children:
            if child.type == "class_heritage":
                for part in child.named_children:
                    if part.type not in ("extends_clause", "implements_clause"):
                        out.append((drop_generics(node_text(part, src)), "extends"))
        return tuple(out)

    def call(self, node, src):
        if node.type == "new_expression":
            ctor = node.child_by_field_name("constructor")
            return _callee(ctor, src, "new") if ctor is not None else None
        fn = node.child_by_field_name("function")
        return _callee(fn, src, "call") if fn is not None else None

    def call_imports(self, node, src):
        if node.type != "call_expression":
            return ()
        fn = node.child_by_field_name("function")
        return call_imports_of(node, fn, src) if fn is not None else ()

    def call_site(self, node, src):
        # `call` and `call_imports` both start from the callee: found once per call site.
        if node.type == "new_expression":
            return self.call(node, src), ()
        fn = node.child_by_field_name("function")
        if fn is None:
            return None, ()
        return _callee(fn, src, "call"), call_imports_of(node, fn, src)

    def call_sites(self, captures, src):
        # A call whose callee is a name, a member or `import` is read from the captured
        # callee alone (its text sliced once: a member's holds a `.`, a name's none), in
        # place of asking the call node for its fields: that was most of this reader's
        # Python time; calls of other callees (computed) make no fact and are not captured.
        # A callee starts where its call does, and of two nested calls starting together
        # the outer one's callee holds the inner call: the callee's span orders the sites as
        # the calls' spans do. `new` is captured whole (its span starts at `new`).
        sites = super().call_sites(captures, src)
        append = sites.append
        member = _MEMBER.fullmatch
        callees = captures.get("call.callee", ())
        ascii_only = src.isascii()      # then byte offsets are string offsets
        whole = src.decode("ascii") if ascii_only and callees else ""
        for node in callees:
            start, end = node.start_byte, node.end_byte
            text = whole[start:end] if ascii_only else src[start:end].decode("utf-8", "replace")
            dot = text.rfind(".")
            if dot < 0:
                if text == "import" and node.type == "import":      # `import('x')`
                    append((start, -end, None, call_imports_of(node.parent, node, src)))
                else:
                    append((start, -end, (text, "", "call"),
                            call_imports_of(node.parent, node, src) if text == "require" else ()))
                continue
            if node.has_error:      # recovered syntax (`a..b`): the text is no guide
                append((start, -end, _callee(node, src, "call"), ()))
                continue
            # `x.name` and `x?.name` where nothing but the operator separates `x` from it
            # (most calls): the text splits at the last `.`; otherwise `_MEMBER` decides.
            prop = text[dot + 1:]
            if prop.isidentifier():
                obj = text[:dot - 1] if text[dot - 1] == "?" else text[:dot]
                if obj.isidentifier():
                    append((start, -end, (prop, obj, "call"), ()))
                    continue
                if obj and obj[-1] not in _OBJECT_END_GAP and not obj[-1].isspace():
                    append((start, -end, (prop, " ".join(obj.split()) if "<" not in obj else drop_generics(obj),
                                            "call"), ()))
                    continue
            m = member(text)
            if m is None:       # a line break or comment at the `.`: the node's fields say
                append((start, -end, _callee(node, src, "call"), ()))
                continue
            obj = m.group(1)
            append((start, -end, (m.group(2), " ".join(obj.split()) if "<" not in obj else drop_generics(obj),
                                    "call"), ()))
        for node in captures.get("call.new", ()):
            # `new Name(...)`: the name follows `new` and whitespace; else the node says.
            start, end = node.start_byte, node.end_byte
            m = None if node.has_error else _NEW.match(src, start, end)
            append((start, -end, (m.group(1).decode("utf-8", "replace"), "", "new") if m is not None
                    else self.call(node, src), ()))
        sites.sort(key=_SPAN)       # captures come in no set order (seen: not by position)
        return sites

    def scopes(self, defs, captures, src, calls):
        """Each function's owner object, aliases, bindings and `this` aliases (`ScopeFact`).

        A binding is kept only when the file calls that name or calls through it (the
        rest could shadow nothing the graph resolves) and belongs to the innermost
        definition around it; a variable holding a function or class is a definition and
        one holding a `require` an import, so neither is a binding here.
        """
        used = {c.callee if not c.receiver else c.receiver for c in calls
                if not c.receiver or _NAME.fullmatch(c.receiver)}
        binds: dict[str, dict[str, None]] = {}
        aliases_of_this: dict[str, dict[str, None]] = {}
        if used:
            spans = [(node.start_byte, node.end_byte, node_id) for node_id, node in defs]
            stack: list[tuple[int, str]] = []
            at = 0
            for node in sorted(captures.get("bind", ()), key=lambda n: n.start_byte):
                name = src[node.start_byte:node.end_byte].decode("utf-8", "replace")
                if name not in used:
                    continue
                start = node.start_byte
                while at < len(spans) and spans[at][0] <= start:
                    while stack and stack[-1][0] <= spans[at][0]:
                        stack.pop()
                    stack.append((spans[at][1], spans[at][2]))
                    at += 1
                while stack and stack[-1][0] <= start:
                    stack.pop()
                if not stack:
                    continue        # a module-level name: imports and nodes say what it is
                how = _binding_kind(node)
                if how == "this":
                    aliases_of_this.setdefault(stack[-1][1], {})[name] = None
                if how != "skip":
                    binds.setdefault(stack[-1][1], {})[name] = None
        out = []
        for node_id, node in defs:
            owner, aliases = _owner(node, src)
            bound = tuple(binds.get(node_id, ()))
            this = tuple(aliases_of_this.get(node_id, ()))
            if owner or bound or this:
                value = node.child_by_field_name("right" if node.type == "assignment_expression" else "value") \
                    if owner else None
                out.append(ScopeFact(node_id, owner, aliases, bound, this,
                                     value is not None and value.type == "arrow_function"))
        return out

    def imports(self, node, src):
        return statement_imports(node, src)


def _outer(node):
    """The statement a definition is written as (`export const f = ...;`)."""
    outer = node
    parent = node.parent
    while parent is not None and parent.type in _WRAPPERS:
        if parent.type in ("lexical_declaration", "variable_declaration") and parent.named_child_count != 1:
            break       # `const a = () => 1, b = () => 2`: each declarator is its own
        outer = parent
        parent = parent.parent
    return outer


def _body(value):
    if value is None:
        return None
    body = value.child_by_field_name("body")
    return body if body is not None else value


def _callee(fn, src: bytes, kind: str):
    t = fn.type
    if t in ("identifier", "this", "super"):
        return node_text(fn, src), "", kind
    if t == "member_expression":
        obj = fn.child_by_field_name("object")
        prop = field_text(fn, "property", src)
        if obj is None or not prop:
            return None
        return prop, drop_generics(node_text(obj, src)), kind
    return None


#: A member callee's text when nothing but its `.` (or `?.`) separates object and property:
#: no whitespace or comment (`/`, `*`) touches the last `.`. Otherwise the text alone cannot
#: say where the object ends, and the node's fields are asked. (object, property)
_OBJECT_END_GAP = frozenset("/*?\ufeff")
#: `new Name(` or `new Name` at the end, ASCII name (a `/*` or `<` after `new` or the name:
#: the node's fields decide).
_NEW = re.compile(rb"new[ \t\r\n]+([A-Za-z_$][A-Za-z0-9_$]*)(?:\(|\Z)")
_MEMBER = re.compile(r"(.*[^\s/*?\ufeff])\??\.([^\s/*.\ufeff]+)", re.S)


#: A receiver that is one name (`$` and `_` included).
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
#: Values that make a variable a definition (a node of its own) rather than a binding.
_DEFINING_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function", "class"})


#: Destructuring between a bound name and its declaration.
_PATTERNS = frozenset({"object_pattern", "pair_pattern", "array_pattern", "assignment_pattern", "rest_pattern"})


def _binding_kind(name) -> str:
    """'this' for `var self = this`, 'skip' for a variable holding a function, class or
    `require(...)` (a definition or an import), else 'bind'."""
    parent = name.parent
    destructured = False
    while parent is not None and parent.type in _PATTERNS:     # `const {a, b: [c]} = require(...)`
        parent, destructured = parent.parent, True
    if parent is None or parent.type != "variable_declarator":
        return "bind"
    value = parent.child_by_field_name("value")
    if value is None:
        return "bind"
    t = value.type
    if t == "this":
        return "bind" if destructured else "this"
    if t in _DEFINING_VALUES:
        return "skip"
    if t == "member_expression":        # `require('x').y`
        value = value.child_by_field_name("object")
        t = value.type if value is not None else ""
    if t == "call_expression":
        fn = value.child_by_field_name("function")
        if fn is not None and fn.type == "identifier" and fn.text == b"require":
            return "skip"
    return "bind"


def _owner(node, src: bytes) -> tuple[str, tuple[str, ...]]:
    """(object, other member names) of a function assigned to an object's member or written
    as an object literal's key; ('', ()) for other definitions (class members and
    `A.prototype.f`, whose qualified name holds `A`, among them)."""
    t = node.type
    if t == "assignment_expression":
        left = node.child_by_field_name("left")
        obj = left.child_by_field_name("object") if left is not None else None
        if obj is None:
            return "", ()
        owner = _object_name(node_text(obj, src))
        if owner == "this" or owner.endswith(".prototype"):
            return "", ()
        aliases = []
        child, parent = node, node.parent
        while parent is not None and parent.type == "assignment_expression" \
                and parent.child_by_field_name("right") == child:
            outer = parent.child_by_field_name("left")
            if outer is None or outer.type != "member_expression":
                break
            outer_obj = outer.child_by_field_name("object")
            if outer_obj is None or _object_name(node_text(outer_obj, src)) != owner:
                break
            aliases.append(field_text(outer, "property", src))
            child, parent = parent, parent.parent
        return owner, tuple(aliases)
    if t in ("pair", "method_definition"):
        parent = node.parent
        if parent is not None and parent.type == "object":
            return _literal_name(parent, src), ()
    return "", ()


def _literal_name(literal, src: bytes) -> str:
    """The name an object literal is bound to (`const o = {}`, `o = {}`, `A.prototype = {}`,
    the declared name of `var a = exports = module.exports = {}`), else `{}@LINE:COL`."""
    name = ""
    child, parent = literal, literal.parent
    while parent is not None:
        if parent.type == "variable_declarator":
            declared = parent.child_by_field_name("name")
            if declared is not None and declared.type == "identifier":
                name = node_text(declared, src)
            break
        if parent.type != "assignment_expression" or parent.child_by_field_name("right") != child:
            break
        name = _object_name(field_text(parent, "left", src))
        child, parent = parent, parent.parent
    if name.endswith(".prototype"):
        name = name[:-len(".prototype")]
    if name:
        return name
    row, col = literal.start_point
    return f"{{}}@{row + 1}:{col}"


def _object_name(text: str) -> str:
    """An object's text as owners are compared: whitespace collapsed, `module.exports` as
    `exports` (CommonJS binds both to one object)."""
    text = " ".join(text.split())
    if text == "module.exports" or text.startswith("module.exports."):
        return text[len("module."):]
    return text


READER = JavaScriptReader()
