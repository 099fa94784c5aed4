"""The edges of one file: contains, imports, and the calls, references and inherits that a
walk of its syntax tree finds, each attributed to the innermost definition.

A file is resolved in units (`file_units`): each function or method defined directly in
the module or in a class body there is one, with its header and everything nested in it;
the rest of the file (module code, class bodies, other definitions) is another. Each unit
is resolved with caches emptied first (`Resolver.begin_unit`), so its edges depend on its
own syntax and on the bindings it reads, never on the other units: a build resolves again
only the units whose text or reads changed.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from typing import Iterable

from codenib.compiler.lang.python_parse import ParsedFile
from codenib.compiler.lang.python_resolve.import_edges import import_edges
from codenib.compiler.lang.python_resolve.infer import Resolver
from codenib.compiler.lang.python_resolve.scopes import Scope
from codenib.compiler.lang.python_resolve.syntax import FUNC_TYPES, generic_origin
from codenib.core.types import make_node_id, source_lines


@dataclass(frozen=True, slots=True)
class Unit:
    """A part of a file whose edges are resolved on their own."""

    unit_id: str                          # the definition's node id; the file's path for the rest
    node: ast.AST | None                  # the definition (None: the rest of the file)
    classes: tuple[ast.ClassDef, ...]     # the classes it is defined in, outermost first
    text_hash: str                        # of its source text (the rest: the file without the units)


def file_units(pf: ParsedFile) -> list[Unit]:
    """The rest of the file first, then each function or method defined directly in the
    module or in a class body there, in order of appearance (needs `pf.text`)."""
    if pf.tree is None:
        return []
    def_ids = pf.def_ids()
    lines = source_lines(pf.text or "")
    carved: list[tuple[ast.AST, tuple[ast.ClassDef, ...]]] = []

    def carve(body: list[ast.stmt], classes: tuple[ast.ClassDef, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, FUNC_TYPES):
                carved.append((stmt, classes))
            elif isinstance(stmt, ast.ClassDef):
                carve(stmt.body, classes + (stmt,))

    carve(pf.tree.body, ())
    # A unit's edges name its definitions by node id, and a `#N` id counts definitions of the
    # same name elsewhere in the file: the ids a unit owns are part of what it is.
    carved_ids = {id(node) for node, _ in carved}
    owned: dict[int | None, list[str]] = {}
    for d in pf.definitions:
        top = d
        while top is not None and id(top.tree) not in carved_ids:
            top = top.parent
        owned.setdefault(id(top.tree) if top is not None else None, []).append(d.node_id)
    rest = [True] * len(lines)
    units = []
    for node, classes in carved:
        start = min([node.lineno] + [dec.lineno for dec in node.decorator_list])
        end = node.end_lineno or node.lineno
        units.append(Unit(def_ids[id(node)], node, classes,
                          _hash(lines[start - 1:end], owned.get(id(node), ()))))
        # Blank lines right around a definition lie between statements (never inside a
        # token): they go with it, so adding a function leaves the rest's text as it was.
        while start > 1 and not lines[start - 2].strip():
            start -= 1
        while end < len(lines) and not lines[end].strip():
            end += 1
        rest[start - 1:end] = [False] * (end - start + 1)
    file_unit = Unit(make_node_id(pf.rel_path), None, (),
                     _hash((l for l, keep in zip(lines, rest) if keep), owned.get(None, ())))
    return [file_unit] + units


def contains_edges(pf: ParsedFile) -> list[tuple[str, str, str]]:
    """The contains edges of a file: each definition from its parent (or the file)."""
    file_id = make_node_id(pf.rel_path)
    return [(d.parent.node_id if d.parent else file_id, d.node_id, "contains") for d in pf.definitions]


def unit_edges(resolver: Resolver, pf: ParsedFile, unit: Unit, units: list[Unit]
               ) -> list[tuple[str, str, str]]:
    """Every imports, calls, references and inherits edge of one unit, once per occurrence.

    The resolver must be at the start of the unit (`begin_unit`); `units` are the file's.
    """
    if pf.tree is None:
        return []
    file_id = make_node_id(pf.rel_path)
    scope = resolver.file_scope(pf.rel_path)
    # The tree may be a second parse of the file: its definitions are known by node, not
    # by the nodes that pass 1 saw.
    def_ids = pf.def_ids()
    if unit.node is None:
        carved = {id(u.node) for u in units if u.node is not None}
        edges = list(import_edges(resolver, pf.tree.body, scope, file_id, carved))
        visitor = _EdgeVisitor(resolver, scope, file_id, def_ids, carved)
        return edges + visitor.run(pf.tree)
    edges = list(import_edges(resolver, [unit.node], scope, file_id, set()))
    return edges + _EdgeVisitor(resolver, scope, file_id, def_ids, set()).run_unit(unit)


def _hash(lines: Iterable[str], ids: Iterable[str]) -> str:
    text = "\n".join(lines) + "\0" + "\n".join(ids)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class _EdgeVisitor:
    """Walk one module, attributing calls and references to the innermost scope."""

    def __init__(self, resolver: Resolver, module_scope: Scope, file_id: str,
                 def_ids: dict[int, str], skip: set[int]):
        self.r = resolver
        self.def_ids = def_ids                  # id() of a def node -> its node id
        self.module_scope = module_scope
        self.file_id = file_id
        self.skip = skip                        # id() of definitions that are units of their own
        self.edges: list[tuple[str, str, str]] = []

    def run(self, tree: ast.Module) -> list[tuple[str, str, str]]:
        self._visit_block(tree.body, self.module_scope)
        return self.edges

    def run_unit(self, unit: Unit) -> list[tuple[str, str, str]]:
        """One carved definition: header in its class (or module) scope, body in its own."""
        scope = self.module_scope
        for cls in unit.classes:
            by_tree = self._def_for(cls, scope)
            scope = self.r.def_scopes.get(by_tree) if by_tree else None
            if scope is None:
                return self.edges     # the class is not what its name is bound to
        self._visit_def(unit.node, scope)
        return self.edges

    def _visit_block(self, stmts: Iterable[ast.AST], scope: Scope) -> None:
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

    def _narrowed(self, test: ast.AST, body: list[ast.AST], scope: Scope) -> Scope:
        """`scope` where `isinstance(x, C)` holds: x is a C in `body` unless body rebinds x."""
        if scope.kind == "class":
            return scope
        checks = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        checks = [c for c in checks if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                  and c.func.id == "isinstance" and len(c.args) == 2
                  and isinstance(c.args[0], ast.Name)]
        if not checks or self.r.lookup(scope, "isinstance") is not None:
            return scope     # a repository `isinstance` proves nothing
        narrowed: Scope | None = None
        for check in checks:
            name = check.args[0].id
            cls = self.r.infer(check.args[1], scope)
            if cls is None or cls[0] != "class" or _rebinds(body, name):
                continue
            known = self.r.lookup(scope, name)
            if known is not None and known[0] == "instance" and cls[1] in (self.r.mro(known[1]) or ()):
                continue     # already a subclass of C: keep the narrower type
            if narrowed is None:
                narrowed = Scope("narrow", scope.module, scope.owner, scope, scope.defn, transient=True)
            narrowed.bind(name, ("isinstance", cls[1]))
        return narrowed or scope

    def _visit(self, node: ast.AST, scope: Scope) -> None:
        # Dispatch on the exact node type: this runs for every node of the file.
        kind = type(node)
        if kind in _LEAVES:
            return
        if kind is ast.Name:
            if type(node.ctx) is ast.Load:
                self._reference(node, scope)
            return
        special = _SPECIAL.get(kind)
        if special is None:
            # Inline (not a helper): deep expressions recurse one frame per level, as before.
            for name in node._fields:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    if value and isinstance(value[0], ast.stmt):
                        self._visit_block(value, scope)     # a block: narrowing flows through it
                    else:
                        for item in value:
                            if isinstance(item, ast.AST):
                                self._visit(item, scope)
                elif isinstance(value, ast.AST):
                    self._visit(value, scope)
        elif special == "def":
            self._visit_def(node, scope)
        elif special == "if":
            self._visit(node.test, scope)
            self._visit_block(node.body, self._narrowed(node.test, node.body, scope))
            self._visit_block(node.orelse, scope)
        elif special == "call":
            self._call(node, scope)
        elif special == "attribute":
            if type(node.ctx) is ast.Load:
                self._reference(node, scope)
            else:
                self._visit_fields(node, scope)
        elif special == "lambda":
            inner = self._local_scope(scope)
            for arg in _all_args(node.args):
                inner.bind(arg.arg, ("opaque",))
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
                self._visit(default, scope)
            self._visit(node.body, inner)
        elif special == "comprehension":
            inner = self._local_scope(scope)
            for i, gen in enumerate(node.generators):
                self._visit(gen.iter, inner)
                # The first iterable is evaluated outside the comprehension, the rest inside.
                self.r.bind_loop_target(gen.target, gen.iter, inner, inner if i else scope)
                for cond in gen.ifs:
                    self._visit(cond, inner)
            for part in (("key", "value") if kind is ast.DictComp else ("elt",)):
                self._visit(getattr(node, part), inner)
        elif special == "arg":
            if node.annotation is not None:
                self._annotation(node.annotation, scope)
        elif special == "annassign":
            self._annotation(node.annotation, scope)
            if node.value is not None:
                self._visit(node.value, scope)
            self._visit(node.target, scope)
        # "import": nothing (imports edges come from `import_edges`)

    def _visit_fields(self, node: ast.AST, scope: Scope) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                if value and isinstance(value[0], ast.stmt):
                    self._visit_block(value, scope)     # a block: narrowing flows through it
                else:
                    for item in value:
                        if isinstance(item, ast.AST):
                            self._visit(item, scope)
            elif isinstance(value, ast.AST):
                self._visit(value, scope)

    def _local_scope(self, scope: Scope) -> Scope:
        """A lambda or comprehension scope: its own names, edges still owned by `scope`."""
        return Scope("function", scope.module, scope.owner, scope, scope.defn, transient=True)

    def _visit_def(self, node: ast.AST, scope: Scope) -> None:
        if id(node) in self.skip:
            return            # a unit of its own
        by_tree = self._def_for(node, scope)
        # Decorators, bases, defaults and annotations run in the enclosing scope.
        for dec in node.decorator_list:
            self._visit(dec, scope)
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                self._visit(base, scope)
                value = self.r.infer(generic_origin(base), scope)
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

    def _def_for(self, node: ast.AST, scope: Scope) -> str | None:
        while scope.kind == "narrow" and scope.parent is not None:
            scope = scope.parent     # definitions are bound in the real scope
        node_id = self.def_ids.get(id(node))
        self.r.note_binding(scope, node.name)
        for source in scope.bindings.get(node.name, ()):
            if source[0] == "def" and source[1] == node_id:
                return node_id
        return None

    def _call(self, node: ast.Call, scope: Scope) -> None:
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

    def _visit_receiver(self, node: ast.AST, scope: Scope) -> None:
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

    def _reference(self, node: ast.AST, scope: Scope) -> None:
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

    def _annotation(self, ann: ast.AST, scope: Scope) -> None:
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


#: Node types with nothing to resolve inside: constants, contexts and operators.
_LEAVES = frozenset({ast.Constant, *ast.expr_context.__subclasses__(), *ast.boolop.__subclasses__(),
                     *ast.operator.__subclasses__(), *ast.unaryop.__subclasses__(),
                     *ast.cmpop.__subclasses__()})
#: Node types `_EdgeVisitor._visit` handles itself (the rest: their fields in order).
_SPECIAL = {
    ast.FunctionDef: "def", ast.AsyncFunctionDef: "def", ast.ClassDef: "def", ast.If: "if",
    ast.Import: "import", ast.ImportFrom: "import", ast.Call: "call", ast.Attribute: "attribute",
    ast.Lambda: "lambda", ast.ListComp: "comprehension", ast.SetComp: "comprehension",
    ast.GeneratorExp: "comprehension", ast.DictComp: "comprehension", ast.arg: "arg",
    ast.AnnAssign: "annassign",
}


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


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return args.posonlyargs + args.args + args.kwonlyargs + extra
