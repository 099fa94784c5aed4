"""The targets of a question: its words scored by how much they look like code, what the
index's symbol table says of them and how close they stand to the relation word."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from codenib.model.intent.lexicon import AND, NEAR, SKIP, MAX_TARGETS
from codenib.model.intent.tokens import SymbolTable, Token
from codenib.core.tokens import ENGLISH_STOPWORDS


@dataclass(frozen=True, slots=True)
class TargetEvidence:
    """How one word of the question scored as a target: what the symbol table says of it."""

    word: str
    code_like: bool
    level: str | None          # symbol-table match level (None: not in the table, or no table)
    definitions: int           # how many definitions it names
    specificity: float         # 1 for a unique name, falling with the number of definitions
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def candidate_targets(toks: list[Token], r: int | None, symbols: SymbolTable | None
             ) -> tuple[tuple[str, ...], tuple[TargetEvidence, ...]]:
    """Candidate targets, best first, with the evidence for each."""
    evidence: list[tuple[float, int, TargetEvidence]] = []
    plain_left = [i for i, x in enumerate(toks) if i != r and not x.code and x.low not in SKIP
                  and (x.relation is None or symbols is not None)]
    for i, x in enumerate(toks):
        if i == r:
            continue
        near = r is not None and stands_near(toks, r, i)
        framing = not x.code and x.low in SKIP
        if framing and (x.low in ENGLISH_STOPWORDS or len(x.low) < 3):
            continue
        # A framing word ("get", "find", "name") is a target only where the table knows it
        # and it stands right by the relation word ("who calls get").
        if framing and not (near and symbols is not None):
            continue
        level, n = symbols.definitions(x.text) if symbols is not None else (None, 0)
        if framing and not n:
            continue
        if i == 0 and not x.code and x.text[:1].isupper() and symbols is not None and not n:
            continue           # a sentence's capitalised first word the table does not know
        spec = 1.0 / (1.0 + math.log2(n)) if n else 0.0
        if framing:
            score = (0.4 + 0.5 * spec) * 0.5
        elif x.code:
            score = 1.0 + 0.1 * spec
        elif n:
            score = (0.4 + 0.5 * spec) * (1.0 if near or r is None else 0.7)
        elif x.relation is not None:
            continue           # another relation word the table does not know: not a name
        else:
            # A word the table does not know: a target only when it is all there is.
            score = 0.2 if len(plain_left) == 1 else 0.05
        if level in ("path", "module_qualname") and r is not None and toks[r].relation[0] != "imports":
            score *= 0.8       # a module named beside a symbol is where to look, not what
        evidence.append((score, i, TargetEvidence(x.text, x.code, level, n, round(spec, 3), round(score, 3))))
    evidence.sort(key=lambda e: (-e[0], e[1]))
    if not evidence or evidence[0][0] < 0.1:
        return (), tuple(e for _, _, e in evidence)
    best = evidence[0][0]
    chosen = [i for s, i, e in evidence if s >= 0.9 * best and (e.code_like or e.definitions)] or [evidence[0][1]]
    # Names joined by "and"/"or" to a chosen one are targets too ("who calls run or echo").
    known = {i for _, i, e in evidence if e.code_like or e.definitions}
    for i in list(chosen):
        j = i
        while j + 2 < len(toks) and toks[j + 1].low in AND and j + 2 in known:
            j += 2
            chosen.append(j)
        j = i
        while j - 2 >= 0 and toks[j - 1].low in AND and j - 2 in known:
            j -= 2
            chosen.append(j)
    words = [toks[i].text for i in chosen]
    return tuple(dict.fromkeys(words))[:MAX_TARGETS], tuple(e for _, _, e in evidence)


def stands_near(toks: list[Token], r: int, i: int) -> bool:
    """Whether token i stands next to the relation word, prepositions and articles aside."""
    lo, hi = sorted((r, i))
    between = [x.low for x in toks[lo + 1:hi]]
    return all(w in NEAR for w in between) and len(between) <= 3


def position_of(toks: list[Token], word: str) -> int:
    return next(i for i, x in enumerate(toks) if x.text == word)
