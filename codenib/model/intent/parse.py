"""Structural intent of a question: which code relation it asks about (calls, imports,
inheritance, ...), in which direction, and which symbols it is about.

The relation and its direction come from the sentence's shape, not from a list of phrases:
a relation word's form (verb, participle, gerund, agent noun) and where the target stands
relative to it ("who calls X" / "what does X call", "callers of X" / "X callees", "where is
X used" / "helpers used by X"). Targets are grounded in the index's symbol table when one is
given: a plain lowercase word that names definitions is a candidate, weighted by how
specific it is (one definition or hundreds) and by how close it stands to the relation.

Deterministic and free of I/O: the symbol table is loaded with the index and passed in.

The parts live beside this module in `codenib.model.intent`: `lexicon` (the words and
patterns), `tokens` (a question as tokens), `targets` (whom it is about), `reading` (relation
and direction around one relation word); `codenib.model.courtesy` strips greetings and thanks
first.
"""

from __future__ import annotations

from codenib.model.courtesy import strip_courtesy
from codenib.model.intent.lexicon import (
    ASKING,
    AUX,
    CLAUSE,
    PRONOUNS,
    WH,
)
from codenib.model.intent.reading import Intent, read_relation
from codenib.model.intent.targets import candidate_targets
from codenib.model.intent.tokens import SymbolTable, MemoSymbols, resolve_pronoun, Token, tokenize_question

#: The public names of intent parsing, wherever they are defined.
__all__ = ["parse_intent"]


def parse_intent(text: str, symbols: SymbolTable | None = None) -> Intent:
    """Relation, direction and targets of a (courtesy-stripped) question.

    The whole text is read first; when it does not read as a graph question, each clause is
    read on its own ("BUG-331: getchar hangs. Need the functions getchar() calls."), with
    a pronoun standing for the code a clause before it named ("`format_filename()` - where
    does it get called?").
    """
    if symbols is not None:
        symbols = MemoSymbols(symbols)
    whole = _intent_of(tokenize_question(text, symbols), symbols)
    clauses = [c for c in CLAUSE.split(text) if c and c.strip()]
    if whole.structural or len(clauses) < 2:
        return whole
    topic: Token | None = None
    for clause in clauses:
        clause = strip_courtesy(clause)
        toks = tokenize_question(clause, symbols)
        if not toks:
            continue
        if topic is not None and not any(x.code for x in toks):
            toks = [topic if x.low in PRONOUNS else x for x in toks]
        intent = _intent_of(toks, symbols)
        # A clause counts when it asks ("...?", a wh-word, "find", "need"), not when it is
        # a fragment of a statement ("... referenced by extends, includes and imports").
        if intent.structural and (clause.rstrip().endswith("?") or toks[0].low in AUX
                                  or any(x.low in WH | ASKING for x in toks)):
            return intent
        topic = next((x for x in reversed(toks) if x.code), topic)
    return whole


def _intent_of(toks: list[Token], symbols: SymbolTable | None) -> Intent:
    if not toks:
        return Intent()
    toks = resolve_pronoun(toks)
    readings = [read_relation(toks, r, symbols) for r, t in enumerate(toks) if t.relation is not None and not t.code]
    if not readings:
        targets, evidence = candidate_targets(toks, None, symbols)
        return Intent(targets=targets, evidence=evidence)
    # The reading whose target the table knows best wins; then (max keeps the first) the
    # earlier relation word.
    return max(readings, key=lambda r: (r.structural, r.evidence[0].score if r.evidence else 0.0))
