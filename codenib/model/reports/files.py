"""A stack-trace frame's printed path mapped onto the indexed files: by suffix, trusting no
absolute, vendored or toolchain prefix."""

from __future__ import annotations

import re

#: Roots whose files are the toolchain's, never a repository's, whatever their suffix shares with
#: one: the Rust standard library, the C headers and runtime, Go's GOROOT, Node's internals.
_FOREIGN = re.compile(r"(?:/rustc/[0-9a-f]{7,}/|/usr/(?:local/)?include/|/usr/lib/gcc/|/usr/local/go/src/"
                      r"|/usr/lib/go[^/\s]{0,20}/src/|/hostedtoolcache/go/|/libexec/src/|/sysdeps/"
                      r"|^node:|^internal/|^<)")
_SCHEME = re.compile(r"^[a-zA-Z][\w+.-]{0,20}://+")


def clean_path(path: str) -> str | None:
    """The path a frame prints, without URL scheme, host, drive, `~` or `./`; None when it
    names a toolchain file (`/rustc/<hash>/library/...`, `/usr/include/...`, `node:internal`)."""
    p = path.strip().replace("\\", "/")
    if _FOREIGN.search(p):
        return None
    m = _SCHEME.match(p)
    if m is not None:
        scheme = p[:m.end()].lower()
        p = p[m.end():]
        if scheme.startswith(("http", "https")):
            p = p.partition("/")[2]                   # the host is not a directory
    if len(p) > 1 and p[1] == ":":                    # a Windows drive
        p = p[2:]
    parts = [x for x in p.split("/") if x and x not in (".", "..", "~")]
    return "/".join(parts) or None


def repository_files(path: str, symbols) -> list[str]:
    """Indexed files a frame's path names: the longest suffix that is an indexed file.

    A path of several directories that shares only its file name with an indexed file in a
    directory is not that file (`/usr/lib/python3/json/decoder.py` is not `pkg/decoder.py`); a
    bare file name (`Bar.java`, `abort.c`) may be any file of that name.
    """
    cleaned = clean_path(path)
    if cleaned is None:
        return []
    files = symbols.files_matching(cleaned)
    if not files:
        return []
    parts = cleaned.split("/")
    if len(parts) > 1:
        tail = files[0].split("/")
        if _common_tail(parts, tail) < 2 and len(tail) > 1:
            return []
    return files


def _common_tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n
