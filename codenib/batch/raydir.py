"""A private temp folder for the embedded local Ray.

`ray.init()` makes its temp folder and every folder it creates there (the session, `logs/`,
`sockets/`, `runtime_resources/`) mode 777 without the sticky bit, so any local user could
read job output or replace a socket. The embedded Ray of `codenib run`, `rerank` and `demo`
therefore gets `_temp_dir` inside a folder of this user's own, mode 700, that Ray never
touches (`private_root`): nothing under it can be reached by others whatever modes Ray sets.
`seal` also takes group and other access off every folder under it once Ray has made them.

Unix socket paths hold at most 107 bytes, and Ray puts its sockets about 70 bytes below its
temp folder (`session_<date>_<time>_<us>_<pid>/sockets/plasma_store`), so the folder stays short:
under `$RAY_TMPDIR` or `$TMPDIR` (where Ray itself would go) when that is short enough, else
under /tmp.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Mapping

from codenib.core.errors import CodeNibError

#: Bytes Ray appends below its temp folder for its longest socket path, with some slack.
SOCKET_TAIL = 72
#: The longest AF_UNIX socket path (108 bytes with the terminating NUL on Linux; 104 on macOS).
SOCKET_MAX = 103 if sys.platform == "darwin" else 107
#: The folder Ray gets, inside the private root.
RAY_SUBDIR = "r"


def private_root(environ: Mapping[str, str] | None = None) -> Path:
    """This user's private folder for embedded Rays (made mode 700 if missing).

    Raises:
        CodeNibError: the folder exists but is a link, not a folder, or another user's.
    """
    env = os.environ if environ is None else environ
    name = f"codenib-ray-{os.getuid()}"
    base = env.get("RAY_TMPDIR") or env.get("TMPDIR") or "/tmp"
    root = Path(base) / name
    if len(os.fsencode(str(root / RAY_SUBDIR))) + SOCKET_TAIL > SOCKET_MAX:
        root = Path("/tmp") / name
    _make_private(root)
    return root


def ray_temp_dir(root: Path) -> str:
    """The `_temp_dir` to give `ray.init` under `root`."""
    return str(root / RAY_SUBDIR)


def seal(root: Path) -> None:
    """Take group and other access off every folder of this user's under `root` (links are
    never followed); Ray makes them 777."""
    uid = os.getuid()
    for folder, _, _ in os.walk(root, followlinks=False):   # yields real folders only
        try:
            st = os.lstat(folder)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and st.st_mode & 0o077:
                os.chmod(folder, stat.S_IMODE(st.st_mode) & 0o700)
        except FileNotFoundError:   # a folder Ray removed meanwhile
            continue


def _make_private(root: Path) -> None:
    try:
        root.mkdir(mode=0o700, parents=False)
    except FileExistsError:
        pass
    except FileNotFoundError:
        root.parent.mkdir(parents=True, exist_ok=True)
        root.mkdir(mode=0o700, exist_ok=True)
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        what = "is not a folder (a link?)" if not stat.S_ISDIR(st.st_mode) else "belongs to another user"
        raise CodeNibError(f"the private folder of the embedded Ray {what}", path=str(root),
                           fix="remove it, or set TMPDIR (or RAY_TMPDIR) to a folder of yours")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(root, 0o700)
