"""JavaScript and TypeScript (one family: either imports the other's files).

- Relative specifiers (`./x`, `../x`) reach a file as written, with one of `EXTENSIONS`
  added, as `x/index.*`, or (TypeScript's habit) `./x.js` written for `./x.ts`. Package
  specifiers reach nothing in the repository.
- A bare `f()` is a function in the caller (nested), at the top of the file, or a name an
  import binds: a named import is the imported file's top-level definition of that name
  (following `export ... from` one file further, a few times), a default import the
  imported file's top-level definition of the local name, a namespace import (`* as ns`,
  `const ns = require()`) makes `ns.f()` the file's top-level `f`.
- A name that a module-level `require`/`import` binds is that binding, never a same-named
  definition of the file (a package's binding reaches nothing).
- `this.f()` is a member of the enclosing class (or of the function whose `prototype` it
  was assigned to), then of its base classes; in a top-level function (a function assigned
  to an object's property, `res.json = function json`), the file's top-level function `f`; `super.f()` of the base classes;
  `X.f()` with `X` a class is its static member; `new X()` is the class X.
- Any other receiver reaches the one method of that name in the file and the files it
  imports, if there is exactly one.
"""

from __future__ import annotations

import posixpath

from codenib.compiler.lang.facts import CallFact, ImportFact
from codenib.compiler.lang.facts_graph import Def, Repo, Rules, norm_join

EXTENSIONS: tuple[str, ...] = (".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs")
#: How many `export ... from` hops a named import is followed through.
MAX_REEXPORT_HOPS = 4


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

    def _binding(self, repo: Repo, rel: str, local: str) -> tuple[str, str, str] | None:
        """(how, file, imported name) of a local name an import binds."""
        for fact, targets in repo.imports(rel):
            if not targets or fact.kind == "export_from":
                continue
            for imported, alias in fact.names:
                if alias == local:
                    how = "module" if imported == "*" else "default" if imported == "default" else "named"
                    return how, targets[0], imported
        return None

    def _imported(self, repo: Repo, rel: str, local: str) -> bool:
        """Whether an import or `require` of `rel` binds `local` (a package's too)."""
        return any(alias == local for fact, _ in repo.imports(rel) if fact.kind != "export_from"
                   for _, alias in fact.names)

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

    def _name(self, repo: Repo, rel: str, name: str, context: str) -> Def | None:
        """What a bare name denotes in `rel` inside `context` (a plain qualname)."""
        plain = context
        while plain:
            d = repo.by_file.get(rel, {}).get(f"{plain}.{name}")
            holder = repo.by_file.get(rel, {}).get(plain)
            if d is not None and (holder is None or holder.kind != "class"):
                return d            # a function nested in the caller (not a class member)
            plain = plain.rpartition(".")[0]
        binding = self._binding(repo, rel, name)
        if binding is None:
            # A module-level `require`/`import` binding shadows a definition of the same
            # name (`var send = require('send')` beside `res.send = function send`): a
            # package's binding reaches nothing in the repository.
            return None if self._imported(repo, rel, name) else repo.top(rel, name)
        how, target, imported = binding
        if how == "named":
            return self._export(repo, target, imported)
        if how == "default":
            return repo.top(target, name)
        return None

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
        if call.kind == "new":
            return self.resolve_type(repo, rel, f"{call.receiver}.{call.callee}" if call.receiver else call.callee,
                                     context)
        if not call.receiver:
            return self._name(repo, rel, call.callee, context)
        if call.receiver == "this":
            found = repo.enclosing_member(rel, caller, call.callee)
            if found is None and caller is not None and not caller.container:
                # A function assigned to an object's property (`res.json = function json`)
                # is read as a top-level function, as are its siblings (`res.send`): `this`
                # is that object, so `this.send()` is the sibling of that name.
                d = repo.top(rel, call.callee)
                if d is not None and d.kind == "function" and d.node_id != caller.node_id:
                    return d
            return found
        if call.receiver == "super":
            return self._super_member(repo, rel, caller, call.callee)
        if "." not in call.receiver and "(" not in call.receiver:
            binding = self._binding(repo, rel, call.receiver)
            if binding is not None and binding[0] == "module":
                return self._export(repo, binding[1], call.callee)
            owner = self._name(repo, rel, call.receiver, context)
            if owner is not None and owner.kind == "class":
                return repo.member(repo.key_of(owner), call.callee)
            if owner is not None:
                return None         # a function object's own property: nothing we know
        return repo.unique_method(rel, call.callee, exclude=repo.caller_def(call))

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
