"""Resolve names across a repository and build the code graph's edges.

A small static inferencer, precise rather than complete: a call produces an edge only when
its target resolves to a definition inside the repository through local definitions,
imports (relative, aliased, star, package re-exports), `self`/`cls`/`super()` on the class
and its in-repository bases (generic ones too), module attributes, and simple types
(constructor calls, parameter and return annotations, class and instance attribute
annotations, property getters' return annotations, `a or b`, and the elements of typed
containers such as `List[X]` or `Dict[K, X]` through loops, subscripts and `.get()`).
An annotated name has its declared class. Anything ambiguous or external produces no edge
rather than a guessed one.

Resolution runs in two passes over the layers of this package. Pass 1 (`Resolver.add_file`)
records what every module, class and function binds (`scopes`, with imports resolved to
module names by `imports`); it may let each file's tree go once recorded. Pass 2
(`collect_edges`) takes one file at a time, parsed again if need be, and walks it (`edges`),
asking `names` and `infer` what each name, attribute or expression means, lazily and cached.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from codenib.compiler.lang.python_parse import ParsedFile
from codenib.compiler.lang.python_resolve.edges import Unit, contains_edges, file_units, unit_edges
from codenib.compiler.lang.python_resolve.infer import Resolver
from codenib.core.types import Edge

__all__ = ["build_edges", "collect_edges", "resolve_file", "resolve_unit"]


def build_edges(files: list[ParsedFile], root_package: str | None = None) -> list[Edge]:
    """Every contains/imports/calls/inherits/references edge, repeated edges collapsed.

    Args:
        root_package: the root folder's name when the root itself is a package.
    """
    resolver = Resolver([pf.rel_path for pf in files], root_package)
    for pf in files:
        resolver.add_file(pf)
    return collect_edges(resolver, files)


def collect_edges(resolver: Resolver, files: Iterable[ParsedFile]) -> list[Edge]:
    """Pass 2: the edges of every file added to `resolver`, repeated edges collapsed.

    `files` may parse each file again as it is consumed, so that one tree at a time is alive.
    """
    counts: Counter[tuple[str, str, str]] = Counter()
    for pf in files:
        counts.update(resolve_file(resolver, pf)[0])
    return [Edge(src, dst, typ, n) for (src, dst, typ), n in sorted(counts.items())]


def resolve_file(resolver: Resolver, pf: ParsedFile, record: bool = False
                 ) -> tuple[Counter[tuple[str, str, str]], set[tuple]]:
    """Pass 2 for one file, unit by unit: its edges counted, and (with `record`) the keys
    its units read outside themselves (`codenib.compiler.lang.python_resolve.deps`)."""
    counts: Counter[tuple[str, str, str]] = Counter(contains_edges(pf))
    reads: set[tuple] = set()
    units = file_units(pf)
    for unit in units:
        edges, unit_reads = resolve_unit(resolver, pf, unit, units, record)
        counts.update(edges)
        reads |= unit_reads
    return counts, reads


def resolve_unit(resolver: Resolver, pf: ParsedFile, unit: Unit, units: list[Unit], record: bool = False
                 ) -> tuple[list[tuple[str, str, str]], set[tuple]]:
    """Pass 2 for one unit of a file (`file_units`): its edges, once per occurrence, and
    (with `record`) the keys it read outside itself. They depend on nothing else."""
    resolver.begin_unit(unit.unit_id if unit.node is not None else "", record)
    try:
        edges = unit_edges(resolver, pf, unit, units)
    finally:
        reads = resolver.end_unit()
    return edges, reads
