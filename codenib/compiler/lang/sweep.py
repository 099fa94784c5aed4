"""The shared walk of the tree-sitter readers: one parsed file and a language's answers about
its captures (`TreeReader`) -> its nodes and its `ForeignFacts`.

The nesting of definitions is a sweep over the captures in source order (so Python visits
only captured nodes); here too are node ids with `#N` duplicates, spans, signatures, doc
comments and parse errors (node texts and file outlines: `codenib.compiler.lang.sweep_nodes`). `SweepReader`
(`codenib.compiler.lang.sweep_reader`) is what the registry (`codenib.compiler.lang`) hands
out for a tree-sitter language: its `Reader`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codenib.compiler.lang.base import (ForeignParse, Found, TreeReader, collapse, node_text, order_nodes,
                                        slot_constructor)
from codenib.core.gcpause import collector_paused
from codenib.compiler.lang.facts import BaseFact, CallFact, ForeignFacts, ImportFact
# The text caps moved with the node texts; they stay importable from here (public names).
from codenib.compiler.lang.sweep_nodes import MAX_FILE_TEXT_CHARS, MAX_TEXT_CHARS  # noqa: F401
from codenib.compiler.lang.sweep_nodes import SweepDef, definition_node, file_node
from codenib.core.types import UniqueQualnames, make_node_id

#: A signature is the declaration head; past this it is a generated parameter list.
MAX_SIGNATURE_CHARS = 400
#: Doc comments longer than this are license blocks or generated text.
MAX_DOC_CHARS = 4_000
#: Definitions nested deeper than this are folded into their ancestor at this depth (their
#: calls count as its calls): Python itself stops at 100 indentation levels, and each level's
#: text holds the levels below it, so deeper chains only multiply text and tree walks.
MAX_NESTING = 100

_CallFact = slot_constructor(CallFact)
_ImportFact = slot_constructor(ImportFact)
_BaseFact = slot_constructor(BaseFact)


def read_file(reader: TreeReader, rel_path: str, raw: bytes) -> ForeignParse:
    """Nodes and facts of one file; a syntax error never stops it (see `read_tree`)."""
    parser, _, cursor = reader.tools(rel_path)
    with collector_paused():
        root = parser.parse(raw).root_node
        return read_tree(reader, rel_path, raw, root, cursor.captures(root))


def read_spans(reader: TreeReader, rel_path: str, raw: bytes) -> list[tuple[str, int, int]]:
    """(node id, start line, end line) of each definition node `read_file` makes of `raw`, in
    its order: the same sweep, with only the `@def` patterns matched and no texts, calls,
    imports or facts (what `--history` needs of every past version of a file)."""
    return tree_spans(reader, rel_path, raw)[0]


def tree_spans(reader: TreeReader, rel_path: str, raw: bytes, old_tree=None) -> tuple[list[tuple[str, int, int]], object]:
    """`read_spans` and the tree it swept; `old_tree`: a neighbouring version's tree already
    edited into `raw` (`sweep_delta.edited_tree`), whose unedited subtrees the parse reuses."""
    parser, _, cursor = reader.tools(rel_path, definitions_only=True)
    with collector_paused():
        tree = parser.parse(raw) if old_tree is None else parser.parse(raw, old_tree)
        sweep = _sweep(reader, raw, rel_path, cursor.captures(tree.root_node), spans_only=True)
    return [(d.node_id, d.start, d.end) for d in sweep.defs], tree


# --- the shared walk ---------------------------------------------------------------------

@dataclass(slots=True)
class _Scope:
    end: int                    # end byte
    path: tuple[str, ...]       # plain qualified name segments
    role: str
    definition: SweepDef | None     # the innermost definition at or above this scope
    depth: int                  # definitions at or above this scope (a namespace adds none)


def read_tree(reader: TreeReader, rel_path: str, raw: bytes, root, captures: dict) -> ForeignParse:
    """Nodes and facts from a parsed tree and its query captures.

    Tree-sitter recovers from syntax errors: what parses around an error is still read, and
    the first error's line becomes the file's `parse_error`.
    """
    text = raw.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if "\r" in text:
        lines = [line.removesuffix("\r") for line in lines]
    if lines and lines[-1] == "":
        lines.pop()
    error = _first_error(root)
    file_id = make_node_id(rel_path)

    sweep = _sweep(reader, raw, rel_path, captures, spans_only=False)
    if sweep.too_deep:
        # The build warns of a file's parse error by its name: the fold is said there too.
        note = f"{sweep.too_deep} definitions nested deeper than {MAX_NESTING} folded into their ancestor"
        error = f"{error}; {note}" if error else note
    defs, folds, bases, impl_bases = sweep.defs, sweep.folds, sweep.bases, sweep.impl_bases

    first_of = {}
    for d in defs:
        first_of.setdefault(d.plain, d.node_id)
    for owner, found_bases, line in impl_bases:
        for base, relation in found_bases:
            bases.append(_BaseFact(owner, first_of.get(owner, ""), base, relation, line))
    bases.sort(key=lambda b: (b.line, b.owner, b.base))

    calls, call_imports = _calls(raw, defs, reader.call_sites(captures, raw), file_id)
    imports = [_ImportFact(spec, n.start_point.row + 1, kind, tuple(names))
               for n in _unique_sorted(captures.get("import", ()))
               for spec, kind, names in reader.imports(n, raw)]
    imports = sorted(imports + call_imports, key=lambda i: (i.line, i.spec, i.kind))
    package = next((i.spec for i in imports if i.kind == "package"), "")
    scopes = reader.scopes([(d.node_id, d.ts_node) for d in defs], captures, raw, calls) \
        if type(reader).scopes is not TreeReader.scopes else ()
    facts = ForeignFacts(rel_path, reader.language, package, tuple(imports), tuple(calls), tuple(bases),
                         scopes=tuple(scopes))

    top = folds + [d for d in defs if not d.nested]
    nodes = [file_node(rel_path, lines, raw, top, _file_doc(reader, root, raw, defs), reader.language, error)]
    nodes += [definition_node(rel_path, lines, raw, d, reader.language) for d in defs]
    return ForeignParse(rel_path, nodes, facts, error)


@dataclass(slots=True)
class _Sweep:
    defs: list[SweepDef]
    folds: list[SweepDef]               # top-level namespaces the file outline shows as a signature
    bases: list[BaseFact]
    impl_bases: list[tuple[str, tuple, int]]
    too_deep: int                   # captures inside a definition at depth MAX_NESTING, folded into it


def _sweep(reader: TreeReader, raw: bytes, rel_path: str, captures: dict, spans_only: bool) -> _Sweep:
    """The definitions of the `@def` captures, outer before inner, with their qualified names
    (`#N` for repeats) and spans; `spans_only` leaves out what only nodes and facts need
    (docs, signatures, decorators' text, folded namespaces, bases)."""
    defs: list[SweepDef] = []
    folds: list[SweepDef] = []      # top-level namespaces the file outline shows as a signature
    bases: list[BaseFact] = []
    impl_bases: list[tuple[str, tuple, int]] = []
    names = UniqueQualnames()
    stack: list[_Scope] = []
    too_deep = 0
    for node in _unique_sorted(captures.get("def", ())):
        start = node.start_byte
        while stack and stack[-1].end <= start:
            stack.pop()
        top = stack[-1] if stack else None
        if top is not None and top.depth >= MAX_NESTING:
            too_deep += 1       # not even `define`: its tree walks cost the node's depth
            continue
        found = reader.define(node, raw)
        if found is None:
            continue
        path = top.path if top else ()
        holder = top.definition if top else None
        if found.role in ("namespace", "impl"):
            segs = tuple(s for s in found.name.split(".") if s)
            if not spans_only and found.role == "namespace" and holder is None and reader.folded(node, raw):
                folds.append(_definition(reader, raw, rel_path, node, found, "", "", "namespace", None, False))
            stack.append(_Scope(node.end_byte, path + segs, found.role, holder, top.depth if top else 0))
            if not spans_only and found.role == "impl" and found.bases:
                impl_bases.append((".".join(path + segs), found.bases, node.start_point.row + 1))
            continue
        if not found.name:
            # An anonymous type (`enum : unsigned long long { bit = 1 };`) names nothing: as a
            # node its id would be its scope's (at the top, the file's own), so its members
            # stay with the scope around it.
            continue
        segs = path + tuple(found.qualifier) + (found.name,)
        plain = ".".join(segs)
        qual = names.add(plain)
        if found.role == "type":
            kind = "class"
        elif found.qualifier or (top is not None and top.role in ("type", "impl")):
            kind = "method"
        else:
            kind = "function"
        d = _definition(reader, raw, rel_path, node, found, qual, plain, kind, holder, spans_only)
        defs.append(d)
        if holder is not None:
            holder.children.append(d)
        stack.append(_Scope(node.end_byte, segs, found.role, d, (top.depth if top else 0) + 1))
        for base, relation in () if spans_only else found.bases:
            bases.append(_BaseFact(plain, d.node_id, base, relation, node.start_point.row + 1))

    return _Sweep(defs, folds, bases, impl_bases, too_deep)


def _unique_sorted(nodes) -> list:
    """Captured nodes once each (several patterns may capture one), outer before inner."""
    spans, order = order_nodes(nodes)
    return [nodes[i] for i in order]


def _first_error(root) -> str | None:
    """'syntax error near line N' for the first error or missing node, None without one."""
    if not root.has_error:
        return None
    node = root
    while True:
        for child in node.children:
            if child.is_error or child.is_missing:
                return f"syntax error near line {child.start_point.row + 1}"
            if child.has_error:
                node = child
                break
        else:
            return f"syntax error near line {node.start_point.row + 1}"


def _definition(reader: TreeReader, raw: bytes, rel_path: str, node, found: Found,
                qual: str, plain: str, kind: str, holder: SweepDef | None, spans_only: bool) -> SweepDef:
    outer = found.outer if found.outer is not None else node
    start_row = outer.start_point.row
    start_byte = outer.start_byte
    end_row = _end_row(outer)
    # Attributes (`#[derive]`) and the comment block right above belong to the definition:
    # attributes widen its span (as Python's decorators), comments are its doc.
    decorators, comments = [], []
    row = start_row
    attribute_types, comment_types = reader.attribute_types, reader.comment_types
    prev = outer.prev_sibling
    while prev is not None:
        kind_of_prev = prev.type        # read once: each read builds a new str
        is_attribute = kind_of_prev in attribute_types
        if not (is_attribute or kind_of_prev in comment_types) or _end_row(prev) < row - 1:
            break
        before = prev.prev_sibling
        if is_attribute:
            if not spans_only:
                decorators.append(collapse(node_text(prev, raw)))
            start_row = prev.start_point.row
            start_byte = prev.start_byte
        elif before is not None and _end_row(before) == prev.start_point.row:
            break       # `x = 1; // note` documents the line it ends, not what follows
        else:
            comments.append(prev)
        row = prev.start_point.row
        prev = before
    if spans_only:
        return SweepDef(make_node_id(rel_path, qual), qual, plain, found.name, kind, found, node, holder is not None,
                    start_row + 1, end_row + 1, start_row + 1, "", (), "")
    decorators.reverse()
    comments.reverse()
    doc = clean_comment("\n".join(node_text(c, raw).rstrip("\r\n") for c in comments))[:MAX_DOC_CHARS] if comments else ""
    text_row = min([start_row] + [c.start_point.row for c in comments]) if doc else start_row
    text_byte = min([start_byte] + [c.start_byte for c in comments]) if doc else start_byte
    sig_end = found.body.start_byte if found.body is not None else outer.end_byte
    signature = collapse(raw[outer.start_byte:sig_end].decode("utf-8", "replace"))
    if found.body is None:
        signature = signature.split("{", 1)[0].rstrip(" ;")
    return SweepDef(make_node_id(rel_path, qual), qual, plain, found.name, kind, found, node, holder is not None,
                start_row + 1, end_row + 1, text_row + 1, doc,
                tuple(decorators), signature[:MAX_SIGNATURE_CHARS], text_byte, outer.end_byte)


def _end_row(node) -> int:
    """The last row a node covers (a line comment may end at column 0 of the next row)."""
    end = node.end_point
    row = end.row
    return row - 1 if end.column == 0 and row > node.start_point.row else row


_COMMENT_OPEN = re.compile(r"^\s*(?:/\*+!?|//[/!]?|\*+(?!/))\s?")
_COMMENT_CLOSE = re.compile(r"\s*\*+/\s*$")


def clean_comment(text: str) -> str:
    """A comment's words without `//`, `///`, `//!`, `/**`, `*/` or leading `*` markers."""
    out = []
    for line in text.split("\n"):
        line = line.rstrip()
        if "*/" in line:
            line = _COMMENT_CLOSE.sub("", line)
        out.append(_COMMENT_OPEN.sub("", line, count=1).rstrip())
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


def _file_doc(reader: TreeReader, root, raw: bytes, defs: list[SweepDef]) -> str:
    """The comment block at the top of the file, unless it documents the first definition."""
    block = []
    for i in range(root.child_count):       # not `root.children`: that builds every top-level node
        child = root.child(i)
        if child.type not in reader.comment_types:
            break
        if block and child.start_point.row > _end_row(block[-1]) + 1:
            break
        block.append(child)
    if not block:
        return ""
    text = clean_comment("\n".join(node_text(c, raw).rstrip("\r\n") for c in block))
    if defs and defs[0].doc and defs[0].text_start == block[0].start_point.row + 1:
        return ""
    return text[:MAX_DOC_CHARS]


def _calls(raw: bytes, defs: list[SweepDef], sites: list, file_id: str) -> tuple[list[CallFact], list[ImportFact]]:
    """Each call site (`TreeReader.call_sites`) with the innermost definition around it (a
    sweep over both, by position: at one span a definition comes first).

    Lines come from counting newlines between consecutive calls (a node's row costs more).
    """
    def_spans = [(d.ts_node.start_byte, -d.ts_node.end_byte) for d in defs]
    next_def = 0
    n_defs = len(defs)
    stack: list[tuple[int, str]] = []     # (end byte, node id) of the definitions around
    nowhere = len(raw) + 1                # an end no call reaches: outside every definition
    top_end, caller = nowhere, file_id    # stack[-1], kept in locals (this runs per call)
    calls: list[CallFact] = []
    imports: list[ImportFact] = []
    count = raw.count
    line, at = 1, 0
    # A definition's (start, -end) sorts before a site's (start, -end, ...) at the same span.
    for site in sites:
        if next_def < n_defs and def_spans[next_def] <= site:
            while next_def < n_defs and def_spans[next_def] <= site:
                start, neg_end = def_spans[next_def]
                while stack and stack[-1][0] <= start:
                    stack.pop()
                stack.append((-neg_end, defs[next_def].node_id))
                next_def += 1
            top_end, caller = stack[-1]
        start, _, got, made = site
        if top_end <= start:
            while stack and stack[-1][0] <= start:
                stack.pop()
            top_end, caller = stack[-1] if stack else (nowhere, file_id)
        line += count(b"\n", at, start)
        at = start
        if got is not None:
            calls.append(_CallFact(got[0], got[1], caller, line, got[2]))
        if made:
            for spec, kind, names in made:
                imports.append(_ImportFact(spec, line, kind, tuple(names)))
    return calls, imports
