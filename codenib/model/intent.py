"""Structural intent of a question: which code relation it asks about (calls, imports,
inheritance, ...), in which direction, and which symbols it is about.

The relation and its direction come from the sentence's shape, not from a list of phrases:
a relation word's form (verb, participle, gerund, agent noun) and where the target stands
relative to it ("who calls X" / "what does X call", "callers of X" / "X callees", "where is
X used" / "helpers used by X"). Targets are grounded in the index's symbol table when one is
given: a plain lowercase word that names definitions is a candidate, weighted by how
specific it is (one definition or hundreds) and by how close it stands to the relation.

Deterministic and free of I/O: the symbol table is loaded with the index and passed in.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from codenib.tokens import ENGLISH_STOPWORDS


class SymbolTable(Protocol):
    """What intent parsing asks of an index's symbols (`codenib.index.symbols.SymbolIndex`)."""

    def definitions(self, symbol: str) -> tuple[str | None, int]:
        """(match level, number of definitions) a written symbol resolves to; (None, 0) if none."""
        ...


@dataclass(frozen=True, slots=True)
class Relation:
    """A code relation a question can ask about, and the graph edges that answer it."""

    name: str
    edge_types: tuple[str, ...]
    #: Whether an outgoing question ("what does X <verb>") is structural at all: "what does
    #: X return" asks about behaviour, not about a graph neighbourhood.
    outgoing: bool = True


#: Relations, with the edges a walk follows for each (calls first where both apply: the
#: walk ranks neighbours by edge weight, and calls are the strongest dependency).
RELATIONS: dict[str, Relation] = {r.name: r for r in (
    Relation("calls", ("calls",)),
    Relation("uses", ("calls", "references")),
    Relation("depends", ("calls", "references", "imports")),
    Relation("references", ("references", "calls")),
    Relation("imports", ("imports",)),
    Relation("inherits", ("inherits",)),
    Relation("overrides", ("inherits",)),
    Relation("raises", ("calls", "references")),
    Relation("instantiates", ("calls",)),
    Relation("returns", ("references",), outgoing=False),
)}

#: Relation words by form. verb: "X calls", "who calls X"; part: "called by X", "X is
#: called"; ger: "functions calling X"; in/out: agent nouns with a fixed direction
#: ("callers", "callees"); noun: action nouns whose preposition decides ("calls to X").
_LEXICON: dict[str, tuple[str, str]] = {}


def _words(relation: str, form: str, words: str) -> None:
    for w in words.split():
        _LEXICON.setdefault(w, (relation, form))


_words("calls", "verb", "call calls invoke invokes reach reaches delegate delegates")
_words("calls", "part", "called invoked reached delegated")
_words("calls", "ger", "calling invoking reaching delegating")
_words("calls", "in", "callers caller invokers invoker callsites callsite upstream")
_words("calls", "out", "callees callee downstream")
_words("calls", "noun", "invocations invocation")
_words("uses", "verb", "use uses utilize utilizes utilise utilises")
_words("uses", "part", "used utilized utilised")
_words("uses", "ger", "using utilizing utilising")
_words("uses", "in", "users usages usage consumers impact affected")
_words("depends", "verb", "depend depends rely relies")
_words("depends", "part", "depended")
_words("depends", "ger", "depending relying")
_words("depends", "in", "dependents dependants")
_words("depends", "adj", "dependent reliant")
_words("depends", "out", "dependencies dependency deps")
_words("references", "verb", "reference references refer refers mention mentions")
_words("references", "part", "referenced referred mentioned")
_words("references", "ger", "referencing referring mentioning")
_words("references", "in", "referrers refs")
_words("imports", "verb", "import imports")
_words("imports", "part", "imported")
_words("imports", "ger", "importing")
_words("imports", "in", "importers importer")
_words("inherits", "verb", "inherit inherits extend extends derive derives subclass")
_words("inherits", "part", "inherited extended derived subclassed")
_words("inherits", "ger", "inheriting extending deriving subclassing")
_words("inherits", "in", "subclasses descendants descendents inheritors heirs children")
_words("inherits", "out", "superclasses superclass bases ancestors parents mro")
_words("overrides", "verb", "override overrides reimplement reimplements")
_words("overrides", "part", "overridden overriden reimplemented")
_words("overrides", "ger", "overriding reimplementing")
_words("overrides", "in", "implementations overriders")
_words("raises", "verb", "raise raises throw throws")
_words("raises", "part", "raised thrown")
_words("raises", "ger", "raising throwing")
_words("instantiates", "verb", "instantiate instantiates construct constructs create creates")
_words("instantiates", "part", "instantiated constructed created")
_words("instantiates", "ger", "instantiating constructing creating")
_words("instantiates", "in", "instantiations instances")
_words("returns", "verb", "return returns")
_words("returns", "part", "returned")
_words("returns", "ger", "returning")

#: Two-word relation phrases, read as one token.
_PHRASES = {("call", "sites"): "callsites", ("call", "site"): "callsite", ("base", "classes"): "bases",
            ("base", "class"): "bases", ("parent", "classes"): "parents", ("parent", "class"): "parents",
            ("child", "classes"): "children", ("child", "class"): "children", ("super", "classes"): "superclasses",
            ("super", "class"): "superclass", ("blast", "radius"): "impact", ("sub", "classes"): "subclasses",
            ("call", "edges"): "calls", ("call", "graph"): "calls", ("call", "chain"): "calls",
            ("call", "tree"): "calls", ("call", "hierarchy"): "calls", ("class", "hierarchy"): "subclasses"}
#: "calls", "uses", "references", "imports", "mentions", "overrides" are nouns too: "calls
#: to X", "uses of X", "overrides of X". Read as nouns when a preposition follows.
_VERB_OR_NOUN = {"calls": "calls", "call": "calls", "uses": "uses", "use": "uses", "references": "references",
                 "reference": "references", "imports": "imports", "import": "imports", "mentions": "references",
                 "overrides": "overrides", "override": "overrides", "subclass": "inherits"}
#: Prepositions after an action noun that point at what is acted on (incoming) or at the actor (outgoing).
_TO_TARGET = frozenset("to of into on against at for".split())
_FROM_ACTOR = frozenset("from in inside within by made out issued performed".split())
#: Words that say the direction outright.
_INCOMING = frozenset("incoming inbound reverse".split())
_OUTGOING = frozenset("outgoing outbound".split())

#: Words that frame a question ("which functions", "find all", "show every"): a relation
#: verb whose subject is made of these asks about the graph; any other subject ("this
#: invokes the command") makes the sentence a statement about behaviour.
_FRAME = frozenset(
    "who whom whose what which where find list show get give locate search enumerate count name identify print "
    "display all any every each other the a an some that are is was were be been do does did can could "
    "functions function methods method code classes class modules module files file places place sites site "
    "everything anything something things thing symbols symbol callables callable routines routine helpers "
    "helper definitions definition tests test me us i there lines line spots spot parts part "
    "in of from by inside within ones one anyone anybody someone somebody need want looking look "
    "im know see trying objects object exceptions exception errors error types type end ends up bits bit "
    "pieces piece has have had set paths path stuff".split())
_WH = frozenset("who whom whose what which where whos wheres whats".split())
#: Words that open a behaviour question or a subordinate clause, or a statement's subject:
#: never a graph question frame.
_NOT_FRAME = frozenset("how why when if because while unless whether should would this it its they "
                       "he she".split())
#: Words that may close a graph question after its verb ("what does X call", "X is called
#: where?", "what does X depend on"): anything else makes the sentence a statement.
_CLOSERS = _FRAME | _TO_TARGET | _FROM_ACTOR | frozenset("up out end ends directly indirectly transitively at all "
                                                          "else ever anywhere somewhere everywhere".split())
#: Prepositions that open a phrase closing a question ("in jinja2", "under the hood", "at runtime").
_CLOSING_PREPS = frozenset("in inside within under behind at on during outside besides".split())
#: "what gets called when X runs": the clause names the target as the one acting.
_RUNS = frozenset("run runs executes execute executed is called invoked starts".split())
#: Words that make a sentence a behaviour question or a statement, whatever else it holds.
_STATEMENT = frozenset("how why when if because while unless".split())
#: Words that may stand between a relation word and its target ("callers of the method X",
#: "impact of changing X").
_NEAR = _TO_TARGET | _FROM_ACTOR | frozenset(
    "and or the a an is are does do did was method function class module made being gets get changing "
    "change changes modifying editing removing renaming list lists set sets".split())
#: Nouns that close a scope phrase ("in the click package").
_SCOPE_NOUNS = frozenset("package module library codebase repo repository project code source".split())
#: Words that open a subordinate clause after the question ("... so we can estimate it").
_SUBORDINATE = frozenset("so before after since that".split())
#: Pronouns that stand for a topic named first ("X: anyone calling this?").
_PRONOUNS = frozenset("it this its".split())
#: Conjunctions that join several targets ("who calls run or echo").
_AND = frozenset("and or".split())
#: Words that frame a look-up ("where is X defined") rather than describe behaviour.
LOOKUP_WORDS = frozenset(
    "where is are defined definition definitions of go goto to show me the find method function class def "
    "declaration declared declare locate open jump source code a an symbol implementation implemented functions "
    "methods classes named called does do lives live located defines define".split())
_SKIP = _FRAME | LOOKUP_WORDS | ENGLISH_STOPWORDS | _INCOMING | _OUTGOING | frozenset(
    "many much often times made happen happens anywhere somewhere everywhere else directly indirectly "
    "transitively exactly also still just only really actually currently".split())

#: Words a misspelt question word is corrected to, and words never corrected.
_TYPO_TARGETS = tuple(sorted(w for w in set(_LEXICON) | _WH if len(w) >= 5 or w in _WH))
_VOCABULARY = frozenset(_LEXICON) | _FRAME | _WH | LOOKUP_WORDS

#: Residual content words (not frame, relation, target or function words) above which a
#: sentence reads as a description of behaviour rather than a graph question.
MAX_RESIDUAL_WORDS = 2
#: Targets at most (ambiguous mentions become several seeds, not a guess).
MAX_TARGETS = 3

#: Where a question splits into clauses: sentence ends, dashes, colons, commas, brackets.
_CLAUSE = re.compile(r"(?<=[?!.;])\s+|\s+[-\u2013\u2014]+\s+|:\s+|,\s+|\s+[(\[]|(?<![(\[])[)\]](?=\s|$)|\s+->\s+")
#: Verbs that open a request ("list the functions that call X").
_REQUESTS = frozenset("find finding list listing show get give locate search enumerate count name identify print "
                      "display collect gather document check double trace audit".split())
#: Words that make a clause a request of its own ("Need the functions X calls.").
_ASKING = _REQUESTS | frozenset("need want".split())
#: Words that open a yes/no question ("is it invoked from anywhere else").
_AUX = frozenset("is are was were does do did has have can could".split())
_TOKEN = re.compile(r"`([^`\n]{1,200})`|((?:[\w.-]+/)+[\w.-]+|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(\))?(?:'s)?)")
_CODE = re.compile(r"[\w.]*(?:_\w|\w\.\w|[a-z][A-Z])[\w.]*|_\w*|\w+\.py|[A-Z][A-Z0-9_]{3,}")


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


def parse_intent(text: str, symbols: SymbolTable | None = None) -> Intent:
    """Relation, direction and targets of a (courtesy-stripped) question.

    The whole text is read first; when it does not read as a graph question, each clause is
    read on its own ("BUG-331: getchar hangs. Need the functions getchar() calls."), with
    a pronoun standing for the code a clause before it named ("`format_filename()` - where
    does it get called?").
    """
    if symbols is not None:
        symbols = _Memo(symbols)
    whole = _intent_of(_tokens(text, symbols), symbols)
    clauses = [c for c in _CLAUSE.split(text) if c and c.strip()]
    if whole.structural or len(clauses) < 2:
        return whole
    topic: _Tok | None = None
    for clause in clauses:
        clause = strip_courtesy(clause)
        toks = _tokens(clause, symbols)
        if not toks:
            continue
        if topic is not None and not any(x.code for x in toks):
            toks = [topic if x.low in _PRONOUNS else x for x in toks]
        intent = _intent_of(toks, symbols)
        # A clause counts when it asks ("...?", a wh-word, "find", "need"), not when it is
        # a fragment of a statement ("... referenced by extends, includes and imports").
        if intent.structural and (clause.rstrip().endswith("?") or toks[0].low in _AUX
                                  or any(x.low in _WH | _ASKING for x in toks)):
            return intent
        topic = next((x for x in reversed(toks) if x.code), topic)
    return whole


def _intent_of(toks: list[_Tok], symbols: SymbolTable | None) -> Intent:
    if not toks:
        return Intent()
    toks = _resolve_pronoun(toks)
    readings = [_reading(toks, r, symbols) for r, t in enumerate(toks) if t.relation is not None and not t.code]
    if not readings:
        targets, evidence = _targets(toks, None, symbols)
        return Intent(targets=targets, evidence=evidence)
    # The reading whose target the table knows best wins; then (max keeps the first) the
    # earlier relation word.
    return max(readings, key=lambda r: (r.structural, r.evidence[0].score if r.evidence else 0.0))


def strip_courtesy(text: str) -> str:
    """The question without greetings, requests and thanks around it ("hey, can you tell me
    ... ? thanks"), and without the punctuation at its ends. Idempotent."""
    prev = None
    s = text.strip()
    while s != prev:
        prev = s
        s = _LEAD.sub("", s)
        s = _TRAIL.sub("", s)
        s = s.strip(_EDGE_PUNCT)
    return s


# --- helpers ---------------------------------------------------------------------------------

_EDGE_PUNCT = " \t\r\n?!.,;:"
_LEAD = re.compile(
    r"^(?:(?:hey|hi|hello|yo|ok|okay|so|um|uh|dear\s+\w+|quick\s+question|question|excuse\s+me)\b[\s,:;!.-]*"
    r"|(?:sorry(?:\s+if\s+(?:this\s+is\s+|it'?s\s+)?(?:obvious|a\s+dumb\s+question|a\s+silly\s+question|silly))?"
    r"(?:\s*,?\s*but)?\b[\s,:;!.-]*)"
    r"|(?:please|pls|plz|kindly)\b[\s,:;!.-]*"
    r"|(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?:tell|show|help)\s+me\b[\s,:;]*(?:find\b\s*)?)"
    r"|(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?=(?:find|list|show|locate|get)\b))"
    r"|(?:i\s*(?:want|need|would\s+like|'?d\s+like)\s+to\s+(?:know|see|find|understand)\b[\s,:;]*)"
    r"|(?:(?:tell|give)\s+me\b[\s,:;]*)"
    r"|(?:do\s+you\s+know\b[\s,:;]*)|(?:i\s+wonder\b[\s,:;]*)|(?:(?:would|do)\s+you\s+mind\s+))",
    re.IGNORECASE)
_TRAIL = re.compile(
    r"(?:[\s,:;!.?-]*\b(?:thanks(?:\s+a\s+lot|\s+in\s+advance)?|thank\s+you(?:\s+so\s+much)?|thx|ty|cheers|please|pls|plz"
    r"|if\s+you\s+can|if\s+possible|by\s+any\s+chance|if\s+any(?:thing|one)?|at\s+all)|[\s,:;!.?-]*(?:[:;]\)|🙏|🙂))[\s,:;!.?-]*$",
    re.IGNORECASE)


class _Memo:
    """A symbol table that answers each word once per question (readings ask repeatedly)."""

    def __init__(self, table: SymbolTable):
        self.table = table
        self.seen: dict[str, tuple[str | None, int]] = {}

    def definitions(self, symbol: str) -> tuple[str | None, int]:
        if symbol not in self.seen:
            self.seen[symbol] = self.table.definitions(symbol)
        return self.seen[symbol]


@dataclass(frozen=True, slots=True)
class _Tok:
    text: str                          # as written (backticks, `()` and `'s` removed)
    low: str
    code: bool                         # looks like code (backticked, dotted, snake_case, ...)
    relation: tuple[str, str] | None   # (relation, form) when it is a relation word


def _tokens(text: str, symbols: SymbolTable | None = None) -> list[_Tok]:
    raw: list[tuple[str, bool]] = []
    for m in _TOKEN.finditer(text):
        if m.group(1) is not None:
            inner = m.group(1).strip().removesuffix("()")
            if re.fullmatch(r"[A-Za-z_][\w.]*", inner):
                raw.append((inner, True))
            continue
        word = m.group(2)
        code = bool(word.endswith("()") or _CODE.fullmatch(word.removesuffix("()")))
        word = word.removesuffix("()")
        if word.endswith("'s"):
            word = word[:-2]
        raw.append((word, code))
    # Two-word relation phrases ("call sites", "base classes") become one token.
    merged: list[tuple[str, bool]] = []
    i = 0
    while i < len(raw):
        pair = (raw[i][0].lower(), raw[i + 1][0].lower()) if i + 1 < len(raw) else None
        if pair in _PHRASES and not raw[i][1] and not raw[i + 1][1]:
            merged.append((_PHRASES[pair], False))
            i += 2
            continue
        merged.append(raw[i])
        i += 1
    out = []
    for j, (word, code) in enumerate(merged):
        low = word.lower()
        if not code and len(low) >= 4 and low not in _VOCABULARY and low not in ENGLISH_STOPWORDS and \
                (symbols is None or not symbols.definitions(word)[1]):
            low = _typo_of(low)
        # A capitalised word inside the sentence is a class name as people write it.
        code = code or (j > 0 and word[:1].isupper() and word[1:].islower() and low not in _LEXICON
                        and low not in _SKIP)
        rel = None if code else _LEXICON.get(low)
        out.append(_Tok(word, low, code, rel))
    return out


def _resolve_pronoun(toks: list[_Tok]) -> list[_Tok]:
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
    near = [v for v in _TYPO_TARGETS if abs(len(v) - len(word)) <= 1 and _one_inner_edit(word, v)
            and (len(word) >= 5 or v in _WH)]
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


def _reading(toks: list[_Tok], r: int, symbols: SymbolTable | None) -> Intent:
    """The intent when toks[r] is the relation word (no direction when the sentence does not
    read as a graph question that way)."""
    targets, _ = _targets(toks, r, symbols)
    if targets and r > 0 and _position(toks, targets[0]) == 0:
        # "echo: who calls it?": a topic the table knows first, then a question about it.
        # Read the question with the topic in the pronoun's place (the first pronoun from
        # the relation word on, else any after the topic).
        pronouns = [i for i, x in enumerate(toks) if i > 1 and x.low in _PRONOUNS]
        pron = next((i for i in pronouns if i >= r), pronouns[0] if pronouns else None)
        if pron is not None:
            toks = toks[1:pron] + [toks[0]] + toks[pron + 1:]
            r -= 1
    relation, form = toks[r].relation
    low = toks[r].low
    nxt = toks[r + 1].low if r + 1 < len(toks) else None
    prev = toks[r - 1].low if r > 0 else None
    nxt2 = toks[r + 2].low if r + 2 < len(toks) else None
    if low in _VERB_OR_NOUN and low not in ("import",) and (nxt in _TO_TARGET | _FROM_ACTOR | _INCOMING | _OUTGOING
                                                            or prev in _INCOMING | _OUTGOING
                                                            or (nxt in ("are", "were", "is") and nxt2 in _FROM_ACTOR)):
        relation, form = _VERB_OR_NOUN[low], "noun"
    if low == "subclass" and nxt in _TO_TARGET:
        form = "in"
    targets, evidence = _targets(toks, r, symbols)
    if not targets:
        return Intent(relation, None, f"{form} '{toks[r].text}' without a target", (), (), 0)
    t = _position(toks, targets[0])
    words = {w.low for w in toks}
    residual = _residual(toks, r, t, targets)
    spec = RELATIONS[relation]
    direction, rule = _direction(toks, r, t, relation, form)
    if direction is None:
        return Intent(relation, None, rule, targets, evidence, residual)
    if words & _INCOMING:
        direction, rule = "incoming", rule + "; 'incoming' said outright"
    elif words & _OUTGOING:
        direction, rule = "outgoing", rule + "; 'outgoing' said outright"
    if direction == "outgoing" and not spec.outgoing:
        return Intent(relation, None, f"'{toks[r].text}' about what {targets[0]} does: behaviour, not the graph",
                      targets, evidence, residual)
    statement = words & _STATEMENT - ({"when"} if "when X runs" in rule else set())
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


def _direction(toks: list[_Tok], r: int, t: int, relation: str, form: str) -> tuple[str | None, str]:
    word = toks[r].text
    before = t < r
    prep_after = toks[r + 1].low if r + 1 < len(toks) else None
    if form in ("in", "out"):
        # "callers of X", "X callers": the noun names the target's neighbours only when it
        # stands by the target ("a usage line", "subclasses have to override ..." do not).
        if not _near(toks, r, t):
            return None, f"'{word}' far from the target"
        return ("incoming" if form == "in" else "outgoing"), f"'{word}' -> {'incoming' if form == 'in' else 'outgoing'}"
    if form == "adj":
        # "X is dependent on what" (the target depends) / "what is dependent on X".
        return ("outgoing", f"'X ... {word}' -> outgoing") if before else ("incoming", f"'{word} on X' -> incoming")
    if form == "noun":
        if before:
            return "outgoing", f"'X {word}' -> outgoing"
        if prep_after in _TO_TARGET and not (relation == "imports" and prep_after == "of"):
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
        if set(between) & _FROM_ACTOR:
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


def _subject(words: list[_Tok]) -> list[_Tok]:
    """The words of the question proper: from its last wh-word or request ("I keep seeing X
    and want to know which functions ..." -> "which functions ...")."""
    k = max((i for i, w in enumerate(words) if w.low in _WH or w.low in ("need", "want")), default=0)
    return words[k:]


def _noun_subject(words: list[_Tok]) -> bool:
    """A bare noun phrase of one or two words before a participle ("names referenced by X")."""
    ws = [w for w in words if w.low not in ("the", "a", "an", "all")]
    return 0 < len(ws) <= 2 and not any(w.code or w.low in _NOT_FRAME or w.relation for w in ws)


def _closes_run(words: list[_Tok]) -> bool:
    """Whether the words after the target say only that it runs ("when X runs?")."""
    return bool(words) and all(w.low in _RUNS or w.low in _CLOSERS for w in words) and words[0].low in _RUNS


def _closes(words: list[_Tok]) -> bool:
    """Whether the words after a verb close a question ("X calls what?", "X is used
    internally", "X is referenced in jinja2") rather than go on to say what it acts on
    ("the command invokes the callback")."""
    i = 0
    while i < len(words):
        w = words[i].low
        if w in _CLOSING_PREPS and i + 1 < len(words):
            # A scope or manner phrase: "in jinja2", "in the click package", "under the hood".
            j = i + 1 + (words[i + 1].low == "the")
            if j < len(words):
                i = j + 1 + (j + 1 < len(words) and words[j + 1].low in _SCOPE_NOUNS)
                continue
        if w in _WH:
            # "X overrides which base method?", "X is calling which functions?"
            return len(words) - i <= 4
        if w == "that" and (i > 0 or (i + 1 < len(words) and words[i + 1].low in ("i", "we", "you", "they"))):
            return True     # a relative clause about the answer ("... call that I'd need to bring along")
        if w not in _CLOSERS and w not in _PRONOUNS and not (w.endswith("ly") and len(w) > 4):
            return False
        i += 1
    return True


def _is_frame(words: list[_Tok]) -> bool:
    """Whether the words before a relation verb frame a question ("which functions", "what
    does", "find all") rather than make a statement ("this invokes")."""
    ws = [w for w in words if w.low not in ("the", "a", "an")]
    if not ws:
        return True
    if any(w.low in _NOT_FRAME for w in ws) or len(ws) > 6:
        return False
    if ws[0].low in _WH or ws[0].low in _REQUESTS:
        # "which template filters call X": up to three words of any kind after a wh-word.
        return sum(1 for w in ws if w.low not in _FRAME and not w.code) <= 3
    return all(w.low in _FRAME or w.relation is not None for w in ws)


def _targets(toks: list[_Tok], r: int | None, symbols: SymbolTable | None
             ) -> tuple[tuple[str, ...], tuple[TargetEvidence, ...]]:
    """Candidate targets, best first, with the evidence for each."""
    evidence: list[tuple[float, int, TargetEvidence]] = []
    plain_left = [i for i, x in enumerate(toks) if i != r and not x.code and x.low not in _SKIP
                  and (x.relation is None or symbols is not None)]
    for i, x in enumerate(toks):
        if i == r:
            continue
        near = r is not None and _near(toks, r, i)
        framing = not x.code and x.low in _SKIP
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
        while j + 2 < len(toks) and toks[j + 1].low in _AND and j + 2 in known:
            j += 2
            chosen.append(j)
        j = i
        while j - 2 >= 0 and toks[j - 1].low in _AND and j - 2 in known:
            j -= 2
            chosen.append(j)
    words = [toks[i].text for i in chosen]
    return tuple(dict.fromkeys(words))[:MAX_TARGETS], tuple(e for _, _, e in evidence)


def _near(toks: list[_Tok], r: int, i: int) -> bool:
    """Whether token i stands next to the relation word, prepositions and articles aside."""
    lo, hi = sorted((r, i))
    between = [x.low for x in toks[lo + 1:hi]]
    return all(w in _NEAR for w in between) and len(between) <= 3


def _residual(toks: list[_Tok], r: int, t: int, targets: tuple[str, ...]) -> int:
    """Content words of the question proper: from its last wh-word or request before the
    relation and target, up to a subordinate clause ("so we can ...", "before ...")."""
    names = set(targets)
    lo = min(r, t)
    start = max((i for i in range(lo) if toks[i].low in _WH or toks[i].low in ("need", "want")), default=0)
    end = next((i for i in range(max(r, t) + 1, len(toks)) if toks[i].low in _SUBORDINATE), len(toks))
    return sum(1 for i in range(start, end) if i not in (r, t) and toks[i].text not in names and not toks[i].code
               and toks[i].low not in _SKIP and toks[i].relation is None)


def _position(toks: list[_Tok], word: str) -> int:
    return next(i for i, x in enumerate(toks) if x.text == word)

