"""`--history`: the commits reachable from a revision and what each changed, as Parquet.

    history/commits.parquet   id, time (author time, Unix seconds), message, parents,
                              is_fix, files (how many files the commit changed)
    history/changes.parquet   commit, file, node_id, lines, exists

Only commits reachable from the revision are read (ancestors of the snapshot, never a later
commit nor one of another branch), and the revision must be the snapshot (`check_snapshot`):
every indexed file is in its tree with the same bytes (git blob ids compared; files the walk
skips are not compared), and where REPO has a `.git`, the revision is its HEAD or an ancestor
of it. A work tree with uncommitted changes to indexed files is no commit's snapshot.
Decisions, documented in docs/history.md:

- A commit's changes are its diff against its only parent (a root commit: against the empty
  tree). A merge commit is recorded (message, time, parents) with no changes: its diff
  against the first parent repeats the changes of the merged commits, which are read on
  their own, and would count them twice.
- Each changed file gets a row whose node_id is the file's path. For files a CodeNib reader
  takes (`codenib.compiler.lang`), each hunk is mapped onto the definitions of the file *at
  that commit* (the blob read once by its reader's spans-only mode, cached by blob id; a
  blob next to a version already outlined has its outline derived from that one's and the
  diff between them: Python's reader re-reads only the statements the diff touches, a
  tree-sitter reader's parse reuses the subtrees the diff leaves alone): added and modified lines on the new side, pure deletions on the old side; a line counts for its innermost
  definition. `lines` is the number of changed lines attributed to the row (null for files
  no reader takes: their diff is not computed, only that they changed).
- Node ids are those of the commit's tree (`path::qualname`); `exists` says whether that id
  is a node of the index being built (a definition renamed or moved since keeps its old id,
  and `exists` false: rename detection on every commit would cost more than the history
  it recovers).
- A path holding `::` gets no row: the walk skips such files (a node id splits at its first
  `::`, so `a::b.py::f` would name a file `a`).
- Missing objects (a partial or blob-filtered clone, a fetch that left blobs out): the history
  is read from what is there. A changed file whose blob is missing gets its file row with
  `lines` null; a commit whose tree is missing gets no change rows. The manifest's history
  entry counts them and names the first few (`missing`); such a history is not extended by
  a later `--reuse` (the objects may have been fetched since), it is read again.
- A shallow clone's boundary commits (listed in `.git/shallow`; their parents are not in the
  repository, and libgit2 reads them as roots): each is recorded (message, time, the parents
  its object names) with `files` 0 and no change rows, as a merge is: its diff against the
  empty tree would say it changed every file it holds, and co-change and change counts would
  read that as one commit touching everything. The build log says so and the manifest's
  history entry names them (`shallow`).
- `is_fix`: the message matches `commits.FIX_PATTERN` (fix, bug, error, crash, regression, or
  "issue/closes/fixes/resolves #N"). A heuristic, as in the bug-localisation literature.

History only grows: a build with `--reuse OLD`, where OLD's history head is an ancestor of
the new revision (and was read by the same readers), reads only the commits OLD lacks; the
tables equal a full read (commits are stored newest first, ties by id).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codenib.compiler.history.commits import clear_blob_cache, read_chunk
from codenib.core.artifact import HISTORY_DIR
from codenib.core.errors import BadInputError

COMMITS_FILE = "commits.parquet"
CHANGES_FILE = "changes.parquet"
#: Bumped when what is read from the same commits changes (2: no rows for `::` paths, shallow
#: boundaries without changes; 3: a blob under `.ts` and `.tsx` read by each path's grammar).
HISTORY_VERSION = 3
#: Missing objects and shallow boundaries the manifest names (the count says how many in all).
MANIFEST_NAMES = 10
#: Commits per chunk of work (at most `MAX_CHUNKS`): small enough that a later snapshot's few
#: hundred new commits keep two workers busy. Each worker takes a contiguous run of chunks
#: (`Workers.map_runs`) and keeps its parsed blobs from one chunk to the next, so a chunk
#: boundary costs no re-parse of the blobs both sides touch (it cost ~10% of the parses).
COMMITS_PER_CHUNK = 50
MAX_CHUNKS = 16
COMMITS_SCHEMA = pa.schema([("id", pa.string()), ("time", pa.int64()), ("message", pa.string()),
                            ("parents", pa.list_(pa.string())), ("is_fix", pa.bool_()),
                            ("files", pa.int32())])
CHANGES_SCHEMA = pa.schema([("commit", pa.string()), ("file", pa.string()), ("node_id", pa.string()),
                            ("lines", pa.int32()), ("exists", pa.bool_())])


@dataclass(frozen=True, slots=True)
class HistorySpec:
    """What `--history [GITDIR][@REV]` names: a git directory (None: REPO/.git) and a revision."""

    gitdir: Path | None = None
    rev: str = "HEAD"

    @classmethod
    def parse(cls, text: str) -> "HistorySpec":
        """`""`, `GITDIR`, `@REV` or `GITDIR@REV` (a GITDIR that exists as given wins over a split)."""
        text = text.strip()
        if not text:
            return cls()
        if "@" not in text or Path(text).exists():
            return cls(Path(text), "HEAD")
        gitdir, rev = text.rsplit("@", 1)
        if not rev:
            raise BadInputError(f"--history {text!r} names no revision after '@'",
                                fix="pass --history GITDIR@REV with a commit id, branch or tag")
        return cls(Path(gitdir) if gitdir else None, rev)


@dataclass(frozen=True, slots=True)
class HistorySource:
    """A resolved `HistorySpec`: the git directory and the commit the history ends at."""

    gitdir: str
    rev: str
    head: str
    head_time: int


@dataclass(frozen=True, slots=True)
class HistoryTables:
    """The two tables of `history/` and how they were obtained."""

    commits: pa.Table
    changes: pa.Table
    info: dict


def resolve(spec: HistorySpec, repo_root: Path) -> HistorySource:
    """Open the git directory and resolve the revision to a commit.

    Raises:
        BadInputError: a missing or unreadable git directory, a repository without .git when
            no GITDIR is given, an unknown revision, or one that is not a commit.
    """
    import pygit2

    if spec.gitdir is None:
        gitdir = repo_root / ".git"
        if not gitdir.exists():
            raise BadInputError("--history without a GITDIR reads the repository's own .git, and there "
                                "is none (a checkout made with `git archive`?)", path=str(repo_root),
                                fix="pass --history MIRROR@BASE: a clone or bare mirror of the repository "
                                    "and the commit the checkout was made from")
    else:
        gitdir = spec.gitdir
        if not gitdir.exists():
            raise BadInputError("the --history git directory does not exist", path=str(gitdir),
                                fix="pass the .git folder of a clone or a bare mirror (--history GITDIR@REV)")
    try:
        repo = pygit2.Repository(str(gitdir))
    except pygit2.GitError as exc:
        raise BadInputError(f"not a git repository: {exc}", path=str(gitdir),
                            fix="pass the .git folder of a clone or a bare mirror (--history GITDIR@REV)") from exc
    try:
        obj = repo.revparse_single(spec.rev)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise BadInputError(f"--history revision {spec.rev!r} is not known to the repository", path=str(gitdir),
                            fix="pass a commit id, branch or tag of that repository after '@' "
                                "(fetch it first if the mirror is older)") from exc
    try:
        commit = obj.peel(pygit2.Commit)
    except (ValueError, pygit2.GitError, TypeError) as exc:
        raise BadInputError(f"--history revision {spec.rev!r} is a {obj.type_str}, not a commit",
                            path=str(gitdir), fix="pass a commit id, branch or tag after '@'") from exc
    return HistorySource(str(Path(gitdir).absolute()), spec.rev, str(commit.id), int(commit.author.time))


def reader_versions() -> dict:
    """The readers' versions: a history read by others is not reused."""
    from codenib.compiler import lang

    return {"history": HISTORY_VERSION, **lang.reader_versions()}


def read_history(source: HistorySource, node_ids: set[str], previous: Path | None,
                 map_chunks: Callable[[Callable, list], list], log: Callable[[str], None]) -> HistoryTables:
    """Read the history ending at `source.head`; with `previous` (an index folder whose
    manifest carries a history), only the commits it lacks. `map_chunks(fn, chunks)` runs
    `fn` over each chunk (in worker processes), results in order; chunks in order share
    parsed blobs when one process reads them one after another (`Workers.map_runs`)."""
    import pygit2

    t0 = time.perf_counter()
    repo = pygit2.Repository(source.gitdir)
    head = pygit2.Oid(hex=source.head)
    shallow = _shallow_commits(repo)
    old = _previous_history(previous, repo, head, shallow, log)
    try:
        walker = repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL)
        if old is not None:
            walker.hide(pygit2.Oid(hex=old[2]))
        ids = [str(c.id) for c in walker]
    except (KeyError, pygit2.GitError) as exc:
        raise BadInputError(f"the commits reachable from {source.head[:12]} cannot be walked: {exc}",
                            path=source.gitdir,
                            fix="fetch the repository's missing commits (git fetch --refetch, or "
                                "--unshallow for a shallow clone) or pass a complete mirror") from exc
    boundary = frozenset(ids) & shallow
    if boundary:
        log(f"warning: history: {source.gitdir} is a shallow clone; {len(boundary)} boundary commit(s) "
            f"({', '.join(sorted(b[:12] for b in boundary)[:3])}) have no parents here, and are recorded "
            "without changes (a full clone reads what they changed)")
    n_chunks = min(-(-len(ids) // COMMITS_PER_CHUNK), MAX_CHUNKS)
    read = f"{source.gitdir}@{source.head}:{time.time_ns()}"
    chunks = [(source.gitdir, ids[i * len(ids) // n_chunks:(i + 1) * len(ids) // n_chunks], read, boundary)
              for i in range(n_chunks)] if ids else []
    commit_rows: list[tuple] = []
    change_rows: list[tuple] = []
    missing: list[tuple] = []
    try:
        for rows, changes, absent in map_chunks(read_chunk, chunks):
            commit_rows += rows
            change_rows += changes
            missing += absent
    finally:
        clear_blob_cache()      # chunks read in this process keep nothing after the read
    if missing:
        log(f"warning: history: {len({m[0] for m in missing})} object(s) missing from {source.gitdir} (a partial clone?), "
            f"first {missing[0][0]} ({missing[0][1] or 'a tree'}); their changes are recorded without "
            "lines (fetch them for a complete history)")
    commits = pa.Table.from_pylist([dict(zip(COMMITS_SCHEMA.names, r)) for r in commit_rows],
                                   schema=COMMITS_SCHEMA)
    changes = pa.Table.from_pylist([dict(zip(CHANGES_SCHEMA.names, r + (False,))) for r in change_rows],
                                   schema=CHANGES_SCHEMA)
    reused = 0
    if old is not None:
        reused = old[0].num_rows
        commits = pa.concat_tables([commits, old[0]])
        changes = pa.concat_tables([changes, old[1]])
    commits, changes = _canonical(commits, changes, node_ids)
    boundary = sorted(boundary | (old[3] if old is not None else frozenset()))
    # Each missing object once, where the newest commit that needs it names it.
    rank = {cid: i for i, cid in enumerate(commits.column("id").to_pylist())}
    first: dict[str, tuple] = {}
    for m in sorted(missing, key=lambda m: (rank.get(m[2], -1), m[1], m[0])):
        first.setdefault(m[0], m)
    missing = list(first.values())
    info = {"source": source.gitdir, "rev": source.rev, "head": source.head, "head_time": source.head_time,
            "commits": commits.num_rows, "changes": changes.num_rows, "read": len(ids),
            "reused": reused, "readers": reader_versions(),
            "missing": {"count": len(missing),
                        "first": [{"id": i, "path": p, "commit": c} for i, p, c in missing[:MANIFEST_NAMES]]},
            "shallow": {"count": len(boundary), "boundary": boundary[:MANIFEST_NAMES]},
            "seconds": round(time.perf_counter() - t0, 3)}
    return HistoryTables(commits, changes, info)


def write_history(folder: Path, tables: HistoryTables) -> None:
    """Write the two tables under `folder` (the index staging folder)."""
    out = folder / HISTORY_DIR
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(tables.commits, out / COMMITS_FILE)
    pq.write_table(tables.changes, out / CHANGES_FILE)


def manifest_entry(tables: HistoryTables) -> dict:
    """What the manifest says of the history (`seconds` aside, the same for equal tables)."""
    return dict(tables.info)


# --- reuse and order ------------------------------------------------------------------------

def _shallow_commits(repo) -> frozenset[str]:
    """A shallow clone's boundary commits (`.git/shallow`), none for a complete repository."""
    if not repo.is_shallow:
        return frozenset()
    try:
        text = (Path(repo.path) / "shallow").read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def _previous_history(previous: Path | None, repo, head, shallow: frozenset[str], log: Callable[[str], None]
                      ) -> tuple[pa.Table, pa.Table, str, frozenset[str]] | None:
    """OLD's tables, head and shallow boundary when they can be extended to `head`, else None
    (said on `log`)."""
    import pygit2

    if previous is None:
        return None
    try:
        entry = json.loads((previous / "manifest.json").read_text(encoding="utf-8")).get("history")
    except (OSError, ValueError):
        entry = None
    if not isinstance(entry, dict) or not entry.get("head"):
        log(f"history: {previous} has no history; reading every commit")
        return None
    if entry.get("readers") != reader_versions():
        log(f"history: {previous}'s history was read by other readers; reading every commit")
        return None
    if (entry.get("missing") or {}).get("count"):
        log(f"history: {previous}'s history lacks objects that may be here now; reading every commit")
        return None
    old_shallow = entry.get("shallow") or {"count": 0, "boundary": []}
    if old_shallow["count"] > len(old_shallow["boundary"]) or not set(old_shallow["boundary"]) <= shallow:
        log(f"history: {previous}'s history ends at a shallow boundary this repository has moved; "
            "reading every commit")
        return None
    old_head = entry["head"]
    try:
        old_oid = pygit2.Oid(hex=old_head)
        related = old_oid == head or repo.descendant_of(head, old_oid)
    except (KeyError, ValueError, pygit2.GitError):
        related = False
    if not related:
        log(f"history: {previous}'s head {old_head[:12]} is not an ancestor of {str(head)[:12]}; "
            "reading every commit")
        return None
    folder = previous / HISTORY_DIR
    commits = pq.ParquetFile(folder / COMMITS_FILE).read().cast(COMMITS_SCHEMA)
    changes = pq.ParquetFile(folder / CHANGES_FILE).read().cast(CHANGES_SCHEMA)
    return commits, changes, old_head, frozenset(old_shallow["boundary"])


def _canonical(commits: pa.Table, changes: pa.Table, node_ids: set[str]) -> tuple[pa.Table, pa.Table]:
    """Commits newest first (ties by id), changes in commit order then file and node id, and
    `exists` against this index's nodes: the same tables however the commits were read."""
    commits = commits.sort_by([("time", "descending"), ("id", "ascending")]).combine_chunks()
    rank = pc.index_in(changes["commit"], value_set=commits["id"])
    exists = pc.is_in(changes["node_id"], value_set=pa.array(sorted(node_ids), pa.string()))
    changes = changes.set_column(changes.schema.get_field_index("exists"), "exists", exists)
    changes = (changes.append_column("_rank", rank)
               .sort_by([("_rank", "ascending"), ("file", "ascending"), ("node_id", "ascending")])
               .drop_columns(["_rank"]).combine_chunks())
    return commits, changes
