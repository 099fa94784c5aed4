"""C and C++ (one family: headers are shared), names are global across the repository.

- `#include "x.h"` reaches the including file's folder's `x.h`, else `include/x.h`,
  `src/x.h` or `x.h` at the root, else the one repository file whose path ends in `/x.h`;
  `#include <x.h>` the same without the including folder and the suffix match (a system
  header reaches a repository file only through the usual include folders).
- Members of a class or namespace are collected by qualified name across files, so an
  out-of-line `A::f` in a `.cc` file is a member of the class `A` its header declares.
- `f()` is a member of an enclosing class or namespace (innermost first, C++), a function
  of the file, of the files it includes (directly or through them), of the source file
  sharing an included header's stem (`x.h` -> `x.c`), else the one function of that name
  in the repository's C and C++ files. `A::f()` looks `A` up from the caller's namespaces
  outwards; `this->f()` is a member of the enclosing class or its bases; `new A` the
  class A. Any other receiver (a C++ object) reaches the one method of that name in the
  file and what it includes, if there is exactly one; in C, a call through a struct
  field is a function pointer and stays unresolved.
"""

from __future__ import annotations

import posixpath

from codenib.compiler.lang.facts import CallFact, ImportFact
from codenib.compiler.lang.facts_graph import Def, Repo, Rules, norm_join, only
from codenib.engines.languages import language_of

INCLUDE_DIRS: tuple[str, ...] = ("include", "src", "")
#: How many include hops a bare name is looked up through.
MAX_INCLUDE_DEPTH = 3


class CRules(Rules):
    def setup(self, repo: Repo, files: list[str]) -> None:
        self.by_qual: dict[str, list[Def]] = {}
        for rel in files:
            for plain, d in repo.by_file.get(rel, {}).items():
                self.by_qual.setdefault(plain, []).append(d)
        self.by_suffix: dict[str, list[str]] = {}
        for rel in repo.paths:
            if language_of(rel) in ("c", "cpp"):
                parts = rel.split("/")
                for i in range(1, len(parts)):
                    self.by_suffix.setdefault("/".join(parts[i:]), []).append(rel)
        self.by_stem: dict[str, list[str]] = {}
        for rel in files:
            stem, ext = posixpath.splitext(rel)
            if ext not in (".h", ".hpp", ".hh", ".hxx"):
                self.by_stem.setdefault(stem, []).append(rel)

    def container_key(self, rel: str, plain: str) -> tuple:
        return ("c", plain)

    def import_targets(self, repo: Repo, rel: str, fact: ImportFact) -> tuple[str, ...]:
        if fact.kind not in ("include_local", "include_system"):
            return ()
        folders = ((posixpath.dirname(rel),) if fact.kind == "include_local" else ()) + INCLUDE_DIRS
        for folder in folders:
            path = norm_join(folder, fact.spec)
            if path and path in repo.paths:
                return (path,)
        if fact.kind == "include_local":
            hits = self.by_suffix.get(posixpath.normpath(fact.spec), ())
            if len(hits) == 1:
                return (hits[0],)
        return ()

    def _included(self, repo: Repo, rel: str) -> list[str]:
        """Files a file includes, breadth first, up to `MAX_INCLUDE_DEPTH` hops."""
        seen = {rel}
        out: list[str] = []
        frontier = [rel]
        for _ in range(MAX_INCLUDE_DEPTH):
            nxt = []
            for f in frontier:
                for t in repo.imported_files(f):
                    if t not in seen:
                        seen.add(t)
                        out.append(t)
                        nxt.append(t)
            frontier = nxt
        return out

    def visible_files(self, repo: Repo, rel: str) -> tuple[str, ...]:
        return (rel,) + tuple(self._included(repo, rel))

    def _scoped(self, context: str, qual: str) -> Def | None:
        """`qual` (dotted) looked up from the namespaces of `context` outwards."""
        plain = context
        while True:
            found = self.by_qual.get(f"{plain}.{qual}" if plain else qual)
            if found:
                return found[0] if len(found) == 1 else self._prefer_definition(found)
            if not plain:
                return None
            plain = plain.rpartition(".")[0]

    @staticmethod
    def _prefer_definition(found: list[Def]) -> Def | None:
        """Several files define one qualified name: a type's header declaration, or
        one function per build configuration; the single non-header one, if any."""
        bodies = [d for d in found if not d.file.endswith((".h", ".hpp", ".hh", ".hxx"))]
        return bodies[0] if len(bodies) == 1 else None

    def resolve_type(self, repo: Repo, rel: str, text: str, context: str) -> Def | None:
        qual = text.removeprefix("::").replace("::", ".").replace("struct ", "").strip()
        d = self._scoped(context.rpartition(".")[0] if context else "", qual)
        return d if d is not None and d.kind == "class" else None

    def _function(self, repo: Repo, rel: str, name: str) -> Def | None:
        d = repo.top(rel, name)
        if d is not None:
            return d
        included = self._included(repo, rel)
        hits = [d for d in (repo.top(f, name) for f in included) if d is not None]
        if hits:
            return only(hits)
        for header in included:
            stem = posixpath.splitext(header)[0]
            for source in self.by_stem.get(stem, ()):
                d = repo.top(source, name)
                if d is not None:
                    return d
        return only(d for d in self.by_qual.get(name, ()) if d.kind == "function")

    def resolve_call(self, repo: Repo, rel: str, call: CallFact) -> Def | None:
        caller = repo.caller_def(call)
        context = caller.container if caller is not None else ""
        if call.kind == "new":
            return self.resolve_type(repo, rel, f"{call.receiver}::{call.callee}" if call.receiver else call.callee,
                                     caller.plain if caller else "")
        if not call.receiver:
            if context:
                d = repo.enclosing_member(rel, caller, call.callee)
                if d is not None:
                    return d
                d = self._scoped(context, call.callee)
                if d is not None and d.container:
                    return d
            return self._function(repo, rel, call.callee)
        if call.receiver == "this":
            return repo.enclosing_member(rel, caller, call.callee)
        if repo.language(rel) == "c":
            return None         # `s.f()` / `s->f()` in C: a function pointer in a struct
        # The facts spell `ns::f()` and `obj.f()` alike (receiver "ns", "obj"): a receiver
        # that names a class or namespace from the caller's scope outwards is a qualifier.
        qual = call.receiver.removeprefix("::").replace("::", ".")
        if qual.replace(".", "").replace("_", "").isalnum():
            owner = self._scoped(context, qual)
            if owner is not None and owner.kind == "class":
                return repo.member(repo.key_of(owner), call.callee)
            d = self._scoped(context, f"{qual}.{call.callee}")
            if d is not None or "::" in call.receiver:
                return d
        return repo.unique_method(rel, call.callee, exclude=caller)


RULES = CRules
