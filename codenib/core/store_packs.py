"""A local store's entries packed into large files once a job is done with them.

A local store holds one small file per entry (8.3 KB on average for sphinx's), and on a file
system each wastes part of a block: 100 sphinx snapshots' store is 108 MB of entries in 133 MB
of 4 KiB blocks. `pack_store` moves the loose entries into `packs/pack-<id>.bin` (entries end to
end, up to `PACK_BYTES` a pack) with an index `packs/pack-<id>.idx` (gzipped JSON: name ->
[offset, length]) written after its data and renamed into place, then removes the loose
files. A reader (`LocalBackend.read`) takes a loose entry first, else a packed one; it reads
the pack indexes again when a name is missing and new packs have appeared, so a process that
started before a pack was written still finds what moved into it. Packs are never changed: a
later job packs its own new entries into new packs, and an entry packed twice (two jobs packing
at once) is the same bytes twice.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
import uuid
import zlib
from pathlib import Path
from typing import Callable

#: The packs' folder under a store's root.
PACKS_DIR = "packs"
#: Bytes of entries in one pack: large enough that a 100-snapshot store is one or two files,
#: small enough that a pack is written in about a second.
PACK_BYTES = 256 * 2**20
_BIN, _IDX = ".bin", ".idx"


class Packs:
    """The packed entries of the store at `root` (their indexes read on demand)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._where: dict[str, tuple[str, int, int]] = {}
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def read(self, name: str) -> bytes | None:
        """The packed entry's bytes, or None (not packed, or its pack unreadable)."""
        found = self._find(name)
        if found is None:
            return None
        pack, offset, length = found
        try:
            with open(self.root / PACKS_DIR / (pack + _BIN), "rb") as fh:
                fh.seek(offset)
                data = fh.read(length)
        except OSError:
            return None
        return data if len(data) == length else None

    def has(self, name: str) -> bool:
        return self._find(name) is not None

    def _find(self, name: str) -> tuple[str, int, int] | None:
        found = self._where.get(name)
        if found is None and self._refresh():
            found = self._where.get(name)
        return found

    def _refresh(self) -> bool:
        """Read the indexes of the packs that appeared since the last look; whether any did."""
        try:
            names = {e.name[:-len(_IDX)] for e in os.scandir(self.root / PACKS_DIR) if e.name.endswith(_IDX)}
        except OSError:
            return False
        with self._lock:
            new = sorted(names - self._seen)
            for pack in new:
                index = _read_index(self.root / PACKS_DIR / (pack + _IDX))
                if index is not None:
                    self._where.update((n, (pack, int(o), int(ln))) for n, (o, ln) in index.items())
                    self._seen.add(pack)
        return bool(new)


def pack_store(root: str | os.PathLike, log: Callable[[str], None] | None = None) -> tuple[int, int]:
    """Move the loose entries of the local store at `root` into packs (see the module
    docstring); returns how many entries and bytes were packed. A loose entry already packed
    is only removed. Raises OSError when a pack cannot be written (the loose entries stay)."""
    root = Path(root)
    packs_dir = root / PACKS_DIR
    packed = Packs(root)
    loose = sorted(_loose_files(root, packs_dir))
    chunks: list[list[tuple[str, Path]]] = [[]]
    size = 0
    for path in loose:
        name = path.relative_to(root).as_posix()
        if packed.has(name):
            path.unlink(missing_ok=True)
            continue
        try:
            n = path.stat().st_size
        except OSError:
            continue
        if chunks[-1] and size + n > PACK_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append((name, path))
        size += n
    done = total = 0
    for chunk in chunks:
        if chunk:
            n, b = _write_pack(packs_dir, chunk)
            done, total = done + n, total + b
    if log is not None and done:
        log(f"store: {done} entries ({total / 1e6:.1f} MB) packed under {packs_dir}")
    return done, total


# --- private helpers ---------------------------------------------------------------------------

def _loose_files(root: Path, packs_dir: Path):
    """Every entry file under `root` outside the packs (names starting with a dot are a
    writer's temporary files)."""
    for folder, dirs, files in os.walk(root):
        if Path(folder) == packs_dir:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not d.startswith(".") and Path(folder, d) != packs_dir]
        for f in files:
            if not f.startswith("."):
                yield Path(folder, f)


def _write_pack(packs_dir: Path, chunk: list[tuple[str, Path]]) -> tuple[int, int]:
    """One pack of `chunk`'s entries; their loose files removed once its index is in place."""
    packs_dir.mkdir(parents=True, exist_ok=True)
    pack = f"pack-{uuid.uuid4().hex}"
    index: dict[str, list[int]] = {}
    taken: list[Path] = []
    offset = 0
    tmp_bin = packs_dir / f".{pack}{_BIN}.tmp"
    tmp_idx = packs_dir / f".{pack}{_IDX}.tmp"
    try:
        with open(tmp_bin, "wb") as out:
            for name, path in chunk:
                try:
                    data = path.read_bytes()
                except OSError:
                    continue        # gone (another packer took it): nothing to pack
                out.write(data)
                index[name] = [offset, len(data)]
                offset += len(data)
                taken.append(path)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_bin, packs_dir / (pack + _BIN))
        tmp_idx.write_bytes(gzip.compress(json.dumps(index, separators=(",", ":")).encode(), mtime=0))
        os.replace(tmp_idx, packs_dir / (pack + _IDX))     # the pack exists for readers from here on
    finally:
        tmp_bin.unlink(missing_ok=True)
        tmp_idx.unlink(missing_ok=True)
    for path in taken:
        path.unlink(missing_ok=True)
    return len(index), offset


def _read_index(path: Path) -> dict | None:
    try:
        index = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError, zlib.error, ValueError):
        return None
    return index if isinstance(index, dict) else None
