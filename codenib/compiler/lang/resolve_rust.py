"""Rust: modules are files under a crate's `src/` (`a/b.rs` or `a/b/mod.rs` is `a::b`).

- A crate root is a `src` folder holding `lib.rs` or `main.rs`; its name comes from the
  `Cargo.toml` beside that folder (`-` read as `_`), so workspace crates reach each other.
- `mod x;` reaches `x.rs` or `x/mod.rs` in the file's module folder; `use` paths
  (`crate::`, `self::`, `super::`, a crate name, or a child module) reach the deepest module
  file they name; what follows it names an item there.
- `f()` is a function of the caller's module or one a `use` binds; `self.f()` / `Self::f()`
  a method of the impl's type (any impl block of the crate) or a default method of a
  trait the type implements; `T::f()` / `m::f()` resolve `T` or `m` first. Any other
  receiver reaches the one method of that name in the file and the files it uses, if
  there is exactly one.
- `impl Trait for Type` makes Type inherit Trait; `trait A: B` makes A inherit B.
"""

from __future__ import annotations

import posixpath
import re

from codenib.compiler.lang.facts import BaseFact, CallFact, ImportFact
from codenib.compiler.lang.facts_graph import Def, Repo, Rules

_PACKAGE_NAME = re.compile(rb"^\s*\[package\][^\[]*?^\s*name\s*=\s*\"([^\"]+)\"", re.MULTILINE | re.DOTALL)
_ROOT_FILES = ("lib.rs", "main.rs")


class RustRules(Rules):
    def setup(self, repo: Repo, files: list[str]) -> None:
        self.modules: dict[tuple[str, tuple[str, ...]], str] = {}      # (crate dir, path) -> file
        self.crate_names: dict[str, str] = {}                          # crate name -> crate dir
        self._crate_of: dict[str, str] = {}
        for rel in files:
            crate = self.crate_dir(repo, rel)
            path = self.module_path(rel, crate)
            if path is not None:
                self.modules.setdefault((crate, path), rel)
        for rel, raw in repo.manifests.items():
            if posixpath.basename(rel) == "Cargo.toml":
                m = _PACKAGE_NAME.search(raw)
                src = posixpath.join(posixpath.dirname(rel), "src")
                if m and any(posixpath.join(src, f) in repo.paths for f in _ROOT_FILES):
                    self.crate_names.setdefault(m.group(1).decode("utf-8", "replace").replace("-", "_"), src)

    def crate_dir(self, repo: Repo, rel: str) -> str:
        """The `src` folder of the file's crate ('' when none is found: the file's folder)."""
        got = self._crate_of.get(rel)
        if got is None:
            got = posixpath.dirname(rel)
            d = got
            while True:
                if posixpath.basename(d) == "src" and any(posixpath.join(d, f) in repo.paths for f in _ROOT_FILES):
                    got = d
                    break
                if not d:
                    break
                d = posixpath.dirname(d)
            self._crate_of[rel] = got
        return got

    @staticmethod
    def module_path(rel: str, crate: str) -> tuple[str, ...] | None:
        inner = rel[len(crate) + 1:] if crate else rel
        if not inner.endswith(".rs") or (crate and not rel.startswith(crate + "/")):
            return None
        parts = inner[:-3].split("/")
        if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
            parts = parts[:-1]
        return tuple(parts)

    def container_key(self, rel: str, plain: str) -> tuple:
        crate = self._crate_of.get(rel, posixpath.dirname(rel))
        return ("rust", crate, plain.rpartition(".")[2])

    def _here(self, repo: Repo, rel: str) -> tuple[str, tuple[str, ...]]:
        crate = self.crate_dir(repo, rel)
        return crate, self.module_path(rel, crate) or ()

    def import_targets(self, repo: Repo, rel: str, fact: ImportFact) -> tuple[str, ...]:
        if fact.kind == "mod":
            crate, here = self._here(repo, rel)
            target = self.modules.get((crate, here + (fact.spec,)))
            return (target,) if target else ()
        if fact.kind == "use":
            got = self._path(repo, rel, fact.spec.removesuffix("::*"))
            return (got[0],) if got else ()
        return ()

    def _path(self, repo: Repo, rel: str, text: str) -> tuple[str, tuple[str, ...]] | None:
        """(module file, item segments after it) of a path written in `rel`."""
        crate, here = self._here(repo, rel)
        segs = [s for s in text.split("::") if s]
        if not segs:
            return None
        if segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] in ("self", "super"):
            base = here
            while segs and segs[0] in ("self", "super"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
        elif segs[0] in self.crate_names and self.crate_names[segs[0]] != crate:
            crate, base, segs = self.crate_names[segs[0]], (), segs[1:]
        elif (crate, here + (segs[0],)) in self.modules:
            base = here
        elif (crate, (segs[0],)) in self.modules:
            base = ()               # a crate-root module named without `crate::` (2015 style)
        else:
            return None
        for i in range(len(segs), -1, -1):
            target = self.modules.get((crate, base + tuple(segs[:i])))
            if target is not None:
                return target, tuple(segs[i:])
        return None

    def _item(self, repo: Repo, rel: str, text: str) -> Def | None:
        got = self._path(repo, rel, text)
        if got is None or not got[1]:
            return None
        target, rest = got
        d = repo.by_file.get(target, {}).get(".".join(rest))
        if d is None and len(rest) >= 2:        # Type::method of an impl anywhere in the crate
            owner = repo.by_file.get(target, {}).get(".".join(rest[:-1]))
            if owner is not None:
                d = repo.member(repo.key_of(owner), rest[-1])
        return d

    def _name(self, repo: Repo, rel: str, name: str, context: str) -> Def | None:
        """A bare name: an item of the caller's (inline) module, a `use` binding, a glob."""
        plain = context
        while plain:
            d = repo.by_file.get(rel, {}).get(f"{plain}.{name}")
            holder = repo.by_file.get(rel, {}).get(plain)
            if d is not None and (holder is None or holder.kind != "class") and d.kind != "method":
                return d
            plain = plain.rpartition(".")[0]
        d = repo.top(rel, name)
        if d is not None:
            return d
        facts = repo.facts.get(rel)
        for fact in facts.imports if facts else ():
            if fact.kind == "use" and any(alias == name for _, alias in fact.names):
                return self._item(repo, rel, fact.spec)
        for fact in facts.imports if facts else ():
            if fact.kind == "use" and fact.spec.endswith("::*"):
                got = self._path(repo, rel, fact.spec[:-3])
                if got is not None and not got[1]:
                    d = repo.top(got[0], name)
                    if d is not None:
                        return d
        return None

    def _module_binding(self, repo: Repo, rel: str, name: str) -> str | None:
        """The module file a name in `rel` stands for (`use a::b;` then `b::f()`)."""
        facts = repo.facts.get(rel)
        for fact in facts.imports if facts else ():
            if fact.kind == "use" and any(alias == name for _, alias in fact.names):
                got = self._path(repo, rel, fact.spec)
                if got is not None and not got[1]:
                    return got[0]
        return None

    def resolve_type(self, repo: Repo, rel: str, text: str, context: str) -> Def | None:
        if "::" in text:
            d = self._item(repo, rel, text)
        else:
            d = self._name(repo, rel, text, context.rpartition(".")[0] if context else "")
        return d if d is not None and d.kind == "class" else None

    def base_owner(self, repo: Repo, rel: str, base: BaseFact) -> Def | None:
        d = repo.by_id.get(base.node_id) if base.node_id else None
        return d if d is not None else self.resolve_type(repo, rel, base.owner.rpartition(".")[2], "")

    def resolve_call(self, repo: Repo, rel: str, call: CallFact) -> Def | None:
        caller = repo.caller_def(call)
        context = caller.plain if caller is not None else ""
        receiver = call.receiver
        if not receiver:
            d = self._name(repo, rel, call.callee, context)
            return d if d is not None and d.kind != "method" else None
        if receiver in ("self", "Self"):
            return repo.enclosing_member(rel, caller, call.callee)
        if receiver.replace("::", "").replace("_", "").isalnum():
            head = receiver.rpartition("::")[2]
            if "::" in receiver:
                owner = self._item(repo, rel, receiver)
                module = self._path(repo, rel, receiver)
                if owner is None and module is not None and not module[1]:
                    return repo.top(module[0], call.callee)
            else:
                owner = self._name(repo, rel, head, context.rpartition(".")[0])
                module = self._module_binding(repo, rel, head)
                if owner is None and module is None:
                    crate, here = self._here(repo, rel)
                    module = self.modules.get((crate, here + (head,)))
                if owner is None and module is not None:
                    return repo.top(module, call.callee)
            if owner is not None and owner.kind == "class":
                return repo.member(repo.key_of(owner), call.callee)
            if owner is not None or not receiver[:1].islower():
                return None
        return repo.unique_method(rel, call.callee, exclude=repo.caller_def(call))


RULES = RustRules
