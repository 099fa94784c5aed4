"""Generated and vendored copies: files whose definitions duplicate other files' definitions.

A single-header amalgamation (`single_include/json.hpp`, `singleheader/simdjson.h`), a vendored
copy of a library or a checked-in build holds the same definitions, byte for byte, as the files
it was made from. Indexed as they are, the copy competes with its sources for every report and,
holding all of them at once, outranks each. The build links each copied definition to the one
it copies (`copies` edges, copy -> source, and one from the copy's file to each source file with
the number of definitions it copies); localisation folds a copy's evidence into its source and
keeps the copy below it (`codenib.model.localise`).

A file is a copy when
- at least `COPY_MIN_DEFS` of its definitions of `COPY_MIN_LINES` lines or more, and at least
  `COPY_SHARE` of them, have the same name and the same text (`content_sha256`) as a definition
  of another file, and
- something says which side is the copy: its path (`COPY_PATH`) or its opening lines
  (`COPY_BANNER`) mark it as generated or vendored, or it has an amalgamation's shape: at
  least `COPY_SHARE` of its definitions are each found in exactly one other file, and those
  files are two or more, each smaller than it (helpers copied by hand between examples are
  found in many files at once). Two identical files with no such sign are left alone: neither
  is known to be the source.
A copied definition's source is a definition with its name and text in a file that is
neither a copy nor marked as generated or vendored (two protoc outputs of the same messages
copy nothing of each other), the same qualified name first, then the smallest node id.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

import pyarrow as pa

from codenib.compiler.borrowed import VENDOR_FOLDER_NAMES
from codenib.core.types import EDGES_SCHEMA

#: The edge type of a copy's link to its source (`codenib.core.types.EDGE_TYPES`).
COPIES = "copies"
#: A definition shorter than this is too common to prove a copy (`{}` bodies, one-line getters).
COPY_MIN_LINES = 3
#: Fewest duplicated definitions, and least share of a file's definitions, that make it a copy.
COPY_MIN_DEFS = 3
COPY_SHARE = 0.5
#: Paths that hold generated or vendored copies.
COPY_PATH = re.compile(r"(^|/)(single_?include|single_?header|amalgamat\w*|"
                       + "|".join(map(re.escape, sorted(VENDOR_FOLDER_NAMES)))
                       + r"|bower_components|node_modules|dist)/|amalgamat", re.IGNORECASE)
#: Opening-line banners of generated files (read from the file node's text, which opens the file).
COPY_BANNER = re.compile(r"amalgamat|auto-?generated|generated (automatically |by |from )|do not (edit|modify)",
                         re.IGNORECASE)
#: How much of a file node's text the banner is looked for in.
BANNER_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What the detector found in one snapshot: the copy files, the definitions of theirs linked
    to a source, the source files, and the copy files with no source in the snapshot (generated
    or vendored files whose twins are generated or vendored too)."""

    copy_files: tuple[str, ...]
    copied_defs: int
    source_files: tuple[str, ...]
    unsourced: tuple[str, ...]


def copy_edges(nodes: pa.Table) -> pa.Table:
    """`copies` edges (EDGES_SCHEMA) of a snapshot's nodes: each copied definition to its
    source, and each copy file to every file it copies definitions of (count = how many)."""
    links = copy_links(nodes)
    rows: list[tuple[str, str, int]] = [(c, s, 1) for c, s in links]
    ids = nodes.column("node_id").to_pylist()
    files = dict(zip(ids, nodes.column("file").to_pylist()))
    per_file = Counter((files[c], files[s]) for c, s in links)
    rows.extend((cf, sf, n) for (cf, sf), n in per_file.items())
    rows.sort()
    return pa.table({"src": [r[0] for r in rows], "dst": [r[1] for r in rows], "type": [COPIES] * len(rows),
                     "count": [r[2] for r in rows]}, schema=EDGES_SCHEMA)


def copy_report(nodes: pa.Table) -> CopyReport:
    """The copies of a snapshot, summarised."""
    links, copies = _detect(nodes)
    files = dict(zip(nodes.column("node_id").to_pylist(), nodes.column("file").to_pylist()))
    sourced = {files[c] for c, _ in links}
    return CopyReport(tuple(sorted(copies)), len(links), tuple(sorted({files[s] for _, s in links})),
                      tuple(sorted(copies - sourced)))


def copy_links(nodes: pa.Table) -> list[tuple[str, str]]:
    """(copied definition's node id, its source's node id) pairs, sorted."""
    return _detect(nodes)[0]


# --- helpers ---------------------------------------------------------------------------------

def _detect(nodes: pa.Table) -> tuple[list[tuple[str, str]], set[str]]:
    """The (copy, source) node id pairs and the copy files of a snapshot's nodes."""
    cols = {k: nodes.column(k).to_pylist() for k in
            ("node_id", "kind", "file", "qualname", "name", "start_line", "end_line", "content_sha256", "text")}
    n = len(cols["node_id"])
    holders: dict[tuple[str, str], list[int]] = defaultdict(list)
    sized: dict[str, list[int]] = defaultdict(list)
    banner: dict[str, bool] = {}
    for r in range(n):
        f = cols["file"][r]
        if cols["kind"][r] == "file":
            banner[f] = bool(COPY_BANNER.search((cols["text"][r] or "")[:BANNER_CHARS]))
            continue
        holders[(cols["name"][r], cols["content_sha256"][r])].append(r)
        if cols["end_line"][r] - cols["start_line"][r] + 1 >= COPY_MIN_LINES:
            sized[f].append(r)
    copies, marked = _copy_files(cols, holders, sized, banner)
    if not copies:
        return [], copies
    not_sources = copies | marked
    out = []
    for r in range(n):
        f = cols["file"][r]
        if f not in copies or cols["kind"][r] == "file":
            continue
        small = cols["end_line"][r] - cols["start_line"][r] + 1 < COPY_MIN_LINES
        source = _source(r, holders[(cols["name"][r], cols["content_sha256"][r])], cols, not_sources, small)
        if source is not None:
            out.append((cols["node_id"][r], cols["node_id"][source]))
    return sorted(out), copies


def _copy_files(cols: dict, holders: dict, sized: dict, banner: dict) -> tuple[set[str], set[str]]:
    """The files that are copies, and the files marked as generated or vendored (by path or
    banner), which are never a copy's source either (see the module's docstring)."""
    files = cols["file"]
    dup: dict[str, int] = {}
    alone: dict[str, Counter] = {}      # file -> partner -> definitions shared with that partner alone
    for f, rows in sized.items():
        n_dup, only = 0, Counter()
        for r in rows:
            others = {files[h] for h in holders[(cols["name"][r], cols["content_sha256"][r])]} - {f}
            if others:
                n_dup += 1
                if len(others) == 1:
                    only.update(others)
        if n_dup:
            dup[f], alone[f] = n_dup, only
    marked = {f for f in set(files) if COPY_PATH.search(f) or banner.get(f)}
    out = set()
    for f in sorted(dup):
        if dup[f] < COPY_MIN_DEFS or dup[f] < COPY_SHARE * len(sized[f]):
            continue
        # An amalgamation: definitions each found in one other file, from two files or more
        # smaller than it (hand-copied helpers are found in many files at once).
        gathered = {g: k for g, k in alone[f].items() if len(sized.get(g, ())) < len(sized[f])}
        if f in marked or (len(gathered) >= 2 and sum(gathered.values()) >= COPY_SHARE * len(sized[f])):
            out.add(f)
    return out, marked


def _source(r: int, holders: list[int], cols: dict, not_sources: set[str], small: bool) -> int | None:
    """The definition a copied definition `r` copies: one with its name and text outside every
    copy or generated file, the same qualified name first (required of a short definition),
    then the smallest node id."""
    qual = cols["qualname"][r]
    found = [h for h in holders if cols["file"][h] not in not_sources]
    same = [h for h in found if cols["qualname"][h] == qual]
    pool = same if (same or small) else found
    return min(pool, key=lambda h: cols["node_id"][h]) if pool else None
