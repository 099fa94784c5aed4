"""Structural intent of a question: which code relation it asks about, in which direction and
about which symbols (`parse_intent`).

`parse` reads the question; `tokens` cuts it into words marked as code or relation words,
`targets` scores whom it is about, `reading` reads the relation's direction around one
relation word, and `lexicon` holds the words and patterns all of them read by.
"""

from codenib.model.intent.lexicon import LOOKUP_WORDS, RELATIONS
from codenib.model.intent.parse import parse_intent
from codenib.model.intent.reading import Intent
from codenib.model.intent.targets import TargetEvidence
from codenib.model.intent.tokens import SymbolTable

__all__ = ["Intent", "LOOKUP_WORDS", "RELATIONS", "SymbolTable", "TargetEvidence", "parse_intent"]
