"""Which stages of a `--reuse` build take from the earlier index and which build afresh.

Reuse pays for itself when little changed. The graph stage resolves again every unit of a
changed file and of every file that read a changed binding, and on top of that it scans the
changed files and compares their keys' digests before pass 2 (a cost that grows with the
changed files) and merges the earlier state: between two releases (half the files changed)
it cost more than resolving everything afresh. So it decides before doing any of that, from
the share of files changed; once the comparison is paid for, going on incrementally is the
cheaper way (switching then to a fresh pass 2 was measured slower still). The other stages
are cheap to reuse whatever changed (unchanged files' nodes are rows of a table, unchanged
texts' BM25 counts and vectors are looked up), so only the graph stage chooses.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Above this share of the files changed (new, edited or deleted), the graph is built
#: afresh without reading the earlier state. Measured on sympy (1,532 files) with a
#: release's worth of edits to 43% of them (`scripts/bench_far_apart.py --far-apart`): 87% of the
#: files went through pass 2 again, and the graph stage took 25.1 CPU seconds against 21.2
#: for a fresh one.
GRAPH_REUSE_MAX_CHANGED = 0.25
#: Below this many files both ways take about a second; the incremental way is kept (and so
#: is what the random-edit tests exercise on small repositories).
PLAN_MIN_FILES = 100


@dataclass(frozen=True, slots=True)
class StageChoice:
    """Whether a stage reuses the earlier index, and why."""

    stage: str
    reuse: bool
    reason: str

    def describe(self) -> str:
        """`graph: fresh (...)`, for the build's log line."""
        return f"{self.stage}: {'reuse' if self.reuse else 'fresh'} ({self.reason})"


def changed_share(old: dict[str, str], new: dict[str, str]) -> tuple[int, float]:
    """Files new, edited or deleted between two {path: content sha256} maps, and their
    share of the larger snapshot."""
    changed = sum(1 for rel, sha in new.items() if old.get(rel) != sha) + sum(1 for rel in old if rel not in new)
    return changed, changed / max(len(old), len(new), 1)


def plan_graph(n_files: int, n_changed: int, share: float) -> StageChoice:
    """Before any graph work: reuse the earlier state unless too much changed."""
    if n_files >= PLAN_MIN_FILES and share > GRAPH_REUSE_MAX_CHANGED:
        return StageChoice("graph", False, f"{n_changed} files changed ({share:.0%}), more than "
                                           f"{GRAPH_REUSE_MAX_CHANGED:.0%}: resolving them again costs more "
                                           "than a fresh build")
    return StageChoice("graph", True, f"{n_changed} files changed ({share:.0%})")

