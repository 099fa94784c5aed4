"""The index folder on disk: manifest, checksums and atomic replacement.

The manifest lists every artifact with its sha256 and size, and carries its own checksum
(`self_sha256`: sha256 of the manifest's canonical JSON without that field), so an edited
manifest cannot vouch for an edited artifact. Every file the loader reads must be listed.

Core level (standard library only): the compiler writes through it, the index layer reads.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Iterator

from codenib import __version__
from codenib.core import outputs
from codenib.core.errors import CodeNibError, IndexFormatError
from codenib.core.types import FORMAT_VERSION

MANIFEST = "manifest.json"
FORMAT_NAME = "codenib-index"
NODES_FILE = "nodes.parquet"
EDGES_FILE = "edges.parquet"
SPARSE_DIR = "sparse"
#: BM25 over whole files (one document per file node: the file and its outermost definitions).
FILE_SPARSE_DIR = "sparse_files"
DENSE_DIR = "dense"
HISTORY_DIR = "history"
VECTORS_FILE = "dense/vectors.npy"
#: An index in the store layout (`codenib.core.store_layout`) names each file's entry in the
#: per-file store here, instead of holding nodes.parquet and the BM25 folders.
STORE_FILES_FILE = "store_files.parquet"
#: The manifest key of an index's layout (absent: every artifact in the folder).
LAYOUT_KEY = "layout"
#: `manifest[LAYOUT_KEY]["kind"]` of an index read back from the per-file store.
STORE_LAYOUT = "store"
#: The manifest's own checksum field.
SELF_CHECKSUM = "self_sha256"
#: What the loader reads: these files, and every file under these folders. Each must be listed
#: in the manifest (bm25s and faiss pick their files by name, so an unlisted one would be read).
LOADED_FILES = (NODES_FILE, EDGES_FILE)
LOADED_DIRS = (SPARSE_DIR, FILE_SPARSE_DIR, DENSE_DIR, HISTORY_DIR)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def describe_artifacts(folder: Path) -> dict[str, dict[str, Any]]:
    """sha256 and size of every file under `folder` except the manifest, by relative path."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != MANIFEST:
            rel = path.relative_to(folder).as_posix()
            out[rel] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    return out


def is_store_layout(manifest: dict[str, Any]) -> bool:
    """Whether the index of `manifest` keeps its nodes and term counts in the per-file store."""
    layout = manifest.get(LAYOUT_KEY)
    return isinstance(layout, dict) and layout.get("kind") == STORE_LAYOUT


def vectors_in_store(manifest: dict[str, Any]) -> bool:
    """Whether a store-layout index reads its vectors from the per-file store's vector
    entries (`codenib.core.vector_entry`) rather than from its own `dense/` folder."""
    return is_store_layout(manifest) and manifest[LAYOUT_KEY].get("vectors") == STORE_LAYOUT


def is_index_dir(path: Path) -> bool:
    """True when `path` holds a manifest written by CodeNib (valid or not)."""
    manifest = path / MANIFEST
    if not manifest.is_file():
        return False
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("format") == FORMAT_NAME
    except (OSError, ValueError):
        return False


def read_manifest(folder: str | os.PathLike, verify: bool = True) -> dict[str, Any]:
    """Read and check an index manifest: its own checksum, and that it lists every file the
    loader reads; with `verify`, also every artifact's size and sha256.

    Raises:
        IndexFormatError: missing folder or manifest, other format version, a manifest
            without or failing its own checksum, a file read but not listed, or a file that
            is missing, has another size or another checksum (named in the message).
    """
    folder = Path(folder)
    fix_rebuild = f"rebuild it with `codenib index REPO --out {folder}`"
    if not folder.is_dir():
        found = "this is a file, not an index folder" if folder.exists() else "the index folder does not exist"
        raise IndexFormatError(found, path=str(folder),
                               fix=f"pass an index folder, or build one with `codenib index REPO --out {folder}`")
    path = folder / MANIFEST
    if not path.is_file():
        raise IndexFormatError(f"no {MANIFEST}: this is not a complete CodeNib index "
                               "(an interrupted build leaves none)", path=str(folder), fix=fix_rebuild)
    check_confined(folder, [MANIFEST])
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"unreadable manifest: {exc}", path=str(path), fix=fix_rebuild) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise IndexFormatError(f"expected format '{FORMAT_NAME}', found {found!r}",
                               path=str(path), fix=fix_rebuild)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexFormatError(
            f"index format version {manifest.get('format_version')!r}; this CodeNib "
            f"({__version__}) reads version {FORMAT_VERSION}", path=str(path), fix=fix_rebuild)
    _check_self_checksum(path, manifest, fix_rebuild)
    check_listing(folder, manifest)
    listed = manifest["artifacts"]
    check_confined(folder, [*(d for d in LOADED_DIRS if (folder / d).exists()), *listed])
    if verify:
        verify_artifacts(folder, manifest)
    return manifest


def manifest_checksum(manifest: dict[str, Any]) -> str:
    """sha256 of `manifest` without its own checksum field, as canonical JSON (sorted keys,
    compact separators, UTF-8): what `self_sha256` holds."""
    body = {k: v for k, v in manifest.items() if k != SELF_CHECKSUM}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_listing(folder: Path, manifest: dict[str, Any]) -> None:
    """Every file the loader may read is listed in the manifest (names only: cheap, so it
    holds even where checksums are skipped; `verify_artifacts` checks the bytes).

    Raises:
        IndexFormatError: naming the first file read but not listed.
    """
    fix = f"rebuild the index with `codenib index REPO --out {folder}`"
    listed = manifest.get("artifacts")
    if not isinstance(listed, dict):
        raise IndexFormatError("the manifest lists no artifacts", path=str(folder / MANIFEST), fix=fix)
    read = [STORE_FILES_FILE, EDGES_FILE] if is_store_layout(manifest) else list(LOADED_FILES)
    for part in LOADED_DIRS:
        if (folder / part).is_dir():
            read += sorted(p.relative_to(folder).as_posix() for p in (folder / part).rglob("*")
                           if not p.is_dir() or p.is_symlink())
    model = manifest.get("model")
    if isinstance(model, dict) and not vectors_in_store(manifest):
        read.append(VECTORS_FILE)
        name_field = model.get("name_field")
        if isinstance(name_field, dict) and name_field.get("file"):
            read.append(f"{DENSE_DIR}/{name_field['file']}")
    for rel in read:
        if rel not in listed:
            raise IndexFormatError(f"the loader reads {rel}, but the manifest does not list it (added "
                                   "or edited after the build)", path=str(folder / rel), fix=fix)


def check_confined(folder: Path, names: list[str]) -> None:
    """Each of `names` (relative to `folder`), and every folder on its way, resolves inside
    the index folder (links resolved): a link leading out is never read, whatever its bytes.

    Raises:
        IndexFormatError: naming the first file or folder that leads out, and where.
    """
    try:
        base = Path(folder).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise IndexFormatError(f"cannot resolve the index folder: {exc}", path=str(folder),
                               fix="pass an index folder that exists") from exc
    for rel in names:
        path = Path(folder) / rel
        try:
            target = path.resolve(strict=False)
        except (OSError, RuntimeError):   # a link loop
            target = None
        if target is None or not target.is_relative_to(base):
            where = f"leads to {target} through a symbolic link" if target is not None else "is a symbolic link loop"
            raise IndexFormatError(
                f"{rel} {where}, outside the index folder {base}; an index only reads files inside "
                "its own folder", path=str(path),
                fix=f"replace the link with a copy of the file, or rebuild the index with `codenib index REPO "
                    f"--out {folder}`")


def verify_artifacts(folder: Path, manifest: dict[str, Any]) -> None:
    """Check each artifact listed in the manifest against its size and sha256."""
    fix = f"rebuild the index with `codenib index REPO --out {folder}`"
    check_listing(folder, manifest)
    for rel, meta in sorted(manifest["artifacts"].items()):
        path = folder / rel
        if not path.is_file():
            raise IndexFormatError("artifact listed in the manifest is missing", path=str(path), fix=fix)
        size = path.stat().st_size
        expected = meta.get("size") if isinstance(meta, dict) else None
        if size != expected:
            raise IndexFormatError(f"artifact has {size} bytes, the manifest says {expected} "
                                   "(truncated or replaced)", path=str(path), fix=fix)
        if sha256_file(path) != meta.get("sha256"):
            raise IndexFormatError("artifact checksum does not match the manifest (corrupted or "
                                   "edited)", path=str(path), fix=fix)


def write_manifest(folder: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Complete `manifest` with format fields and checksums, then write it (last)."""
    full = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "codenib_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **manifest,
        "artifacts": describe_artifacts(folder),
    }
    full[SELF_CHECKSUM] = manifest_checksum(full)
    tmp = outputs.tmp_path(folder / MANIFEST)
    tmp.write_text(json.dumps(full, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)
    return full


def index_ownership(folder: Path) -> outputs.Ownership | None:
    """What CodeNib wrote in the index folder `folder`: its manifest and the artifacts it
    lists (None when `folder` holds no CodeNib index manifest)."""
    if not is_index_dir(folder):
        return None
    try:
        listed = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("artifacts")
    except (OSError, ValueError):
        return None
    return outputs.files_of([MANIFEST, *(listed if isinstance(listed, dict) else ())])


def check_output_dir(out: Path, force: bool = False) -> None:
    """Refuse an output path that is a file, a non-empty folder that is not a CodeNib index,
    or an index that also holds files CodeNib did not write (unless `force`). Reads only."""
    outputs.check_folder(out, index_ownership, "output", "CodeNib index", "the index folder", force)


@contextlib.contextmanager
def atomic_index_dir(out: str | os.PathLike, force: bool = False) -> Iterator[Path]:
    """Yield a staging folder beside `out`; on success it replaces `out` in one rename.

    An interrupted or failed build leaves `out` as it was: the staging folder has no
    manifest until the very end, so it never loads as an index, and it is removed on
    failure (or by the next build, when the process was killed). `force` replaces an `out`
    that also holds files CodeNib did not write (they are deleted with it).
    """
    out = outputs.through_links(Path(out).absolute())
    check_output_dir(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(out)
    with atomic_dir(out, MANIFEST) as staging:
        yield staging


@contextlib.contextmanager
def atomic_dir(out: str | os.PathLike, last_file: str) -> Iterator[Path]:
    """Yield a staging folder beside `out`; when the block succeeds and `last_file` (written
    last) exists in it, it replaces `out` by renames; on any failure it is removed. A link
    named `out` stays a link: the folder it names is the one replaced."""
    out = outputs.through_links(Path(out).absolute())
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.staging-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        try:
            yield staging
        except OSError as exc:
            if not outputs.storage_failure(exc):
                raise
            raise outputs.disk_write_error(exc, _failed_file(exc, staging, out)) from exc
        if not (staging / last_file).is_file():
            raise CodeNibError(f"internal: the folder was finished without {last_file}", path=str(staging))
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
            os.replace(out, old)
        os.replace(staging, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _failed_file(exc: OSError, staging: Path, out: Path) -> Path:
    """The file of `out` whose write failed: the error's own file name, else the file written
    last in the staging folder (a `write()` error names no file), as it would be in `out`."""
    named = Path(exc.filename) if isinstance(exc.filename, str) else None
    if named is None:
        files = [p for p in staging.rglob("*") if p.is_file() and not p.is_symlink()]
        named = max(files, key=lambda p: p.stat().st_mtime_ns, default=None)
    if named is None:
        return out
    return out / named.relative_to(staging) if named.is_relative_to(staging) else named


def _check_self_checksum(path: Path, manifest: dict[str, Any], fix: str) -> None:
    recorded = manifest.get(SELF_CHECKSUM)
    if recorded is None:
        raise IndexFormatError(f"the manifest has no {SELF_CHECKSUM} (written before manifests "
                               "checked themselves), so its checksums cannot be trusted",
                               path=str(path), fix=fix)
    if recorded != manifest_checksum(manifest):
        raise IndexFormatError(f"the manifest's own checksum ({SELF_CHECKSUM}) does not match its "
                               "content (edited after the build)", path=str(path), fix=fix)


def _remove_stale_staging(out: Path) -> None:
    for path in out.parent.glob(f".{out.name}.staging-*"):
        try:
            pid = int(path.name.rsplit(".staging-", 1)[1].split("-")[0])
        except (IndexError, ValueError):
            continue
        if not pid_alive(pid):
            shutil.rmtree(path, ignore_errors=True)
    olds = sorted(out.parent.glob(f".{out.name}.old-*"))
    if not out.exists() and olds and is_index_dir(olds[-1]):
        # A build died between its two renames: the previous index is still whole; restore it.
        os.replace(olds.pop(), out)
    for path in olds:
        shutil.rmtree(path, ignore_errors=True)


def pid_alive(pid: Any) -> bool:
    """Whether process `pid` runs on this host (a pid that is not a number: no)."""
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, TypeError, ValueError):
        return False
    except PermissionError:
        return True
    return True


def git_commit(root: Path) -> str | None:
    """The checked-out commit of `root`, read from .git without running git."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            text = git.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                git = (root / text.split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head.split(":", 1)[1].strip()
        ref_file = git / ref
        if ref_file.is_file():
            return ref_file.read_text(encoding="utf-8").strip() or None
        packed = git / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0]
    except OSError:
        return None
    return None
