"""Java: a type is known by its package (the files' `package` declarations) and name.

- `import a.b.C;` reaches the files of package `a.b` that declare a top-level type `C`
  (a nested `a.b.C.D` the file of `C`); `import a.b.*;` every file of package `a.b`;
  `import static a.b.C.m;` the file of `C`.
- A type name is, in order: a type of the file (the enclosing types' nested ones first),
  a single-type import, a type of the same package, a type of an imported package.
- `f()` is a method of the enclosing class (or an enclosing one, or their bases), else a
  static import; `this.f()` the same; `super.f()` a method of the bases; `X.f()` with `X`
  a type name its static method; `new X()` the class X. Any other receiver reaches the
  one method of that name in the file, its package and what it imports, if there is
  exactly one. An overloaded name is its first declaration.
"""

from __future__ import annotations

from codenib.compiler.lang.facts import CallFact, ImportFact
from codenib.compiler.lang.facts_graph import Def, Repo, Rules


class JavaRules(Rules):
    def setup(self, repo: Repo, files: list[str]) -> None:
        self.package_files: dict[str, list[str]] = {}
        self.types: dict[tuple[str, str], Def] = {}      # (package, plain) -> type
        for rel in files:
            facts = repo.facts.get(rel)
            package = facts.package if facts is not None else ""
            self.package_files.setdefault(package, []).append(rel)
            for plain, d in repo.by_file.get(rel, {}).items():
                if d.kind == "class":
                    self.types.setdefault((package, plain), d)

    def _package(self, repo: Repo, rel: str) -> str:
        facts = repo.facts.get(rel)
        return facts.package if facts is not None else ""

    def _split(self, dotted: str) -> tuple[str, str] | None:
        """`a.b.C.D` -> ("a.b", "C.D"): the longest package prefix naming a known type."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, -1, -1):
            package, plain = ".".join(parts[:i]), ".".join(parts[i:])
            if (package, plain) in self.types:
                return package, plain
        return None

    def import_targets(self, repo: Repo, rel: str, fact: ImportFact) -> tuple[str, ...]:
        if fact.kind not in ("import", "import_static"):
            return ()
        spec = fact.spec
        glob = spec.endswith(".*")
        if glob:
            spec = spec[:-2]
            if fact.kind == "import" and spec in self.package_files:
                return tuple(self.package_files[spec])
        elif fact.kind == "import_static":
            spec = spec.rpartition(".")[0]
        found = self._split(spec)
        return (self.types[found].file,) if found else ()

    def resolve_type(self, repo: Repo, rel: str, text: str, context: str) -> Def | None:
        package = self._package(repo, rel)
        if "." in text:
            found = self._split(text)
            if found:
                return self.types[found]
            head, _, rest = text.partition(".")     # Outer.Inner via Outer's resolution
            outer = self.resolve_type(repo, rel, head, context)
            return repo.by_file.get(outer.file, {}).get(f"{outer.plain}.{rest}") if outer else None
        plain = context
        while plain:                                  # nested types of the enclosing ones
            d = repo.by_file.get(rel, {}).get(f"{plain}.{text}")
            if d is not None and d.kind == "class":
                return d
            plain = plain.rpartition(".")[0]
        d = repo.by_file.get(rel, {}).get(text)
        if d is not None and d.kind == "class":
            return d
        globs = []
        for fact, targets in repo.imports(rel):
            if fact.kind == "import" and not fact.spec.endswith(".*") and fact.spec.rpartition(".")[2] == text:
                found = self._split(fact.spec)
                if found:
                    return self.types[found]
            elif fact.kind == "import" and fact.spec.endswith(".*"):
                globs.append(fact.spec[:-2])
        for pkg in [package] + globs:
            d = self.types.get((pkg, text))
            if d is not None:
                return d
        return None

    def resolve_call(self, repo: Repo, rel: str, call: CallFact) -> Def | None:
        caller = repo.caller_def(call)
        context = caller.plain if caller is not None else ""
        if call.kind == "new":
            text = f"{call.receiver}.{call.callee}" if call.receiver else call.callee
            return self.resolve_type(repo, rel, text, context)
        if call.callee in ("this", "super") and not call.receiver:
            return None         # constructor chaining: the class is already the caller's
        if call.receiver in ("", "this"):
            found = repo.enclosing_member(rel, caller, call.callee)
            if found is not None or call.receiver:
                return found
            return self._static_import(repo, rel, call.callee)
        if call.receiver == "super":
            owner = self.resolve_type(repo, rel, caller.container, "") if caller and caller.container else None
            key = repo.key_of(owner) if owner else None
            for base in repo.bases.get(key, ()) if key else ():
                found = repo.member(repo.key_of(base), call.callee)
                if found is not None:
                    return found
            return None
        if "(" not in call.receiver and call.receiver[:1].isupper() or "." in call.receiver \
                and call.receiver.rpartition(".")[2][:1].isupper():
            owner = self.resolve_type(repo, rel, call.receiver, context)
            # A type name (`Math.round`) outside the repository: no repository method.
            return repo.member(repo.key_of(owner), call.callee) if owner is not None else None
        return repo.unique_method(rel, call.callee, exclude=repo.caller_def(call))

    def _static_import(self, repo: Repo, rel: str, name: str) -> Def | None:
        for fact, targets in repo.imports(rel):
            if fact.kind == "import_static" and targets:
                owner_text, _, member = fact.spec.rpartition(".")
                if member in (name, "*"):
                    found = self._split(owner_text[:-2] if owner_text.endswith(".*") else owner_text)
                    if found:
                        d = repo.member(repo.key_of(self.types[found]), name)
                        if d is not None:
                            return d
        return None

    def visible_files(self, repo: Repo, rel: str) -> tuple[str, ...]:
        same = self.package_files.get(self._package(repo, rel), [])
        return tuple(dict.fromkeys([rel] + same + list(repo.imported_files(rel))))


RULES = JavaRules
