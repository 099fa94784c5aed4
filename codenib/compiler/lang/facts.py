"""Raw per-file facts of a non-Python file, read from the same parse as its nodes.

They are what the graph stage resolves across files (imports to files, calls to
definitions, bases to types); nothing here is resolved yet. Every record is a frozen
dataclass of strings, ints and tuples: picklable (worker processes send them back) and
convertible to and from plain JSON (`ForeignFacts.to_dict` / `from_dict`) for a store.

Conventions shared by every record:

- `line` is 1-based, the line where the construct starts.
- Names and texts are source text with whitespace collapsed to single spaces, generic and
  template arguments dropped (`Foo<T>` -> `Foo`, `Vec::<u8>::new` -> `Vec::new`), and
  nothing else normalised: a C++ qualifier keeps its `::` (`fmt::detail`), a Go or Java
  one its `.` (`pkg.Type`).
- `caller`/`node_id` are node ids of this file as nodes.parquet spells them (`#2` suffixes
  included); the file's own id (its path) stands for code outside every definition.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

#: Bumped whenever the facts read from the same bytes change shape or content.
FACTS_VERSION = 1

#: ImportFact.kind values, by language:
#:   javascript/typescript: "import" (`import ... from 'x'`, `import 'x'`), "require"
#:     (`require('x')`), "export_from" (`export ... from 'x'`), "dynamic_import" (`import('x')`)
#:   go: "import" (one per path), "package" (the package clause; spec = package name)
#:   java: "import", "import_static", "package" (spec = dotted package name)
#:   rust: "mod" (`mod x;`, spec = "x"), "use" (one per leaf of a use tree, spec = the full
#:     path, e.g. "crate::a::B"; a glob leaf ends in "::*"), "extern_crate"
#:   c/cpp: "include_local" (`#include "x.h"`, spec = "x.h"), "include_system" (`<x.h>`)
IMPORT_KINDS: tuple[str, ...] = ("import", "require", "export_from", "dynamic_import", "package",
                                 "import_static", "mod", "use", "extern_crate", "include_local",
                                 "include_system")

#: BaseFact.relation values: "extends" (class/interface inheritance, C++ base classes, Java
#: and TS `extends`), "implements" (Java/TS `implements`, Rust `impl Trait for Type`),
#: "embeds" (Go embedded struct fields and embedded interfaces), "supertrait" (Rust
#: `trait A: B`).
BASE_RELATIONS: tuple[str, ...] = ("extends", "implements", "embeds", "supertrait")


@dataclass(frozen=True, slots=True)
class ImportFact:
    """One import-like statement (one per imported path: a Go import block gives several).

    `names` are the bindings it makes in this file, as (imported name, local name) pairs:
    `import {a as b, c} from './x'` -> (("a", "b"), ("c", "c")); a default import
    `import X from` -> (("default", "X"),); a whole-module binding (`import * as ns`,
    `const ns = require(...)`, a Go alias `import f "fmt"`) -> (("*", "ns"),); a Java or Rust
    import of one item -> ((last segment, local name),); a glob (`a.b.*`, `a::*`) -> ().
    A Go import without alias has () (its local name is the imported package's name).
    """

    spec: str       # the specifier as written, quotes removed: './util', 'fmt', 'a.b.C', 'x.h'
    line: int
    kind: str       # one of IMPORT_KINDS
    names: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CallFact:
    """One call site (or `new`/construction).

    `callee` is the called name's last identifier (`a.b.c()` -> "c", `A::f()` -> "f",
    `new Foo()` -> "Foo", `obj->run()` -> "run"). `receiver` is the text before it, without the
    separator: "this", "self", "super", "obj", "a.b", "pkg" (Go `pkg.F()`), "A" (C++/Rust
    `A::f()`, also `Self`), "" for a bare call `f()`. Calls through computed callees
    (`fns[i]()`, `(a || b)()`) are left out.
    """

    callee: str
    receiver: str
    caller: str     # node id of the innermost definition holding the call (or the file's id)
    line: int
    kind: str = "call"      # "call" | "new" (JS/TS/Java/C++ `new`)


@dataclass(frozen=True, slots=True)
class BaseFact:
    """A base type a type names: `class A extends B`, `impl Display for A`, a Go embedded field.

    `owner` is the deriving type's plain qualified name in this file ("A", "ns.A"); `node_id`
    its node id when the type is a node of this file, else "" (a Rust `impl Trait for Type`
    or Go embedding whose type is defined elsewhere). `base` is the base's text as written
    (generic arguments dropped): "B", "pkg.B", "fmt::formatter", "io.Reader".
    """

    owner: str
    node_id: str
    base: str
    relation: str   # one of BASE_RELATIONS
    line: int


@dataclass(frozen=True, slots=True)
class ScopeFact:
    """What names mean inside one definition, where its language's reader says (JavaScript
    and TypeScript; other readers give none).

    `owner` is the object a function is a member of without being a class member: `res` for
    `res.json = function ...`, `obj` for a key of `const obj = {...}` or `obj = {...}`, `A` for
    a key of `A.prototype = {...}`, `exports` for `module.exports.f = ...`, and `{}@LINE:COL`
    for an object literal bound to no name (its keys are one another's siblings). `aliases`
    are the other names it is assigned to on the same object (`res.set = res.header =
    function header`: ("set",)). `binds` are the names its parameters and variables bind
    (not functions or `require`s, which the nodes and imports say) that the file calls or
    calls through; `this_aliases` the variables set to `this` (`var self = this`). `arrow`:
    an arrow function, whose `this` is that of the code around it, not its owner's.
    """

    node_id: str
    owner: str = ""
    aliases: tuple[str, ...] = ()
    binds: tuple[str, ...] = ()
    this_aliases: tuple[str, ...] = ()
    arrow: bool = False


@dataclass(frozen=True, slots=True)
class ForeignFacts:
    """Everything the graph resolution needs from one non-Python file, in source order."""

    rel_path: str
    language: str
    package: str = ""                       # Java package / Go package name ("" elsewhere)
    imports: tuple[ImportFact, ...] = ()
    calls: tuple[CallFact, ...] = ()
    bases: tuple[BaseFact, ...] = ()
    version: int = FACTS_VERSION
    scopes: tuple[ScopeFact, ...] = ()      # where the reader gives them (JavaScript, TypeScript)

    def to_dict(self) -> dict:
        """Plain JSON-ready data (lists for tuples); no `scopes` key when there are none
        (the languages whose readers give none keep their stored shape)."""
        data = asdict(self)
        if not self.scopes:
            del data["scopes"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "ForeignFacts":
        """The facts `to_dict` wrote (raises KeyError/TypeError on other data)."""
        return cls(
            rel_path=data["rel_path"], language=data["language"], package=data.get("package", ""),
            imports=tuple(ImportFact(i["spec"], i["line"], i["kind"],
                                     tuple(tuple(p) for p in i.get("names", ())))
                          for i in data.get("imports", ())),
            calls=tuple(CallFact(c["callee"], c["receiver"], c["caller"], c["line"], c.get("kind", "call"))
                        for c in data.get("calls", ())),
            bases=tuple(BaseFact(b["owner"], b["node_id"], b["base"], b["relation"], b["line"])
                        for b in data.get("bases", ())),
            version=data.get("version", FACTS_VERSION),
            scopes=tuple(ScopeFact(c["node_id"], c.get("owner", ""), tuple(c.get("aliases", ())),
                                   tuple(c.get("binds", ())), tuple(c.get("this_aliases", ())),
                                   bool(c.get("arrow", False)))
                         for c in data.get("scopes", ())),
        )
