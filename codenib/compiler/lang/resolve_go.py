"""Go: a package is a folder; import paths reach folders through `go.mod`'s module path.

- `import "mod/path/pkg"` reaches every `.go` file of the package's folder (`_test.go`
  files only from a test file); the importing file's local name is the alias, else the
  package clause of the imported files, else the path's last segment.
- `F()` is a function or type of the caller's package (its folder, same package clause;
  non-test files never see test files); `pkg.F()` one of an imported package;
  `r.M()` with `r` the method's receiver is a method of the receiver type (or of a type it
  embeds); another receiver reaches the one method of that name in the package and the
  packages it imports, if there is exactly one.
- Embedded struct fields and embedded interfaces are `inherits` edges. Interface
  satisfaction is implicit in Go and is not computed (no edge from a type to the
  interfaces it happens to implement).
"""

from __future__ import annotations

import posixpath
import re

from codenib.compiler.lang.facts import CallFact, ImportFact
from codenib.compiler.lang.facts_graph import Def, Repo, Rules

_MODULE_LINE = re.compile(rb"^\s*module\s+\"?([^\s\"]+)\"?", re.MULTILINE)
_RECEIVER = re.compile(r"^func\s*\(\s*([A-Za-z_]\w*)\s")


def _is_test(rel: str) -> bool:
    return rel.endswith("_test.go")


class GoRules(Rules):
    def setup(self, repo: Repo, files: list[str]) -> None:
        self._bindings: dict[tuple[str, str], list[str] | None] = {}    # lookups made once each
        self._same: dict[str, list[str]] = {}
        self.dir_files: dict[str, list[str]] = {}
        for rel in files:
            self.dir_files.setdefault(posixpath.dirname(rel), []).append(rel)
        # Module path -> its folder, longest first (a nested module wins its subtree).
        mods = []
        for rel, raw in repo.manifests.items():
            if posixpath.basename(rel) == "go.mod":
                m = _MODULE_LINE.search(raw)
                if m:
                    mods.append((m.group(1).decode("utf-8", "replace"), posixpath.dirname(rel)))
        self.modules = sorted(mods, key=lambda m: (-len(m[0]), m[0]))

    def container_key(self, rel: str, plain: str) -> tuple:
        return ("go", posixpath.dirname(rel), plain)

    def _package_files(self, repo: Repo, folder: str, tests: bool, package: str | None = None) -> list[str]:
        out = []
        for rel in self.dir_files.get(folder, ()):
            if _is_test(rel) and not tests:
                continue
            if package is not None:
                facts = repo.facts.get(rel)
                if facts is not None and facts.package and facts.package != package:
                    continue
            out.append(rel)
        return out

    def import_targets(self, repo: Repo, rel: str, fact: ImportFact) -> tuple[str, ...]:
        if fact.kind != "import":
            return ()
        folder = self._folder_of(fact.spec)
        if folder is None:
            return ()
        return tuple(self._package_files(repo, folder, _is_test(rel)))

    def _folder_of(self, path: str) -> str | None:
        for module, folder in self.modules:
            if path == module or path.startswith(module + "/"):
                sub = path[len(module) + 1:]
                return posixpath.join(folder, sub) if folder and sub else (folder or sub)
        return None

    def _package_binding(self, repo: Repo, rel: str, local: str) -> list[str] | None:
        """The files of the package a file imports under `local`, or None."""
        key = (rel, local)
        if key not in self._bindings:
            self._bindings[key] = self._find_binding(repo, rel, local)
        return self._bindings[key]

    def _find_binding(self, repo: Repo, rel: str, local: str) -> list[str] | None:
        for fact, targets in repo.imports(rel):
            if fact.kind != "import" or not targets:
                continue
            alias = fact.names[0][1] if fact.names else ""
            if alias:
                name = alias
            else:
                names = [repo.facts[t].package for t in targets if t in repo.facts and not _is_test(t)]
                name = names[0] if names else fact.spec.rsplit("/", 1)[-1]
            if name == local:
                return list(targets)
        return None

    def _same_package(self, repo: Repo, rel: str) -> list[str]:
        if rel not in self._same:
            self._same[rel] = self._find_same_package(repo, rel)
        return self._same[rel]

    def _find_same_package(self, repo: Repo, rel: str) -> list[str]:
        facts = repo.facts.get(rel)
        return self._package_files(repo, posixpath.dirname(rel), _is_test(rel),
                                   facts.package if facts is not None and facts.package else None)

    def visible_files(self, repo: Repo, rel: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self._same_package(repo, rel) + list(repo.imported_files(rel))))

    def _top_in(self, repo: Repo, files: list[str], name: str) -> Def | None:
        found = [d for d in (repo.top(f, name) for f in files) if d is not None]
        return found[0] if len(found) == 1 else None

    def resolve_type(self, repo: Repo, rel: str, text: str, context: str) -> Def | None:
        text = text.lstrip("*")
        if "." in text:
            pkg, _, name = text.rpartition(".")
            files = self._package_binding(repo, rel, pkg)
            return self._top_in(repo, files, name) if files else None
        d = self._top_in(repo, self._same_package(repo, rel), text)
        return d if d is not None and d.kind == "class" else None

    def resolve_call(self, repo: Repo, rel: str, call: CallFact) -> Def | None:
        if not call.receiver:
            return self._top_in(repo, self._same_package(repo, rel), call.callee)
        files = self._package_binding(repo, rel, call.receiver) if "." not in call.receiver else None
        if files:
            return self._top_in(repo, files, call.callee)
        caller = repo.caller_def(call)
        if caller is not None and caller.kind == "method":
            m = _RECEIVER.match(caller.signature)
            if m and m.group(1) == call.receiver:
                return repo.member(self.container_key(rel, caller.container), call.callee)
        return repo.unique_method(rel, call.callee, exclude=repo.caller_def(call))


RULES = GoRules
