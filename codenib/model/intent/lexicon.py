"""The words intent parsing reads a question by: the code relations and the forms of their
words, the words that frame a question or make it a statement, and the patterns that cut a
question into clauses and tokens."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codenib.core.tokens import ENGLISH_STOPWORDS


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
LEXICON: dict[str, tuple[str, str]] = {}


def _words(relation: str, form: str, words: str) -> None:
    for w in words.split():
        LEXICON.setdefault(w, (relation, form))


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
PHRASES = {("call", "sites"): "callsites", ("call", "site"): "callsite", ("base", "classes"): "bases",
            ("base", "class"): "bases", ("parent", "classes"): "parents", ("parent", "class"): "parents",
            ("child", "classes"): "children", ("child", "class"): "children", ("super", "classes"): "superclasses",
            ("super", "class"): "superclass", ("blast", "radius"): "impact", ("sub", "classes"): "subclasses",
            ("call", "edges"): "calls", ("call", "graph"): "calls", ("call", "chain"): "calls",
            ("call", "tree"): "calls", ("call", "hierarchy"): "calls", ("class", "hierarchy"): "subclasses"}
#: "calls", "uses", "references", "imports", "mentions", "overrides" are nouns too: "calls
#: to X", "uses of X", "overrides of X". Read as nouns when a preposition follows.
VERB_OR_NOUN = {"calls": "calls", "call": "calls", "uses": "uses", "use": "uses", "references": "references",
                 "reference": "references", "imports": "imports", "import": "imports", "mentions": "references",
                 "overrides": "overrides", "override": "overrides", "subclass": "inherits"}
#: Prepositions after an action noun that point at what is acted on (incoming) or at the actor (outgoing).
TO_TARGET = frozenset("to of into on against at for".split())
FROM_ACTOR = frozenset("from in inside within by made out issued performed".split())
#: Words that say the direction outright.
INCOMING = frozenset("incoming inbound reverse".split())
OUTGOING = frozenset("outgoing outbound".split())

#: Words that frame a question ("which functions", "find all", "show every"): a relation
#: verb whose subject is made of these asks about the graph; any other subject ("this
#: invokes the command") makes the sentence a statement about behaviour.
FRAME = frozenset(
    "who whom whose what which where find list show get give locate search enumerate count name identify print "
    "display all any every each other the a an some that are is was were be been do does did can could "
    "functions function methods method code classes class modules module files file places place sites site "
    "everything anything something things thing symbols symbol callables callable routines routine helpers "
    "helper definitions definition tests test me us i there lines line spots spot parts part "
    "in of from by inside within ones one anyone anybody someone somebody need want looking look "
    "im know see trying objects object exceptions exception errors error types type end ends up bits bit "
    "pieces piece has have had set paths path stuff".split())
WH = frozenset("who whom whose what which where whos wheres whats".split())
#: Words that open a behaviour question or a subordinate clause, or a statement's subject:
#: never a graph question frame.
NOT_FRAME = frozenset("how why when if because while unless whether should would this it its they "
                       "he she".split())
#: Words that may close a graph question after its verb ("what does X call", "X is called
#: where?", "what does X depend on"): anything else makes the sentence a statement.
CLOSERS = FRAME | TO_TARGET | FROM_ACTOR | frozenset("up out end ends directly indirectly transitively at all "
                                                          "else ever anywhere somewhere everywhere".split())
#: Prepositions that open a phrase closing a question ("in jinja2", "under the hood", "at runtime").
CLOSING_PREPS = frozenset("in inside within under behind at on during outside besides".split())
#: "what gets called when X runs": the clause names the target as the one acting.
RUNS = frozenset("run runs executes execute executed is called invoked starts".split())
#: Words that make a sentence a behaviour question or a statement, whatever else it holds.
STATEMENT = frozenset("how why when if because while unless".split())
#: Words that may stand between a relation word and its target ("callers of the method X",
#: "impact of changing X").
NEAR = TO_TARGET | FROM_ACTOR | frozenset(
    "and or the a an is are does do did was method function class module made being gets get changing "
    "change changes modifying editing removing renaming list lists set sets".split())
#: Nouns that close a scope phrase ("in the click package").
SCOPE_NOUNS = frozenset("package module library codebase repo repository project code source".split())
#: Words that open a subordinate clause after the question ("... so we can estimate it").
SUBORDINATE = frozenset("so before after since that".split())
#: Pronouns that stand for a topic named first ("X: anyone calling this?").
PRONOUNS = frozenset("it this its".split())
#: Conjunctions that join several targets ("who calls run or echo").
AND = frozenset("and or".split())
#: Words that frame a look-up ("where is X defined") rather than describe behaviour.
LOOKUP_WORDS = frozenset(
    "where is are defined definition definitions of go goto to show me the find method function class def "
    "declaration declared declare locate open jump source code a an symbol implementation implemented functions "
    "methods classes named called does do lives live located defines define".split())
SKIP = FRAME | LOOKUP_WORDS | ENGLISH_STOPWORDS | INCOMING | OUTGOING | frozenset(
    "many much often times made happen happens anywhere somewhere everywhere else directly indirectly "
    "transitively exactly also still just only really actually currently".split())

#: Words a misspelt question word is corrected to, and words never corrected.
TYPO_TARGETS = tuple(sorted(w for w in set(LEXICON) | WH if len(w) >= 5 or w in WH))
VOCABULARY = frozenset(LEXICON) | FRAME | WH | LOOKUP_WORDS

#: Residual content words (not frame, relation, target or function words) above which a
#: sentence reads as a description of behaviour rather than a graph question.
MAX_RESIDUAL_WORDS = 2
#: Targets at most (ambiguous mentions become several seeds, not a guess).
MAX_TARGETS = 3

#: Where a question splits into clauses: sentence ends, dashes, colons, commas, brackets. A
#: split that starts with white space starts where its run does (`(?<!\s)`): tried from every
#: place inside a long run, `\s+` would read to its end and back, quadratic (77 s for a report
#: holding 60,000 blank lines); the leftmost split is the same either way.
CLAUSE = re.compile(r"(?<=[?!.;])\s+|(?<!\s)\s+[-\u2013\u2014]+\s+|:\s+|,\s+|(?<!\s)\s+[(\[]"
                    r"|(?<![(\[])[)\]](?=\s|$)|(?<!\s)\s+->\s+")
#: Verbs that open a request ("list the functions that call X").
REQUESTS = frozenset("find finding list listing show get give locate search enumerate count name identify print "
                      "display collect gather document check double trace audit".split())
#: Words that make a clause a request of its own ("Need the functions X calls.").
ASKING = REQUESTS | frozenset("need want".split())
#: Words that open a yes/no question ("is it invoked from anywhere else").
AUX = frozenset("is are was were does do did has have can could".split())
#: A backticked span, a path, or a word (dotted, `()`, `'s`). A path starts only where a run of
#: path characters starts: tried inside a run it rescans the run at every position (quadratic).
TOKEN = re.compile(r"`([^`\n]{1,200})`|((?<![\w.-])(?:[\w.-]+/)+[\w.-]+|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(\))?(?:'s)?)")
CODE = re.compile(r"[\w.]*(?:_\w|\w\.\w|[a-z][A-Z])[\w.]*|_\w*|\w+\.py|[A-Z][A-Z0-9_]{3,}")
