"""Resolve names across a repository and build the code graph's edges.

A small static inferencer, precise rather than complete: a call produces an edge only when
its target resolves to a definition inside the repository through local definitions,
imports (relative, aliased, star, package re-exports), `self`/`cls`/`super()` on the class
and its in-repository bases (generic ones too), module attributes, and simple types
(constructor calls, parameter and return annotations, class and instance attribute
annotations, property getters' return annotations, `a or b`, and the elements of typed
containers such as `List[X]` or `Dict[K, X]` through loops, subscripts and `.get()`).
An annotated name has its declared class. Anything ambiguous or external produces no edge
rather than a guessed one.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from codenib.compiler.parse import Definition, ParsedFile
from codenib.engines.modules import module_name_for, package_dirs_of
from codenib.types import Edge, make_node_id

#: Inference recursion cap: deeper chains are rare and usually cyclic.
MAX_DEPTH = 12

# A value the inferencer can name: (kind, ref) with kind module | class | instance | func,
# ("funcs", ids joined by newlines) for a name bound to one of several definitions, and for
# typed containers of instances of a class: ("iter", class id) a collection or iterator of
# them, ("map", class id) a mapping to them, ("pairs", class id) an iterator of (key, them);
# ("tuple", class ids joined by newlines, "" where unknown) for `Tuple[A, B]`.
Value = tuple[str, str]

_FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_WRAPPER_ANNOTATIONS = frozenset({"Optional", "Final", "ClassVar", "Annotated", "Type", "type"})
#: Generic containers and iterators whose first type argument is their element type.
_ITERABLE_ANNOTATIONS = frozenset({
    "List", "list", "Sequence", "MutableSequence", "Iterable", "Iterator", "Generator",
    "AsyncIterable", "AsyncIterator", "AsyncGenerator", "Collection", "Reversible",
    "Set", "set", "FrozenSet", "frozenset", "AbstractSet", "MutableSet", "Deque", "deque",
})
#: Generic mappings whose second type argument is their value type.
_MAPPING_ANNOTATIONS = frozenset({
    "Dict", "dict", "Mapping", "MutableMapping", "DefaultDict", "defaultdict", "OrderedDict",
    "ChainMap",
})
#: Builtins that return their argument's elements in a new container or iterator.
_ITERABLE_BUILTINS = frozenset({"list", "tuple", "sorted", "reversed", "set", "frozenset", "iter"})
#: An external base's place in a linearisation: it may define any dunder method.
_EXTERNAL_BASE = "?"
#: External bases that define no methods a class would override (object comes last anyway).
_NEUTRAL_BASES = frozenset({"object", "Generic", "Protocol", "ABC"})
#: Decorators that turn a method into an attribute whose value is what the method returns.
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "abstractproperty"})


def build_edges(files: list[ParsedFile], root_package: str | None = None) -> list[Edge]:
    """Every contains/imports/calls/inherits/references edge, repeated edges collapsed.

    Args:
        root_package: the root folder's name when the root itself is a package.
    """
    resolver = _Resolver(files, root_package)
    counts: Counter[tuple[str, str, str]] = Counter()
    for pf in files:
        for edge in resolver.file_edges(pf):
            counts[edge] += 1
    return [Edge(src, dst, typ, n) for (src, dst, typ), n in sorted(counts.items())]


# --- scopes ----------------------------------------------------------------------------------

@dataclass(slots=True)
class _Scope:
    """A module, class or function scope with the names it binds."""

    kind: str                              # module | class | function | narrow
    module: str                            # dotted module name
    owner: str                             # node id of the file, class or function
    parent: "_Scope | None"
    defn: Definition | None = None
    bindings: dict[str, list[tuple]] = field(default_factory=dict)
    globals_: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)   # `global` names only
    cache: dict[str, Value | None] = field(default_factory=dict)

    def bind(self, name: str, source: tuple) -> None:
        scope = self
        if name in self.declared_global:
            # `global f; f = other` in a function rebinds the module's f.
            while scope.parent is not None:
                scope = scope.parent
        scope.bindings.setdefault(name, []).append(source)


class _Resolver:
    def __init__(self, files: list[ParsedFile], root_package: str | None = None):
        self.files = files
        package_dirs = package_dirs_of(pf.rel_path for pf in files)
        self.module_of_file: dict[str, str] = {}
        self.modules: dict[str, ParsedFile] = {}
        for pf in sorted(files, key=lambda f: (f.rel_path.count("/"), f.rel_path)):
            name = module_name_for(pf.rel_path, package_dirs, root_package)
            self.module_of_file[pf.rel_path] = name
            # First (shallowest) file wins a contested module name, e.g. two conftest.py.
            self.modules.setdefault(name, pf)
        # Every module and every dotted prefix of one (`a.b` of `a.b.c`), for O(1) checks.
        self._module_prefixes: set[str] = set()
        for name in self.modules:
            parts = name.split(".")
            self._module_prefixes.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        self._attr_cache: dict[tuple[str, str], Value | None] = {}
        self.module_scopes: dict[str, _Scope] = {}
        self.def_scopes: dict[str, _Scope] = {}      # node id -> scope of that class/function
        self.defs: dict[str, Definition] = {}
        self.class_members: dict[str, dict[str, str]] = {}
        self.class_properties: dict[str, dict[str, str]] = {}   # class -> name -> getter id
        self.class_attr_sources: dict[str, dict[str, list[tuple]]] = {}
        self._building: set[str] = set()
        self._resolving: set[tuple] = set()
        self._mro_cache: dict[str, list[str]] = {}
        # Guards (cycles, depth cap) answer None without knowing the true value; results
        # computed while one fired are not cached, or a later lookup would inherit the None.
        self._cutoffs = 0
        for pf in files:
            if pf.tree is not None:
                self._module_scope(self.module_of_file[pf.rel_path])

    # -- building scopes --------------------------------------------------------------------

    def _module_scope(self, module: str) -> _Scope | None:
        if module in self.module_scopes:
            return self.module_scopes[module]
        pf = self.modules.get(module)
        if pf is None or pf.tree is None:
            return None
        scope = _Scope("module", module, make_node_id(pf.rel_path), None)
        self.module_scopes[module] = scope
        by_tree = {id(d.tree): d for d in pf.definitions}
        self._scan_block(pf.tree.body, scope, by_tree)
        return scope

    def _scan_block(self, stmts: Iterable[ast.stmt], scope: _Scope, by_tree: dict) -> None:
        """Record the names a block binds; nested class/function scopes are built here too."""
        for stmt in stmts:
            self._scan_stmt(stmt, scope, by_tree)

    def _scan_stmt(self, stmt: ast.AST, scope: _Scope, by_tree: dict) -> None:
        if isinstance(stmt, (*_FUNC_TYPES, ast.ClassDef)):
            d = by_tree.get(id(stmt))
            if d is None:
                return
            scope.bind(stmt.name, ("def", d.node_id))
            self._def_scope(d, scope, by_tree)
            return
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    scope.bind(alias.asname, ("module", alias.name))
                else:
                    top = alias.name.split(".")[0]
                    scope.bind(top, ("module", top))
            return
        if isinstance(stmt, ast.ImportFrom):
            base = self._absolute_module(scope.module, stmt.module, stmt.level, scope)
            if base is None:
                return
            for alias in stmt.names:
                if alias.name == "*":
                    scope.bind("*", ("star", base))
                else:
                    scope.bind(alias.asname or alias.name, ("from", base, alias.name))
            return
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            scope.globals_.update(stmt.names)
            if isinstance(stmt, ast.Global):
                scope.declared_global.update(stmt.names)
            return
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self._bind_target(target, stmt.value, scope)
        elif isinstance(stmt, ast.AnnAssign):
            if isinstance(stmt.target, ast.Name):
                scope.bind(stmt.target.id, ("annot", stmt.annotation, scope))
                if stmt.value is not None:
                    scope.bind(stmt.target.id, ("expr", stmt.value, scope))
            elif stmt.value is not None:
                self._bind_target(stmt.target, stmt.value, scope)
            if scope.kind == "function":
                self._note_self_attr(stmt.target, ("annot", stmt.annotation, scope), scope)
        elif isinstance(stmt, ast.AugAssign):
            self._bind_target(stmt.target, None, scope)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.bind_loop_target(stmt.target, stmt.iter, scope, scope)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, ("with", item.context_expr), scope)
        elif isinstance(stmt, ast.ExceptHandler) and stmt.name:
            # `except SomeError as e`: e is an instance of the handler's (single) type.
            if stmt.type is not None and not isinstance(stmt.type, ast.Tuple):
                scope.bind(stmt.name, ("annot", stmt.type, scope))
            else:
                scope.bind(stmt.name, ("opaque",))
        # Walrus targets anywhere in the statement bind in this scope.
        for node in _walk_no_scopes(stmt):
            if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                scope.bind(node.target.id, ("expr", node.value, scope))
        for child in _child_blocks(stmt):
            self._scan_stmt(child, scope, by_tree)

    def _bind_target(self, target: ast.AST, value, scope: _Scope) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                scope.bind(target.id, ("opaque",))
            elif isinstance(value, tuple) and value[0] == "with":
                scope.bind(target.id, ("with", value[1], scope))
            else:
                scope.bind(target.id, ("expr", value, scope))
        elif isinstance(target, (ast.Tuple, ast.List)):
            unpacks = isinstance(value, ast.expr) and not any(
                isinstance(elt, ast.Starred) for elt in target.elts)
            for i, elt in enumerate(target.elts):
                if unpacks and isinstance(elt, ast.Name):
                    # `a, b = f()` with `f() -> Tuple[A, B]`: a is an A, b a B.
                    scope.bind(elt.id, ("item", value, scope, i))
                else:
                    self._bind_target(elt, None, scope)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, None, scope)
        elif scope.kind == "function" and isinstance(target, ast.Attribute):
            if value is not None and not isinstance(value, tuple):
                self._note_self_attr(target, ("expr", value, scope), scope)

    def bind_loop_target(self, target: ast.AST, iterable: ast.AST, scope: _Scope,
                         iter_scope: _Scope) -> None:
        """`for x in xs` binds x to an element of xs; `for k, v in m.items()` binds v."""
        if isinstance(target, ast.Name):
            scope.bind(target.id, ("elem", iterable, iter_scope))
            return
        if (isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
                and isinstance(target.elts[1], ast.Name)):
            self._bind_target(target.elts[0], None, scope)
            scope.bind(target.elts[1].id, ("pair_value", iterable, iter_scope))
            return
        self._bind_target(target, None, scope)

    def _note_self_attr(self, target: ast.AST, source: tuple, scope: _Scope) -> None:
        """`self.x = value` in a method: remember x's value for the class's instances."""
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
            return
        defn = scope.defn
        if defn is None or defn.kind != "method" or defn.parent is None:
            return
        args = defn.tree.args.posonlyargs + defn.tree.args.args
        if not args or args[0].arg != target.value.id:
            return
        attrs = self.class_attr_sources.setdefault(defn.parent.node_id, {})
        attrs.setdefault(target.attr, []).append(source)

    def _def_scope(self, d: Definition, parent: _Scope, by_tree: dict) -> None:
        module = parent.module
        self.defs[d.node_id] = d
        if isinstance(d.tree, ast.ClassDef):
            scope = _Scope("class", module, d.node_id, parent, d)
            self.def_scopes[d.node_id] = scope
            self._scan_block(d.tree.body, scope, by_tree)
            members: dict[str, str] = {}
            for name, sources in scope.bindings.items():
                defs = [s[1] for s in sources if s[0] == "def"]
                if defs:
                    members[name] = defs[-1]
            self.class_members[d.node_id] = members
            properties: dict[str, str] = {}
            for name, sources in scope.bindings.items():
                for source in sources:
                    getter = self.defs.get(source[1]) if source[0] == "def" else None
                    if getter is not None and _is_property(getter.tree):
                        properties.setdefault(name, getter.node_id)
            self.class_properties[d.node_id] = properties
            attrs = self.class_attr_sources.setdefault(d.node_id, {})
            for name, sources in scope.bindings.items():
                if name not in members:
                    attrs.setdefault(name, []).extend(sources)
            return
        scope = _Scope("function", module, d.node_id, parent, d)
        self.def_scopes[d.node_id] = scope
        args = d.tree.args
        positional = args.posonlyargs + args.args
        for i, arg in enumerate(positional + args.kwonlyargs):
            if i == 0 and d.kind == "method" and arg in positional and not _is_static(d.tree):
                kind = "cls" if _is_classmethod(d.tree) or d.tree.name == "__new__" else "self"
                scope.bind(arg.arg, (kind, d.parent.node_id))
            elif arg.annotation is not None:
                scope.bind(arg.arg, ("annot", arg.annotation, parent))
            else:
                scope.bind(arg.arg, ("opaque",))
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                scope.bind(extra.arg, ("opaque",))
        self._scan_block(d.tree.body, scope, by_tree)

    def _absolute_module(self, module: str, name: str | None, level: int, scope: _Scope) -> str | None:
        if level == 0:
            return name
        pf = self.modules.get(module)
        is_pkg = pf is not None and pf.rel_path.endswith("__init__.py")
        parts = module.split(".") if module else []
        if not is_pkg:
            parts = parts[:-1]
        if level - 1 > len(parts):
            return None
        base = parts[: len(parts) - (level - 1)]
        if name:
            base = base + name.split(".")
        return ".".join(base)

    # -- name resolution --------------------------------------------------------------------

    def lookup(self, scope: _Scope, name: str, depth: int = 0) -> Value | None:
        """What `name` means when read inside `scope` (Python's LEGB, classes skipped)."""
        if depth > MAX_DEPTH:
            return self._cutoff()
        current: _Scope | None = scope
        first = True
        while current is not None:
            if current.kind == "class" and not first:
                current = current.parent
                continue
            if name in current.globals_ and current.kind != "module":
                current = self._root(current)
                continue
            if name in current.bindings:
                return self._binding_value(current, name, depth)
            if current.kind == "module" and "*" in current.bindings:
                for source in current.bindings["*"]:
                    value = self.module_attr(source[1], name, depth + 1)
                    if value is not None:
                        return value
            first = False
            current = current.parent
        return None

    def _root(self, scope: _Scope) -> _Scope:
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def _binding_value(self, scope: _Scope, name: str, depth: int) -> Value | None:
        key = (id(scope), name)
        if name in scope.cache:
            return scope.cache[name]
        if key in self._resolving:
            return self._cutoff()
        cutoffs = self._cutoffs
        self._resolving.add(key)
        try:
            value = self._sources_value(scope.bindings[name], depth + 1)
        finally:
            self._resolving.discard(key)
        if self._cutoffs == cutoffs:
            scope.cache[name] = value
        return value

    def _sources_value(self, sources: list[tuple], depth: int) -> Value | None:
        """The value of a name bound by `sources`: its declared class if annotated, else all."""
        declared = _merge([self._source_value(s, depth) for s in sources if s[0] == "annot"])
        if declared is not None and declared[0] in ("instance", "class"):
            # `x: Base = Impl()`: a repository class in the annotation is what the code
            # promises (as type checkers and jedi read it).
            return declared
        # A container annotation (`x: Mapping[str, V] = Cache()`) says less than the value.
        assigned = _merge([self._source_value(s, depth) for s in sources if s[0] != "annot"])
        return assigned if assigned is not None else declared

    def _cutoff(self) -> None:
        """A guard's answer: unknown, and remembered so that it is not cached."""
        self._cutoffs += 1
        return None

    def _source_value(self, source: tuple, depth: int) -> Value | None:
        kind = source[0]
        if kind == "def":
            d = self.defs.get(source[1])
            if d is None:
                return None
            return ("class" if d.kind == "class" else "func", d.node_id)
        if kind == "module":
            return ("module", source[1]) if self._has_module_prefix(source[1]) else None
        if kind == "from":
            return self.module_attr(source[1], source[2], depth)
        if kind == "expr":
            return self.infer(source[1], source[2], depth)
        if kind == "with":
            value = self.infer(source[1], source[2], depth)
            return value if value and value[0] == "instance" else None
        if kind == "annot":
            return self.annotation_type(source[1], source[2], depth)
        if kind == "item":
            expr, index = source[1], source[3]
            if isinstance(expr, (ast.Tuple, ast.List)):
                # `a, b = X(), f`: each name takes its own element.
                elts = expr.elts
                if index < len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                    return self.infer(elts[index], source[2], depth)
                return None
            return _tuple_item(self.infer(expr, source[2], depth), index)
        if kind in ("elem", "pair_value"):
            value = self.infer(source[1], source[2], depth)
            wanted = "iter" if kind == "elem" else "pairs"
            return ("instance", value[1]) if value is not None and value[0] == wanted else None
        if kind in ("self", "isinstance"):
            return ("instance", source[1])
        if kind == "cls":
            return ("class", source[1])
        return None

    def _has_module_prefix(self, module: str) -> bool:
        return module in self._module_prefixes

    def module_attr(self, module: str, attr: str, depth: int = 0) -> Value | None:
        """`module.attr`: a submodule, or a name bound at the module's top level."""
        if depth > MAX_DEPTH:
            return self._cutoff()
        key = ("attr", module, attr)
        if (module, attr) in self._attr_cache:
            return self._attr_cache[(module, attr)]
        if key in self._resolving:
            return self._cutoff()
        cutoffs = self._cutoffs
        self._resolving.add(key)
        try:
            value = None
            scope = self._module_scope(module)
            if scope is not None and (attr in scope.bindings or "*" in scope.bindings):
                value = self.lookup(scope, attr, depth + 1)
            sub = f"{module}.{attr}" if module else attr
            if value is None and self._has_module_prefix(sub):
                value = ("module", sub)
        finally:
            self._resolving.discard(key)
        if self._cutoffs == cutoffs:
            self._attr_cache[(module, attr)] = value
        return value

    def member(self, value: Value, attr: str, depth: int = 0) -> Value | None:
        """`value.attr` for a module, class object or instance."""
        kind, ref = value
        if kind == "module":
            return self.module_attr(ref, attr, depth + 1)
        if kind in ("class", "instance"):
            return self.class_member(ref, attr, instance=kind == "instance", depth=depth + 1)
        return None

    def class_member(self, class_id: str, attr: str, instance: bool, depth: int = 0,
                     skip_first: bool = False) -> Value | None:
        mro = self.mro(class_id)
        if mro is None:
            return None
        for cid in mro[1:] if skip_first else mro:
            if cid == _EXTERNAL_BASE:
                # Builtin and library bases define dunders (`Exception.__init__`): one
                # earlier in the MRO than any repository definition wins. Plain names are
                # assumed not to be shadowed, or nothing behind a mixin would resolve.
                if attr.startswith("__") and attr.endswith("__"):
                    return None
                continue
            members = self.class_members.get(cid, {})
            if attr in members:
                getter = self.class_properties.get(cid, {}).get(attr)
                if getter is not None and instance:
                    # An instance's property reads as what its getter returns, not the getter.
                    return self.return_type(getter, depth + 1)
                return self._source_value(("def", members[attr]), depth + 1)
            sources = self.class_attr_sources.get(cid, {}).get(attr)
            if sources:
                return self._sources_value(sources, depth + 1)
        return None

    def property_read(self, node: ast.Attribute, scope: _Scope) -> str | None:
        """The getter that `instance.attr` runs when attr is a property, else None."""
        base = self.infer(node.value, scope)
        if base is None or base[0] != "instance":
            return None
        for cid in self.mro(base[1]) or ():
            if cid == _EXTERNAL_BASE:
                continue
            if node.attr in self.class_members.get(cid, {}):
                return self.class_properties.get(cid, {}).get(node.attr)
            if node.attr in self.class_attr_sources.get(cid, {}):
                return None
        return None

    def mro(self, class_id: str) -> list[str] | None:
        """Linearisation (depth-first, left to right) of the repository's classes; the first
        external base that precedes any of them is kept as `_EXTERNAL_BASE`."""
        if class_id in self._mro_cache:
            return self._mro_cache[class_id]
        if class_id in self._building:
            return self._cutoff()
        cutoffs = self._cutoffs
        self._building.add(class_id)
        try:
            order = [class_id]
            for base in self.bases(class_id):
                sub = self.mro(base) if base is not None else [_EXTERNAL_BASE]
                if sub:
                    order.extend(c for c in sub if c not in order)
            if self._cutoffs == cutoffs:
                self._mro_cache[class_id] = order
            return order
        finally:
            self._building.discard(class_id)

    def bases(self, class_id: str) -> list[str | None]:
        d = self.defs.get(class_id)
        scope = self.def_scopes.get(class_id)
        if d is None or scope is None:
            return []
        out: list[str | None] = []
        for base in d.tree.bases:
            value = self.infer(_generic_origin(base), scope.parent, 0)
            if value is not None and value[0] == "class":
                out.append(value[1])
            elif _annotation_name(_generic_origin(base)).rsplit(".", 1)[-1] not in _NEUTRAL_BASES:
                out.append(None)
        return out

    # -- inference --------------------------------------------------------------------------

    def infer(self, expr: ast.AST, scope: _Scope, depth: int = 0) -> Value | None:
        """The value an expression evaluates to, when it can be named."""
        if expr is None:
            return None
        if depth > MAX_DEPTH:
            return self._cutoff()
        if isinstance(expr, ast.Name):
            return self.lookup(scope, expr.id, depth + 1)
        if isinstance(expr, ast.Attribute):
            if _is_super_call(expr.value):
                cls = _enclosing_class(scope)
                if cls is None:
                    return None
                return self.class_member(cls, expr.attr, instance=True, depth=depth + 1, skip_first=True)
            base = self.infer(expr.value, scope, depth + 1)
            return self.member(base, expr.attr, depth + 1) if base is not None else None
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, scope, depth + 1)
        if isinstance(expr, ast.Call):
            func = self.infer(expr.func, scope, depth + 1)
            if func is None:
                return (self._builtin_result(expr, scope, depth + 1)
                        or self._container_method(expr, scope, depth + 1))
            if func[0] == "class":
                return ("instance", func[1])
            if func[0] == "func":
                return self.return_type(func[1], depth + 1)
            return None
        if isinstance(expr, (ast.BoolOp, ast.IfExp)):
            # `a or b`, `a if c else b`: one of the operands, merged as for a name bound
            # several times (a literal None is no candidate: nothing can be called on it).
            operands = expr.values if isinstance(expr, ast.BoolOp) else [expr.body, expr.orelse]
            return _merge([self.infer(v, scope, depth + 1) for v in operands if not _is_none(v)])
        if isinstance(expr, ast.Await):
            return self.infer(expr.value, scope, depth + 1)
        return None

    def _subscript(self, expr: ast.Subscript, scope: _Scope, depth: int) -> Value | None:
        """`xs[i]`, `m[k]` of typed containers, and `obj[k]` through a typed `__getitem__`."""
        value = self.infer(expr.value, scope, depth + 1)
        if value is None:
            return None
        if value[0] == "map" or (value[0] == "iter" and not isinstance(expr.slice, ast.Slice)):
            return ("instance", value[1])
        if value[0] == "tuple" and isinstance(expr.slice, ast.Constant):
            return _tuple_item(value, expr.slice.value)
        if value[0] == "instance":
            getter = self.class_member(value[1], "__getitem__", instance=True, depth=depth + 1)
            if getter is not None and getter[0] == "func":
                return self.return_type(getter[1], depth + 1)
        return None

    def _builtin_result(self, call: ast.Call, scope: _Scope, depth: int) -> Value | None:
        """`sorted(xs)`, `next(it)`, `enumerate(xs)`, `type(obj)`: types through builtins."""
        func = call.func
        if not (isinstance(func, ast.Name) and len(call.args) == 1):
            return None
        if self.lookup(scope, func.id, depth) is not None:
            return None     # a repository definition shadows the builtin
        value = self.infer(call.args[0], scope, depth + 1)
        if value is None:
            return None
        if func.id == "type" and value[0] == "instance":
            return ("class", value[1])
        if value[0] == "iter":
            if func.id in _ITERABLE_BUILTINS:
                return value
            if func.id == "next":
                return ("instance", value[1])
            if func.id == "enumerate":
                return ("pairs", value[1])
        return None

    def _container_method(self, call: ast.Call, scope: _Scope, depth: int) -> Value | None:
        """`m.get(k)`, `m.values()`, `m.items()`, `xs.pop()` on typed containers."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        value = self.infer(func.value, scope, depth + 1)
        if value is None:
            return None
        kind, ref = value
        if kind == "map":
            if func.attr in ("get", "pop", "setdefault"):
                return ("instance", ref)
            if func.attr == "values":
                return ("iter", ref)
            if func.attr == "items":
                return ("pairs", ref)
        if kind == "iter" and func.attr == "pop":
            return ("instance", ref)
        if kind == "iter" and func.attr == "copy":
            return value
        return None

    def return_type(self, func_id: str, depth: int) -> Value | None:
        d = self.defs.get(func_id)
        scope = self.def_scopes.get(func_id)
        if d is None or scope is None or getattr(d.tree, "returns", None) is None:
            return None
        ann = d.tree.returns
        if _annotation_name(ann) in ("Self", "te.Self", "typing_extensions.Self", "t.Self"):
            cls = _enclosing_class(scope)
            return ("instance", cls) if cls else None
        return self.annotation_type(ann, scope.parent, depth + 1)

    def annotation_type(self, ann: ast.AST, scope: _Scope, depth: int = 0) -> Value | None:
        """The instance type an annotation names (`X`, `"X"`, `Optional[X]`, `X | None`)."""
        if ann is None:
            return None
        if depth > MAX_DEPTH:
            return self._cutoff()
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            parts = [p for p in (ann.left, ann.right) if not _is_none(p)]
            return self.annotation_type(parts[0], scope, depth + 1) if len(parts) == 1 else None
        if isinstance(ann, ast.Subscript):
            head = _annotation_name(ann.value).rsplit(".", 1)[-1]
            if head in _WRAPPER_ANNOTATIONS or head == "Union":
                inner = ann.slice
                elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
                elts = [e for e in elts if not _is_none(e)]
                if head == "Annotated":
                    elts = elts[:1]
                if len(elts) != 1:
                    return None
                value = self.annotation_type(elts[0], scope, depth + 1)
                if head in ("Type", "type"):
                    # Declared types decide, as for methods: calling a `type[X]` calls X.
                    return ("class", value[1]) if value and value[0] == "instance" else None
                return value
            # `Box[int]`: an instance of a generic class of the repository.
            value = self.infer(ann.value, scope, depth + 1)
            if value is not None:
                return ("instance", value[1]) if value[0] == "class" else None
            return self._iterable_annotation(head, ann.slice, scope, depth + 1)
        value = self.infer(ann, scope, depth + 1)
        if value is not None and value[0] == "class":
            return ("instance", value[1])
        return None

    def _iterable_annotation(self, head: str, args: ast.AST, scope: _Scope, depth: int) -> Value | None:
        """`List[X]`, `Iterator[X]`, `tuple[X, ...]`, `Dict[K, X]`: containers of X instances."""
        elts = args.elts if isinstance(args, ast.Tuple) else [args]
        if head in _MAPPING_ANNOTATIONS:
            value = self.annotation_type(elts[1], scope, depth + 1) if len(elts) == 2 else None
            return ("map", value[1]) if value is not None and value[0] == "instance" else None
        if head in ("Tuple", "tuple"):
            homogeneous = len(elts) == 2 and isinstance(elts[1], ast.Constant) and elts[1].value is ...
            if not homogeneous:
                items = [self.annotation_type(elt, scope, depth + 1) for elt in elts]
                ids = [v[1] if v is not None and v[0] == "instance" else "" for v in items]
                return ("tuple", "\n".join(ids)) if any(ids) else None
        elif head not in _ITERABLE_ANNOTATIONS:
            return None
        value = self.annotation_type(elts[0], scope, depth + 1)
        return ("iter", value[1]) if value is not None and value[0] == "instance" else None

    # -- edges ------------------------------------------------------------------------------

    def file_edges(self, pf: ParsedFile) -> Iterator[tuple[str, str, str]]:
        file_id = make_node_id(pf.rel_path)
        for d in pf.definitions:
            parent = d.parent.node_id if d.parent else file_id
            yield (parent, d.node_id, "contains")
        if pf.tree is None:
            return
        module = self.module_of_file[pf.rel_path]
        scope = self.module_scopes.get(module)
        if scope is None or self.modules.get(module) is not pf:
            # A file whose module name another file won: resolve it in a scope of its own.
            scope = _Scope("module", module, file_id, None)
            self._scan_block(pf.tree.body, scope, {id(d.tree): d for d in pf.definitions})
        yield from self._import_edges(pf, scope, file_id)
        yield from _EdgeVisitor(self, scope, file_id).run(pf.tree)

    def _import_edges(self, pf: ParsedFile, scope: _Scope, file_id: str) -> Iterator[tuple[str, str, str]]:
        module = scope.module
        for node in ast.walk(pf.tree):
            targets: list[Value | None] = []
            if isinstance(node, ast.Import):
                for alias in node.names:
                    targets.append(("module", alias.name) if alias.name in self.modules else None)
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute_module(module, node.module, node.level, scope)
                if base is None:
                    continue
                if base in self.modules:
                    targets.append(("module", base))
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    targets.append(self.module_attr(base, alias.name))
            else:
                continue
            # One count per import statement that reaches a file.
            dsts = {self._file_of_value(value) for value in targets}
            for dst in sorted(d for d in dsts if d is not None and d != file_id):
                yield (file_id, dst, "imports")

    def _file_of_value(self, value: Value | None) -> str | None:
        if value is None:
            return None
        if value[0] == "module":
            pf = self.modules.get(value[1])
            return make_node_id(pf.rel_path) if pf else None
        return value[1].split("::", 1)[0]


class _EdgeVisitor:
    """Walk one module, attributing calls and references to the innermost scope."""

    def __init__(self, resolver: _Resolver, module_scope: _Scope, file_id: str):
        self.r = resolver
        self.module_scope = module_scope
        self.file_id = file_id
        self.edges: list[tuple[str, str, str]] = []

    def run(self, tree: ast.Module) -> list[tuple[str, str, str]]:
        self._visit_block(tree.body, self.module_scope)
        return self.edges

    def _visit_block(self, stmts: Iterable[ast.AST], scope: _Scope) -> None:
        stmts = list(stmts)
        for i, stmt in enumerate(stmts):
            self._visit(stmt, scope)
            # `assert isinstance(x, C)` and `if not isinstance(x, C): return` narrow x
            # for the rest of the block.
            test = None
            if isinstance(stmt, ast.Assert):
                test = stmt.test
            elif (isinstance(stmt, ast.If) and not stmt.orelse and _exits(stmt.body)
                  and isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)):
                test = stmt.test.operand
            if test is not None:
                scope = self._narrowed(test, stmts[i + 1:], scope)

    def _narrowed(self, test: ast.AST, body: list[ast.AST], scope: _Scope) -> _Scope:
        """`scope` where `isinstance(x, C)` holds: x is a C in `body` unless body rebinds x."""
        if scope.kind == "class":
            return scope
        checks = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        checks = [c for c in checks if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                  and c.func.id == "isinstance" and len(c.args) == 2
                  and isinstance(c.args[0], ast.Name)]
        if not checks or self.r.lookup(scope, "isinstance") is not None:
            return scope     # a repository `isinstance` proves nothing
        narrowed: _Scope | None = None
        for check in checks:
            name = check.args[0].id
            cls = self.r.infer(check.args[1], scope)
            if cls is None or cls[0] != "class" or _rebinds(body, name):
                continue
            known = self.r.lookup(scope, name)
            if known is not None and known[0] == "instance" and cls[1] in (self.r.mro(known[1]) or ()):
                continue     # already a subclass of C: keep the narrower type
            if narrowed is None:
                narrowed = _Scope("narrow", scope.module, scope.owner, scope, scope.defn)
            narrowed.bind(name, ("isinstance", cls[1]))
        return narrowed or scope

    def _visit(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, (*_FUNC_TYPES, ast.ClassDef)):
            self._visit_def(node, scope)
            return
        if isinstance(node, ast.If):
            self._visit(node.test, scope)
            self._visit_block(node.body, self._narrowed(node.test, node.body, scope))
            self._visit_block(node.orelse, scope)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        if isinstance(node, ast.Call):
            self._call(node, scope)
            return
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            self._reference(node, scope)
            return
        if isinstance(node, ast.Lambda):
            inner = self._local_scope(scope)
            for arg in _all_args(node.args):
                inner.bind(arg.arg, ("opaque",))
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
                self._visit(default, scope)
            self._visit(node.body, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = self._local_scope(scope)
            for i, gen in enumerate(node.generators):
                self._visit(gen.iter, inner)
                # The first iterable is evaluated outside the comprehension, the rest inside.
                self.r.bind_loop_target(gen.target, gen.iter, inner, inner if i else scope)
                for cond in gen.ifs:
                    self._visit(cond, inner)
            for part in (("key", "value") if isinstance(node, ast.DictComp) else ("elt",)):
                self._visit(getattr(node, part), inner)
            return
        if isinstance(node, ast.arg):
            if node.annotation is not None:
                self._annotation(node.annotation, scope)
            return
        if isinstance(node, ast.AnnAssign):
            self._annotation(node.annotation, scope)
            if node.value is not None:
                self._visit(node.value, scope)
            self._visit(node.target, scope)
            return
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._visit_block(value, scope)     # a block: narrowing flows through it
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self._visit(item, scope)
            elif isinstance(value, ast.AST):
                self._visit(value, scope)

    def _local_scope(self, scope: _Scope) -> _Scope:
        """A lambda or comprehension scope: its own names, edges still owned by `scope`."""
        return _Scope("function", scope.module, scope.owner, scope, scope.defn)

    def _visit_def(self, node: ast.AST, scope: _Scope) -> None:
        by_tree = self._def_for(node, scope)
        # Decorators, bases, defaults and annotations run in the enclosing scope.
        for dec in node.decorator_list:
            self._visit(dec, scope)
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                self._visit(base, scope)
                value = self.r.infer(_generic_origin(base), scope)
                if by_tree and value and value[0] == "class":
                    self.edges.append((by_tree, value[1], "inherits"))
            for kw in node.keywords:
                self._visit(kw.value, scope)
        else:
            args = node.args
            for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
                self._visit(default, scope)
            for arg in _all_args(args):
                if arg.annotation is not None:
                    self._annotation(arg.annotation, scope)
            if node.returns is not None:
                self._annotation(node.returns, scope)
        inner = self.r.def_scopes.get(by_tree) if by_tree else None
        if inner is None:
            return
        self._visit_block(node.body, inner)

    def _def_for(self, node: ast.AST, scope: _Scope) -> str | None:
        while scope.kind == "narrow" and scope.parent is not None:
            scope = scope.parent     # definitions are bound in the real scope
        for source in scope.bindings.get(node.name, ()):
            if source[0] == "def":
                d = self.r.defs.get(source[1])
                if d is not None and d.tree is node:
                    return d.node_id
        return None

    def _call(self, node: ast.Call, scope: _Scope) -> None:
        target = self.r.infer(node.func, scope)
        if target is not None and target[0] in ("func", "class"):
            self.edges.append((scope.owner, target[1], "calls"))
        elif target is not None and target[0] == "funcs":
            self.edges.extend((scope.owner, t, "calls") for t in target[1].split("\n"))
        elif isinstance(node.func, ast.Attribute):
            # `g.nodes()` with a property `nodes` calls what the getter returns; the
            # getter itself is read, not called (jedi, type checkers agree).
            getter = self.r.property_read(node.func, scope)
            if getter is not None and getter != scope.owner:
                self.edges.append((scope.owner, getter, "references"))
        # Arguments, and the receiver of an attribute call, are visited for nested calls
        # and references; the callee expression itself is not a reference.
        func = node.func
        if isinstance(func, ast.Attribute):
            self._visit_receiver(func.value, scope)
        elif not isinstance(func, ast.Name):
            self._visit(func, scope)
        for arg in node.args:
            self._visit(arg, scope)
        for kw in node.keywords:
            self._visit(kw.value, scope)

    def _visit_receiver(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            # `mod.func(...)`, `Cls.method(...)`: the receiver is a route, not a use,
            # unless it reads a property (`self.options.update()` runs the getter).
            if isinstance(node, ast.Attribute):
                getter = self.r.property_read(node, scope)
                if getter is not None and getter != scope.owner:
                    self.edges.append((scope.owner, getter, "references"))
                self._visit_receiver(node.value, scope)
            return
        self._visit(node, scope)

    def _reference(self, node: ast.AST, scope: _Scope) -> None:
        value = self.r.infer(node, scope)
        if value is not None and value[0] in ("func", "class") and value[1] != scope.owner:
            self.edges.append((scope.owner, value[1], "references"))
        elif isinstance(node, ast.Attribute):
            # Reading a property runs its getter: a use of that definition.
            getter = self.r.property_read(node, scope)
            if getter is not None and getter != scope.owner:
                self.edges.append((scope.owner, getter, "references"))
        if isinstance(node, ast.Attribute):
            # Resolved or not, the receiver may hold calls: `Engine(x).size`, `f().attr`.
            self._visit_receiver(node.value, scope)

    def _annotation(self, ann: ast.AST, scope: _Scope) -> None:
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return
        for node in ast.walk(ann):
            if isinstance(node, (ast.Name, ast.Attribute)):
                value = self.r.infer(node, scope)
                if value is not None and value[0] in ("func", "class"):
                    self.edges.append((scope.owner, value[1], "references"))


# --- small helpers ---------------------------------------------------------------------------

def _merge(values: list[Value | None]) -> Value | None:
    """One value for a name bound several times: the single distinct one, or the last def."""
    known: list[Value] = []
    for v in values:
        if v is not None and v[0] == "funcs":
            # Already several definitions: each joins the others (kind no longer matters,
            # a set of targets is only ever called).
            known.extend(("func", ref) for ref in v[1].split("\n"))
        elif v is not None:
            known.append(v)
    if not known:
        return None
    distinct = list(dict.fromkeys(known))
    if len(distinct) == 1:
        return distinct[0]
    if all(v[0] in ("func", "class") for v in distinct):
        # Overloads or redefinitions of one qualified name: the last one is what runs.
        if len({v[1].split("#")[0] for v in distinct}) == 1:
            return distinct[-1]
        # Platform-conditional definitions (`if WIN: from ._win import f` / `else: def f`):
        # a call may reach any of them.
        return ("funcs", "\n".join(dict.fromkeys(v[1] for v in distinct)))
    return None


def _exits(body: list[ast.stmt]) -> bool:
    """A block that never falls through to the statement after it."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _rebinds(body: list[ast.AST], name: str) -> bool:
    """Whether `name` is assigned anywhere in `body` (nested scopes included, to be safe)."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                return True
            if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                return True
    return False


def _tuple_item(value: Value | None, index: object) -> Value | None:
    """Item `index` of a ("tuple", ...) value, as an instance, when its class is known."""
    if value is None or value[0] != "tuple" or not isinstance(index, int) or isinstance(index, bool):
        return None
    ids = value[1].split("\n")
    if not -len(ids) <= index < len(ids) or not ids[index]:
        return None
    return ("instance", ids[index])


def _walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """Expressions of one statement, not entering nested definitions or lambdas."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.Lambda, ast.comprehension, ast.ExceptHandler)):
            continue
        yield child
        yield from _walk_no_scopes(child)


def _child_blocks(stmt: ast.AST) -> Iterator[ast.AST]:
    """Statements nested in compound statements (if/for/while/try/with/match)."""
    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(stmt, name, ()) or ():
            if isinstance(child, ast.match_case):
                yield from child.body
            else:
                yield child


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return args.posonlyargs + args.args + args.kwonlyargs + extra


def _is_property(tree: ast.AST) -> bool:
    return any(_annotation_name(d).rsplit(".", 1)[-1] in _PROPERTY_DECORATORS
               for d in tree.decorator_list)


def _is_static(tree: ast.AST) -> bool:
    return any(_annotation_name(d) in ("staticmethod",) for d in tree.decorator_list)


def _is_classmethod(tree: ast.AST) -> bool:
    return any(_annotation_name(d) in ("classmethod",) for d in tree.decorator_list)


def _generic_origin(base: ast.AST) -> ast.AST:
    """`Base[T]` names the class `Base`; any other expression is itself."""
    return base.value if isinstance(base, ast.Subscript) else base


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _enclosing_class(scope: _Scope | None) -> str | None:
    while scope is not None:
        if scope.kind == "function" and scope.defn is not None and scope.defn.kind == "method":
            return scope.defn.parent.node_id
        if scope.kind == "class":
            return scope.owner
        scope = scope.parent
    return None


def _annotation_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _annotation_name(node.value)
        return f"{head}.{node.attr}" if head else node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
