"""Query signals: how lexical, semantic and structural a query is, and what it targets.

Read by `RetrievalPlanner` only. They build on the keyword extraction op
(`codenib.ops.transform.extract_keywords`) and on the structural intent parser
(`codenib.model.intent`), which consults the index's symbol table when one is given.
Greetings, requests and thanks around a question are stripped first, so they never
change a plan.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from codenib.model.courtesy import strip_courtesy
from codenib.model.intent.parse import parse_intent
from codenib.model.intent.lexicon import LOOKUP_WORDS, RELATIONS
from codenib.model.intent.reading import Intent
from codenib.model.intent.targets import TargetEvidence
from codenib.model.intent.tokens import SymbolTable
from codenib.ops.transform import QueryKeywords, extract_keywords, looks_symbol
from codenib.core.tokens import ENGLISH_STOPWORDS, cjk_characters

_WORD = re.compile(r"[A-Za-z]+")

_PROSE = re.compile(r"(?<![\w.`])[A-Za-z][a-z]+(?![\w`(]|\.\w)")
_TESTS = re.compile(r"\b(tests?|testing|pytest|unittest|fixtures?|conftest)\b", re.IGNORECASE)

#: Queries longer than this (in words) are treated as bug reports / issue texts.
LONG_QUERY_WORDS = 40
#: An issue's shape (a title line, a blank line, a body) makes a shorter text a report too, from
#: this many words: short feature requests and bug reports are still reports, not questions.
REPORT_MIN_WORDS = 12
_TITLE_AND_BODY = re.compile(r"\A[ \t]*\S[^\n]*\n[ \t\r]*\n\s*\S")
#: Characters of a CJK word on average (Chinese words are mostly one or two characters): a
#: report written in Chinese counts its words from its characters, since nothing spaces them.
CJK_CHARS_PER_WORD = 2
#: Target evidence kept in a trace (the best candidates).
MAX_EVIDENCE = 6


@dataclass(frozen=True, slots=True)
class QuerySignals:
    """How lexical, semantic and structural a query is (each in [0, 1]) and what it targets."""

    lexical: float
    semantic: float
    structural: float
    direction: str | None          # incoming | outgoing | None (graph questions only)
    target: str | None             # the symbol a look-up or graph query is about
    words: int
    long_text: bool
    keywords: QueryKeywords = field(default_factory=QueryKeywords)
    about_tests: bool = False      # the query asks about tests themselves
    relation: str | None = None    # calls | uses | imports | inherits | ... (`intent.RELATIONS`)
    targets: tuple[str, ...] = ()  # every target of a graph query (ambiguous mentions: several)
    rule: str | None = None        # the reading of the sentence that fired
    evidence: tuple[TargetEvidence, ...] = ()   # symbol-table matches of the candidate targets

    @property
    def edge_types(self) -> tuple[str, ...]:
        """The graph edges that answer this query's relation (calls when it names none)."""
        return RELATIONS[self.relation].edge_types if self.relation else ("calls",)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["keywords"] = self.keywords.to_dict()
        d["targets"] = list(self.targets)
        d["evidence"] = [e.to_dict() for e in self.evidence]
        return d


def query_signals(text: str, symbols: SymbolTable | None = None) -> QuerySignals:
    """Score a query's lexical, semantic and structural character (deterministic).

    Args:
        symbols: the index's symbol table; with it, plain words that name definitions can be
            targets of graph questions ("who calls invoke").
    """
    core = strip_courtesy(text)
    kw = extract_keywords(core)
    words = _WORD.findall(core)
    n_words = len(words) + cjk_characters(core) // CJK_CHARS_PER_WORD
    long_text = n_words > LONG_QUERY_WORDS or (n_words >= REPORT_MIN_WORDS and bool(_TITLE_AND_BODY.match(core)))
    intent = parse_intent(core, symbols) if not long_text else Intent()
    direction = intent.direction
    target = intent.targets[0] if intent.structural else _target(core, kw, symbols)
    structural = 0.0
    if intent.structural:
        structural = 0.9
    elif intent.relation and target is None:
        structural = 0.3      # a graph question about something the sentence does not name
    leftover = [w for w in words if w.lower() not in LOOKUP_WORDS]
    lexical = 0.0
    if target and not long_text:
        # Nearly nothing but the symbol and look-up words: an exact-name look-up.
        # Function words and a scope ("in click": a module the table knows) do not count.
        plain = [w for w in leftover if w not in _split_words(target) and w.lower() not in ENGLISH_STOPWORDS
                 and not _is_scope(w, symbols)]
        lexical = {0: 1.0, 1: 0.7, 2: 0.5}.get(len(plain), 0.2)
    elif not long_text and n_words <= 2 and words:
        lexical = 0.6
    if structural:
        lexical = min(lexical, 0.5)
    # Content words of the prose (identifiers and function words removed): a sentence of
    # three or more describes behaviour.
    idents = set(kw.identifiers) | {p for d in kw.dotted for p in d.split(".")}
    content = [w for w in _PROSE.findall(core) if w.lower() not in ENGLISH_STOPWORDS and w not in idents]
    semantic = min(1.0, max(0.0, (len(content) - 1) / 4.0))
    if long_text:
        semantic = 0.8
    about_tests = bool(_TESTS.search(core))
    return QuerySignals(round(lexical, 3), round(semantic, 3), round(structural, 3), direction, target,
                        n_words, long_text, kw, about_tests, intent.relation,
                        intent.targets if intent.structural else (), intent.rule, intent.evidence[:MAX_EVIDENCE])


# --- helpers ---------------------------------------------------------------------------------

def _target(text: str, kw: QueryKeywords, symbols: SymbolTable | None) -> str | None:
    """The symbol a look-up is about: the most specific code-like token, else a lone word
    (a relation word too, "where is invoke defined", when the symbol table knows it)."""
    for group in (kw.dotted, [b for b in kw.backticked if looks_symbol(b)], kw.identifiers):
        for s in group:
            return s.removesuffix("()")
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text) if w.lower() not in LOOKUP_WORDS]
    plain = [w for w in words if w.lower() not in _RELATION_WORDS]
    if len(plain) == 1:
        return plain[0]
    if not plain and symbols is not None:
        known = [w for w in words if symbols.definitions(w)[1]]
        if len(known) == 1:
            return known[0]
    return None


#: Words of a graph question that are never a look-up's lone target.
_RELATION_WORDS = frozenset("who what which calls call called callers callees caller callee from by "
                            "functions function methods method does do uses use used usage usages "
                            "references reference invoke invokes invoked all".split())


def _is_scope(word: str, symbols: SymbolTable | None) -> bool:
    return symbols is not None and symbols.definitions(word)[0] in ("module_qualname", "path")


def _split_words(symbol: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]+", symbol)) | {symbol}
