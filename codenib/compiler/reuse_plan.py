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
#: afresh without reading the earlier state. Measured on 2026-12-04, one process, CPU seconds
#: of the graph stage, reuse against fresh: sympy (1,532 files) with synthetic releases
#: (`scripts/bench_far_apart.py`'s rewrite: bodies changed, every other top-level name
#: renamed with its uses) 20.2 / 21.1 with 34% of the files changed and 23.9 / 19.9 with
#: 43% (83% of the units resolved again); sphinx's own history (905 files, renames rarer)
#: 1.1 / 3.7 with 26%, 2.8 / 3.9 with 55% and 2.9 / 3.5 with 67%. It was 25% before the
#: resolver stopped walking attribute cycles to the depth cap (sphinx's fresh graph stage
#: went from 8 s to 2.4 s, so the two ways compare differently).
GRAPH_REUSE_MAX_CHANGED = 0.35
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

