"""The value of an expression or annotation: constructor calls, return types, `super()`,
builtins, and typed containers (`List[X]`, `Dict[K, X]`, `Tuple[A, B]`)."""

from __future__ import annotations

import ast

from codenib.compiler.lang.python_resolve.names import MAX_DEPTH, Names, merge, tuple_item
from codenib.compiler.lang.python_resolve.scopes import Scope
from codenib.compiler.lang.python_resolve.syntax import annotation_name, is_none, is_super_call
from codenib.compiler.lang.python_resolve.values import Value

#: Annotations around one type: the name holds the type inside them.
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


class Resolver(Names):
    """The whole resolver: bindings, name lookup and expression inference."""

    def infer(self, expr: ast.AST, scope: Scope, depth: int = 0) -> Value | None:
        """The value an expression evaluates to, when it can be named."""
        if expr is None:
            return None
        if depth > MAX_DEPTH:
            return self._cutoff()
        if isinstance(expr, ast.Name):
            return self.lookup(scope, expr.id, depth + 1)
        if isinstance(expr, ast.Attribute):
            if is_super_call(expr.value):
                cls = self.enclosing_class(scope)
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
            return merge([self.infer(v, scope, depth + 1) for v in operands if not is_none(v)])
        if isinstance(expr, ast.Await):
            return self.infer(expr.value, scope, depth + 1)
        return None

    def _subscript(self, expr: ast.Subscript, scope: Scope, depth: int) -> Value | None:
        """`xs[i]`, `m[k]` of typed containers, and `obj[k]` through a typed `__getitem__`."""
        value = self.infer(expr.value, scope, depth + 1)
        if value is None:
            return None
        if value[0] == "map" or (value[0] == "iter" and not isinstance(expr.slice, ast.Slice)):
            return ("instance", value[1])
        if value[0] == "tuple" and isinstance(expr.slice, ast.Constant):
            return tuple_item(value, expr.slice.value)
        if value[0] == "instance":
            getter = self.class_member(value[1], "__getitem__", instance=True, depth=depth + 1)
            if getter is not None and getter[0] == "func":
                return self.return_type(getter[1], depth + 1)
        return None

    def _builtin_result(self, call: ast.Call, scope: Scope, depth: int) -> Value | None:
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

    def _container_method(self, call: ast.Call, scope: Scope, depth: int) -> Value | None:
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
        self.note_def(func_id)
        d = self.defs.get(func_id)
        scope = self.def_scopes.get(func_id)
        if d is None or scope is None or getattr(d.tree, "returns", None) is None:
            return None
        ann = d.tree.returns
        if annotation_name(ann) in ("Self", "te.Self", "typing_extensions.Self", "t.Self"):
            cls = self.enclosing_class(scope)
            return ("instance", cls) if cls else None
        return self.annotation_type(ann, scope.parent, depth + 1)

    def annotation_type(self, ann: ast.AST, scope: Scope, depth: int = 0) -> Value | None:
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
            parts = [p for p in (ann.left, ann.right) if not is_none(p)]
            return self.annotation_type(parts[0], scope, depth + 1) if len(parts) == 1 else None
        if isinstance(ann, ast.Subscript):
            head = annotation_name(ann.value).rsplit(".", 1)[-1]
            if head in _WRAPPER_ANNOTATIONS or head == "Union":
                inner = ann.slice
                elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
                elts = [e for e in elts if not is_none(e)]
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

    def _iterable_annotation(self, head: str, args: ast.AST, scope: Scope, depth: int) -> Value | None:
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


    def enclosing_class(self, scope: Scope | None) -> str | None:
        """The class a method's scope (or a class body) belongs to."""
        if self.reads is not None:
            # The walk reads each definition's kind and parent (a function made a class).
            walk = scope
            while walk is not None and walk.kind != "module":
                if not walk.transient and not self.inside(walk.owner):
                    self.reads.add(("d", walk.owner))
                walk = walk.parent
        return _enclosing_class(scope)


def _enclosing_class(scope: Scope | None) -> str | None:
    while scope is not None:
        if scope.kind == "function" and scope.defn is not None and scope.defn.kind == "method":
            return scope.defn.parent.node_id
        if scope.kind == "class":
            return scope.owner
        scope = scope.parent
    return None
