"""Where a repository's git directory is: a path as given, or a name under a folder of mirrors.

Core level (standard library only).
"""

from __future__ import annotations

import os
from pathlib import Path


def find_git_dir(repo: str, mirror_root: str | os.PathLike | None) -> Path | None:
    """The git directory of a row's `repo`: a path as given, or under `mirror_root` a
    SWE-bench name `owner/name` as `owner+name/repo`, `owner+name`, `owner/name`, `name.git`
    or `name` (None when none exists)."""
    if mirror_root is None:
        path = Path(repo)
        return path if path.exists() else None
    root = Path(mirror_root)
    owner, _, name = repo.rpartition("/")
    flat = f"{owner}+{name}" if owner else name
    for candidate in (root / flat / "repo", root / flat, root / repo, root / f"{name}.git", root / name):
        if candidate.is_dir():
            return candidate
    return None
