"""Scopes and the names they bind: what every module, class and function defines, imports
and assigns, recorded before any inference runs."""

from __future__ import annotations

import ast
import bisect
import functools
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from codenib.compiler.lang.python_parse import Definition, ParsedFile
from codenib.compiler.lang.python_resolve.imports import ModuleTable
from codenib.compiler.lang.python_resolve.syntax import annotation_name
from codenib.compiler.lang.python_resolve.values import Value
from codenib.core.types import make_node_id

#: Statement types that open a class or function scope.
_DEF_NODES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
#: Decorators that turn a method into an attribute whose value is what the method returns.
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "abstractproperty"})


@dataclass(slots=True)
class Scope:
    """A module, class or function scope with the names it binds."""

    kind: str                              # module | class | function | narrow
    module: str                            # dotted module name
    owner: str                             # node id of the file, class or function
    parent: "Scope | None"
    defn: Definition | None = None
    bindings: dict[str, list[tuple]] = field(default_factory=dict)
    globals_: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)   # `global` names only
    cache: dict[str, Value | None] = field(default_factory=dict)
    transient: bool = False                # made by pass 2 (narrowing, lambda, comprehension)

    def bind(self, name: str, source: tuple) -> None:
        scope = self
        if name in self.declared_global:
            # `global f; f = other` in a function rebinds the module's f.
            while scope.parent is not None:
                scope = scope.parent
        scope.bindings.setdefault(name, []).append(source)


class Bindings(ModuleTable):
    """The scope of every module and definition, with its bindings and class members.

    Sources of a binding stay unevaluated (`("expr", node, scope)`): inference reads them
    lazily, so scanning needs nothing but the module table. With `on_demand`, a file is
    scanned the first time a lookup needs its module (`on_demand(rel_path)` parses it and
    calls `add_file`); without it, every file must be added before edges are collected.
    """

    def __init__(self, rel_paths: Iterable[str], root_package: str | None = None,
                 on_demand: Callable[[str], None] | None = None):
        super().__init__(rel_paths, root_package)
        self.on_demand = on_demand
        self.scanned: set[str] = set()              # files add_file has seen (parsed or not)
        self._walrus: tuple[int, ...] | None = None
        self.module_scopes: dict[str, Scope] = {}   # module name -> scope of the file it names
        self.file_scopes: dict[str, Scope] = {}     # relative path -> scope its edges resolve in
        self.def_scopes: dict[str, Scope] = {}      # node id -> scope of that class/function
        self.defs: dict[str, Definition] = {}
        self.class_members: dict[str, dict[str, str]] = {}
        self.class_properties: dict[str, dict[str, str]] = {}   # class -> name -> getter id
        self.class_attr_sources: dict[str, dict[str, list[tuple]]] = {}

    def add_file(self, pf: ParsedFile, trim: bool = False) -> None:
        """Pass 1 for one file: record what it binds (nothing when it did not parse).

        With `trim`, `pf` lets its tree go afterwards and its definitions keep only their
        headers (arguments, returns, bases, decorators): the resolver then holds what each
        file binds, not its tree, and pass 2 needs the file parsed again (`parse_syntax`).
        """
        self.scanned.add(pf.rel_path)
        if pf.tree is None:
            return
        module = self.module_of_file[pf.rel_path]
        scope = Scope("module", module, make_node_id(pf.rel_path), None)
        # A file whose module name another file won resolves in a scope of its own.
        if self.modules.get(module) == pf.rel_path:
            self.module_scopes[module] = scope
        self.file_scopes[pf.rel_path] = scope
        # Walrus targets need a walk of every expression; a file without `:=` has none.
        self._walrus = pf.walrus_lines
        self.scan_block(pf.tree.body, scope, {id(d.tree): d for d in pf.definitions})
        if trim:
            trim_file(pf)

    def release(self) -> None:
        """Drop every binding: sources refer back to their scopes, and breaking those cycles
        lets reference counting free the resolver at once, without a garbage collection."""
        for scope in [*self.file_scopes.values(), *self.def_scopes.values()]:
            scope.bindings.clear()
            scope.cache.clear()
        self.class_attr_sources.clear()

    def module_scope(self, module: str) -> Scope | None:
        """The scope of the file a module name stands for; None when it did not parse."""
        self.note(("m", module))
        path = self.modules.get(module)
        if path is not None and path not in self.scanned and self.on_demand is not None:
            reads, self.reads = self.reads, None    # scanning is no read of the unit's
            try:
                self.on_demand(path)
            finally:
                self.reads = reads
        return self.module_scopes.get(module)

    def file_scope(self, rel_path: str) -> Scope | None:
        """The scope a file's own names resolve in (scanned on demand); None if it did not parse."""
        if rel_path not in self.scanned and self.on_demand is not None:
            self.on_demand(rel_path)
        return self.file_scopes.get(rel_path)

    def scan_block(self, stmts: Iterable[ast.stmt], scope: Scope, by_tree: dict) -> None:
        """Record the names a block binds; nested class/function scopes are built here too."""
        for stmt in stmts:
            self._scan_stmt(stmt, scope, by_tree)

    def _scan_stmt(self, stmt: ast.AST, scope: Scope, by_tree: dict) -> None:
        kind = type(stmt)
        if kind in _DEF_NODES:
            d = by_tree.get(id(stmt))
            if d is None:
                return
            scope.bind(stmt.name, ("def", d.node_id))
            self._def_scope(d, scope, by_tree)
            return
        if kind is ast.Import:
            for alias in stmt.names:
                if alias.asname:
                    scope.bind(alias.asname, ("module", alias.name))
                else:
                    top = alias.name.split(".")[0]
                    scope.bind(top, ("module", top))
            return
        if kind is ast.ImportFrom:
            base = self.absolute_module(scope.module, stmt.module, stmt.level)
            if base is None:
                return
            for alias in stmt.names:
                if alias.name == "*":
                    scope.bind("*", ("star", base))
                else:
                    scope.bind(alias.asname or alias.name, ("from", base, alias.name))
            return
        if kind is ast.Global or kind is ast.Nonlocal:
            scope.globals_.update(stmt.names)
            if kind is ast.Global:
                scope.declared_global.update(stmt.names)
            return
        if kind is ast.Assign:
            for target in stmt.targets:
                self._bind_target(target, stmt.value, scope)
        elif kind is ast.AnnAssign:
            if isinstance(stmt.target, ast.Name):
                scope.bind(stmt.target.id, ("annot", stmt.annotation, scope))
                if stmt.value is not None:
                    scope.bind(stmt.target.id, ("expr", stmt.value, scope))
            elif stmt.value is not None:
                self._bind_target(stmt.target, stmt.value, scope)
            if scope.kind == "function":
                self._note_self_attr(stmt.target, ("annot", stmt.annotation, scope), scope)
        elif kind is ast.AugAssign:
            self._bind_target(stmt.target, None, scope)
        elif kind is ast.For or kind is ast.AsyncFor:
            self.bind_loop_target(stmt.target, stmt.iter, scope, scope)
        elif kind is ast.With or kind is ast.AsyncWith:
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, ("with", item.context_expr), scope)
        elif kind is ast.ExceptHandler and stmt.name:
            # `except SomeError as e`: e is an instance of the handler's (single) type.
            if stmt.type is not None and not isinstance(stmt.type, ast.Tuple):
                scope.bind(stmt.name, ("annot", stmt.type, scope))
            else:
                scope.bind(stmt.name, ("opaque",))
        # Walrus targets anywhere in the statement bind in this scope.
        if self._walrus is None or _spans_a_line(self._walrus, stmt):
            for node in _walk_no_scopes(stmt):
                if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                    scope.bind(node.target.id, ("expr", node.value, scope))
        for name in _child_block_fields(kind):
            for child in getattr(stmt, name) or ():
                if type(child) is ast.match_case:
                    for inner in child.body:
                        self._scan_stmt(inner, scope, by_tree)
                else:
                    self._scan_stmt(child, scope, by_tree)

    def _bind_target(self, target: ast.AST, value, scope: Scope) -> None:
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

    def bind_loop_target(self, target: ast.AST, iterable: ast.AST, scope: Scope,
                         iter_scope: Scope) -> None:
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

    def _note_self_attr(self, target: ast.AST, source: tuple, scope: Scope) -> None:
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

    def _def_scope(self, d: Definition, parent: Scope, by_tree: dict) -> None:
        module = parent.module
        self.defs[d.node_id] = d
        if isinstance(d.tree, ast.ClassDef):
            scope = Scope("class", module, d.node_id, parent, d)
            self.def_scopes[d.node_id] = scope
            self.scan_block(d.tree.body, scope, by_tree)
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
        scope = Scope("function", module, d.node_id, parent, d)
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
        self.scan_block(d.tree.body, scope, by_tree)


def _spans_a_line(lines: tuple[int, ...], stmt: ast.AST) -> bool:
    """Whether one of the ascending `lines` falls within the statement's lines."""
    i = bisect.bisect_left(lines, stmt.lineno)
    return i < len(lines) and lines[i] <= (stmt.end_lineno or stmt.lineno)


def _walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """Expressions of one statement, not entering nested definitions or lambdas."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.Lambda, ast.comprehension, ast.ExceptHandler)):
            continue
        yield child
        yield from _walk_no_scopes(child)


@functools.lru_cache(maxsize=None)
def _child_block_fields(kind: type) -> tuple[str, ...]:
    """Fields of a statement type that nest statements (if/for/while/try/with/match), in
    the order scanning visits them: body, orelse, finalbody, handlers, cases."""
    return tuple(f for f in ("body", "orelse", "finalbody", "handlers", "cases") if f in kind._fields)


def trim_file(pf: ParsedFile) -> None:
    """Let a scanned file's tree go: its definitions keep their headers, all that
    resolution asks of them later (the bindings keep the expressions they hold)."""
    for d in pf.definitions:
        d.tree.body = []      # in place: nothing else holds the file's tree
    pf.tree = None
    pf.text = None


def _is_property(tree: ast.AST) -> bool:
    return any(annotation_name(d).rsplit(".", 1)[-1] in _PROPERTY_DECORATORS
               for d in tree.decorator_list)


def _is_static(tree: ast.AST) -> bool:
    return any(annotation_name(d) in ("staticmethod",) for d in tree.decorator_list)


def _is_classmethod(tree: ast.AST) -> bool:
    return any(annotation_name(d) in ("classmethod",) for d in tree.decorator_list)
