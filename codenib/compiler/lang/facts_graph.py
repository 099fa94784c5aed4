"""The code graph of the files in languages other than Python: imports, calls and inherits
edges resolved from every file's nodes and `ForeignFacts`.

Each language's rules live in one module behind `RULES` (`resolve_js`, `resolve_go`,
`resolve_java`, `resolve_rust`, `resolve_c`); this module holds what they share: the
index of definitions (`Repo`), member lookup through resolved base types, and the three
passes (imports, then bases, then calls, since calls look methods up through bases).

Edges have the Python graph's granularity: `imports` from file node to file node (one
count per import statement and file it reaches), `calls` from the innermost definition
holding the call (or the file) to the called definition (a class for `new X()` or a
conversion), `inherits` from a type to its base type, counts summed per (src, dst, type).

Precision over recall: a call whose name has several candidates after the rules narrowed
them is skipped, never fanned out (an overloaded name in one type is one candidate: its
first declaration). Everything here is a pure function of the nodes, facts and project
manifests (`go.mod`, `Cargo.toml`), so a build recomputes it whole each time and an
incremental build gets the same edges as a fresh one.
"""

from __future__ import annotations

import importlib
import posixpath
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from codenib.compiler.lang import LANGUAGES
from codenib.compiler.lang.facts import BaseFact, CallFact, ForeignFacts, ImportFact
from codenib.engines.languages import language_of
from codenib.core.types import EDGES_SCHEMA, plain_qualname

#: Language -> the module whose `RULES` class resolves its files (one instance per build): the
#: resolvers of the languages of the facts graph in `codenib.compiler.lang.LANGUAGES`
#: (JavaScript and TypeScript share one, so do C and C++: they import each other's files).
RULES: dict[str, str] = {language: entry.resolver for language, entry in LANGUAGES.items() if entry.graph == "facts"}

#: Project manifests the rules read (beside the source files; never indexed themselves).
MANIFEST_NAMES: tuple[str, ...] = ("go.mod", "Cargo.toml")

#: How deep member lookup follows base types (cycles in broken code stop it too).
MAX_BASE_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Def:
    """One definition node of a non-Python file."""

    node_id: str
    file: str
    plain: str          # qualified name without `#N`
    name: str
    kind: str           # class | function | method
    signature: str

    @property
    def container(self) -> str:
        """The plain qualified name of what holds it ('' at the top of its file)."""
        return self.plain.rpartition(".")[0]


class Rules:
    """One language family's resolution rules; the defaults suit no language in particular."""

    def setup(self, repo: "Repo", files: list[str]) -> None:
        """Precompute what the family needs across its files (packages, crates)."""

    def container_key(self, rel: str, plain: str) -> tuple:
        """Where the members of the container `plain` written in `rel` are collected: one
        file by default (Go packages, Rust crates and C++ namespaces span files)."""
        return (rel, plain)

    def import_targets(self, repo: "Repo", rel: str, fact: ImportFact) -> tuple[str, ...]:
        """Repository files an import reaches."""
        return ()

    def visible_files(self, repo: "Repo", rel: str) -> tuple[str, ...]:
        """Files whose methods an untyped receiver may name: the file and what it imports."""
        return (rel,) + repo.imported_files(rel)

    def resolve_type(self, repo: "Repo", rel: str, text: str, context: str) -> Def | None:
        """The type a name written in `rel` (inside `context`, a plain qualname) denotes."""
        return None

    def resolve_call(self, repo: "Repo", rel: str, call: CallFact) -> Def | None:
        """The definition a call reaches, or None (unknown or ambiguous)."""
        return None

    def base_owner(self, repo: "Repo", rel: str, base: BaseFact) -> Def | None:
        """The deriving type of a base fact (a node of the file, or resolved by name)."""
        d = repo.by_id.get(base.node_id) if base.node_id else None
        return d if d is not None else self.resolve_type(repo, rel, base.owner.replace(".", "::"), "")


class Repo:
    """Every non-Python definition and fact of a build, indexed for the rules."""

    def __init__(self, defs: Iterable[Def], facts: Mapping[str, ForeignFacts], paths: Iterable[str],
                 manifests: Mapping[str, bytes], languages: Mapping[str, str] | None = None):
        self.facts = dict(facts)
        self.languages = dict(languages or {})   # rel -> the language its reader used
        self.paths = frozenset(paths)
        self.manifests = dict(manifests)
        self.by_id: dict[str, Def] = {}
        self.by_file: dict[str, dict[str, Def]] = {}        # rel -> plain -> first def
        self.by_name: dict[tuple[str, str], list[Def]] = {}  # (family, name) -> defs
        self.members: dict[tuple, dict[str, Def]] = {}        # container key -> name -> first def
        self.bases: dict[tuple, list[Def]] = {}              # container key -> resolved base types
        self.types: dict[tuple, Def] = {}                    # container key -> the type itself
        self.rules_of: dict[str, Rules] = {}
        self._imports: dict[str, tuple[tuple[ImportFact, tuple[str, ...]], ...]] = {}
        self._visible: dict[str, frozenset[str]] = {}
        defs = sorted(defs, key=lambda d: d.node_id)
        for d in defs:
            self.by_id[d.node_id] = d
            self.by_file.setdefault(d.file, {}).setdefault(d.plain, d)
        by_rules: dict[int, tuple[Rules, list[str]]] = {}
        for rel in sorted(set(self.facts) | set(self.by_file)):
            rules = self.rules(rel)
            if rules is not None:
                by_rules.setdefault(id(rules), (rules, []))[1].append(rel)
        for rules, files in by_rules.values():
            rules.setup(self, files)
        for d in defs:
            rules = self.rules(d.file)
            if rules is None:
                continue
            self.by_name.setdefault((family(d.file), d.name), []).append(d)
            if d.kind == "class":
                self.types.setdefault(rules.container_key(d.file, d.plain), d)
            if d.container:
                self.members.setdefault(rules.container_key(d.file, d.container), {}).setdefault(d.name, d)

    # --- lookups the rules share -----------------------------------------------------------
    def language(self, rel: str) -> str | None:
        """The language a file was read as (a `.h` may be C or C++), else by its suffix."""
        return self.languages.get(rel) or language_of(rel)

    def rules(self, rel: str) -> Rules | None:
        language = language_of(rel)
        module = RULES.get(language or "")
        if module is None:
            return None
        rules = self.rules_of.get(module)
        if rules is None:
            rules = self.rules_of[module] = importlib.import_module(module).RULES()
        return rules

    def imports(self, rel: str) -> tuple[tuple[ImportFact, tuple[str, ...]], ...]:
        """Each import fact of a file with the repository files it reaches (computed once)."""
        got = self._imports.get(rel)
        if got is None:
            rules = self.rules(rel)
            facts = self.facts.get(rel)
            got = tuple((f, rules.import_targets(self, rel, f)) for f in facts.imports) \
                if facts is not None and rules is not None else ()
            self._imports[rel] = got
        return got

    def imported_files(self, rel: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for _, targets in self.imports(rel) for t in targets))

    def top(self, rel: str, name: str) -> Def | None:
        """The definition `name` at the top of a file (not inside another)."""
        return self.by_file.get(rel, {}).get(name)

    def member(self, key: tuple, name: str, depth: int = 0, seen: set | None = None) -> Def | None:
        """A member of the container at `key` or, failing that, of its base types."""
        found = self.members.get(key, {}).get(name)
        if found is not None or depth >= MAX_BASE_DEPTH:
            return found
        seen = seen if seen is not None else {key}
        for base in self.bases.get(key, ()):
            bkey = self.key_of(base)
            if bkey in seen:
                continue
            seen.add(bkey)
            found = self.member(bkey, name, depth + 1, seen)
            if found is not None:
                return found
        return None

    def key_of(self, d: Def) -> tuple:
        """The container key under which a type's members are collected."""
        return self.rules(d.file).container_key(d.file, d.plain)

    def enclosing_member(self, rel: str, caller: Def | None, name: str) -> Def | None:
        """`this.name` / `self.name` in `caller`: a member of the nearest container of the
        caller (walking outwards: an arrow function inside a method sees the method's type)."""
        if caller is None:
            return None
        rules = self.rules(rel)
        plain = caller.container
        while plain:
            found = self.member(rules.container_key(rel, plain), name)
            if found is not None:
                return found
            plain = plain.rpartition(".")[0]
        return None

    def unique_method(self, rel: str, name: str, exclude: Def | None = None) -> Def | None:
        """The one method called `name` among the files an untyped receiver can reach.

        Methods it overrides (same name in its base types, e.g. the interface or trait
        method it implements) do not count as other candidates: the implementation is
        taken. The caller itself is no candidate (`self.inner.len()` inside `len` is
        delegation, far more often than recursion on another object).
        """
        rules = self.rules(rel)
        visible = self._visible.get(rel)
        if visible is None:
            visible = self._visible[rel] = frozenset(rules.visible_files(self, rel))
        found = [d for d in self.by_name.get((family(rel), name), ())
                 if d.kind == "method" and (d.file in visible or self._type_file(rules, d) in visible)
                 and (exclude is None or d.node_id != exclude.node_id)]
        if len(found) <= 1:
            return found[0] if found else None
        overridden = set()
        for d in found:
            key = rules.container_key(d.file, d.container)
            for base in self._ancestors(key):
                m = self.members.get(self.key_of(base), {}).get(name)
                if m is not None:
                    overridden.add(m.node_id)
        left = [d for d in found if d.node_id not in overridden]
        return left[0] if len(left) == 1 else None

    def _type_file(self, rules: Rules, d: Def) -> str | None:
        """The file defining the type a method belongs to (an out-of-line C++ method's
        class is in a header the caller includes)."""
        owner = self.types.get(rules.container_key(d.file, d.container))
        return owner.file if owner is not None else None

    def _ancestors(self, key: tuple) -> list[Def]:
        """The base types of a container, transitively (breadth first, each once)."""
        out: list[Def] = []
        seen = {key}
        frontier = [key]
        for _ in range(MAX_BASE_DEPTH):
            nxt = []
            for k in frontier:
                for base in self.bases.get(k, ()):
                    bkey = self.key_of(base)
                    if bkey not in seen:
                        seen.add(bkey)
                        out.append(base)
                        nxt.append(bkey)
            frontier = nxt
        return out

    def caller_def(self, call: CallFact) -> Def | None:
        return self.by_id.get(call.caller)


def family(rel: str) -> str:
    """Languages that share names and files (JS with TS, C with C++) share a family."""
    return RULES.get(language_of(rel) or "", "")


def resolve_edges(repo: Repo) -> Counter:
    """(src, dst, type) -> count over every non-Python file of the repository."""
    edges: Counter = Counter()
    rels = sorted(repo.facts)
    for rel in rels:
        file_id = rel
        for _, targets in repo.imports(rel):
            for dst in sorted(set(targets)):
                if dst != rel:
                    edges[(file_id, dst, "imports")] += 1
    for rel in rels:
        rules = repo.rules(rel)
        if rules is None:
            continue
        for base in repo.facts[rel].bases:
            owner = rules.base_owner(repo, rel, base)
            if owner is None:
                continue
            target = rules.resolve_type(repo, rel, base.base, owner.plain)
            if target is None or target.node_id == owner.node_id:
                continue
            repo.bases.setdefault(repo.key_of(owner), []).append(target)
            edges[(owner.node_id, target.node_id, "inherits")] += 1
    for rel in rels:
        rules = repo.rules(rel)
        if rules is None:
            continue
        for call in repo.facts[rel].calls:
            target = rules.resolve_call(repo, rel, call)
            if target is not None:
                edges[(call.caller, target.node_id, "calls")] += 1
    return edges


def defs_of_nodes(nodes: pa.Table) -> list[Def]:
    """The definitions (not file nodes) of the non-Python rows of a nodes table."""
    cols = nodes.select(["node_id", "kind", "file", "qualname", "name", "signature", "language"]).to_pydict()
    out = []
    for node_id, kind, rel, qual, name, sig, lang in zip(cols["node_id"], cols["kind"], cols["file"],
                                                         cols["qualname"], cols["name"], cols["signature"],
                                                         cols["language"]):
        if kind != "file" and lang in RULES:
            out.append(Def(node_id, rel, plain_qualname(qual), name, kind, sig or ""))
    return out


def foreign_edges(nodes: pa.Table, facts: Mapping[str, ForeignFacts], paths: Iterable[str],
                  manifests: Mapping[str, bytes] | None = None) -> pa.Table:
    """The imports, calls and inherits edges of the non-Python files (EDGES_SCHEMA, sorted)."""
    files = nodes.filter(pc.equal(nodes.column("kind"), "file")).select(["file", "language"]).to_pydict()
    languages = dict(zip(files["file"], files["language"]))
    repo = Repo(defs_of_nodes(nodes), facts, paths, manifests or {}, languages)
    edges = resolve_edges(repo)
    rows = sorted(edges.items())
    return pa.table({"src": [k[0] for k, _ in rows], "dst": [k[1] for k, _ in rows],
                     "type": [k[2] for k, _ in rows], "count": [n for _, n in rows]}, schema=EDGES_SCHEMA)


def read_manifests(read_path: Callable[[str], bytes | None], paths: Iterable[str]) -> dict[str, bytes]:
    """`go.mod` and `Cargo.toml` files in the folders of the Go and Rust sources and above
    them (relative path -> bytes, read by `read_path`, None when there is none): what module
    paths and crate names are resolved through."""
    dirs: set[str] = set()
    for rel in paths:
        if language_of(rel) in ("go", "rust"):
            d = posixpath.dirname(rel)
            while d not in dirs:
                dirs.add(d)
                if not d:
                    break
                d = posixpath.dirname(d)
    out: dict[str, bytes] = {}
    for d in sorted(dirs):
        for name in MANIFEST_NAMES:
            rel = posixpath.join(d, name) if d else name
            data = read_path(rel)
            if data is not None:
                out[rel] = data
    return out


# --- helpers for the rules modules ---------------------------------------------------------

def norm_join(folder: str, spec: str) -> str | None:
    """`folder/spec` normalised ('..' resolved); None when it leaves the repository."""
    joined = posixpath.normpath(posixpath.join(folder, spec)) if folder else posixpath.normpath(spec)
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        return None
    return "" if joined == "." else joined


def only(candidates: Iterable[Def]) -> Def | None:
    """The single candidate, or None when there are none or several."""
    found = None
    for d in candidates:
        if found is not None and found.node_id != d.node_id:
            return None
        found = d
    return found
