"""A plain BM25 baseline over tree-sitter definition chunks, independent of CodeNib's readers.

Each source file of a snapshot gives one chunk for the whole file and one per named
definition (function, method, constructor, type), read with the grammar wheels directly;
bm25s ranks them for the whole issue text, both sides tokenized the same way: words split at
camelCase and snake_case (the whole identifier kept too), English stopwords dropped, Snowball
English stems. Chunk ids follow CodeNib's `file::Container.name` shape so that the dev-set
metrics read both alike. `mswe_dev.py` prints it; `bench_languages.py` uses the grammars.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: Extension -> grammar. `.h` is C unless the repository is C++ (see `grammar_for`).
EXTENSIONS = {
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".java": "java", ".rs": "rust", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".ipp": "cpp", ".inl": "cpp",
}
SKIP_DIRS = {"node_modules", "vendor", "third_party", "target", "dist", "build"}
MAX_BYTES = 1 << 20


@lru_cache(maxsize=None)
def grammar(name: str):
    """The tree_sitter.Language of a grammar wheel (imported on first use)."""
    import importlib

    from tree_sitter import Language

    module, attr = {"typescript": ("tree_sitter_typescript", "language_typescript"),
                    "tsx": ("tree_sitter_typescript", "language_tsx")}.get(name, (f"tree_sitter_{name}", "language"))
    return Language(getattr(importlib.import_module(module), attr)())


def grammar_for(rel_path: str, cpp_repo: bool = False) -> str | None:
    ext = os.path.splitext(rel_path)[1].lower()
    name = EXTENSIONS.get(ext)
    return "cpp" if name == "c" and ext == ".h" and cpp_repo else name


def source_files(root: Path) -> list[str]:
    """Relative paths of the files with a grammar, sorted; hidden, vendored and build folders
    and files over 1 MiB skipped."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
        for name in filenames:
            path = Path(dirpath) / name
            if grammar_for(name) and not path.is_symlink() and path.stat().st_size <= MAX_BYTES:
                out.append(path.relative_to(root).as_posix())
    return sorted(out)


# --- definitions ---------------------------------------------------------------------------------

def _field(node, name):
    return node.child_by_field_name(name)


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _named(node) -> str:
    return _text(_field(node, "name"))


def _declarator_name(node) -> str:
    """C/C++: the name a (function) declarator declares, through pointers, references and
    parentheses; `A::f` keeps its scope (`A.f`)."""
    while node is not None:
        if node.type in ("identifier", "field_identifier", "type_identifier", "destructor_name",
                         "operator_name", "primitive_type"):
            return _text(node)
        if node.type == "qualified_identifier":
            scope, name = _field(node, "scope"), _field(node, "name")
            inner = _declarator_name(name)
            return f"{_text(scope)}.{inner}".replace("::", ".") if scope is not None and inner else inner
        if node.type == "template_function":
            return _declarator_name(_field(node, "name"))
        nxt = _field(node, "declarator")
        node = nxt if nxt is not None else (node.named_children[0] if node.named_children else None)
    return ""


def _js_binding(node) -> str:
    """`const f = () => ...`, `obj.f = function ...`, `{ f: function ... }`: the bound name."""
    value = _field(node, "value") if node.type != "assignment_expression" else _field(node, "right")
    if value is None or value.type not in ("arrow_function", "function_expression", "function",
                                           "generator_function"):
        return ""
    if node.type == "variable_declarator":
        return _named(node)
    if node.type == "pair":
        return _text(_field(node, "key")).strip("'\"")
    left = _field(node, "left")
    return _text(_field(left, "property")) if left is not None and left.type == "member_expression" else ""


def _type_def(node) -> str:
    return _named(node) if _field(node, "body") is not None else ""


def _c_typedef(node) -> str:
    return _declarator_name(_field(node, "declarator"))


def _func_def(node) -> str:
    return _declarator_name(_field(node, "declarator"))


_JS = {"function_declaration": _named, "generator_function_declaration": _named, "method_definition": _named,
       "class_declaration": _named, "variable_declarator": _js_binding, "assignment_expression": _js_binding,
       "pair": _js_binding}
_TS = {**_JS, "abstract_class_declaration": _named, "interface_declaration": _named,
       "type_alias_declaration": _named, "enum_declaration": _named, "function_signature": _named,
       "method_signature": _named, "abstract_method_signature": _named, "internal_module": _named}
_C = {"function_definition": _func_def, "struct_specifier": _type_def, "union_specifier": _type_def,
      "enum_specifier": _type_def, "type_definition": _c_typedef}
#: Definition node type -> its name (empty: not a named definition) per grammar.
DEFINITIONS: dict[str, dict[str, Callable]] = {
    "javascript": _JS, "typescript": _TS, "tsx": _TS,
    "go": {"function_declaration": _named, "method_declaration": _named, "type_spec": _named},
    "java": {t: _named for t in ("class_declaration", "interface_declaration", "enum_declaration",
                                 "record_declaration", "annotation_type_declaration", "method_declaration",
                                 "constructor_declaration")},
    "rust": {t: _named for t in ("function_item", "function_signature_item", "struct_item", "enum_item",
                                 "union_item", "trait_item", "type_item", "macro_definition")},
    "c": _C,
    "cpp": {**_C, "class_specifier": _type_def},
}
#: Scopes that name their definitions without being one (Rust impl blocks, modules, namespaces).
CONTAINERS: dict[str, dict[str, Callable]] = {
    "rust": {"impl_item": lambda n: _text(_field(n, "type")).split("<")[0].split("::")[-1],
             "mod_item": _named},
    "cpp": {"namespace_definition": _named},
    "go": {},
}


@dataclass(frozen=True)
class Chunk:
    node_id: str
    text: str


def chunks(rel_path: str, raw: bytes, cpp_repo: bool = False) -> list[Chunk]:
    """The file chunk, then one chunk per named definition (outer before inner)."""
    name = grammar_for(rel_path, cpp_repo)
    text = raw.decode("utf-8", "replace")
    out = [Chunk(rel_path, text)]
    if name is None:
        return out
    from tree_sitter import Parser

    tree = Parser(grammar(name)).parse(raw)
    defs, scopes = DEFINITIONS[name], CONTAINERS.get(name, {})
    seen: dict[str, int] = {}
    for qualname, node in _walk(tree.root_node, defs, scopes, ()):
        nid = f"{rel_path}::{qualname}"
        seen[nid] = seen.get(nid, 0) + 1
        out.append(Chunk(nid if seen[nid] == 1 else f"{nid}#{seen[nid]}", _text(node)))
    return out


def _walk(node, defs, scopes, stack: tuple[str, ...]) -> Iterator[tuple[str, object]]:
    for child in node.named_children:
        inner = stack
        if child.type in defs:
            name = defs[child.type](child)
            if name:
                qual = ".".join((*stack, name)) if "." not in name else name
                yield qual, child
                inner = tuple(qual.split("."))
        elif child.type in scopes:
            name = scopes[child.type](child)
            inner = (*stack, name) if name else stack
        yield from _walk(child, defs, scopes, inner)


# --- BM25 ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


class Tokenizer:
    """Identifier-aware words -> stems: `parseHTTPHeader_v2` gives parse, http, header, v, 2
    and the whole word; English stopwords dropped."""

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN

        self._stem = Stemmer.Stemmer("english").stemWord
        self._stop = set(STOPWORDS_EN)
        self._cache: dict[str, list[str]] = {}

    def __call__(self, text: str) -> list[str]:
        out: list[str] = []
        for word in _WORD.findall(text):
            got = self._cache.get(word)
            if got is None:
                parts = [p.lower() for p in _PART.findall(word)]
                if len(parts) > 1:
                    parts.append(word.lower().strip("_"))
                got = [self._stem(p) for p in parts if p not in self._stop]
                if len(self._cache) < 1_000_000:
                    self._cache[word] = got
            out.extend(got)
        return out


def rank(query: str, items: list[Chunk], tokenize: Tokenizer, k: int = 100) -> list[str]:
    """Chunk ids, best first, for the whole query (bm25s, default parameters)."""
    import bm25s

    vocab: dict[str, int] = {}
    corpus = [[vocab.setdefault(t, len(vocab)) for t in tokenize(c.text)] for c in items]
    q = [vocab[t] for t in tokenize(query) if t in vocab]
    if not q:
        return []
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenization.Tokenized(ids=corpus, vocab=vocab), show_progress=False)
    docs, _ = retriever.retrieve(bm25s.tokenization.Tokenized(ids=[q], vocab=vocab),
                                 k=min(k, len(items)), show_progress=False)
    return [items[j].node_id for j in docs[0]]


def snapshot_chunks(root: Path, cpp_repo: bool = False) -> list[Chunk]:
    out: list[Chunk] = []
    for rel in source_files(root):
        out.extend(chunks(rel, (root / rel).read_bytes(), cpp_repo))
    return out
