"""JavaScript and TypeScript (one family: either imports the other's files).

- Relative specifiers (`./x`, `../x`) reach a file as written, with one of `EXTENSIONS`
  added, as `x/index.*`, or (TypeScript's habit) `./x.js` written for `./x.ts`. Package
  specifiers reach nothing in the repository.
- A bare `f()` is, innermost first: a function nested in the caller or a function around
  it; nothing, when a parameter or variable of one of those functions binds `f` (`ScopeFact`);
  a name an import binds (shadowing a same-named definition of the file): a named import is
  the imported file's top-level definition of that name (following `export ... from` one
  file further, a few times), a default import or a called `require` the imported file's
  top-level definition of the local name, and an import of a package nothing; else the
  file's top-level function of that name, unless it is a member of an object
  (`res.send = function send` binds no `send`).
- `this.f()` (or `self.f()` after `var self = this`) is, for a function that is a member
  of an object (`res.json = function ...`, `A.prototype = {...}`, an object literal's key),
  that object's member `f` (its own name or another it is assigned to, `res.set =
  res.header = function`), unless it is an arrow function (its `this` is that of the code
  around it); inside a class, the class's member, then its base classes'; in a
  constructor function `A` or `A.prototype.g`, a member of `A`. `super.f()` is a member of
  the base classes; `X.f()` with `X` a class is its static member, with `X` an object of the
  file its member, with `X` a namespace import (`* as ns`, `const ns = require()`) the
  file's top-level `f`, with `X` an import of a package nothing; `new X()` is the class (or
  constructor function) X.
- Any other receiver (a parameter or variable among them) reaches the one method of that
  name in the file and the files it imports, if there is exactly one.
"""

from __future__ import annotations

import posixpath
import re

from codenib.compiler.lang.facts import CallFact, ImportFact, ScopeFact
from codenib.compiler.lang.facts_graph import Def, Repo, Rules, family, norm_join

EXTENSIONS: tuple[str, ...] = (".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs")
#: How many `export ... from` hops a named import is followed through.
MAX_REEXPORT_HOPS = 4
#: A receiver that is one name (not `a.b`, not a call).
_NAME = re.compile(r"[A-Za-z_$][\w$]*")


class JsRules(Rules):
    def import_targets(self, repo: Repo, rel: str, fact: ImportFact) -> tuple[str, ...]:
        spec = fact.spec
        if not spec.startswith((".", "/")):
            return ()
        base = norm_join(posixpath.dirname(rel), spec.lstrip("/") if spec.startswith("/") else spec)
        if base is None:
            return ()
        candidates = [base] + [base + ext for ext in EXTENSIONS]
        stem, ext = posixpath.splitext(base)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            candidates += [stem + e for e in (".ts", ".tsx", ".mts", ".cts")]
        candidates += [posixpath.join(base, "index" + e) if base else "index" + e for e in EXTENSIONS]
        for c in candidates:
            if c in repo.paths:
                return (c,)
        return ()

    def setup(self, repo: Repo, files: list[str]) -> None:
        #: node id -> its scope; (file, object) -> member name -> the function assigned to it
        self._scopes: dict[str, ScopeFact] = {}
        self._objects: dict[tuple[str, str], dict[str, Def]] = {}
        for rel in files:
            facts = repo.facts.get(rel)
            for scope in facts.scopes if facts is not None else ():
                self._scopes[scope.node_id] = scope
                d = repo.by_id.get(scope.node_id)
                if d is not None and scope.owner:
                    members = self._objects.setdefault((rel, scope.owner), {})
                    for name in (d.name,) + scope.aliases:
                        members.setdefault(name, d)

    def _binding(self, repo: Repo, rel: str, local: str) -> tuple[str, str, str] | None:
        """(how, file, imported name) of a local name an import of a repository file binds."""
        bound = self._bound(repo, rel, local)
        return bound[:3] if bound is not None and bound[1] else None

    def _bound(self, repo: Repo, rel: str, local: str) -> tuple[str, str, str, str] | None:
        """(how, file or '' for a package, imported name, import kind) of a local name any
        import binds: `module`, `default` or `named`."""
        for fact, targets in repo.imports(rel):
            if fact.kind in ("export_from", "dynamic_import"):
                continue
            for imported, alias in fact.names:
                if alias == local:
                    how = "module" if imported == "*" else "default" if imported == "default" else "named"
                    return how, targets[0] if targets else "", imported, fact.kind
        return None

    def _export(self, repo: Repo, rel: str, name: str, hops: int = 0) -> Def | None:
        """A file's top-level definition of an exported name (re-exports followed)."""
        d = repo.top(rel, name)
        if d is not None or hops >= MAX_REEXPORT_HOPS:
            return d
        for fact, targets in repo.imports(rel):
            if fact.kind != "export_from" or not targets:
                continue
            if not fact.names:          # `export * from './x'`
                d = self._export(repo, targets[0], name, hops + 1)
            else:
                d = next((self._export(repo, targets[0], imported, hops + 1)
                          for imported, alias in fact.names if alias == name), None)
            if d is not None:
                return d
        binding = self._binding(repo, rel, name)      # `import {a} from`, then `export {a}`
        if binding is not None and binding[0] == "named":
            return self._export(repo, binding[1], binding[2], hops + 1)
        return None

    def _local(self, repo: Repo, rel: str, plain: str, name: str,
               first: Def | None = None) -> tuple[str, Def | None] | None:
        """What the functions around `plain` (innermost first; `first` is the definition
        at `plain` itself when known) make of `name`: ("def", d) for a function nested in
        one (not a class member), ("this", function) for an alias of `this`, ("bind", None)
        for a parameter or variable; None when none binds it."""
        defs = repo.by_file.get(rel, {})
        while plain:
            holder = first if first is not None and plain == first.plain else defs.get(plain)
            if holder is None or holder.kind != "class":
                d = defs.get(f"{plain}.{name}")
                if d is not None and d.kind != "method" and not self._owned(d):
                    return "def", d     # not `A.prototype.name` nor an object's member
            scope = self._scopes.get(holder.node_id) if holder is not None else None
            if scope is not None:
                if name in scope.this_aliases:
                    return "this", holder
                if name in scope.binds:
                    return "bind", None
            plain = plain.rpartition(".")[0]
        return None

    def _name(self, repo: Repo, rel: str, name: str, context: str, caller: Def | None = None) -> Def | None:
        """What a bare name denotes in `rel` inside `context` (a plain qualname)."""
        local = self._local(repo, rel, context, name, caller)
        if local is not None:
            return local[1] if local[0] == "def" else None
        bound = self._bound(repo, rel, name)
        if bound is not None:
            how, target, imported, kind = bound
            if not target:
                return None         # a package's: never the file's own definition
            if how == "named":
                return self._export(repo, target, imported)
            if how == "default" or kind == "require":       # `module.exports = function name`
                return repo.top(target, name)
            return None
        d = repo.top(rel, name)
        if d is None or not self._owned(d):
            return d
        # `const o = {check() {}}` before `function check`: the function is `check#2`
        return next((other for other in repo.by_name.get((family(rel), name), ())
                     if other.file == rel and other.plain == name and not self._owned(other)), None)

    def _owned(self, d: Def) -> bool:
        """Whether a function is an object's member (binding no name of its own)."""
        scope = self._scopes.get(d.node_id)
        return scope is not None and bool(scope.owner)

    def resolve_type(self, repo: Repo, rel: str, text: str, context: str) -> Def | None:
        head, _, last = text.rpartition(".")
        if head:
            binding = self._binding(repo, rel, head)
            if binding is None or binding[0] != "module":
                return None
            d = self._export(repo, binding[1], last)
        else:
            d = self._name(repo, rel, last, "")
        return d if d is not None and d.kind == "class" else None

    def resolve_call(self, repo: Repo, rel: str, call: CallFact) -> Def | None:
        caller = repo.caller_def(call)
        context = caller.plain if caller is not None else ""
        receiver = call.receiver
        if call.kind == "new":
            if receiver:
                return self.resolve_type(repo, rel, f"{receiver}.{call.callee}", context)
            d = self._name(repo, rel, call.callee, context, caller)
            return d if d is not None and d.kind in ("class", "function") else None
        if not receiver:
            return self._name(repo, rel, call.callee, context, caller)
        if receiver == "this":
            return self._this_member(repo, rel, caller, call.callee)
        if receiver == "super":
            return self._super_member(repo, rel, caller, call.callee)
        if _NAME.fullmatch(receiver):
            local = self._local(repo, rel, context, receiver, caller)
            if local is not None:
                if local[0] == "this":
                    return self._this_member(repo, rel, local[1], call.callee)
                if local[0] == "def":
                    return None     # a function object's own property: nothing we know
            else:
                bound = self._bound(repo, rel, receiver)
                if bound is not None and not bound[1]:
                    return None     # a package's module or export
                if bound is not None and bound[0] == "module":
                    return self._export(repo, bound[1], call.callee)
                members = self._objects.get((rel, receiver))
                if members is not None:
                    return members.get(call.callee)
                owner = self._name(repo, rel, receiver, context, caller)
                if owner is not None and owner.kind == "class":
                    return repo.member(repo.key_of(owner), call.callee)
                if owner is not None:
                    return None         # a function object's own property: nothing we know
        return repo.unique_method(rel, call.callee, exclude=caller)

    def _this_member(self, repo: Repo, rel: str, caller: Def | None, name: str) -> Def | None:
        """`this.name` inside `caller`: a member of the object, class or constructor
        function the nearest function around it belongs to."""
        if caller is None:
            return None
        defs = repo.by_file.get(rel, {})
        plain = caller.plain
        while plain:
            d = caller if plain == caller.plain else defs.get(plain)
            if d is not None:
                scope = self._scopes.get(d.node_id)
                if scope is not None and scope.owner and not scope.arrow:
                    return self._object_member(repo, rel, scope.owner, name)
                if d.kind == "class":
                    return self._object_member(repo, rel, d.plain, name)
                if d.kind == "function":        # a constructor function's own members, if any
                    found = self._object_member(repo, rel, d.plain, name)
                    if found is not None:
                        return found
            plain = plain.rpartition(".")[0]
        # `A.prototype.f` with no `A` in the file: `A`'s members written here
        return repo.enclosing_member(rel, caller, name)

    def _object_member(self, repo: Repo, rel: str, obj: str, name: str) -> Def | None:
        """A member of the class, constructor function or object `obj` of `rel` (bases
        followed), or a function assigned to it."""
        found = repo.member(self.container_key(rel, obj), name)
        return found if found is not None else self._objects.get((rel, obj), {}).get(name)

    def _super_member(self, repo: Repo, rel: str, caller: Def | None, name: str) -> Def | None:
        plain = caller.container if caller is not None else ""
        while plain:
            for base in repo.bases.get(self.container_key(rel, plain), ()):
                found = repo.member(repo.key_of(base), name)
                if found is not None:
                    return found
            plain = plain.rpartition(".")[0]
        return None


RULES = JsRules
