"""Companion files: declarations linked to their definitions (`declares` edges).

A fix often changes a declaration with its definition: a C or C++ header with the source that
defines what it declares, a TypeScript declaration file with the JavaScript it types, a Java
interface (or base class) with the class that implements it. Each link is an edge from the
declaration to the definition, at two granularities:

- definitions: a name a header declares (`name(` in its text, outside comments, not defined
  in the header itself) to the function or method of that name in a file that includes the
  header (from the header's class node when the definition's container is that class, else
  from the header's file node); a `.d.ts` definition to the definition of the same name in
  the module it types (the longest common tail of their qualified names); a method to
  the method of the same name in the nearest ancestors of its type over `inherits` (an
  interface's method to its implementations; every language but Python, whose graph stage is
  its own);
- files: the declaring file to the defining file, counting the definitions linked.

The `.d.ts` file types the JavaScript module of its own path (`index.d.ts` beside `index.js`),
else the module whose path ends with its path less leading folders (`types/plugin/utc.d.ts`
types `src/plugin/utc/index.js`, `types/index.d.ts` types `src/index.js`; a bare `index` only
for a declaration file one folder deep), the shallowest when several do, none when those tie.

A pure function of the nodes, the other edges and the bytes read, so incremental builds get
the same edges as full ones.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter, defaultdict
from typing import Mapping

import pyarrow as pa

from codenib.core.types import EDGES_SCHEMA, plain_qualname

#: The edge type of a declaration's link to its definition (`codenib.core.types.EDGE_TYPES`).
DECLARES = "declares"
#: C and C++ header suffixes: the files whose declarations are looked for.
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp")
C_FAMILY = ("c", "cpp")
#: TypeScript declaration files and the JavaScript suffixes of the modules they type.
TYPINGS_SUFFIXES = (".d.ts", ".d.mts", ".d.cts")
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx")
#: Words before `(` that name no function: keywords, and types (`void (*f)(int)`).
_NOT_NAMES = frozenset({"if", "for", "while", "switch", "return", "sizeof", "defined", "alignof", "decltype",
                        "static_assert", "typeof", "__attribute__", "__declspec", "noexcept", "catch", "throw",
                        "alignas", "operator", "template", "main", "void", "int", "char", "short", "long",
                        "float", "double", "unsigned", "signed", "bool", "auto", "const", "new", "delete",
                        "else", "case", "do", "goto", "typedef", "using"})
_NAME_PAREN = re.compile(r"(~?[A-Za-z_]\w*)\s*\(")
#: Comments, string and character literals, and preprocessor lines (with their continuations):
#: what the declaration scan blanks out first.
_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*',
                    re.DOTALL | re.MULTILINE)
#: A block head that opens a scope whose statements are declarations, not a function body.
_SCOPE_HEAD = re.compile(r'\b(namespace|class|struct|union|enum)\b[^()]*$|\bextern\s*""\s*$')
_PUNCT = re.compile(r"[;{}]")
_BRACES = re.compile(r"[{}]")
_DEF_KINDS = ("function", "method")
#: How many levels of ancestors a method's declaration is looked for in.
OVERRIDE_DEPTH = 4


def companion_edges(nodes: pa.Table, edges: pa.Table, sources: Mapping[str, bytes | None]) -> pa.Table:
    """`declares` edges (EDGES_SCHEMA, sorted) of a snapshot: headers to sources, `.d.ts` files to
    the JavaScript they type, base methods to their overrides (see the module's docstring).

    Args:
        nodes: the snapshot's nodes table.
        edges: its other edges (the `imports` of C and C++ and the `inherits` are read).
        sources: relative path -> the bytes the build read (headers are scanned for names).
    """
    defs = _Defs(nodes)
    links: Counter = Counter()
    links.update(_header_links(defs, edges, sources))
    links.update(_typings_links(defs))
    links.update(_override_links(defs, edges))
    files = Counter()
    for src, dst in links:
        a, b = defs.file_of[src], defs.file_of[dst]
        if a != b:
            files[(a, b)] += 1
    # A link between two file nodes is the file-level edge itself (a `.d.ts` file whose
    # definitions match none of its module's).
    rows = sorted([(s, d, 1) for s, d in links if (s, d) not in files] + [(a, b, n) for (a, b), n in files.items()])
    return pa.table({"src": [r[0] for r in rows], "dst": [r[1] for r in rows], "type": [DECLARES] * len(rows),
                     "count": [r[2] for r in rows]}, schema=EDGES_SCHEMA)


def declared_names(text: str) -> set[str]:
    """The names a C or C++ header declares as functions without defining them: statements
    ending in `;` at file, namespace, class or `extern "C"` scope whose first `name(` follows a
    type (`jv jv_parse(const char*);`, `void f() const;`); function bodies are skipped, calls
    in them are no declarations."""
    text = _NOISE.sub(lambda m: '""' if m.group(0).startswith('"') else " ", text)
    out: set[str] = set()
    start, i = 0, 0
    while (m := _PUNCT.search(text, i)) is not None:
        i, c = m.start(), m.group(0)
        if c == ";":
            _declaration(text[start:i], out)
        elif c == "{" and "(" in text[start:i] and not _SCOPE_HEAD.search(text[start:i]):
            i = _block_end(text, i)             # a function body (or an initialiser): skipped
        start = i = i + 1
    return out


# --- helpers ---------------------------------------------------------------------------------

def _declaration(statement: str, out: set[str]) -> None:
    """Add the function a declaration statement declares (its first `name(` after a type)."""
    for m in _NAME_PAREN.finditer(statement):
        name = m.group(1)
        if name in _NOT_NAMES or name.isupper() or name.startswith("~"):
            continue            # a macro (`FMT_API(...)`), a keyword, a destructor
        before = statement[:m.start()].rstrip()
        if before and (before[-1].isalnum() or before[-1] in "_*&>") and not before.endswith(("return", "else")):
            out.add(name)
        return


def _block_end(text: str, at: int) -> int:
    """The index of the `}` closing the `{` at `at` (the text's end when unbalanced)."""
    depth = 0
    for m in _BRACES.finditer(text, at):
        depth += 1 if m.group(0) == "{" else -1
        if depth == 0:
            return m.start()
    return len(text)


class _Defs:
    """The nodes table read once: definitions by file, container and name."""

    def __init__(self, nodes: pa.Table):
        cols = nodes.select(["node_id", "kind", "file", "qualname", "name", "language"]).to_pydict()
        self.file_of: dict[str, str] = {}
        self.language: dict[str, str] = {}
        self.by_file: dict[str, list[tuple[str, str, str, str]]] = defaultdict(list)   # (id, plain, name, kind)
        self.plain: dict[str, str] = {}
        self._members: dict | None = None
        for nid, kind, f, qual, name, lang in zip(cols["node_id"], cols["kind"], cols["file"], cols["qualname"],
                                                  cols["name"], cols["language"]):
            self.file_of[nid] = f
            if kind == "file":
                self.language[f] = lang
            else:
                self.plain[nid] = plain_qualname(qual)
                self.by_file[f].append((nid, self.plain[nid], name, kind))

    def members(self, type_id: str) -> dict[str, list[str]]:
        """Name -> ids of the methods a type node holds in its own file."""
        if self._members is None:
            self._members = defaultdict(lambda: defaultdict(list))
            for f, rows in self.by_file.items():
                for nid, plain, name, kind in rows:
                    if kind in _DEF_KINDS:
                        self._members[(f, plain.rpartition(".")[0])][name].append(nid)
        return self._members.get((self.file_of[type_id], self.plain.get(type_id)), {})


def _header_links(defs: _Defs, edges: pa.Table, sources: Mapping[str, bytes | None]) -> list[tuple[str, str]]:
    """(header node, definition) for each name a header declares and a file including it defines."""
    includers: dict[str, set[str]] = defaultdict(set)
    for s, d, t in zip(edges.column("src").to_pylist(), edges.column("dst").to_pylist(),
                       edges.column("type").to_pylist()):
        if (t == "imports" and s != d and d.endswith(HEADER_SUFFIXES) and defs.language.get(s) in C_FAMILY
                and defs.language.get(d) in C_FAMILY):
            includers[d].add(s)
    out = []
    for header in sorted(includers):
        raw = sources.get(header)
        if not raw:
            continue
        own = {name for _, _, name, kind in defs.by_file[header] if kind in _DEF_KINDS}
        declared = declared_names(raw.decode("utf-8", errors="replace")) - own
        classes = {plain: nid for nid, plain, _, kind in defs.by_file[header] if kind == "class"}
        for source in sorted(includers[header]):
            for nid, plain, name, kind in defs.by_file[source]:
                if kind in _DEF_KINDS and name in declared:
                    out.append((classes.get(plain.rpartition(".")[0], header), nid))
    return out


def _typings_links(defs: _Defs) -> list[tuple[str, str]]:
    """(declaration, definition) between each `.d.ts` file and the JavaScript module it types,
    and the files themselves when no definition matches."""
    modules: dict[str, list[str]] = defaultdict(list)     # module key -> JS files
    for f, lang in defs.language.items():
        if f.endswith(JS_SUFFIXES) and lang == "javascript":
            stem = f.rsplit(".", 1)[0]
            modules[stem].append(f)
            if posixpath.basename(stem) == "index" and "/" in stem:
                modules[posixpath.dirname(stem)].append(f)
    out = []
    for f in sorted(defs.language):
        if not f.endswith(TYPINGS_SUFFIXES):
            continue
        target = _typed_module(f[:f.rindex(".d.")], modules)
        if target is None:
            continue
        linked = _same_names(defs.by_file[f], defs.by_file[target])
        out.extend(linked if linked else [(f, target)])
    return out


def _typed_module(key: str, modules: Mapping[str, list[str]]) -> str | None:
    """The JavaScript file a declaration file of path `key` (suffix dropped) types."""
    if key in modules and len(set(modules[key])) == 1:
        return modules[key][0]
    parts = key.split("/")
    for k in range(1, len(parts)):
        tail = "/".join(parts[k:])
        if tail == "index" and len(parts) > 2:
            break       # `types/locale/index.d.ts` types no `index.js` of another folder
        hits = sorted({f for m, files in modules.items() if m == tail or m.endswith("/" + tail) for f in files})
        if hits:
            shallow = min(h.count("/") for h in hits)
            best = [h for h in hits if h.count("/") == shallow]
            return best[0] if len(best) == 1 else None
    return None


def _same_names(decls: list, impls: list) -> list[tuple[str, str]]:
    """(declaration, definition) pairs of the same name, by the longest common tail of their
    plain qualified names (`dayjs.Dayjs.format` and `Dayjs.format` share two segments)."""
    by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for nid, plain, name, _ in impls:
        by_name[name].append((nid, plain))
    out = []
    for nid, plain, name, _ in decls:
        found = by_name.get(name)
        if not found:
            continue
        segs = plain.split(".")
        tails = [(_common_tail(segs, p.split(".")), d) for d, p in found]
        best = max(t for t, _ in tails)
        out.extend((nid, d) for t, d in tails if t == best)
    return out


def _common_tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _override_links(defs: _Defs, edges: pa.Table) -> list[tuple[str, str]]:
    """(base method, overriding method) for each method of a non-Python type and the nearest
    ancestors (over `inherits`, up to `OVERRIDE_DEPTH` levels) that have a method of its name:
    `Circle extends Base implements Shape` links `Shape.area` to `Circle.area` when `Base`
    leaves `area` abstract."""
    bases: dict[str, list[str]] = defaultdict(list)
    for s, d, t in zip(edges.column("src").to_pylist(), edges.column("dst").to_pylist(),
                       edges.column("type").to_pylist()):
        if t == "inherits" and s != d and s in defs.file_of and d in defs.file_of \
                and defs.language.get(defs.file_of[s]) not in (None, "python"):
            bases[s].append(d)
    out = []
    for sub_type in sorted(bases):
        sub = defs.members(sub_type)
        left, level, seen = set(sub), sorted(set(bases[sub_type])), {sub_type}
        for _ in range(OVERRIDE_DEPTH):
            if not left or not level:
                break
            found: set[str] = set()
            for base_type in level:
                seen.add(base_type)
                base = defs.members(base_type)
                for name in sorted(left & set(base)):
                    out.extend((b, m) for b in base[name] for m in sub[name])
                    found.add(name)
            left -= found
            level = sorted({g for b in level for g in bases.get(b, ())} - seen)
    return out
