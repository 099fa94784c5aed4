"""Query signals: how lexical, semantic and structural a query is, and what it targets.

Read by `RetrievalPlanner` only; the keyword extraction they build on is an op
(`codenib.ops.transform.extract_keywords`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from codenib.ops.transform import QueryKeywords, extract_keywords, looks_symbol
from codenib.tokens import ENGLISH_STOPWORDS

_WORD = re.compile(r"[A-Za-z]+")

#: Words that frame a look-up ("where is X defined") rather than describe behaviour.
LOOKUP_WORDS = frozenset(
    "where is are defined definition definitions of go to show me the find method function "
    "class def declaration declared locate open jump source code a an symbol implementation".split())

#: Phrases that ask about the call graph, with the direction they ask for.
_CALLERS = re.compile(
    r"\b(who|what|which\s+\w+|functions?\s+that|methods?\s+that|code\s+that)\s+(calls?|invokes?|uses?)\b"
    r"|\bcall(?:ers|ing\s+sites?|\s+sites?)\s+(?:of|for|to)\b|\bcallers\b"
    r"|\bcalled\s+from\b|\bwhere\s+is\s+.+\s+(?:called|used|invoked)\b"
    r"|\b(?:usages?|uses|references?)\s+(?:of|to)\b|\bused\s+by\b|\bimpact\s+of\b|\bdepend(?:s|ents)?\s+on\b",
    re.IGNORECASE)
_CALLEES = re.compile(
    r"\bcallees\b|\bdoes\s+.+\s+(?:call|invoke|use)\b|\bcalled\s+(?:by|inside|within|in)\b"
    r"|\b(?:functions?|methods?)\s+(?:that\s+)?.+\s+(?:calls|invokes)\b|\bdependenc(?:y|ies)\s+of\b"
    r"|\bcalls\s+(?:made\s+)?(?:by|in|inside|from)\b",
    re.IGNORECASE)

_PROSE = re.compile(r"(?<![\w.`])[A-Za-z][a-z]+(?![\w`(]|\.\w)")
_TESTS = re.compile(r"\b(tests?|testing|pytest|unittest|fixtures?|conftest)\b", re.IGNORECASE)

#: Queries longer than this (in words) are treated as bug reports / issue texts.
LONG_QUERY_WORDS = 40


@dataclass(frozen=True, slots=True)
class QuerySignals:
    """How lexical, semantic and structural a query is (each in [0, 1]) and what it targets."""

    lexical: float
    semantic: float
    structural: float
    direction: str | None          # callers | callees | None
    target: str | None             # the symbol a look-up or call-graph query is about
    words: int
    long_text: bool
    keywords: QueryKeywords = field(default_factory=QueryKeywords)
    about_tests: bool = False      # the query asks about tests themselves

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["keywords"] = self.keywords.to_dict()
        return d


def query_signals(text: str) -> QuerySignals:
    """Score a query's lexical, semantic and structural character (deterministic)."""
    kw = extract_keywords(text)
    words = _WORD.findall(text)
    n_words = len(words)
    long_text = n_words > LONG_QUERY_WORDS
    callers = bool(_CALLERS.search(text))
    callees = bool(_CALLEES.search(text))
    direction = None
    if callees and not _CALLERS_STRONG.search(text):
        direction = "callees"
    elif callers or callees:
        direction = "callers"
    target = _target(text, kw)
    structural = 0.0
    if direction and not long_text:
        structural = 0.9 if target else 0.3
    leftover = [w for w in words if w.lower() not in LOOKUP_WORDS]
    lexical = 0.0
    if target and not long_text:
        # Nearly nothing but the symbol and look-up words: an exact-name look-up.
        plain = [w for w in leftover if w not in _split_words(target)]
        lexical = {0: 1.0, 1: 0.7, 2: 0.5}.get(len(plain), 0.2)
    elif not long_text and n_words <= 2 and words:
        lexical = 0.6
    if structural:
        lexical = min(lexical, 0.5)
    # Content words of the prose (identifiers and function words removed): a sentence of
    # three or more describes behaviour.
    idents = set(kw.identifiers) | {p for d in kw.dotted for p in d.split(".")}
    content = [w for w in _PROSE.findall(text) if w.lower() not in ENGLISH_STOPWORDS and w not in idents]
    semantic = min(1.0, max(0.0, (len(content) - 1) / 4.0))
    if long_text:
        semantic = 0.8
    about_tests = bool(_TESTS.search(text))
    return QuerySignals(round(lexical, 3), round(semantic, 3), round(structural, 3), direction, target,
                        n_words, long_text, kw, about_tests)


# --- helpers ---------------------------------------------------------------------------------

_CALLERS_STRONG = re.compile(r"\b(who|what|which\s+\w+)\s+calls?\b(?!.*\bcall\b)|\bcallers\b|\bcalled\s+from\b"
                             r"|\bwhere\s+is\s+.+\s+called\b", re.IGNORECASE)


def _target(text: str, kw: QueryKeywords) -> str | None:
    """The symbol the query is about: the most specific code-like token, else a lone word."""
    for group in (kw.dotted, [b for b in kw.backticked if looks_symbol(b)], kw.identifiers):
        for s in group:
            return s.removesuffix("()")
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text) if w.lower() not in LOOKUP_WORDS
             and w.lower() not in _STRUCTURAL_WORDS]
    if len(words) == 1:
        return words[0]
    return None


_STRUCTURAL_WORDS = frozenset("who what which calls call called callers callees caller callee from by "
                              "functions function methods method does do uses use used usage usages "
                              "references reference invoke invokes invoked all".split())


def _split_words(symbol: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]+", symbol)) | {symbol}
