"""Where a build reads a snapshot from: a folder on disk (`FolderTree`), or one commit of a git
repository read from its object store, blob by blob, with nothing checked out (`GitTree`).

Both select files by the walk's rules (`codenib.compiler.walk`) and answer the same calls, so
an index built from a commit's tree equals one built from a checkout of that commit made in a
folder of the same name: the same files, bytes, nodes and edges.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Protocol

from codenib.compiler.borrowed import banner_reason, folder_reason, is_license_name, license_digest
from codenib.compiler.generated import generated_name_reason, generated_text_reason
from codenib.compiler.walk import (BINARY_SNIFF_BYTES, MAX_FILE_BYTES, SourceFile, SkippedFile, content_reason,
                                   path_reason, skip_folder_name, walk_repository)
from codenib.core.errors import BadInputError
from codenib.engines.languages import language_of

#: Symbolic links followed in a row before a chain counts as a loop (the kernel's own limit).
MAX_LINK_HOPS = 40
#: Tree entry file modes (git's): a symbolic link, and the executable and plain blobs.
LINK_MODE = 0o120000
#: `_resolve`'s answer for a link to a folder (the walk passes over it without a word).
FOLDER_LINK = "not a regular file (folder)"
#: A virtual environment announces itself with this file at its top.
VENV_MARKER = "pyvenv.cfg"


class SourceTree(Protocol):
    """What a build reads a snapshot through."""

    name: str           # the root's name (a package root keeps it in module paths)
    commit: str | None  # the git commit it holds, when known

    def walk(self, max_file_bytes: int = MAX_FILE_BYTES) -> tuple[list[SourceFile], list[SkippedFile]]: ...

    def read(self, file: SourceFile) -> bytes: ...

    def read_path(self, rel: str) -> bytes | None: ...

    def describe(self) -> str: ...


class FolderTree:
    """A checked-out repository: the folder `root`."""

    def __init__(self, root: str | os.PathLike):
        from codenib.core.artifact import git_commit

        self.root = Path(root)
        self.name = self.root.resolve().name
        self.commit = git_commit(self.root.resolve()) if self.root.is_dir() else None

    def walk(self, max_file_bytes: int = MAX_FILE_BYTES) -> tuple[list[SourceFile], list[SkippedFile]]:
        return walk_repository(self.root, max_file_bytes)

    def read(self, file: SourceFile) -> bytes:
        return file.abs_path.read_bytes()

    def read_path(self, rel: str) -> bytes | None:
        """The bytes of the regular file at `rel` (None when there is none)."""
        try:
            path = self.root / rel
            return path.read_bytes() if path.is_file() else None
        except OSError:
            return None

    def describe(self) -> str:
        return str(self.root)


class GitTree:
    """The tree of one commit of the git repository at `gitdir`, as a checkout named `name`
    would hold it (submodules empty, links resolved inside the tree)."""

    def __init__(self, repo, commit, gitdir: str, name: str):
        self._repo = repo
        self._tree = commit.tree
        self.gitdir = gitdir
        self.commit = str(commit.id)
        self.name = name
        self._held: dict[str, bytes] = {}
        self._root_licenses: set[str] = set()   # the root's license texts (`license_digest`), for `_walk`

    @classmethod
    def open(cls, gitdir: str | os.PathLike, rev: str, name: str) -> "GitTree":
        """The tree at `rev` of the repository at `gitdir` (a bare mirror or a clone's .git).

        Raises:
            BadInputError: `gitdir` is not a git repository, or `rev` names no commit of it.
        """
        import pygit2

        try:
            repo = pygit2.Repository(str(gitdir))
        except pygit2.GitError as exc:
            raise BadInputError(f"not a git repository: {exc}", path=str(gitdir),
                                fix="name a bare mirror or a clone's .git folder") from exc
        try:
            commit = repo.revparse_single(rev).peel(pygit2.Commit)
        except (KeyError, ValueError, TypeError, pygit2.GitError) as exc:
            raise BadInputError(f"revision {rev!r} is not a commit of the repository", path=str(gitdir),
                                fix="fetch the repository again, or correct the revision") from exc
        return cls(repo, commit, str(Path(gitdir).absolute()), name)

    def walk(self, max_file_bytes: int = MAX_FILE_BYTES) -> tuple[list[SourceFile], list[SkippedFile]]:
        """The files a walk of a checkout would select, and those it would skip (same reasons).
        The bytes read to decide are held for `read`, which hands each out once."""
        files: list[SourceFile] = []
        skipped: list[SkippedFile] = []
        self._held = {}
        self._root_licenses = {self._license_digest(e.name) for e in self._tree
                               if e.type_str == "blob" and is_license_name(e.name)} - {None}
        self._walk(self._tree, "", max_file_bytes, files, skipped)
        files.sort(key=lambda f: f.rel_path)
        return files, skipped

    def read(self, file: SourceFile) -> bytes:
        held = self._held.pop(file.rel_path, None)
        if held is not None:
            return held
        data = self.read_path(file.rel_path)
        if data is None:
            raise FileNotFoundError(f"{file.rel_path} is not a file of commit {self.commit}")
        return data

    def read_path(self, rel: str) -> bytes | None:
        """The bytes of the file at `rel`, links followed inside the tree (None when none)."""
        blob, _ = self._resolve(rel)
        return blob.data if blob is not None else None

    def describe(self) -> str:
        return f"{self.gitdir}@{self.commit[:12]}"

    # -- private helpers -----------------------------------------------------------------------

    def _walk(self, tree, rel_dir: str, max_file_bytes: int, files: list, skipped: list,
              vendored: str | None = None) -> None:
        # A folder's files, then its folders, each by name: the order of `os.walk` on a checkout.
        entries = sorted(tree, key=lambda e: e.name)
        vendored = vendored or folder_reason(
            rel_dir, [e.name for e in entries if e.type_str == "blob"],
            lambda name: self._license_digest(posixpath.join(rel_dir, name)) in self._root_licenses)
        for entry in entries:
            if entry.type_str != "blob" or language_of(entry.name) is None:
                continue        # a folder (below), a submodule (a checkout leaves it empty), no reader's
            rel = posixpath.join(rel_dir, entry.name) if rel_dir else entry.name
            reason, data = self._select(entry, rel, max_file_bytes)
            if reason is None and data is None:
                continue
            rel, reason = path_reason(rel, reason)
            if reason:
                skipped.append(SkippedFile(rel, reason))
            else:
                self._held[rel] = data
                files.append(SourceFile(rel, Path(rel), vendored or banner_reason(data)))
        for entry in entries:
            if entry.type_str == "tree" and not skip_folder_name(entry.name, top=not rel_dir) \
                    and not _is_venv(entry):
                self._walk(entry, posixpath.join(rel_dir, entry.name) if rel_dir else entry.name,
                           max_file_bytes, files, skipped, vendored)

    def _license_digest(self, rel: str) -> str | None:
        """`license_digest` of the file at `rel` (links followed inside the tree), as the
        checkout walk reads it; None when there is no such file or it is larger than a license."""
        blob, _ = self._resolve(rel)
        if blob is None or blob.size > MAX_FILE_BYTES:
            return None
        return license_digest(blob.data)

    def _select(self, entry, rel: str, max_file_bytes: int) -> tuple[str | None, bytes | None]:
        """Why the blob `entry` at `rel` is left out (the walk's reasons) and else its bytes."""
        blob = entry
        if entry.filemode == LINK_MODE:
            blob, problem = self._resolve(rel)
            if problem == FOLDER_LINK:
                return None, None       # a checkout's walk sees a folder, and follows no link to one
            if problem:
                return problem, None
        if blob.size > max_file_bytes:
            return content_reason(blob.size, b"", max_file_bytes), None
        data = blob.data
        reason = content_reason(len(data), data[:BINARY_SNIFF_BYTES], max_file_bytes)
        reason = reason or generated_name_reason(rel) or generated_text_reason(data)
        return reason, data

    def _resolve(self, rel: str):
        """The blob at `rel` with links followed inside the tree, and the walk's reason when
        there is none (a link that leaves the root, loops, breaks or ends at a folder)."""
        for _ in range(MAX_LINK_HOPS):
            try:
                entry = self._tree[rel]
            except KeyError:
                return None, "broken symlink: No such file or directory"
            if entry.type_str == "tree":
                return None, FOLDER_LINK
            if entry.type_str != "blob":
                return None, "not a regular file (a submodule)"
            if entry.filemode != LINK_MODE:
                return entry, None
            target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), entry.data.decode("utf-8", "replace")))
            if target.startswith("../") or target == ".." or posixpath.isabs(target):
                return None, "symlink leaves the repository root"
            rel = target
        return None, "symlink loop"


def _is_venv(tree) -> bool:
    try:
        return tree[VENV_MARKER].type_str == "blob"
    except KeyError:
        return False
