"""What a name, module attribute or class member means: lookups through scopes, star
imports, module tables and method resolution orders, with cycle guards and caches."""

from __future__ import annotations

import ast
from typing import Callable, Iterable

from codenib.compiler.lang.python_resolve.scopes import Bindings, Scope
from codenib.compiler.lang.python_resolve.syntax import annotation_name, generic_origin
from codenib.compiler.lang.python_resolve.values import Value

#: Inference recursion cap: deeper chains are rare and usually cyclic. 14, not 12: with caches
#: per unit, a chain is always followed from its start (no value cached by an earlier file at
#: a shallower depth), and at 12 sympy lost 19 of 166,533 edges; at 14 as fast (measured),
#: at 20 the graph stage took 2.4x as long.
MAX_DEPTH = 14
#: An external base's place in a linearisation: it may define any dunder method.
_EXTERNAL_BASE = "?"
#: External bases that define no methods a class would override (object comes last anyway).
_NEUTRAL_BASES = frozenset({"object", "Generic", "Protocol", "ABC"})


class Names(Bindings):
    """Name lookup over the bindings; expressions are typed by the `infer` layer above it
    (`infer`, `annotation_type`, `return_type`), which this layer calls back into."""

    def __init__(self, rel_paths: Iterable[str], root_package: str | None = None,
                 on_demand: Callable[[str], None] | None = None):
        super().__init__(rel_paths, root_package, on_demand)
        self._attr_cache: dict[tuple[str, str], Value | None] = {}
        self._building: set[str] = set()
        self._resolving: set[tuple] = set()
        self._mro_cache: dict[str, list[str]] = {}
        self._touched: list[Scope] = []     # scopes whose cache holds something
        self._unit = ""                     # the definition being resolved ('' the rest)
        self._unit_prefix = "\0"           # node ids nested in it start with it
        # Guards (cycles, depth cap) answer None without knowing the true value; results
        # computed while one fired are not cached, or a later lookup would inherit the None.
        self._cutoffs = 0

    def begin_unit(self, unit: str = "", record: bool = False) -> None:
        """Start resolving one unit of a file (`edges.file_units`), with every cache emptied.

        Guards make a cached answer depend on what was asked before it (a value cached
        at a shallow depth is returned where a fresh evaluation would hit the depth cap):
        with caches per unit, a unit's edges depend on the repository alone, never on what
        was resolved before it, which is what lets a build resolve only some units again.
        With `record`, every binding the unit reads outside itself is noted in `reads`
        (`unit`: the node id of a definition; '' for the rest of the file, which notes all).
        """
        for scope in self._touched:
            scope.cache.clear()
        self._touched.clear()
        self._attr_cache.clear()
        self._mro_cache.clear()
        self._unit = unit
        self._unit_prefix = unit + "." if unit else "\0"
        self.reads = set() if record else None

    def end_unit(self) -> set[tuple]:
        """Finish a unit started with `begin_unit`; returns the keys it read."""
        reads = self.reads if self.reads is not None else set()
        self.reads = None
        self._unit = ""
        self._unit_prefix = "\0"
        return reads

    def inside(self, node_id: str) -> bool:
        """Whether a node id is the current unit's definition or nested in it (its own
        syntax, which its text covers: reads of it are not noted)."""
        return node_id == self._unit or node_id.startswith(self._unit_prefix)

    def note_def(self, node_id: str) -> None:
        """Record a read of a definition's header and kind."""
        if self.reads is not None and not self.inside(node_id):
            self.reads.add(("d", node_id))

    def note_binding(self, scope: Scope, name: str) -> None:
        """Record a read of what a (pass 1) scope binds to `name`."""
        if self.reads is not None and not scope.transient and not self.inside(scope.owner):
            self.reads.add(("n", scope.owner, name))

    def lookup(self, scope: Scope, name: str, depth: int = 0) -> Value | None:
        """What `name` means when read inside `scope` (Python's LEGB, classes skipped)."""
        if depth > MAX_DEPTH:
            return self._cutoff()
        current: Scope | None = scope
        first = True
        reads = self.reads
        while current is not None:
            if reads is not None and not current.transient and not self.inside(current.owner):
                reads.add(("n", current.owner, name))
            if current.kind == "class" and not first:
                current = current.parent
                continue
            if name in current.globals_ and current.kind != "module":
                current = self._root(current)
                continue
            if name in current.bindings:
                return self._binding_value(current, name, depth)
            if current.kind == "module" and reads is not None and not self.inside(current.owner):
                # Whether the module star-imports anything decides where the lookup goes on.
                reads.add(("n", current.owner, "*"))
            if current.kind == "module" and "*" in current.bindings:
                for source in current.bindings["*"]:
                    value = self.module_attr(source[1], name, depth + 1)
                    if value is not None:
                        return value
            first = False
            current = current.parent
        return None

    def _note_member(self, class_id: str, attr: str) -> None:
        """Record a read of what a class binds to `attr` (member, getter, attributes)."""
        if self.reads is not None and not self.inside(class_id):
            self.reads.add(("c", class_id, attr))

    def _root(self, scope: Scope) -> Scope:
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def _binding_value(self, scope: Scope, name: str, depth: int) -> Value | None:
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
            if not scope.cache:
                self._touched.append(scope)
            scope.cache[name] = value
        return value

    def _sources_value(self, sources: list[tuple], depth: int) -> Value | None:
        """The value of a name bound by `sources`: its declared class if annotated, else all."""
        declared = merge([self._source_value(s, depth) for s in sources if s[0] == "annot"])
        if declared is not None and declared[0] in ("instance", "class"):
            # `x: Base = Impl()`: a repository class in the annotation is what the code
            # promises (as type checkers and jedi read it).
            return declared
        # A container annotation (`x: Mapping[str, V] = Cache()`) says less than the value.
        assigned = merge([self._source_value(s, depth) for s in sources if s[0] != "annot"])
        return assigned if assigned is not None else declared

    def _cutoff(self) -> None:
        """A guard's answer: unknown, and remembered so that it is not cached."""
        self._cutoffs += 1
        return None

    def _source_value(self, source: tuple, depth: int) -> Value | None:
        kind = source[0]
        if kind == "def":
            self.note_def(source[1])
            d = self.defs.get(source[1])
            if d is None:
                return None
            return ("class" if d.kind == "class" else "func", d.node_id)
        if kind == "module":
            return ("module", source[1]) if self.has_module_prefix(source[1]) else None
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
            return tuple_item(self.infer(expr, source[2], depth), index)
        if kind in ("elem", "pair_value"):
            value = self.infer(source[1], source[2], depth)
            wanted = "iter" if kind == "elem" else "pairs"
            return ("instance", value[1]) if value is not None and value[0] == wanted else None
        if kind in ("self", "isinstance"):
            return ("instance", source[1])
        if kind == "cls":
            return ("class", source[1])
        return None

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
            scope = self.module_scope(module)
            if scope is not None and self.reads is not None:
                self.reads.add(("n", scope.owner, attr))
                self.reads.add(("n", scope.owner, "*"))
            if scope is not None and (attr in scope.bindings or "*" in scope.bindings):
                value = self.lookup(scope, attr, depth + 1)
            sub = f"{module}.{attr}" if module else attr
            if value is None and self.has_module_prefix(sub):
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
            self._note_member(cid, attr)
            members = self.class_members.get(cid, {})
            if attr in members:
                getter = self.class_properties.get(cid, {}).get(attr)
                if getter is not None and instance:
                    # An instance's property reads as what its getter returns, not the getter.
                    return self.return_type(getter, depth + 1)
                return self._source_value(("def", members[attr]), depth + 1)
            sources = self.class_attr_sources.get(cid, {}).get(attr)
            if sources:
                return self._attr_sources_value(cid, attr, sources, depth)
        return None

    def _attr_sources_value(self, class_id: str, attr: str, sources: list[tuple], depth: int) -> Value | None:
        """The value of a class's attribute from its sources, with a cycle guard: reading
        `self.pos` inside one of the sources of `self.pos` (`pos = self.pos; ...; self.pos
        = pos` in many methods) is a cycle, and without the guard every path through the
        methods' locals was walked until the depth cap (sphinx's C++ parser: 0.6 s a method)."""
        key = ("cattr", class_id, attr)
        if key in self._resolving:
            return self._cutoff()
        self._resolving.add(key)
        try:
            return self._sources_value(sources, depth + 1)
        finally:
            self._resolving.discard(key)

    def property_read(self, node: ast.Attribute, scope: Scope) -> str | None:
        """The getter that `instance.attr` runs when attr is a property, else None."""
        base = self.infer(node.value, scope)
        if base is None or base[0] != "instance":
            return None
        for cid in self.mro(base[1]) or ():
            if cid == _EXTERNAL_BASE:
                continue
            self._note_member(cid, node.attr)
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
        self.note_def(class_id)
        d = self.defs.get(class_id)
        scope = self.def_scopes.get(class_id)
        if d is None or scope is None:
            return []
        out: list[str | None] = []
        for base in d.tree.bases:
            value = self.infer(generic_origin(base), scope.parent, 0)
            if value is not None and value[0] == "class":
                out.append(value[1])
            elif annotation_name(generic_origin(base)).rsplit(".", 1)[-1] not in _NEUTRAL_BASES:
                out.append(None)
        return out


def merge(values: list[Value | None]) -> Value | None:
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


def tuple_item(value: Value | None, index: object) -> Value | None:
    """Item `index` of a ("tuple", ...) value, as an instance, when its class is known."""
    if value is None or value[0] != "tuple" or not isinstance(index, int) or isinstance(index, bool):
        return None
    ids = value[1].split("\n")
    if not -len(ids) <= index < len(ids) or not ids[index]:
        return None
    return ("instance", ids[index])
