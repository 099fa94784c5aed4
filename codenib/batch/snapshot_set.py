"""A snapshot set: the rows `codenib index-set` reads (an index name, a git directory, a revision)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codenib.core.errors import BadInputError
from codenib.core.mirrors import find_git_dir
from codenib.core.rows import column_of, read_rows


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One row of a snapshot set: the index name, its git directory and revision."""

    index: str
    repo: str
    gitdir: str
    rev: str


def read_snapshot_set(path: str | os.PathLike, mirror_root: str | os.PathLike | None = None) -> list[Snapshot]:
    """The rows of a snapshot set (Parquet or JSONL): `index`, `repo` (a git directory, or
    with `mirror_root` a name `owner/name` found under it) and `rev`; or SWE-bench rows
    (`instance_id` as the index, `repo`, `base_commit`).

    Raises:
        BadInputError: naming the file and row: an unreadable set, a missing column, an empty
            or repeated index, an index that is not a plain folder name, a repo with no git
            directory.
    """
    p = Path(path)
    records = read_rows(p, "snapshot set", "pass a Parquet or JSONL file with index, repo and rev columns")
    names = set().union(*(r.keys() for r in records)) if records else set()
    index_col, rev_col = column_of(names, "index"), column_of(names, "rev")
    lacking = [w for w, ok in (("index (or instance_id)", index_col), ("repo", "repo" in names),
                               ("rev (or base_commit)", rev_col)) if not ok]
    if lacking:
        raise BadInputError(f"snapshot set {p} lacks column(s) {', '.join(lacking)} "
                            f"(has: {', '.join(sorted(names)) or 'no rows'})", path=str(p),
                            fix="write one row per snapshot with index, repo (a git directory) and rev, or pass a "
                                "SWE-bench-shaped file (instance_id, repo, base_commit) with --mirror-root")
    out: list[Snapshot] = []
    seen: set[str] = set()
    for n, r in enumerate(records, 1):
        where = f"snapshot set {p}, row {n}"
        index, repo, rev = (_text(r.get(c)) for c in (index_col, "repo", rev_col))
        if not (index and repo and rev):
            empty = [c for c, v in ((index_col, index), ("repo", repo), (rev_col, rev)) if not v][0]
            raise BadInputError(f"{where}: {empty} is empty", path=str(p), fix=f"give every row a {empty}")
        if index in seen:
            raise BadInputError(f"{where}: index {index!r} is named twice", path=str(p),
                                fix="give every snapshot its own index name")
        if "/" in index or "\\" in index or index in (".", "..") or index.startswith("."):
            raise BadInputError(f"{where}: index {index!r} is not a plain folder name", path=str(p),
                                fix="name each index with one folder name (no '/', no leading '.')")
        seen.add(index)
        gitdir = find_git_dir(repo, mirror_root)
        if gitdir is None:
            under = f" under --mirror-root {mirror_root}" if mirror_root is not None else ""
            raise BadInputError(f"{where}: no git directory for repo {repo!r}{under}", path=str(p),
                                fix="fetch the repository's mirror, give repo as the path of a git directory, "
                                    "or pass --mirror-root the folder of mirrors")
        out.append(Snapshot(index, repo, str(gitdir.absolute()), rev))
    return out


# --- private helpers ---------------------------------------------------------------------------

def _text(v) -> str | None:
    if v is None:
        return None
    s = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return s.strip() or None
