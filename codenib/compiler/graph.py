"""The code graph of one snapshot; with the state of an earlier build, only the files whose
edges can have changed are resolved again.

A file's edges are a function of its own syntax and of the facts of other files its
resolution read (`codenib.compiler.resolve.deps`), because caches live per file
(`Resolver.begin_file`). So a file keeps its earlier edges when its content and module
facts are unchanged and every key it read still has its digest; every other file goes
through pass 2 again, and only the files those lookups reach are parsed and scanned.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codenib.compiler.parse import ParsedFile, parse_syntax
from codenib.compiler.resolve import Resolver, resolve_file
from codenib.compiler.resolve.deps import key_digest, key_owner, key_string, key_tuple
from codenib.compiler.resolve.scopes import trim_file
from codenib.types import EDGES_SCHEMA

#: Pass 2 of a file scanned on demand reuses its tree while the trees kept this way hold
#: at most this much source (a tree takes ~55 bytes of memory per byte of source: ~450 MB).
KEEP_TREES_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What decides a file's bindings: its content and its place in the module table."""

    content_sha256: str
    module: str          # its dotted module name
    module_path: str     # the file that won that module name (itself, unless contested)
    parsed: bool


@dataclass(slots=True)
class GraphState:
    """What a later build compares against: each file's facts, each dependency key's
    digest, and which keys each file read (rows of `reads_file` / `reads_key`)."""

    files: dict[str, FileFacts]
    keys: list[str]                 # key strings, sorted
    digests: list[str]              # digest of keys[i]
    owners: list[str]               # file whose content decides keys[i] ('' module table)
    readers: list[str]              # file names the reads arrays index, sorted
    reads_file: np.ndarray          # int32 index into readers
    reads_key: np.ndarray           # int32 index into keys

    def reads_of(self, rel_path: str) -> list[str]:
        """The keys one file read (for tests and diagnostics)."""
        try:
            i = self.readers.index(rel_path)
        except ValueError:
            return []
        return [self.keys[k] for k in self.reads_key[self.reads_file == i]]


@dataclass(frozen=True, slots=True)
class GraphResult:
    """The edges of a snapshot and what building them took."""

    edges: pa.Table          # EDGES_SCHEMA, sorted by (src, dst, type)
    state: GraphState
    resolved: int            # files that went through pass 2
    scanned: int             # files parsed and scanned for their bindings
    parsed_twice: int        # files parsed once for pass 1 and again for pass 2
    dirty_keys: int          # keys of the earlier state whose digest changed


def build_graph(sources: Mapping[str, bytes | None], facts_in: Mapping[str, tuple[str, bool]],
                root_package: str | None, previous: tuple[GraphState, pa.Table] | None = None,
                progress: bool = False) -> GraphResult:
    """Resolve the edges of every file in `sources`.

    Args:
        sources: relative path -> the bytes the build read (None: unreadable).
        facts_in: relative path -> (content sha256, whether the file parsed).
        previous: the state and edges table of an earlier index of the same repository;
            files whose edges cannot have changed keep their rows of that table.
    """
    rels = sorted(sources)
    run = _Run(sources, rels, root_package)
    facts = {rel: FileFacts(facts_in[rel][0], run.resolver.module_of_file[rel],
                            run.resolver.modules[run.resolver.module_of_file[rel]], facts_in[rel][1])
             for rel in rels}
    parsed = {rel: f.parsed for rel, f in facts.items()}
    digest_of = _Digests(run, parsed)
    if previous is None:
        todo = set(rels)
        dirty = 0
        old_state = old_edges = None
    else:
        old_state, old_edges = previous
        todo, dirty = _files_to_resolve(old_state, facts, digest_of, run)
    run.pending = set(todo)
    counts: Counter[tuple[str, str, str]] = Counter()
    new_reads: dict[str, set[tuple]] = {}
    from tqdm import tqdm

    bar = tqdm(total=len(todo), desc="graph", unit="file", disable=not progress, file=sys.stderr, leave=False)
    for rel, pf in run.pass2_order(sorted(todo)):
        file_counts, reads = resolve_file(run.resolver, pf, record=True)
        counts.update(file_counts)
        new_reads[rel] = reads
        if pf.tree is not None and run.owns(pf):
            trim_file(pf)
        bar.update(1)
    bar.close()
    edges = _merge_edges(counts, old_edges, set(rels) - todo)
    state = _new_state(facts, old_state, todo, new_reads, digest_of)
    return GraphResult(edges, state, resolved=len(todo), scanned=len(run.resolver.scanned),
                       parsed_twice=run.parsed_twice, dirty_keys=dirty)


def empty_edges() -> pa.Table:
    return EDGES_SCHEMA.empty_table()


# --- helpers ---------------------------------------------------------------------------------

class _Run:
    """One build's resolver, scanning files on demand from the bytes the build read."""

    def __init__(self, sources: Mapping[str, bytes | None], rels: list[str], root_package: str | None):
        self.sources = sources
        self.resolver = Resolver(rels, root_package, on_demand=self._scan)
        self.pending: set[str] = set()          # files whose pass 2 is still to run
        self.kept: dict[str, ParsedFile] = {}   # scanned on demand, tree kept for pass 2
        self.kept_bytes = 0
        self.parsed_twice = 0
        self._own: set[int] = set()             # id() of ParsedFiles the resolver holds

    def parse(self, rel: str) -> ParsedFile:
        raw = self.sources[rel]
        if raw is None:
            return ParsedFile(rel_path=rel, nodes=[], parse_error="unreadable")
        return parse_syntax(rel, raw)

    def owns(self, pf: ParsedFile) -> bool:
        return id(pf) in self._own

    def ensure(self, rel: str) -> None:
        """Scan a file (for its bindings) unless it has been."""
        if rel not in self.resolver.scanned:
            self._scan(rel)

    def _scan(self, rel: str) -> None:
        pf = self.parse(rel)
        size = len(self.sources[rel] or b"")
        keep = (rel in self.pending and pf.tree is not None
                and self.kept_bytes + size <= KEEP_TREES_BYTES)
        self.resolver.add_file(pf, trim=not keep)
        if keep:
            self.kept[rel] = pf
            self.kept_bytes += size
            self._own.add(id(pf))

    def pass2_order(self, todo: list[str]):
        """(rel, parsed file) for pass 2 of each file in `todo`, kept trees first."""
        queue = list(reversed(todo))
        done: set[str] = set()
        while queue or self.kept:
            if self.kept:
                rel = next(reversed(self.kept))      # the latest kept: its tree goes soonest
                pf = self.kept.pop(rel)
                self.kept_bytes -= len(self.sources[rel] or b"")
            else:
                rel = queue.pop()
                if rel in done:
                    continue
                if rel in self.resolver.scanned:
                    pf = self.parse(rel)
                    self.parsed_twice += 1
                else:
                    pf = self.parse(rel)
                    self.resolver.add_file(pf, trim=False)
                    self._own.add(id(pf))
            done.add(rel)
            self.pending.discard(rel)
            yield rel, pf
            self._own.discard(id(pf))


class _Digests:
    """Digests of dependency keys in this build's bindings, computed once each."""

    def __init__(self, run: _Run, parsed: Mapping[str, bool]):
        self.run = run
        self.parsed = parsed
        self._known: dict[str, str] = {}

    def __call__(self, key: str) -> str:
        digest = self._known.get(key)
        if digest is None:
            tup = key_tuple(key)
            owner = key_owner(tup)
            if owner and owner in self.run.sources:
                self.run.ensure(owner)
            digest = key_digest(self.run.resolver, tup, lambda rel: self.parsed.get(rel, False))
            self._known[key] = digest
        return digest


def _files_to_resolve(old: GraphState, facts: dict[str, FileFacts], digest_of: _Digests,
                      run: _Run) -> tuple[set[str], int]:
    """Files whose edges may differ from the earlier build's, and how many keys changed."""
    changed = {rel for rel, f in facts.items() if old.files.get(rel) != f}
    deleted = set(old.files) - set(facts)
    # Changed files are resolved again anyway: scanning them now (trees kept) lets pass 2
    # reuse the parse that the digests below need.
    run.pending = set(changed)
    for rel in sorted(changed):
        run.ensure(rel)
    # Only keys of changed or deleted files, and module-table keys, can have new digests.
    suspects = changed | deleted | {""}
    dirty = np.zeros(len(old.keys), dtype=bool)
    for i in np.flatnonzero(pc.is_in(pa.array(old.owners), value_set=pa.array(sorted(suspects)))
                            .to_numpy(zero_copy_only=False)):
        dirty[i] = digest_of(old.keys[i]) != old.digests[i]
    readers = np.unique(old.reads_file[dirty[old.reads_key]]) if len(old.reads_key) else []
    todo = set(changed)
    todo.update(r for r in (old.readers[i] for i in readers) if r in facts)
    return todo, int(dirty.sum())


def _merge_edges(counts: Counter, old_edges: pa.Table | None, kept_files: set[str]) -> pa.Table:
    """Edges found now plus the earlier edges that start in files kept as they were."""
    items = list(counts.items())
    new = pa.table({
        "src": [k[0] for k, _ in items],
        "dst": [k[1] for k, _ in items],
        "type": [k[2] for k, _ in items],
        "count": [n for _, n in items],
    }, schema=EDGES_SCHEMA)
    parts = [new]
    if old_edges is not None and kept_files and old_edges.num_rows:
        src_file = pc.replace_substring_regex(old_edges.column("src"), "::.*$", "")
        keep = pc.is_in(src_file, value_set=pa.array(sorted(kept_files), pa.string()))
        parts.append(old_edges.filter(keep).cast(EDGES_SCHEMA))
    table = pa.concat_tables(parts).combine_chunks()
    return table.sort_by([("src", "ascending"), ("dst", "ascending"), ("type", "ascending")])


def _new_state(facts: dict[str, FileFacts], old: GraphState | None, resolved: set[str],
               new_reads: dict[str, set[tuple]], digest_of: _Digests) -> GraphState:
    """The state after this build: kept files' reads as they were, the others' as found."""
    readers = sorted(facts)
    reader_index = {r: i for i, r in enumerate(readers)}
    new_keys = {rel: [key_string(k) for k in keys] for rel, keys in new_reads.items()}
    key_set = {k for keys in new_keys.values() for k in keys}
    kept_file = kept_key = np.zeros(0, dtype=np.int32)
    old_digest: dict[str, str] = {}
    if old is not None and len(old.reads_file):
        old_to_new_reader = np.array([reader_index.get(r, -1) if r not in resolved else -1
                                      for r in old.readers], dtype=np.int32)
        rows = old_to_new_reader[old.reads_file] >= 0
        kept_file = old_to_new_reader[old.reads_file[rows]]
        kept_key = old.reads_key[rows]
        used = np.unique(kept_key)
        key_set.update(old.keys[i] for i in used)
        changed = {rel for rel, f in facts.items() if old.files.get(rel) != f}
        for i in used:
            owner = old.owners[i]
            if owner and owner in facts and owner not in changed:
                old_digest[old.keys[i]] = old.digests[i]
    keys = sorted(key_set)
    key_index = {k: i for i, k in enumerate(keys)}
    if len(kept_key):
        old_to_new_key = np.full(len(old.keys), -1, dtype=np.int32)
        for i in np.unique(kept_key):
            old_to_new_key[i] = key_index[old.keys[i]]
        kept_key = old_to_new_key[kept_key]
    new_file = np.fromiter((reader_index[r] for r, ks in new_keys.items() for _ in ks), dtype=np.int32)
    new_key = np.fromiter((key_index[k] for ks in new_keys.values() for k in ks), dtype=np.int32)
    reads_file = np.concatenate([kept_file, new_file]).astype(np.int32)
    reads_key = np.concatenate([kept_key, new_key]).astype(np.int32)
    order = np.lexsort((reads_key, reads_file))
    digests = [old_digest.get(k) or digest_of(k) for k in keys]
    owners = [key_owner(key_tuple(k)) for k in keys]
    return GraphState(dict(sorted(facts.items())), keys, digests, owners, readers,
                      reads_file[order], reads_key[order])
