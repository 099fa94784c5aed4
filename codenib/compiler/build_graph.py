"""The build's graph stage: every file resolved by the graph stage its language names
(`codenib.compiler.lang.GRAPHS`), and their edges in one table.

The Python graph (`lang.python_graph`) resolves units and keeps what it read, so that a
later build resolves only what changed; the facts graph (`lang.facts_graph`) resolves the
facts of every file of the other languages afresh, and takes their containment from their
nodes (`lang.contains`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from codenib.compiler import state as incr_state
from codenib.compiler.copies import copy_edges
from codenib.compiler.lang import LANGUAGES, graph_of, reader_of
from codenib.compiler.lang.companions import companion_edges
from codenib.compiler.lang.contains import foreign_contains
from codenib.compiler.lang.facts import ForeignFacts
from codenib.compiler.lang.facts_graph import foreign_edges, read_manifests
from codenib.compiler.lang.python_graph import GraphResult, build_graph
from codenib.compiler.lang.reader import FileRead
from codenib.compiler.reuse_plan import StageChoice, changed_share, plan_graph
from codenib.compiler.state import Previous


@dataclass(frozen=True, slots=True)
class Graph:
    """The edges of a snapshot and what each graph stage keeps for a later build."""

    edges: pa.Table                     # EDGES_SCHEMA, sorted by (src, dst, type)
    python: GraphResult                 # the Python graph's edges, state and counts
    facts: dict                         # rel -> (content sha256, ForeignFacts): the facts graph's files
    choice: StageChoice | None          # whether the Python graph reused the earlier state


def resolve_graph(read_path: Callable[[str], bytes | None], sources: Mapping[str, bytes | None], nodes: pa.Table,
                  file_facts: Mapping[str, tuple], fresh_facts: Mapping[str, ForeignFacts],
                  reads: dict[str, FileRead], previous: Previous | None, root_package: str | None,
                  progress: bool) -> Graph:
    """Resolve every file of `sources` (the bytes the build read) into edges.

    Args:
        read_path: the snapshot's bytes at a relative path (None when none): the package
            manifests (`go.mod`, `Cargo.toml`) module paths resolve through.
        nodes: the nodes table; file_facts: `build_parse.file_facts` of it.
        fresh_facts: the facts of the files read now (the rest come from `previous` or are
            read again). reads: reads kept in-process for the graph stage that re-reads them.
        previous: the earlier index, whose Python graph state is loaded here when reusing
            it costs less than resolving every unit again.
    """
    stage = {rel: graph_of(rel) for rel in sources}
    python_sources = {rel: raw for rel, raw in sources.items() if stage[rel] == "python"}
    choice = None
    if previous is not None and previous.files is not None:
        shas = {r: f[0] for r, f in file_facts.items() if graph_of(r) == "python"}
        old_shas = {r: f.content_sha256 for r, f in previous.files.items() if graph_of(r) == "python"}
        n_changed, share = changed_share(old_shas, shas)
        choice = plan_graph(len(shas), n_changed, share)
        if choice.reuse:
            previous = incr_state.with_graph(previous)
    python = build_graph(python_sources, file_facts, root_package, previous.graph if previous else None,
                         progress, reads)
    facts = _facts(nodes, fresh_facts, previous, sources)
    edges = _all_edges(python.edges, nodes, {rel: f for rel, (_, f) in facts.items()}, list(sources),
                       read_manifests(read_path, sources), sources)
    return Graph(edges, python, facts, choice)


# --- helpers ---------------------------------------------------------------------------------

def _facts(nodes: pa.Table, fresh: Mapping[str, ForeignFacts], previous: Previous | None,
           sources: Mapping[str, bytes | None]) -> dict:
    """rel -> (content sha256, ForeignFacts) of every file of the facts graph: those read now,
    those an earlier index kept for the same bytes, and the rest (found in the per-file
    store, which holds no facts) read again from the bytes of this build."""
    languages = pa.array([language for language, entry in LANGUAGES.items() if entry.graph == "facts"])
    files = nodes.filter(pc.and_(pc.equal(nodes.column("kind"), "file"),
                                 pc.is_in(nodes.column("language"), value_set=languages)))
    old = (previous.foreign_facts or {}) if previous is not None else {}
    out = {}
    for rel, sha, language in zip(files.column("file").to_pylist(), files.column("content_sha256").to_pylist(),
                                  files.column("language").to_pylist()):
        facts = fresh.get(rel)
        if facts is None and rel in old and old[rel][0] == sha:
            facts = old[rel][1]
        if facts is None:
            raw = sources.get(rel)
            facts = reader_of(rel, raw).read(rel, raw).facts if raw is not None else ForeignFacts(rel, language)
        out[rel] = (sha, facts)
    return out


def _all_edges(python_edges: pa.Table, nodes: pa.Table, facts: dict, paths: list[str],
               manifests: dict, sources: Mapping[str, bytes | None] | None = None) -> pa.Table:
    """edges.parquet: the Python graph's edges, the facts graph's containment, imports, calls
    and inherits, and the links of copies to their sources and of declarations to their
    definitions (`copies`, `declares`), sorted."""
    parts = [t for t in (foreign_contains(nodes), foreign_edges(nodes, facts, paths, manifests)) if t.num_rows]
    parts += _links(nodes, pa.concat_tables([python_edges] + parts) if parts else python_edges, sources or {})
    if not parts:
        return python_edges
    table = pa.concat_tables([python_edges] + parts)
    return table.sort_by([("src", "ascending"), ("dst", "ascending"), ("type", "ascending")]).combine_chunks()


def _links(nodes: pa.Table, edges: pa.Table, sources: Mapping[str, bytes | None]) -> list[pa.Table]:
    """The `copies` and `declares` edges (`compiler.copies`, `lang.companions`) that are any."""
    return [t for t in (copy_edges(nodes), companion_edges(nodes, edges, sources)) if t.num_rows]
