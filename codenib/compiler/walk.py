"""Walk a repository and list the source files to compile (every language a reader takes)."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from codenib.compiler.borrowed import banner_reason, folder_reason, is_license_name, license_digest
from codenib.compiler.generated import generated_reason
from codenib.engines.languages import language_of
from codenib.core.errors import BadInputError
from codenib.core.types import ID_SEP

#: Files above this size are generated or vendored data, not code worth indexing
#: (the default of `codenib index --max-file-bytes`).
MAX_FILE_BYTES = 1 << 20

#: Folder names that hold dependencies, caches or build outputs, never the project's code.
SKIP_DIR_NAMES = frozenset(
    {"__pycache__", "node_modules", "site-packages", "venv", "env", "virtualenv", "__pypackages__"}
)

#: Build outputs are skipped only at the top of the repository: a package may be named `build`.
SKIP_TOP_DIR_NAMES = frozenset({"build", "dist"})

#: How many leading bytes are sniffed for a NUL byte to call a file binary.
BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A source file selected for compilation."""

    rel_path: str   # posix path relative to the repository root
    abs_path: Path
    # why the project did not write it (generated, vendored: `codenib.compiler.borrowed`), or None
    borrowed: str | None = None


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file left out of the index, with the reason."""

    rel_path: str
    reason: str


def walk_repository(root: str | os.PathLike, max_file_bytes: int = MAX_FILE_BYTES
                    ) -> tuple[list[SourceFile], list[SkippedFile]]:
    """List the source files under `root` (Python and the languages of
    `codenib.engines.languages`), sorted by relative path.

    Skips hidden folders, virtual environments, `node_modules`, caches, top-level build
    outputs, `*.egg-info`, files over `max_file_bytes`, binary files, anything that is not a
    regular file (a named pipe would block the read forever; a device, a socket), symlinks
    that leave the root, loop or end at no regular file, and paths holding `::` (the node-id
    separator: such a file's ids could equal another file's). Symlinked folders are not
    followed (they would loop or duplicate files). A folder that cannot be listed is skipped
    and named (its path ending in `/`).

    Raises:
        BadInputError: the root is missing or is not a folder.
    """
    root_path = Path(root)
    if not root_path.exists():
        raise BadInputError("the repository path does not exist", path=str(root),
                            fix="pass the folder of a checked-out repository")
    if not root_path.is_dir():
        raise BadInputError("the repository path is not a folder", path=str(root),
                            fix="pass the repository's root folder, not a file")
    root_real = root_path.resolve()
    files: list[SourceFile] = []
    skipped: list[SkippedFile] = []
    def unlistable(exc: OSError) -> None:
        rel = Path(exc.filename).relative_to(root_real).as_posix() if exc.filename else "."
        skipped.append(SkippedFile(rel + "/", f"folder not readable: {exc.strerror}"))

    vendored: dict[Path, str | None] = {}   # folder -> why it holds vendored code (inherited)
    root_licenses: set[str | None] = set()  # the root's license texts (os.walk visits the root first)
    for dirpath, dirnames, filenames in os.walk(root_real, onerror=unlistable, followlinks=False):
        here = Path(dirpath)
        rel_dir = here.relative_to(root_real)
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(here / d, d, top=rel_dir == Path(".")))
        if rel_dir == Path("."):
            root_licenses = {_license_digest(here / n, root_real) for n in filenames if is_license_name(n)}
            root_licenses.discard(None)
        in_vendored = vendored[rel_dir] = (vendored.get(rel_dir.parent) if rel_dir != Path(".") else None) \
            or folder_reason(rel_dir.as_posix(), filenames,
                             lambda name: _license_digest(here / name, root_real) in root_licenses)
        for name in sorted(filenames):
            if language_of(name) is None:
                continue
            path = here / name
            rel = (rel_dir / name).as_posix()
            reason, head = _skip_file(path, root_real, max_file_bytes)
            reason = reason or generated_reason(path, rel)
            rel, reason = path_reason(rel, reason)
            if reason:
                skipped.append(SkippedFile(rel, reason))
            else:
                files.append(SourceFile(rel, path, in_vendored or banner_reason(head)))
    files.sort(key=lambda f: f.rel_path)
    return files, skipped


def is_utf8(text: str) -> bool:
    """Whether `text` encodes as UTF-8 (a name decoded from bytes may hold lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def skip_folder_name(name: str, top: bool) -> bool:
    """Whether a folder of this name holds no code of the project (hidden, dependencies,
    caches, `*.egg-info`, and at the top build outputs)."""
    if name.startswith(".") or name in SKIP_DIR_NAMES or name.endswith(".egg-info"):
        return True
    return top and name in SKIP_TOP_DIR_NAMES


def content_reason(size: int, head: bytes, max_file_bytes: int) -> str | None:
    """Why a regular file of `size` bytes starting with `head` is left out (too large, binary)."""
    if size > max_file_bytes:
        return f"larger than {max_file_bytes} bytes ({size} bytes; see --max-file-bytes)"
    # A NUL byte in a source file is kept (it becomes a parse error); other binaries are skipped.
    if b"\0" in head and _looks_binary(head):
        return "binary file"
    return None


def path_reason(rel: str, reason: str | None) -> tuple[str, str | None]:
    """The path as a node id can hold it, and why it is left out (`reason`, or a name that is
    not UTF-8, or one holding the id separator)."""
    if not is_utf8(rel):
        # Node ids are UTF-8 strings in Parquet; an undecodable name cannot be one.
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), \
            reason or "file name is not valid UTF-8"
    if reason is None and ID_SEP in rel:
        # `x.py::C.py` would also be the id of `C.py` in `x.py`: ids split at the first `::`.
        return rel, f"path contains {ID_SEP!r}, which separates a node id's file from its name"
    return rel, reason


def _skip_dir(path: Path, name: str, top: bool) -> bool:
    if skip_folder_name(name, top):
        return True
    if path.is_symlink():
        return True
    # A virtual environment of any name announces itself with pyvenv.cfg. A folder that cannot
    # be searched is kept here: listing it fails in `os.walk`, which names it as skipped.
    try:
        return stat.S_ISREG(os.stat(path / "pyvenv.cfg").st_mode)
    except OSError:
        return False


def _skip_file(path: Path, root_real: Path, max_file_bytes: int) -> tuple[str | None, bytes]:
    """Why the file is left out (None: kept), and its first bytes (those a kept file was sniffed by)."""
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except RuntimeError:     # Python 3.11 raises this for a loop, later versions OSError(ELOOP)
            return "symlink loop", b""
        except OSError as exc:
            return ("symlink loop" if exc.errno == errno.ELOOP else f"broken symlink: {exc.strerror}"), b""
        if not target.is_relative_to(root_real):
            return "symlink leaves the repository root", b""
    try:
        info = path.stat()
    except OSError as exc:
        return f"unreadable: {exc.strerror}", b""
    if not stat.S_ISREG(info.st_mode):
        # Opening a named pipe blocks until a writer comes; devices and sockets are no source.
        return f"not a regular file ({_file_type(info.st_mode)})", b""
    if info.st_size > max_file_bytes:
        return content_reason(info.st_size, b"", max_file_bytes), b""
    try:
        with open(path, "rb") as fh:
            head = fh.read(BINARY_SNIFF_BYTES)
    except OSError as exc:
        return f"unreadable: {exc.strerror}", b""
    return content_reason(info.st_size, head, max_file_bytes), head


def _license_digest(path: Path, root_real: Path) -> str | None:
    """`license_digest` of a license file inside the root (links followed), None when it is
    not a readable regular file of the root or is larger than a license."""
    try:
        target = path.resolve(strict=True)
        if not target.is_relative_to(root_real) or not target.is_file() or target.stat().st_size > MAX_FILE_BYTES:
            return None
        return license_digest(target.read_bytes())
    except (OSError, RuntimeError):
        return None


def _file_type(mode: int) -> str:
    for test, word in ((stat.S_ISFIFO, "named pipe"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "folder")):
        if test(mode):
            return word
    return "special file"


def _looks_binary(head: bytes) -> bool:
    """Not UTF-8 text, or more than 30% control bytes: a binary blob with a source suffix."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a multi-byte character cut at the sniff boundary is fine
            return True
    control = sum(1 for b in head if b < 32 and b not in b"\n\r\t\f\b")
    return control > 0.3 * max(len(head), 1)
