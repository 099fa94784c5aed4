"""A question as tokens: each word as written and lowercased, marked as code or as a relation
word, with a misspelt question word corrected and a pronoun moved to the code it stands for."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from codenib.model.intent.lexicon import CODE, LEXICON, PHRASES, SKIP, TOKEN, TYPO_TARGETS, VOCABULARY, WH
from codenib.core.tokens import ENGLISH_STOPWORDS


class SymbolTable(Protocol):
    """What intent parsing asks of an index's symbols (`codenib.index.symbols.SymbolIndex`)."""

    def definitions(self, symbol: str) -> tuple[str | None, int]:
        """(match level, number of definitions) a written symbol resolves to; (None, 0) if none."""
        ...


class MemoSymbols:
    """A symbol table that answers each word once per question (readings ask repeatedly)."""

    def __init__(self, table: SymbolTable):
        self.table = table
        self.seen: dict[str, tuple[str | None, int]] = {}

    def definitions(self, symbol: str) -> tuple[str | None, int]:
        if symbol not in self.seen:
            self.seen[symbol] = self.table.definitions(symbol)
        return self.seen[symbol]


@dataclass(frozen=True, slots=True)
class Token:
    text: str                          # as written (backticks, `()` and `'s` removed)
    low: str
    code: bool                         # looks like code (backticked, dotted, snake_case, ...)
    relation: tuple[str, str] | None   # (relation, form) when it is a relation word


def tokenize_question(text: str, symbols: SymbolTable | None = None) -> list[Token]:
    raw: list[tuple[str, bool]] = []
    for m in TOKEN.finditer(text):
        if m.group(1) is not None:
            inner = m.group(1).strip().removesuffix("()")
            if re.fullmatch(r"[A-Za-z_][\w.]*", inner):
                raw.append((inner, True))
            continue
        word = m.group(2)
        code = bool(word.endswith("()") or CODE.fullmatch(word.removesuffix("()")))
        word = word.removesuffix("()")
        if word.endswith("'s"):
            word = word[:-2]
        raw.append((word, code))
    # Two-word relation phrases ("call sites", "base classes") become one token.
    merged: list[tuple[str, bool]] = []
    i = 0
    while i < len(raw):
        pair = (raw[i][0].lower(), raw[i + 1][0].lower()) if i + 1 < len(raw) else None
        if pair in PHRASES and not raw[i][1] and not raw[i + 1][1]:
            merged.append((PHRASES[pair], False))
            i += 2
            continue
        merged.append(raw[i])
        i += 1
    out = []
    for j, (word, code) in enumerate(merged):
        low = word.lower()
        if not code and len(low) >= 4 and low not in VOCABULARY and low not in ENGLISH_STOPWORDS and \
                (symbols is None or not symbols.definitions(word)[1]):
            low = _typo_of(low)
        # A capitalised word inside the sentence is a class name as people write it.
        code = code or (j > 0 and word[:1].isupper() and word[1:].islower() and low not in LEXICON
                        and low not in SKIP)
        rel = None if code else LEXICON.get(low)
        out.append(Token(word, low, code, rel))
    return out


def resolve_pronoun(toks: list[Token]) -> list[Token]:
    """The code named before "it"/"its" (or a final "this") moved into the pronoun's place:
    "I keep seeing X and wonder which functions invoke it" reads "... invoke X"."""
    for p, x in enumerate(toks):
        if x.low in ("it", "its") or (x.low == "this" and p == len(toks) - 1):
            if p > 0 and (toks[p - 1].low in ("inside", "within", "in")
                          or (p > 1 and toks[p - 1].low == "of" and toks[p - 2].low in ("inside", "out"))):
                return toks     # "X is calling inside (of) it": the pronoun restates the target
            topic = next((i for i in range(p - 1, -1, -1) if toks[i].code), None)
            # Only a topic that a relation word comes after ("X ... which functions invoke
            # it"), not one the relation already governs ("call sites of X before deprecating it").
            if topic is not None and any(toks[i].relation for i in range(topic + 1, len(toks))):
                return toks[:topic] + toks[topic + 1:p] + [toks[topic]] + toks[p + 1:]
            return toks
    return toks


def _typo_of(word: str) -> str:
    """The relation or question word `word` misspells by one edit inside it ("calers",
    "whcih"), else `word`. Edits at the end are inflections of other words ("based",
    "given", "instance"), not typos."""
    near = [v for v in TYPO_TARGETS if abs(len(v) - len(word)) <= 1 and _one_inner_edit(word, v)
            and (len(word) >= 5 or v in WH)]
    return near[0] if len(near) == 1 else word


def _one_inner_edit(a: str, b: str) -> bool:
    """Whether a and b differ by one insertion, deletion, substitution or transposition,
    before the last letter of both."""
    if a == b or a[-1] != b[-1]:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = sorted((a, b), key=len)
    i = next((k for k in range(len(short)) if short[k] != long_[k]), len(short))
    return short[i:] == long_[i + 1:]
