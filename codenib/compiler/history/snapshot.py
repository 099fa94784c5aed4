"""`REV` must be the snapshot being indexed: its tree holds every indexed file with the same
bytes, and where REPO has a `.git`, REV is its HEAD or an ancestor of HEAD (DESIGN: a history
never holds a commit that is not an ancestor of the snapshot)."""

from __future__ import annotations

import os
from pathlib import Path

from codenib.core.errors import BadInputError


def check_snapshot(source: "HistorySource", sources: dict[str, bytes | None], repo_root: Path) -> None:
    """Refuse a revision that is not the snapshot being indexed: an indexed file (`sources`,
    the bytes the build read) that its tree lacks or holds with other bytes, or, where REPO
    has a `.git`, a revision that is not its HEAD nor an ancestor of HEAD (a history would
    then hold commits made after the snapshot). Unreadable files are not compared.

    Raises:
        BadInputError: naming the first file that differs, or the two commits.
    """
    import pygit2

    repo = pygit2.Repository(source.gitdir)
    tree = repo[pygit2.Oid(hex=source.head)].peel(pygit2.Tree)
    fix = ("pass the commit the checkout was made from after '@' (--history GITDIR@BASE); uncommitted "
           "changes to indexed files make a work tree no commit's snapshot: commit or stash them")
    for rel in sorted(sources):
        raw = sources[rel]
        if raw is None:
            continue
        found = _tree_entry(tree, rel)
        if found is _IN_SUBMODULE:
            continue        # a submodule's files are another repository's: history reads none
        if found is None:
            problem = "is not in its tree"
        elif found.filemode == pygit2.enums.FileMode.LINK:
            link = repo_root / rel
            same = link.is_symlink() and os.readlink(link).encode() == repo[found.id].data
            problem = None if same else "is a symbolic link in its tree, with another target"
        elif found.type_str != "blob":
            problem = f"is a {found.type_str} in its tree"
        else:
            problem = None if _as_checked_out(repo, found, raw, rel, source.head) else \
                "differs from the version in its tree"
        if problem:
            raise BadInputError(f"--history revision {source.rev!r} ({source.head[:12]}) is not the snapshot "
                                f"being indexed: the indexed file {rel} {problem}",
                                path=str(repo_root), fix=fix)
    _check_ancestry(source, repo_root, repo)


def _as_checked_out(repo, entry, raw: bytes, rel: str, head: str) -> bool:
    """Whether `raw` (a checkout's bytes) is the blob `entry` as git checks it out: the same
    bytes; or the same once line ends are "\\n" (`eol=crlf`, `core.autocrlf`); or, for a path
    whose `.gitattributes` at `head` name a `working-tree-encoding`, the same once decoded
    from that encoding (sphinx since 2025 has both)."""
    import pygit2

    if pygit2.hash(raw) == entry.id:
        return True
    blob = _lf(repo[entry.id].data)
    if _lf(raw) == blob:
        return True
    # `.gitattributes` read from the revision's tree too (a mirror has no work tree to read).
    flags = pygit2.enums.AttrCheck.NO_SYSTEM | pygit2.enums.AttrCheck.INCLUDE_COMMIT
    try:
        encoding = repo.get_attr(rel, "working-tree-encoding", flags=flags, commit=head)
    except (pygit2.GitError, KeyError, ValueError):
        return False
    if not isinstance(encoding, str):
        return False
    try:
        return _lf(raw.decode(encoding).encode("utf-8")) == blob
    except (LookupError, UnicodeError):
        return False


def _lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


#: `_tree_entry`'s answer for a path inside a submodule (a commit entry of the tree).
_IN_SUBMODULE = object()


def _tree_entry(tree, rel: str):
    """The tree entry at `rel`, None when there is none, `_IN_SUBMODULE` inside a submodule."""
    try:
        return tree[rel]
    except KeyError:
        pass
    parts = rel.split("/")
    for i in range(1, len(parts)):
        try:
            entry = tree["/".join(parts[:i])]
        except KeyError:
            return None
        if entry.type_str == "commit":
            return _IN_SUBMODULE
    return None


def _check_ancestry(source: "HistorySource", repo_root: Path, history_repo) -> None:
    """Where REPO has a `.git`: the revision is its HEAD or an ancestor of HEAD."""
    import pygit2

    if not (repo_root / ".git").exists():
        return      # a `git archive` checkout: its files are all there is to compare
    try:
        own = pygit2.Repository(str(repo_root))
        head = own.head.peel(pygit2.Commit).id
    except (KeyError, ValueError, pygit2.GitError):
        return      # an unborn HEAD (no commit yet) names nothing to compare with
    rev = pygit2.Oid(hex=source.head)
    if rev == head:
        return
    related = None
    for repo in (own, history_repo):    # the GITDIR may be a mirror that holds more
        try:
            related = repo.descendant_of(head, rev)
            break
        except (KeyError, ValueError, pygit2.GitError):
            continue
    if not related:
        raise BadInputError(f"--history revision {source.rev!r} ({source.head[:12]}) is not the checked-out "
                            f"commit {str(head)[:12]} nor an ancestor of it: the history would hold commits "
                            "made after the snapshot", path=str(repo_root),
                            fix="pass the commit the checkout was made from after '@', or leave out '@REV' "
                                "to read from the checkout's HEAD")
