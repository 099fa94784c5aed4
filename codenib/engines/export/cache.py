"""Where encoder exports are cached and what they are made from: the cache folders and the
files in each, the model's local folder, and the digests of its files."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import uuid
from pathlib import Path
from typing import Iterator

from codenib.core.artifact import sha256_file
from codenib.engines.models import model_path
from codenib.core.errors import ModelLoadError

CACHE_ENV = "CODENIB_CACHE_DIR"
ONNX_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "export.json"


def cache_root() -> Path:
    """`$CODENIB_CACHE_DIR`, else `$XDG_CACHE_HOME/codenib`, else `~/.cache/codenib`."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "codenib"


def encoders_dir() -> Path:
    return cache_root() / "encoders"


def local_model_folder(name: str) -> Path:
    """The local folder of a model: the packaged default, a path, or a Hugging Face cache
    snapshot (looked up offline only)."""
    target = Path(os.path.expanduser(model_path(name)))
    if target.is_dir():
        return target
    try:
        from huggingface_hub import snapshot_download

        for repo in (name, f"sentence-transformers/{name}") if "/" not in name else (name,):
            with contextlib.suppress(Exception):
                return Path(snapshot_download(repo, local_files_only=True))
    except ImportError:  # pragma: no cover - a dependency of sentence-transformers
        pass
    raise ModelLoadError(f"the model {name!r} is not on this machine, so it cannot be exported",
                         fix="pass a local sentence-transformers folder to --model, or use --encoder torch")


def source_digest(folder: Path) -> str:
    """sha256 over the model folder's files (names and contents)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and ".cache" not in p.parts)
    h = hashlib.sha256()
    for path, digest in zip(files, file_digests(files)):
        h.update(f"{path.relative_to(folder).as_posix()}\0{digest}\n".encode())
    return h.hexdigest()


def file_digests(paths: list[Path]) -> list[str]:
    """sha256 of each file, remembered in the cache by (path, size, mtime) so that loading
    an encoder does not read 90 MB of weights again (0.2 s on 2 cores)."""
    memo_path = encoders_dir() / "digests.json"
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    out, changed = [], False
    for path in paths:
        stat = path.stat()
        stamp = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
        if stamp not in memo:
            memo[stamp] = sha256_file(path)
            changed = True
        out.append(memo[stamp])
    if changed:
        with contextlib.suppress(OSError):
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo_path.with_name(f".digests-{uuid.uuid4().hex}.tmp")
            tmp.write_text(json.dumps(memo, sort_keys=True), encoding="utf-8")
            os.replace(tmp, memo_path)
    return out


# --- private ------------------------------------------------------------------------------------

@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name or name)[:60]
