"""Build small real git histories for the history tests (pygit2, no git binary)."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2


def git_commit(repo: pygit2.Repository, files: dict[str, str | None], message: str, t: int,
               parents: list, ref: str | None = "HEAD") -> pygit2.Oid:
    """Write `files` (None deletes) into the work tree and commit them at time `t`."""
    root = Path(repo.workdir)
    for rel, text in files.items():
        path = root / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("t", "t@example.org", t, 0)
    return repo.create_commit(ref, sig, sig, message, repo.index.write_tree(), parents)


def archive(repo: pygit2.Repository, rev: str, dest: Path) -> Path:
    """Write the files of `rev`'s tree under `dest`, as a `git archive` checkout (no .git);
    a symbolic link stays a link (its blob holds the target's path), as git checks it out."""
    def write(tree: pygit2.Tree, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for entry in tree:
            if entry.type_str == "tree":
                write(entry, folder / entry.name)
            elif entry.type_str == "blob" and entry.filemode == pygit2.enums.FileMode.LINK:
                os.symlink(entry.data.decode("utf-8", "surrogateescape"), folder / entry.name)
            elif entry.type_str == "blob":
                (folder / entry.name).write_bytes(entry.data)

    write(repo.revparse_single(rev).peel(pygit2.Commit).tree, Path(dest))
    return Path(dest)
