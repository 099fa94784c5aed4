"""One reading of a question around one relation word: the direction of the relation from
where the target stands and what frames the sentence, or why it is not a graph question."""

from __future__ import annotations

from dataclasses import dataclass

from codenib.model.intent.lexicon import (
    CLOSERS,
    CLOSING_PREPS,
    FRAME,
    FROM_ACTOR,
    INCOMING,
    NOT_FRAME,
    OUTGOING,
    PRONOUNS,
    REQUESTS,
    RUNS,
    SCOPE_NOUNS,
    SKIP,
    STATEMENT,
    SUBORDINATE,
    TO_TARGET,
    VERB_OR_NOUN,
    WH,
    MAX_RESIDUAL_WORDS,
    RELATIONS,
)
from codenib.model.intent.targets import TargetEvidence, stands_near, position_of, candidate_targets
from codenib.model.intent.tokens import SymbolTable, Token


@dataclass(frozen=True, slots=True)
class Intent:
    """What a question asks of the code graph (relation and direction) and whom it is about."""

    relation: str | None = None
    direction: str | None = None       # incoming | outgoing | None
    rule: str | None = None            # which reading fired, for traces
    targets: tuple[str, ...] = ()
    evidence: tuple[TargetEvidence, ...] = ()
    residual: int = 0                  # content words left over by the reading

    @property
    def structural(self) -> bool:
        return self.relation is not None and self.direction is not None


def read_relation(toks: list[Token], r: int, symbols: SymbolTable | None) -> Intent:
    """The intent when toks[r] is the relation word (no direction when the sentence does not
    read as a graph question that way)."""
    targets, _ = candidate_targets(toks, r, symbols)
    if targets and r > 0 and position_of(toks, targets[0]) == 0:
        # "echo: who calls it?": a topic the table knows first, then a question about it.
        # Read the question with the topic in the pronoun's place (the first pronoun from
        # the relation word on, else any after the topic).
        pronouns = [i for i, x in enumerate(toks) if i > 1 and x.low in PRONOUNS]
        pron = next((i for i in pronouns if i >= r), pronouns[0] if pronouns else None)
        if pron is not None:
            toks = toks[1:pron] + [toks[0]] + toks[pron + 1:]
            r -= 1
    relation, form = toks[r].relation
    low = toks[r].low
    nxt = toks[r + 1].low if r + 1 < len(toks) else None
    prev = toks[r - 1].low if r > 0 else None
    nxt2 = toks[r + 2].low if r + 2 < len(toks) else None
    if low in VERB_OR_NOUN and low not in ("import",) and (nxt in TO_TARGET | FROM_ACTOR | INCOMING | OUTGOING
                                                            or prev in INCOMING | OUTGOING
                                                            or (nxt in ("are", "were", "is") and nxt2 in FROM_ACTOR)):
        relation, form = VERB_OR_NOUN[low], "noun"
    if low == "subclass" and nxt in TO_TARGET:
        form = "in"
    targets, evidence = candidate_targets(toks, r, symbols)
    if not targets:
        return Intent(relation, None, f"{form} '{toks[r].text}' without a target", (), (), 0)
    t = position_of(toks, targets[0])
    words = {w.low for w in toks}
    residual = _residual(toks, r, t, targets)
    spec = RELATIONS[relation]
    direction, rule = _direction(toks, r, t, relation, form)
    if direction is None:
        return Intent(relation, None, rule, targets, evidence, residual)
    if words & INCOMING:
        direction, rule = "incoming", rule + "; 'incoming' said outright"
    elif words & OUTGOING:
        direction, rule = "outgoing", rule + "; 'outgoing' said outright"
    if direction == "outgoing" and not spec.outgoing:
        return Intent(relation, None, f"'{toks[r].text}' about what {targets[0]} does: behaviour, not the graph",
                      targets, evidence, residual)
    statement = words & STATEMENT - ({"when"} if "when X runs" in rule else set())
    # "... will break X callers": an agent noun beside its target says enough on its own.
    if form in ("in", "out") and not statement:
        residual = 0
    if statement:
        return Intent(relation, None, f"{rule}, but '{sorted(statement)[0]}' makes it a behaviour question",
                      targets, evidence, residual)
    if residual > MAX_RESIDUAL_WORDS:
        return Intent(relation, None, f"{rule}, but {residual} other content words: a description, not a "
                      "graph question", targets, evidence, residual)
    return Intent(relation, direction, rule, targets, evidence, residual)


def _direction(toks: list[Token], r: int, t: int, relation: str, form: str) -> tuple[str | None, str]:
    word = toks[r].text
    before = t < r
    prep_after = toks[r + 1].low if r + 1 < len(toks) else None
    if form in ("in", "out"):
        # "callers of X", "X callers": the noun names the target's neighbours only when it
        # stands by the target ("a usage line", "subclasses have to override ..." do not).
        if not stands_near(toks, r, t):
            return None, f"'{word}' far from the target"
        return ("incoming" if form == "in" else "outgoing"), f"'{word}' -> {'incoming' if form == 'in' else 'outgoing'}"
    if form == "adj":
        # "X is dependent on what" (the target depends) / "what is dependent on X".
        return ("outgoing", f"'X ... {word}' -> outgoing") if before else ("incoming", f"'{word} on X' -> incoming")
    if form == "noun":
        if before:
            return "outgoing", f"'X {word}' -> outgoing"
        if prep_after in TO_TARGET and not (relation == "imports" and prep_after == "of"):
            return "incoming", f"'{word} {prep_after} X' -> incoming"
        return "outgoing", f"'{word} {prep_after} X' -> outgoing"
    if form == "part":
        if before:
            k = t - 1 - (t > 1 and toks[t - 1].low == "the")
            if k >= 0 and toks[k].low in ("inside", "within", "in", "by"):
                # "inside X, what gets called": the target is where the calls are made.
                if _closes(toks[r + 1:]):
                    return "outgoing", f"'{toks[k].low} X, ... {word}' -> outgoing"
            if not _is_frame(_subject(toks[:t])) or not _closes(toks[r + 1:]):
                return None, f"'X ... {word}' in a statement"
            if relation == "inherits" and prep_after == "from":
                return "outgoing", f"'X {word} from' -> outgoing (the target's bases)"
            return "incoming", f"passive 'X ... {word}' -> incoming"
        between = [x.low for x in toks[r + 1:t]]
        if not (_is_frame(toks[:r]) or _noun_subject(toks[:r])):
            return None, f"'... {word} ... X' in a statement"
        if between == ["when"] and _closes_run(toks[t + 1:]) and _is_frame(toks[:r]):
            return "outgoing", f"'{word} when X runs' -> outgoing"
        if not between:
            return None, f"'{word} X' names the target (a look-up)"
        if relation == "inherits" and "from" in between:
            return "incoming", f"'{word} from X' -> incoming (derived from the target)"
        if relation == "uses" and word.lower() == "affected":
            return "incoming", f"'{word} by X' -> incoming"
        if set(between) & FROM_ACTOR:
            return "outgoing", f"'{word} {' '.join(between)} X' -> outgoing"
        return None, f"'{word} {' '.join(between)} X'"
    # verb and gerund: the target after the word is acted on; before it, the target acts.
    if before:
        if not _is_frame(_subject(toks[:t])) or not _closes(toks[r + 1:]):
            return None, f"'X {word} ...' in a statement"
        return "outgoing", f"'X ... {word}' -> outgoing"
    # "Invokes the command with ...", "Calling the hook ...": a docstring's opening verb,
    # not a question; a question names who acts ("who calls X", "code using X").
    if not toks[:r] or not _is_frame(_subject(toks[:r])):
        return None, f"'{word} X' in a statement (subject: {' '.join(x.text for x in toks[:r]) or '-'})"
    return "incoming", f"'... {word} X' -> incoming"


def _subject(words: list[Token]) -> list[Token]:
    """The words of the question proper: from its last wh-word or request ("I keep seeing X
    and want to know which functions ..." -> "which functions ...")."""
    k = max((i for i, w in enumerate(words) if w.low in WH or w.low in ("need", "want")), default=0)
    return words[k:]


def _noun_subject(words: list[Token]) -> bool:
    """A bare noun phrase of one or two words before a participle ("names referenced by X")."""
    ws = [w for w in words if w.low not in ("the", "a", "an", "all")]
    return 0 < len(ws) <= 2 and not any(w.code or w.low in NOT_FRAME or w.relation for w in ws)


def _closes_run(words: list[Token]) -> bool:
    """Whether the words after the target say only that it runs ("when X runs?")."""
    return bool(words) and all(w.low in RUNS or w.low in CLOSERS for w in words) and words[0].low in RUNS


def _closes(words: list[Token]) -> bool:
    """Whether the words after a verb close a question ("X calls what?", "X is used
    internally", "X is referenced in jinja2") rather than go on to say what it acts on
    ("the command invokes the callback")."""
    i = 0
    while i < len(words):
        w = words[i].low
        if w in CLOSING_PREPS and i + 1 < len(words):
            # A scope or manner phrase: "in jinja2", "in the click package", "under the hood".
            j = i + 1 + (words[i + 1].low == "the")
            if j < len(words):
                i = j + 1 + (j + 1 < len(words) and words[j + 1].low in SCOPE_NOUNS)
                continue
        if w in WH:
            # "X overrides which base method?", "X is calling which functions?"
            return len(words) - i <= 4
        if w == "that" and (i > 0 or (i + 1 < len(words) and words[i + 1].low in ("i", "we", "you", "they"))):
            return True     # a relative clause about the answer ("... call that I'd need to bring along")
        if w not in CLOSERS and w not in PRONOUNS and not (w.endswith("ly") and len(w) > 4):
            return False
        i += 1
    return True


def _is_frame(words: list[Token]) -> bool:
    """Whether the words before a relation verb frame a question ("which functions", "what
    does", "find all") rather than make a statement ("this invokes")."""
    ws = [w for w in words if w.low not in ("the", "a", "an")]
    if not ws:
        return True
    if any(w.low in NOT_FRAME for w in ws) or len(ws) > 6:
        return False
    if ws[0].low in WH or ws[0].low in REQUESTS:
        # "which template filters call X": up to three words of any kind after a wh-word.
        return sum(1 for w in ws if w.low not in FRAME and not w.code) <= 3
    return all(w.low in FRAME or w.relation is not None for w in ws)


def _residual(toks: list[Token], r: int, t: int, targets: tuple[str, ...]) -> int:
    """Content words of the question proper: from its last wh-word or request before the
    relation and target, up to a subordinate clause ("so we can ...", "before ...")."""
    names = set(targets)
    lo = min(r, t)
    start = max((i for i in range(lo) if toks[i].low in WH or toks[i].low in ("need", "want")), default=0)
    end = next((i for i in range(max(r, t) + 1, len(toks)) if toks[i].low in SUBORDINATE), len(toks))
    return sum(1 for i in range(start, end) if i not in (r, t) and toks[i].text not in names and not toks[i].code
               and toks[i].low not in SKIP and toks[i].relation is None)
