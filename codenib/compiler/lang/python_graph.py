"""The code graph of one snapshot; with the state of an earlier build, only the units whose
edges can have changed are resolved again.

Pass 2 runs per unit (`codenib.compiler.lang.python_resolve.edges.file_units`: each function or method
defined directly in a module or class body, and the rest of each file), with caches emptied
first, so a unit's edges are a function of its own text and of the bindings it read outside
itself (`codenib.compiler.lang.python_resolve.deps`). A unit keeps its earlier edges when its text is
the same and every key it read still has its digest. Only files with a unit to resolve again
are parsed for pass 2, and only the files that those lookups reach are scanned.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codenib.engines.arrays import ranges
from codenib.compiler.lang.python_parse import ParsedFile, parse_syntax
from codenib.compiler.lang.python_resolve import resolve_unit
from codenib.compiler.lang.python_resolve.edges import contains_edges, file_units
from codenib.compiler.lang.python_resolve.infer import Resolver
from codenib.compiler.lang.python_resolve.deps import key_digest, key_owner, key_string, key_tuple
from codenib.compiler.lang.python_resolve.scopes import trim_file
from codenib.core.types import EDGES_SCHEMA

#: Pass 2 of a file scanned on demand reuses its tree while the trees kept this way hold
#: at most this much source (a tree takes ~55 bytes of memory per byte of source: ~450 MB).
KEEP_TREES_BYTES = 8 << 20

#: Schema of each unit's edges (incr/unit_edges.parquet): `unit` is a row of the units.
UNIT_EDGES_SCHEMA = pa.schema([("unit", pa.int32()), *EDGES_SCHEMA])


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What decides a file's bindings: its content and its place in the module table."""

    content_sha256: str
    module: str          # its dotted module name
    module_path: str     # the file that won that module name (itself, unless contested)
    parsed: bool


@dataclass(slots=True)
class GraphState:
    """What a later build compares against: each file's facts; each unit's file, text hash,
    edges and the keys it read; each key's owner file and digest."""

    files: dict[str, FileFacts]
    units: list[str]                # unit ids, sorted ("path::" holds a file's contains edges)
    unit_files: list[str]
    unit_hashes: list[str]
    keys: list[str]                 # key strings, sorted
    digests: list[str]              # digest of keys[i]
    owners: list[str]               # file whose content decides keys[i] ('' module table)
    reads_unit: np.ndarray          # int32 row of units, ascending
    reads_key: np.ndarray           # int32 row of keys
    unit_edges: pa.Table            # UNIT_EDGES_SCHEMA, sorted by unit, src, dst, type

    def reads_of(self, unit: str) -> list[str]:
        """The keys one unit read (for tests and diagnostics; a file's path names the unit
        of everything in it but its functions and methods)."""
        try:
            i = self.units.index(unit)
        except ValueError:
            return []
        return [self.keys[k] for k in self.reads_key[self.reads_unit == i]]


@dataclass(frozen=True, slots=True)
class GraphResult:
    """The edges of a snapshot and what building them took."""

    edges: pa.Table          # EDGES_SCHEMA, sorted by (src, dst, type)
    state: GraphState
    files_parsed: int        # files parsed for pass 2 (some of their units were resolved)
    units_resolved: int      # units that went through pass 2
    units_kept: int          # units whose earlier edges were kept
    scanned: int             # files parsed and scanned for their bindings
    parsed_twice: int        # files parsed once for pass 1 and again for pass 2
    dirty_keys: int          # keys of the earlier state whose digest changed


def build_graph(sources: Mapping[str, bytes | None], facts_in: Mapping[str, tuple],
                root_package: str | None, previous: GraphState | None = None,
                progress: bool = False, trees: dict[str, ParsedFile] | None = None) -> GraphResult:
    """Resolve the edges of every file in `sources`.

    Args:
        sources: relative path -> the bytes the build read (None: unreadable).
        facts_in: relative path -> (content sha256, whether the file parsed, ...).
        previous: the state of an earlier index of the same repository: units whose text
            and reads are unchanged keep their edges from it.
        trees: files the caller parsed already (`parse_source`), taken instead of a parse.
    """
    rels = sorted(sources)
    run = _Run(sources, root_package, trees or {})
    table = run.resolver
    facts = {rel: FileFacts(facts_in[rel][0], table.module_of_file[rel],
                            table.modules[table.module_of_file[rel]], facts_in[rel][1]) for rel in rels}
    digest_of = _Digests(run, {rel: f.parsed for rel, f in facts.items()})
    if previous is None:
        to_parse, dirty_units, dirty = set(rels), None, 0
    else:
        to_parse, dirty_units, dirty = _what_changed(previous, facts, digest_of, run)
    run.pending = set(to_parse)
    old_by_id = {u: i for i, u in enumerate(previous.units)} if previous is not None else {}
    plan: list[tuple] = []       # (unit id, file, hash, old row | None, edges, reads)
    resolved = 0
    from codenib.core.progress import Progress

    bar = Progress("graph", len(to_parse), "files", enabled=progress)
    for rel, pf in run.pass2_order(sorted(to_parse)):
        plan.append((f"{rel}::", rel, "", None, contains_edges(pf), set()))
        units = file_units(pf)
        for unit in units:
            i = old_by_id.get(unit.unit_id)
            if (i is not None and previous.unit_hashes[i] == unit.text_hash
                    and previous.unit_files[i] == rel and not dirty_units[i]):
                plan.append((unit.unit_id, rel, unit.text_hash, i, None, None))
                continue
            edges, reads = resolve_unit(run.resolver, pf, unit, units, record=True)
            plan.append((unit.unit_id, rel, unit.text_hash, None, edges, reads))
            resolved += 1
        if pf.tree is not None and run.owns(pf):
            trim_file(pf)
        bar.update(1)
    bar.close()
    kept_files = set(rels) - to_parse
    if previous is not None and kept_files:
        for i, (unit, rel, text_hash) in enumerate(zip(previous.units, previous.unit_files,
                                                       previous.unit_hashes)):
            if rel in kept_files:
                plan.append((unit, rel, text_hash, i, None, None))
    state = _new_state(facts, previous, plan, digest_of)
    run.resolver.release()
    kept = sum(1 for p in plan if p[3] is not None and not p[0].endswith("::"))
    return GraphResult(_file_edges(state.unit_edges), state, files_parsed=len(to_parse),
                       units_resolved=resolved, units_kept=kept, scanned=len(run.resolver.scanned),
                       parsed_twice=run.parsed_twice, dirty_keys=dirty)


# --- helpers ---------------------------------------------------------------------------------

class _Run:
    """One build's resolver, scanning files on demand from the bytes the build read."""

    def __init__(self, sources: Mapping[str, bytes | None], root_package: str | None,
                 trees: dict[str, ParsedFile]):
        self.sources = sources
        self.trees = trees                      # parsed by the caller, used once each
        self.resolver = Resolver(sorted(sources), root_package, on_demand=self._scan)
        self.pending: set[str] = set()          # files whose pass 2 is still to run
        self.kept: dict[str, ParsedFile] = {}   # scanned on demand, tree kept for pass 2
        self.kept_bytes = 0
        self.parsed_twice = 0
        self._own: set[int] = set()             # id() of ParsedFiles the resolver holds

    def parse(self, rel: str) -> ParsedFile:
        pf = self.trees.pop(rel, None)
        if pf is not None:
            return pf
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

    def pass2_order(self, todo: list[str]) -> Iterator[tuple[str, ParsedFile]]:
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
                pf = self.parse(rel)
                if rel in self.resolver.scanned:
                    self.parsed_twice += 1
                else:
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


def _what_changed(old: GraphState, facts: dict[str, FileFacts], digest_of: _Digests,
                  run: _Run) -> tuple[set[str], np.ndarray, int]:
    """Files to parse for pass 2, which earlier units read a changed key, how many keys changed."""
    changed = {rel for rel, f in facts.items() if old.files.get(rel) != f}
    deleted = set(old.files) - set(facts)
    # Changed files go through pass 2 anyway: scanning them now (trees kept) lets pass 2
    # reuse the parse that the digests below need.
    run.pending = set(changed)
    for rel in sorted(changed):
        run.ensure(rel)
    # Only keys of changed or deleted files, and module-table keys, can have new digests.
    suspects = pa.array(sorted(changed | deleted | {""}), pa.string())
    dirty = np.zeros(len(old.keys), dtype=bool)
    for i in np.flatnonzero(pc.is_in(pa.array(old.owners, pa.string()), value_set=suspects)
                            .to_numpy(zero_copy_only=False)):
        dirty[i] = digest_of(old.keys[i]) != old.digests[i]
    dirty_units = np.zeros(len(old.units), dtype=bool)
    if len(old.reads_key):
        dirty_units[old.reads_unit[dirty[old.reads_key]]] = True
    to_parse = set(changed)
    to_parse.update(rel for rel in (old.unit_files[i] for i in np.flatnonzero(dirty_units)) if rel in facts)
    return to_parse, dirty_units, int(dirty.sum())


def _new_state(facts: dict[str, FileFacts], old: GraphState | None, plan: list[tuple],
               digest_of: _Digests) -> GraphState:
    """The state after this build: kept units as they were, the others as resolved now."""
    plan.sort(key=lambda p: p[0])
    kept_rows = np.array([p[3] for p in plan if p[3] is not None], dtype=np.int64)
    kept_at = np.array([i for i, p in enumerate(plan) if p[3] is not None], dtype=np.int32)
    new_reads = [(at, [key_string(k) for k in p[5]]) for at, p in enumerate(plan) if p[5]]
    keys, position, from_old = _merged_keys(old, kept_rows, {k for _, ks in new_reads for k in ks})
    reads_unit = []
    reads_key = []
    if old is not None and len(kept_rows):
        ptr = np.searchsorted(old.reads_unit, np.arange(len(old.units) + 1))
        rows = ranges(ptr[kept_rows], ptr[kept_rows + 1])
        reads_unit.append(np.repeat(kept_at, ptr[kept_rows + 1] - ptr[kept_rows]))
        reads_key.append(from_old[old.reads_key[rows]])
    for at, ks in new_reads:
        reads_unit.append(np.full(len(ks), at, dtype=np.int32))
        reads_key.append(np.array([position[k] for k in ks], dtype=np.int32))
    reads_unit_a = np.concatenate(reads_unit).astype(np.int32) if reads_unit else np.zeros(0, np.int32)
    reads_key_a = np.concatenate(reads_key).astype(np.int32) if reads_key else np.zeros(0, np.int32)
    order = np.lexsort((reads_key_a, reads_unit_a))
    # Digests and owners: an unchanged file's keys keep theirs; the others are computed now.
    digests: list[str | None] = [None] * len(keys)
    owners: list[str | None] = [None] * len(keys)
    if old is not None:
        changed = {rel for rel, f in facts.items() if old.files.get(rel) != f}
        for i in np.flatnonzero(from_old >= 0):
            at = from_old[i]
            owners[at] = old.owners[i]
            if old.owners[i] and old.owners[i] in facts and old.owners[i] not in changed:
                digests[at] = old.digests[i]
    for at, key in enumerate(keys):
        if owners[at] is None:
            owners[at] = key_owner(key_tuple(key))
        if digests[at] is None:
            digests[at] = digest_of(key)
    return GraphState(
        files=dict(sorted(facts.items())), units=[p[0] for p in plan], unit_files=[p[1] for p in plan],
        unit_hashes=[p[2] for p in plan], keys=keys, digests=digests, owners=owners,
        reads_unit=reads_unit_a[order], reads_key=reads_key_a[order],
        unit_edges=_unit_edges(plan, old, kept_rows, kept_at))


def _merged_keys(old: GraphState | None, kept_rows: np.ndarray, new: set[str]
                 ) -> tuple[list[str], dict[str, int], np.ndarray]:
    """The sorted keys the new state holds: those the kept units read (rows of the sorted
    `old.keys`) and the `new` ones. Returns them, the position of each new one, and for
    each old row its position (-1: not kept), without sorting the old keys again."""
    if old is None:
        keys = sorted(new)
        return keys, {k: i for i, k in enumerate(keys)}, np.zeros(0, dtype=np.int32)
    used = np.zeros(len(old.keys), dtype=bool)
    if len(kept_rows) and len(old.reads_unit):
        ptr = np.searchsorted(old.reads_unit, np.arange(len(old.units) + 1))
        used[old.reads_key[ranges(ptr[kept_rows], ptr[kept_rows + 1])]] = True
    fresh = []
    for k in new:
        i = bisect.bisect_left(old.keys, k)
        if i < len(old.keys) and old.keys[i] == k:
            used[i] = True
        else:
            fresh.append(k)
    fresh.sort()
    old_rows = np.flatnonzero(used)
    old_list = [old.keys[i] for i in old_rows]
    # Where each fresh key falls among the kept old ones, then everyone's final position.
    slots = np.array([bisect.bisect_left(old_list, k) for k in fresh], dtype=np.int64)
    shift = np.searchsorted(slots, np.arange(len(old_list)), side="right")
    from_old = np.full(len(old.keys), -1, dtype=np.int32)
    from_old[old_rows] = np.arange(len(old_list)) + shift
    fresh_at = slots + np.arange(len(fresh))
    keys: list[str] = [""] * (len(old_list) + len(fresh))
    for k, at in zip(old_list, from_old[old_rows]):
        keys[at] = k
    for k, at in zip(fresh, fresh_at):
        keys[at] = k
    position = {k: int(at) for k, at in zip(fresh, fresh_at)}
    for k in new:
        if k not in position:
            position[k] = int(from_old[bisect.bisect_left(old.keys, k)])
    return keys, position, from_old


def _unit_edges(plan: list[tuple], old: GraphState | None, kept_rows: np.ndarray,
                kept_at: np.ndarray) -> pa.Table:
    """Each unit's edges with counts: kept units' rows of the earlier table, resolved ones'."""
    parts = []
    if old is not None and len(kept_rows):
        col = old.unit_edges.column("unit").to_numpy()
        ptr = np.searchsorted(col, np.arange(len(old.units) + 1))
        rows = ranges(ptr[kept_rows], ptr[kept_rows + 1])
        taken = old.unit_edges.take(pa.array(rows))
        new_unit = np.repeat(kept_at, ptr[kept_rows + 1] - ptr[kept_rows]).astype(np.int32)
        parts.append(taken.set_column(0, "unit", pa.array(new_unit, pa.int32())))
    cols: dict[str, list] = defaultdict(list)
    for at, p in enumerate(plan):
        if p[4] is not None:
            for (src, dst, typ), n in Counter(p[4]).items():
                cols["unit"].append(at)
                cols["src"].append(src)
                cols["dst"].append(dst)
                cols["type"].append(typ)
                cols["count"].append(n)
    parts.append(pa.table({name: cols[name] for name in UNIT_EDGES_SCHEMA.names}, schema=UNIT_EDGES_SCHEMA))
    table = pa.concat_tables(parts).combine_chunks()
    return table.sort_by([("unit", "ascending"), ("src", "ascending"), ("dst", "ascending"),
                          ("type", "ascending")])


def _file_edges(unit_edges: pa.Table) -> pa.Table:
    """edges.parquet: the units' edges summed by (src, dst, type), sorted."""
    if unit_edges.num_rows == 0:
        return EDGES_SCHEMA.empty_table()
    summed = unit_edges.group_by(["src", "dst", "type"]).aggregate([("count", "sum")])
    table = pa.table({"src": summed.column("src"), "dst": summed.column("dst"), "type": summed.column("type"),
                      "count": pc.cast(summed.column("count_sum"), pa.int32())}, schema=EDGES_SCHEMA)
    return table.sort_by([("src", "ascending"), ("dst", "ascending"), ("type", "ascending")]).combine_chunks()
