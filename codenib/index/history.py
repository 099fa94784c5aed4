"""`History`: an index's `history/` folder loaded as evidence for localising a report.

Three signals, each a score per file and per node (ids as in `changes.parquet`; by default
only ids that are nodes of this index, `exists`):

- similar past changes (`similar_changes`): BM25 over the messages of the commits that
  changed something; the top `k` commits for a query pass their score on to what they
  changed, divided by how much they changed, as BugLocator weighs similar fixed reports:
  score(f) = sum over top commits c that changed f of bm25(q, c) / |c| (|c| = the files c
  changed, or the nodes, for node scores);
- change-proneness (`change_proneness`): how often each file and node changed, each commit
  weighted 0.5 ** (age / half-life) with age measured back from the indexed revision's time
  (`HALF_LIFE_DAYS`); over all commits or over fix commits only (`is_fix`);
- co-change (`co_changes`): pairs changed in the same commit, each commit of n members
  adding r / (n - 1) to each of its pairs (every member spreads its commit's recency weight r,
  as above, over its partners: a sweeping commit says little about any one pair), commits of
  more than `MAX_COCHANGE` members skipped (mass renames and reformatting say nothing about
  coupling); directed `co_changed` edges, each file or node keeping its `COCHANGE_FANOUT`
  heaviest partners (`co_changed` walks them in the bug_localisation plan's expansion step).

Loading only: the tables were built by `codenib.compiler.history`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from codenib.core import artifact
from codenib.core.errors import IndexFormatError
from codenib.core.tokens import Tokenizer, TokenizerConfig

COMMITS_PATH = f"{artifact.HISTORY_DIR}/commits.parquet"
CHANGES_PATH = f"{artifact.HISTORY_DIR}/changes.parquet"
#: Change-proneness half-life: a change a year before the snapshot counts half.
HALF_LIFE_DAYS = 365.0
#: Similar past changes: how many best-matching commits pass on their score.
TOP_COMMITS = 50
#: Co-change: commits with more members than this are skipped.
MAX_COCHANGE = 20
#: Co-change partners kept per file or node, heaviest first: a file that changes with nearly
#: everything (a changelog, a registry module) would otherwise pass its evidence to the whole
#: repository, and a walk reads a bounded list per seed.
COCHANGE_FANOUT = 10
_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Evidence:
    """Scores per file and per node id (only those with a positive score)."""

    files: dict[str, float]
    nodes: dict[str, float]


class History:
    """The commits of an index's history and what each changed, searchable by message."""

    def __init__(self, commits: pa.Table, changes: pa.Table, head_time: int,
                 tokenizer: TokenizerConfig = TokenizerConfig()):
        self.ids: list[str] = commits.column("id").to_pylist()
        self.times = np.asarray(commits.column("time").to_numpy(), dtype=np.float64)
        self.messages: list[str] = commits.column("message").to_pylist()
        self.parents: list[list[str]] = commits.column("parents").to_pylist()
        self.is_fix = np.asarray(commits.column("is_fix").to_numpy(zero_copy_only=False), dtype=bool)
        self.n_files = np.asarray(commits.column("files").to_numpy(), dtype=np.int64)
        self.head_time = float(head_time)
        self.row = row = {cid: i for i, cid in enumerate(self.ids)}
        # Per commit row: its changed files and nodes as (id, exists) lists.
        self.files_of: list[list[tuple[str, bool]]] = [[] for _ in self.ids]
        self.nodes_of: list[list[tuple[str, bool]]] = [[] for _ in self.ids]
        cols = changes.select(["commit", "file", "node_id", "exists"]).to_pydict()
        for cid, file, node, exists in zip(cols["commit"], cols["file"], cols["node_id"], cols["exists"]):
            i = row.get(cid)
            if i is None:
                raise IndexFormatError(f"changes.parquet names commit {cid}, which commits.parquet lacks",
                                       fix="rebuild the index with `codenib index REPO --history`")
            (self.files_of if node == file else self.nodes_of)[i].append((node, bool(exists)))
        self._tokenizer = Tokenizer(tokenizer)
        self._searchable = [i for i in range(len(self.ids)) if self.files_of[i]]
        self._bm25 = None
        self._partners: dict[str, dict[str, list[tuple[str, float]]]] = {}

    @classmethod
    def load(cls, index_dir: str | Path, manifest: dict | None = None) -> "History | None":
        """The history of the index at `index_dir` (None when it was built without one).
        Without `manifest`, the manifest is read and the history files' checksums verified."""
        index_dir = Path(index_dir)
        if manifest is None:
            manifest = artifact.read_manifest(index_dir, verify=False)
            _verify(index_dir, manifest, (COMMITS_PATH, CHANGES_PATH))
        entry = manifest.get("history")
        if not entry:
            return None
        commits = pq.ParquetFile(index_dir / COMMITS_PATH).read()
        changes = pq.ParquetFile(index_dir / CHANGES_PATH).read()
        tokenizer = TokenizerConfig.from_dict(manifest.get("tokenizer") or {})
        return cls(commits, changes, int(entry["head_time"]), tokenizer)

    def __len__(self) -> int:
        return len(self.ids)

    # --- similar past changes ---------------------------------------------------------------

    def similar_commits(self, query: str, k: int = TOP_COMMITS, exclude: frozenset[int] = frozenset()
                        ) -> list[tuple[str, float]]:
        """The `k` commits (that changed something) whose messages match `query` best, with
        their BM25 scores, best first; commits whose rows are in `exclude` never count."""
        index = self._index()
        if index is None:
            return []
        # Top k among the rest = the top (k + |excluded|) overall, filtered.
        hidden = sum(1 for i in self._searchable if i in exclude) if exclude else 0
        rows, scores = index.search([query], k + hidden)
        out = [(self._searchable[r], float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0 and s > 0]
        return [(self.ids[i], s) for i, s in out if i not in exclude][:k]

    def ancestors(self, cid: str) -> frozenset[int]:
        """Rows of the proper ancestors of commit `cid` that this history holds."""
        seen: set[int] = set()
        stack = [self.row[p] for p in self.parents[self.row[cid]] if p in self.row]
        while stack:
            i = stack.pop()
            if i not in seen:
                seen.add(i)
                stack.extend(self.row[p] for p in self.parents[i] if p in self.row)
        return frozenset(seen)

    def similar_changes(self, query: str, k: int = TOP_COMMITS, existing: bool = True,
                        exclude: frozenset[int] = frozenset()) -> Evidence:
        """BugLocator-style scores: each of the top `k` commits gives its score, divided by
        the number of files (nodes) it changed, to each file (node) it changed (commits whose
        rows are in `exclude` pass on nothing)."""
        files: Counter = Counter()
        nodes: Counter = Counter()
        for cid, score in self.similar_commits(query, k, exclude):
            i = self.row[cid]
            changed = self.files_of[i]
            for f, ok in changed:
                if ok or not existing:
                    files[f] += score / len(changed)
            defs = self.nodes_of[i]
            for n, ok in defs:
                if ok or not existing:
                    nodes[n] += score / len(defs)
        return Evidence(dict(files), dict(nodes))

    # --- change-proneness -------------------------------------------------------------------

    def weights(self, half_life_days: float = HALF_LIFE_DAYS) -> np.ndarray:
        """Each commit's recency weight: 0.5 ** (days before the head / half-life); commits
        dated after the head (clock skew) count 1."""
        age = np.maximum(self.head_time - self.times, 0.0) / _DAY
        return np.power(0.5, age / half_life_days)

    def change_proneness(self, half_life_days: float = HALF_LIFE_DAYS, fix_only: bool = False,
                         existing: bool = True) -> Evidence:
        """Recency-weighted change counts per file and node (over fix commits only with
        `fix_only`)."""
        w = self.weights(half_life_days)
        files: Counter = Counter()
        nodes: Counter = Counter()
        for i in range(len(self.ids)):
            if fix_only and not self.is_fix[i]:
                continue
            for f, ok in self.files_of[i]:
                if ok or not existing:
                    files[f] += float(w[i])
            for n, ok in self.nodes_of[i]:
                if ok or not existing:
                    nodes[n] += float(w[i])
        return Evidence(dict(files), dict(nodes))

    # --- co-change --------------------------------------------------------------------------

    def co_changes(self, level: str = "file", half_life_days: float = HALF_LIFE_DAYS,
                   max_members: int = MAX_COCHANGE, fanout: int = COCHANGE_FANOUT,
                   existing: bool = True) -> pa.Table:
        """Directed `co_changed` edges in edges.parquet's shape plus a weight: for each file
        (node) its `fanout` heaviest partners (ties by id), rows by `src` then weight (desc).
        weight(a, b) = sum over commits c that changed both of r_c / (n_c - 1), with r_c the
        commit's recency weight and n_c its members; `count` = those commits."""
        if level not in ("file", "node"):
            raise ValueError(f"level must be 'file' or 'node', not {level!r}")
        members_of = self.files_of if level == "file" else self.nodes_of
        recency = self.weights(half_life_days)
        weight: defaultdict = defaultdict(float)
        count: Counter = Counter()
        for i, members in enumerate(members_of):
            ids = sorted({m for m, ok in members if ok or not existing})
            if not 2 <= len(ids) <= max_members:
                continue
            share = float(recency[i]) / (len(ids) - 1)
            for a, b in combinations(ids, 2):
                weight[(a, b)] += share
                count[(a, b)] += 1
        partners: defaultdict = defaultdict(list)
        for (a, b), w in weight.items():
            partners[a].append((b, w, count[(a, b)]))
            partners[b].append((a, w, count[(a, b)]))
        rows = [(src, *p) for src in sorted(partners)
                for p in sorted(partners[src], key=lambda p: (-p[1], p[0]))[:fanout]]
        return pa.table({"src": [r[0] for r in rows], "dst": [r[1] for r in rows],
                         "type": ["co_changed"] * len(rows),
                         "count": pa.array([r[3] for r in rows], pa.int64()),
                         "weight": pa.array([r[2] for r in rows], pa.float64())})

    def partners(self, level: str) -> dict[str, list[tuple[str, float]]]:
        """`co_changes(level)` with the defaults as neighbour lists (src -> [(dst, weight)],
        heaviest first); computed once per history."""
        cache = self._partners
        if level not in cache:
            cols = self.co_changes(level).select(["src", "dst", "weight"]).to_pydict()
            out: dict[str, list[tuple[str, float]]] = {}
            for a, b, w in zip(cols["src"], cols["dst"], cols["weight"]):
                out.setdefault(a, []).append((b, w))
            cache[level] = out
        return cache[level]

    # --- helpers ----------------------------------------------------------------------------

    def _index(self):
        """BM25 (the project's engine and tokenizer) over the searchable commits' messages."""
        if self._bm25 is None and self._searchable:
            from codenib.engines.bm25 import import_bm25s
            from codenib.index.sparse import SparseIndex

            bm25s = import_bm25s()
            tokens = [self._tokenizer.tokenize(self.messages[i]) for i in self._searchable]
            retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
            retriever.index(tokens, show_progress=False)
            self._bm25 = SparseIndex(retriever, self._tokenizer)
        return self._bm25


def _verify(index_dir: Path, manifest: dict, paths: tuple[str, ...]) -> None:
    """Check the listed size and sha256 of `paths` (those present in the manifest)."""
    listed = manifest.get("artifacts") or {}
    fix = f"rebuild the index with `codenib index REPO --out {index_dir} --history`"
    for rel in paths:
        meta = listed.get(rel)
        if meta is None:
            if manifest.get("history"):
                raise IndexFormatError("the manifest has a history but does not list it", path=str(index_dir / rel),
                                       fix=fix)
            continue
        path = index_dir / rel
        if not path.is_file() or path.stat().st_size != meta.get("size") \
                or artifact.sha256_file(path) != meta.get("sha256"):
            raise IndexFormatError("history artifact is missing or does not match the manifest's checksum",
                                   path=str(path), fix=fix)


__all__ = ["CHANGES_PATH", "COCHANGE_FANOUT", "COMMITS_PATH", "Evidence", "HALF_LIFE_DAYS", "History",
           "MAX_COCHANGE", "TOP_COMMITS"]
