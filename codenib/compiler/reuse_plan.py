"""Which stages of a `--reuse` build take from the earlier index and which build afresh.

Reuse pays for itself when little changed. The graph stage resolves again every unit of a
changed file and of every file that read a changed binding, and on top of a fresh build's
work it compares the keys of the changed files and merges the earlier state: between two
releases (half the files changed) it cost more than resolving everything afresh. The other
stages are cheap to reuse whatever changed (unchanged files' nodes are rows of a table,
unchanged texts' BM25 counts and vectors are looked up), so only the graph stage chooses.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Above this share of the files changed (new, edited or deleted), the graph is built
#: afresh without reading the earlier state. Measured on sympy (1,532 files) with a
#: release's worth of edits to 43% of them: 87% of the files went through pass 2 again.
GRAPH_REUSE_MAX_CHANGED = 0.25
#: Once the earlier state is compared, pass 2 still has to run over the files with a unit
#: to resolve again; above this share of all files, the rest of the graph stage runs as a
#: fresh build would (merging the earlier state would cost more than it saves).
GRAPH_REUSE_MAX_PASS2 = 0.6
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


def plan_pass2(n_files: int, n_pass2: int) -> StageChoice:
    """After comparing the earlier state: keep it unless pass 2 must run over most files."""
    share = n_pass2 / max(n_files, 1)
    if n_files >= PLAN_MIN_FILES and share > GRAPH_REUSE_MAX_PASS2:
        return StageChoice("graph", False, f"{n_pass2} files ({share:.0%}) read a changed binding, more than "
                                           f"{GRAPH_REUSE_MAX_PASS2:.0%}: the rest runs as a fresh build")
    return StageChoice("graph", True, f"{n_pass2} files ({share:.0%}) to resolve again")
