"""Folders CodeNib writes (index, results, report, demo): which files in them are its own.

The rule every command that writes a folder follows: it replaces only what CodeNib wrote
there (what the folder's manifest lists, or the fixed names of its layout). When the folder
holds anything else, the command stops before writing anything, with exit status 2, naming
the first such file; `--force` lets it go on and delete those files. A folder that holds
nothing of CodeNib's at all is never taken over, `--force` or not.

Core level (standard library only).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from codenib.core.errors import BadInputError, DiskWriteError
from codenib.core.storage import is_uri

#: Names of temporary files: `.NAME.PID-NONCE.tmp`, one per process and write.
TMP_NAME = re.compile(r"\..+\.\d+-[0-9a-f]{8}\.tmp")


#: errno values of a write the storage refused: a full disk, a quota, an I/O error, a file
#: over the file system's limit. None of them is bad input (exit 1, not 2).
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})
STORAGE_FIX = "free space on the disk that holds it (or raise your quota), then run the command again"


def storage_failure(exc: BaseException) -> bool:
    """Whether `exc` is a write the storage refused (see `STORAGE_ERRNOS`)."""
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def disk_write_error(exc: OSError, path: str | os.PathLike) -> DiskWriteError:
    """The `DiskWriteError` of `exc` naming `path` (`write()` errors carry no file name)."""
    return DiskWriteError(f"cannot write {path}: {os.strerror(exc.errno)}", path=str(path), fix=STORAGE_FIX)


@contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Turn a write the storage refuses inside the block into a `DiskWriteError` naming `path`."""
    try:
        yield
    except OSError as exc:
        if not storage_failure(exc):
            raise
        raise disk_write_error(exc, path) from exc


@dataclass(frozen=True)
class Ownership:
    """What CodeNib owns in one folder: `owns(rel)` says it of a file and `dirs` are the
    folders it may hold files in (relative posix paths; the top is '')."""

    owns: Callable[[str], bool]
    dirs: frozenset[str] = frozenset()


def through_links(path: str | os.PathLike) -> Path:
    """Where a write to `path` lands: the path itself, or, when it is a symbolic link, the
    final target of its chain (a write goes through a link and never replaces it; a rename
    onto the link would turn it into a regular file, and as root `/dev/stdout` became one).

    Raises:
        BadInputError: the links form a loop.
    """
    path = Path(path)
    if not path.is_symlink():
        return path
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise BadInputError("the output path is a symbolic link that loops", path=str(path),
                                fix="remove the link or pass another path") from exc
        # A link to a path that does not exist yet: the write creates its target.
    return Path(os.path.realpath(path))


def in_place_write(path: str | os.PathLike) -> bool:
    """Whether a file write to `path` must go through the name in place, not by a rename: the
    path (after its links) is a device, a pipe or a socket, or a link through `/proc` (what
    `/dev/stdout` names: renaming onto it would replace the device, not write to it)."""
    path = Path(path)
    try:
        info = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
        return True
    return path.is_symlink() and Path(os.path.realpath(path)).parts[1:2] in (("proc",), ("dev",))


def refuse_uri(value: str | None, flag: str, fix: str) -> None:
    """Refuse an object-storage URI given to an output option that writes local paths only
    (without this, `s3://b/x` became the local folder `./s3:/b/x`).

    Raises:
        BadInputError: `value` is a URI.
    """
    if value is not None and is_uri(str(value)):
        raise BadInputError(f"{flag} writes a local path only, and {value!r} is an object-storage URI; "
                            "nothing was written", path=str(value), fix=fix)


def tmp_path(path: Path) -> Path:
    """A temporary name beside `path`, unique to this process and call (renamed into place)."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def foreign_files(folder: Path, ownership: Ownership) -> list[str]:
    """Entries under `folder` that CodeNib did not write, as sorted relative posix paths.

    A folder CodeNib does not use is one entry (`notes/`); links are never followed.
    """
    out: list[str] = []
    _walk(Path(folder), "", ownership, out)
    return sorted(out)


def files_of(names: Iterable[str]) -> Ownership:
    """The ownership of a folder whose manifest lists `names` (and the folders above them)."""
    owned = frozenset(names)
    dirs = {""}
    for name in owned:
        parts = name.split("/")[:-1]
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return Ownership(owned.__contains__, frozenset(dirs))


def refuse_foreign(folder: Path, foreign: list[str], what: str, force: bool) -> None:
    """Raise naming the first entry of `foreign` unless `force` (see the module's rule).

    Raises:
        BadInputError: `foreign` is not empty and `force` is off.
    """
    if not foreign or force:
        return
    first = foreign[0]
    more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
    raise BadInputError(
        f"{what} {folder} holds a file CodeNib did not write{more}; nothing was changed",
        path=str(folder / first),
        fix=f"move {first} out of {folder}, pass another --out, or pass --force to go on and "
            "delete the files CodeNib did not write")


def check_folder(out: Path, ownership_of: Callable[[Path], "Ownership | None"], path_word: str,
                 unknown: str, label: str, force: bool) -> None:
    """Refuse an output path that is a file, a non-empty folder that holds nothing of CodeNib's
    (`ownership_of` answers None), or one that also holds others' files (unless `force`).
    Reads only.

    Args:
        path_word: what the path is in the message ("output", "report").
        unknown: what the folder is not, for `refuse_unknown` ("CodeNib index").
        label: the folder in the foreign-file message ("the index folder").
    """
    if out.exists() and not out.is_dir():
        raise BadInputError(f"the {path_word} path exists and is a file", path=str(out),
                            fix="pass a new folder path to --out")
    if not out.is_dir() or not any(out.iterdir()):
        return
    ownership = ownership_of(out)
    if ownership is None:
        refuse_unknown(out, unknown)
    refuse_foreign(out, foreign_files(out, ownership), label, force)


def refuse_unknown(folder: Path, what: str) -> None:
    """Refuse a non-empty folder that holds nothing of CodeNib's (never overwritten).

    Raises:
        BadInputError: always.
    """
    raise BadInputError(f"the output folder exists, is not empty and is not a {what}; refusing to "
                        "overwrite it", path=str(folder),
                        # Worded for every writer: `--out` of a command, or a snapshot's folder under
                        # `index-set --index-root` (named by its row's `index`).
                        fix="write to another folder (--out, or the row's index name for index-set) or "
                            "remove this one yourself")


def remove_foreign(folder: Path, foreign: list[str]) -> None:
    """Delete the entries `foreign_files` listed (after `--force`)."""
    for rel in foreign:
        path = folder / rel.rstrip("/")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def _walk(top: Path, rel: str, ownership: Ownership, out: list[str]) -> None:
    with os.scandir(top / rel if rel else top) as entries:
        for entry in entries:
            name = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                if name in ownership.dirs:
                    _walk(top, name, ownership, out)
                else:
                    out.append(name + "/")
            elif entry.is_symlink() or not entry.is_file(follow_symlinks=False) or not ownership.owns(name):
                out.append(name)
