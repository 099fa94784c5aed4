"""The names stack-trace frames print, normalised to what a definition is named: Python's,
JavaScript's, Go's, Rust's and C/C++'s, and the last segment a node of a file would carry."""

from __future__ import annotations

import re

_NATIVE_NAME = re.compile(r"[\w:~.$]{1,300}(?:operator\S{0,4})?|operator\S{1,4}")
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")


def python_name(name: str | None) -> str | None:
    return None if not name or name.startswith("<") else name


def js_name(name: str | None) -> str | None:
    if not name:
        return None
    name = name.strip()
    for word in ("async ", "new "):
        name = name.removeprefix(word)
    name = name.split(" [as ")[0].strip()
    if not name or "<anonymous>" in name or name in ("Object", "Module"):
        return None
    return name


def go_name(line: str) -> str | None:
    """`github.com/o/r/pkg.(*T).Method(0xc0, ...)` -> `pkg.T.Method`."""
    cut = line.rfind("(")
    head = line[:cut] if line.endswith(")") and cut > 0 else line
    head = head.rsplit("/", 1)[-1].replace("(*", "").replace(")", "").replace("(", "")
    head = re.sub(r"\[[^\]]{0,200}\]", "", head)
    parts = [x for x in head.split(".") if x and not re.fullmatch(r"(?:func|gowrap)\d+", x)]
    return ".".join(parts) or None


def rust_name(name: str) -> str:
    name = _RUST_HASH.sub("", name.strip())
    parts = [x for x in name.split("::") if x and x != "{{closure}}"]
    return "::".join(parts)


def native_name(name: str) -> str | None:
    """A C/C++ function name without template arguments; None for words that are no name
    (`#12 was fixed in ...` is an issue reference, not a frame)."""
    name = _strip_templates(name.strip())
    return name if _NATIVE_NAME.fullmatch(name) else None


def _strip_templates(name: str) -> str:
    """`fmt::v5::format<char>` -> `fmt::v5::format`; `operator<<` kept (linear)."""
    out, depth, i = [], 0, 0
    while i < len(name):
        if name.startswith("operator", i):
            j = i + 8
            while j < len(name) and name[j] in "<>=!+-*/%&|^[]()~," and j - i < 12:
                j += 1
            if depth == 0:
                out.append(name[i:j])
            i = j
            continue
        c = name[i]
        if c == "<":
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
        i += 1
    return "".join(out).strip()


def last_segment(function: str, fmt: str) -> str | None:
    """The definition's own name in a printed function (`lambda$run$0` -> `run`,
    `<init>` -> the class, `ns::f` -> `f`)."""
    name = function.replace("::", ".")
    parts = [x for x in re.split(r"[.]", name) if x]
    if not parts:
        return None
    last = parts[-1]
    if fmt == "java":
        if last in ("<init>", "<clinit>") and len(parts) >= 2:
            return parts[-2].split("$")[-1]
        if last.startswith("lambda$"):
            bits = last.split("$")
            return bits[1] if len(bits) > 1 and bits[1] else None
    return None if last.startswith("<") else last
