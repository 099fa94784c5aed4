"""Python syntax newer than the running interpreter's `ast`, rewritten so that it parses with
every definition on the same lines.

CodeNib runs on Python 3.11, whose parser rejects PEP 695 (3.12): type parameters
(`def f[T](x: T)`, `class Box[T]:`) and `type` statements (`type Alias = list[int]`).
Repositories that use them (sphinx since 2024: 28 of its files) lost every definition of
those files to a parse error. `downlevel` blanks the type parameters and turns a `type`
statement into the assignment it declares; line numbers never move, so spans, texts
(always taken from the original source) and call lines stay exact.

Still a parse error: f-strings that reuse their quotes (PEP 701, 3.12) and other syntax
newer than 3.11.
"""

from __future__ import annotations

import io
import re
import tokenize

#: A quick look for the constructs `downlevel` rewrites, before tokenizing the whole text.
_MAYBE = re.compile(r"\b(def|class)\s+\w+\s*\[|\btype\s+\w+\s*[\[=]")
#: Tokens after which a new statement starts (and the operators: `if x: type X = int`, `a; type X = int`).
_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})
_STATEMENT_OPS = frozenset({":", ";"})
_SKIPPED = frozenset({tokenize.COMMENT, tokenize.NL})
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")


def downlevel(text: str) -> str | None:
    """`text` with its PEP 695 syntax rewritten for Python 3.11 (same lines), or None when it
    has none or it cannot be tokenized."""
    if not _MAYBE.search(text):
        return None
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _SKIPPED]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    edits: list[tuple[tuple[int, int], tuple[int, int], str | None]] = []
    for i, tok in enumerate(tokens[:-2]):
        nxt, after = tokens[i + 1], tokens[i + 2]
        if nxt.type != tokenize.NAME:
            continue
        if tok.type == tokenize.NAME and tok.string in ("def", "class") and after.string == "[":
            close = _matching(tokens, i + 2)
            if close is None:
                return None
            edits.append((after.start, tokens[close].end, None))
        elif (tok.type == tokenize.NAME and tok.string == "type" and after.string in ("=", "[")
              and (i == 0 or tokens[i - 1].type in _STATEMENT_START
                   or tokens[i - 1].type == tokenize.OP and tokens[i - 1].string in _STATEMENT_OPS)):
            eq = i + 2 if after.string == "=" else _matching(tokens, i + 2)
            if eq is None or after.string == "[" and (eq + 1 >= len(tokens) or tokens[eq + 1].string != "="):
                return None
            eq = eq if after.string == "=" else eq + 1
            edits.append((tok.start, tokens[eq].start, nxt.string))
    if not edits:
        return None
    return _apply(text, edits)


# --- helpers ---------------------------------------------------------------------------------

def _matching(tokens: list, open_at: int) -> int | None:
    """The index of the token that closes the bracket at `open_at` (None: unbalanced)."""
    depth = 0
    for j in range(open_at, len(tokens)):
        s = tokens[j].string
        if tokens[j].type == tokenize.OP and s in _OPEN:
            depth += 1
        elif tokens[j].type == tokenize.OP and s in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return None


def _apply(text: str, edits: list[tuple[tuple[int, int], tuple[int, int], str | None]]) -> str:
    """`text` with each (start, end) range blanked, and `name` (when given) written where the
    range starts (`type X[T] = v` becomes `X         = v`). A blanked range over several lines
    keeps its line breaks, each after a backslash, so the statement still continues onto the
    next line."""
    # Rows split as `tokenize` read them (at "\n" only: a form feed, a lone "\r" or U+2028
    # is inside a row), so token positions index them.
    lines = io.StringIO(text).readlines()
    rows = [list(line) for line in lines]
    for (r0, c0), (r1, c1), name in edits:
        for r in range(r0, r1 + 1):
            row = rows[r - 1]
            lo = c0 if r == r0 else 0
            hi = c1 if r == r1 else len(row) - _eol_width(lines[r - 1])
            for c in range(lo, hi):
                row[c] = " "
            if r < r1:
                # The line break continues the statement; an empty line gets one character more.
                if hi > lo:
                    row[hi - 1] = "\\"
                else:
                    row.insert(hi, "\\")
        if name is not None:
            # The range holds `type`, the name and its brackets' first line: room for the name.
            rows[r0 - 1][c0:c0 + len(name)] = list(name)
    return "".join("".join(row) for row in rows)


def _eol_width(line: str) -> int:
    if line.endswith("\r\n"):
        return 2
    return 1 if line.endswith("\n") else 0
