"""Python syntax newer than the running interpreter's `ast`, rewritten so that it parses with
every definition on the same lines.

CodeNib runs on Python 3.11, whose parser rejects two things Python 3.12 reads:

- PEP 695: type parameters (`def f[T](x: T)`, `class Box[T]:`) and `type` statements
  (`type Alias = list[int]`). Repositories that use them (sphinx since 2024: 28 of its
  files) lost every definition of those files to a parse error.
- PEP 701: f-strings whose replacement fields hold their own quote (`f"{d["k"]}"`), a
  backslash, a comment, or a line break inside a single-quoted f-string.

`downlevel` blanks the type parameters, turns a `type` statement into the assignment it
declares, and makes each such f-string a plain string of blanks; line numbers never move,
so spans, texts (always taken from the original source) and call lines stay exact (the
calls inside a blanked f-string are lost). Other syntax newer than 3.11 stays a parse error.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

#: A quick look for the constructs `downlevel` rewrites, before tokenizing the whole text.
_MAYBE = re.compile(r"\b(def|class)\s+\w+\s*\[|\btype\s+\w+\s*[\[=]")
#: Tokens after which a new statement starts (and the operators: `if x: type X = int`, `a; type X = int`).
_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING})
_STATEMENT_OPS = frozenset({":", ";"})
_SKIPPED = frozenset({tokenize.COMMENT, tokenize.NL})
#: An f-string's opening (any prefix with an `f`): the quick look before scanning for PEP 701 ones.
_MAYBE_FSTRING = re.compile(r"(?<![\w])(?:[fF][rR]?|[rR][fF])['\"]")
_PREFIX_LETTERS = frozenset("rRbBuUfF")
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def downlevel(text: str) -> str | None:
    """`text` with its PEP 701 f-strings and PEP 695 syntax rewritten for Python 3.11 (same
    lines), or None when it has neither (or cannot be read)."""
    return _rewrite(text)[0]


def parse_newer(text: str, filename: str) -> ast.Module | None:
    """The tree of `text`, which this interpreter rejects, parsed after `downlevel`, each
    definition's type parameters as written on its node (`_codenib_type_params`, for its
    signature); None when there is nothing to rewrite or the rewrite still fails. Never raises:
    a best-effort rewrite is never the reason a build stops."""
    try:
        newer, params = _rewrite(text)
        if newer is None:
            return None
        tree = ast.parse(newer, filename=filename, type_comments=False)
    except Exception:
        return None
    if params:
        for node in ast.walk(tree):
            if isinstance(node, _DEF_TYPES) and (node.lineno, node.name) in params:
                node._codenib_type_params = params[(node.lineno, node.name)]
    return tree


def _rewrite(text: str) -> tuple[str | None, dict[tuple[int, str], str]]:
    """`downlevel`'s text, and (line of `def`/`class`, name) -> its type parameters on one line."""
    plain = _plain_fstrings(text) if _MAYBE_FSTRING.search(text) else None
    typed, params = _pep695(plain if plain is not None else text)
    return (typed if typed is not None else plain), params


def _pep695(text: str) -> tuple[str | None, dict[tuple[int, str], str]]:
    """`text` with its PEP 695 syntax rewritten (None when it has none or cannot be tokenized),
    and the type parameters of its generic definitions."""
    if not _MAYBE.search(text):
        return None, {}
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _SKIPPED]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None, {}
    edits: list[tuple[tuple[int, int], tuple[int, int], str | None]] = []
    params: dict[tuple[int, str], str] = {}
    for i, tok in enumerate(tokens[:-2]):
        nxt, after = tokens[i + 1], tokens[i + 2]
        if nxt.type != tokenize.NAME:
            continue
        if tok.type == tokenize.NAME and tok.string in ("def", "class") and after.string == "[":
            close = _matching(tokens, i + 2)
            if close is None:
                return None, {}
            edits.append((after.start, tokens[close].end, None))
            params[(tok.start[0], nxt.string)] = _one_line(tokens[i + 2:close + 1])
        elif (tok.type == tokenize.NAME and tok.string == "type" and after.string in ("=", "[")
              and (i == 0 or tokens[i - 1].type in _STATEMENT_START
                   or tokens[i - 1].type == tokenize.OP and tokens[i - 1].string in _STATEMENT_OPS)):
            eq = i + 2 if after.string == "=" else _matching(tokens, i + 2)
            if eq is None or after.string == "[" and (eq + 1 >= len(tokens) or tokens[eq + 1].string != "="):
                return None, {}
            eq = eq if after.string == "=" else eq + 1
            edits.append((tok.start, tokens[eq].start, nxt.string))
    if not edits:
        return None, {}
    return _apply(text, edits), params


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


def _one_line(tokens: list) -> str:
    """Tokens written on one line, a space after each comma and around `=` (`[K, V: int = str]`)."""
    out = []
    for t in tokens:
        if t.string in ("]", ")") and out and out[-1] == ", ":
            out.pop()
        out.append(", " if t.string == "," else " = " if t.string == "=" else ": " if t.string == ":" else t.string)
    return "".join(out)


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


def _plain_fstrings(text: str) -> str | None:
    """`text` with each f-string only Python 3.12 reads made a plain string of blanks of the
    same lines (a line break inside it continues it after a backslash); None when there is
    none, or a string is not closed (the file is broken whatever the version)."""
    spans: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    while pos < n:
        ch = text[pos]
        if ch == "#":
            end = text.find("\n", pos)
            pos = n if end < 0 else end
        elif ch in "'\"":
            start = _prefix_start(text, pos)
            end, newer = _string_end(text, pos, text[start:pos].lower())
            if end is None:
                return None
            if newer:
                spans.append((start, end))
            pos = end
        else:
            pos += 1
    if not spans:
        return None
    parts, done = [], 0
    for start, end in spans:
        parts += [text[done:start], _blank_string(text[start:end])]
        done = end
    return "".join(parts) + text[done:]


def _prefix_start(text: str, quote_at: int) -> int:
    """Where the string whose quote is at `quote_at` starts: at its prefix (`rb`, `f`, `Rf`)."""
    start = quote_at
    while start > 0 and quote_at - start < 2 and text[start - 1] in _PREFIX_LETTERS:
        start -= 1
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return quote_at             # letters of a name before a quote: no prefix
    return start


def _string_end(text: str, at: int, prefix: str) -> tuple[int | None, bool]:
    """The index after the string literal whose quote is at `at`, and whether it is an
    f-string only 3.12 reads (None: not closed)."""
    quote = text[at]
    delim = quote * 3 if text.startswith(quote * 3, at) else quote
    i, n, newer = at + len(delim), len(text), False
    formatted = "f" in prefix
    while i < n:
        if text.startswith(delim, i):
            return i + len(delim), newer
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == "\n" and len(delim) == 1:
            return None, False
        elif formatted and ch == "{":
            if text.startswith("{{", i):
                i += 2
                continue
            i, inner = _field_end(text, i + 1, delim)
            if i is None:
                return None, False
            newer = newer or inner
        else:
            i += 1
    return None, False


def _field_end(text: str, i: int, delim: str) -> tuple[int | None, bool]:
    """The index after the replacement field whose expression starts at `i` (in an f-string
    closed by `delim`), and whether only 3.12 reads it."""
    depth, n, newer = 0, len(text), False
    while i < n:
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return i + 1, newer
            depth -= 1
        elif ch in "'\"":
            start = _prefix_start(text, i)
            # Before 3.12 the f-string ended where its own delimiter comes back.
            newer = newer or text.startswith(delim, i)
            end, inner = _string_end(text, i, text[start:i].lower())
            if end is None:
                return None, False
            newer, i = newer or inner, end
            continue
        elif ch == "\\" or ch == "#" or ch == "\n" and len(delim) == 1:
            newer = True
            if ch == "#":
                end = text.find("\n", i)
                i = n if end < 0 else end
                continue
        elif ch == ":" and depth == 0:
            return _spec_end(text, i + 1, delim, newer)
        i += 1
    return None, False


def _spec_end(text: str, i: int, delim: str, newer: bool) -> tuple[int | None, bool]:
    """The index after a format spec (`:>{width}}`), its own fields read as fields."""
    while i < len(text):
        if text.startswith(delim, i):
            return None, False
        ch = text[i]
        if ch == "{":
            i, inner = _field_end(text, i + 1, delim)
            if i is None:
                return None, False
            newer = newer or inner
            continue
        if ch == "}":
            return i + 1, newer
        newer = newer or ch == "\n" and len(delim) == 1
        i += 1
    return None, False


def _blank_string(literal: str) -> str:
    """A plain string of blanks on the same lines as `literal` (each line break after a
    backslash, which continues a string literal onto the next line)."""
    body = list(literal[1:-1])
    out = ['"']
    for ch in body:
        if ch == "\n":
            brk = len(out) - 1 if out[-1] != "\r" else len(out) - 2
            if out[brk] == " ":
                out[brk] = "\\"
            else:
                out.insert(brk + 1, "\\")
            out.append("\n")
        else:
            out.append("\r" if ch == "\r" else " ")
    return "".join(out) + '"'


def _eol_width(line: str) -> int:
    if line.endswith("\r\n"):
        return 2
    return 1 if line.endswith("\n") else 0
