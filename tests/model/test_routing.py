"""Routing suite: how the planner reads questions phrased the way people type them.

Written apart from the dev query templates: callers, callees, uses, dependencies,
references, importers, subclasses and bases, overrides, raises, instantiations, look-ups
and behaviour questions, each with the plan, relation and direction it should get. The
symbol table is a small literal one (`TABLE`): some words are names in it ("invoke" has four
definitions, "get" 120), so the planner's grounding is exercised, not only its grammar.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from codenib.index.symbols import SymbolIndex
from codenib.model.planner import RetrievalPlanner
from codenib.model.signals import query_signals

DEFINITIONS = """
app/cli.py::main app/cli.py::Command app/cli.py::Command.invoke app/cli.py::Command.parse_args
app/cli.py::Group app/cli.py::Group.invoke app/cli.py::Context app/cli.py::Context.invoke
app/cli.py::Context.forward app/cli.py::echo app/cli.py::format_help app/cli.py::validate
app/core.py::Engine app/core.py::Engine.run app/core.py::Engine.invoke app/core.py::run_engine
app/core.py::handle_error app/core.py::Engine.load
app/templates.py::Template app/templates.py::Template.render app/templates.py::Environment
app/templates.py::Environment.get_template app/templates.py::Environment.compile app/templates.py::render
app/templates.py::escape app/templates.py::Environment.load
app/loaders.py::BaseLoader app/loaders.py::BaseLoader.get_source app/loaders.py::BaseLoader.load
app/loaders.py::FileSystemLoader app/loaders.py::FileSystemLoader.get_source
app/loaders.py::PackageLoader app/loaders.py::PackageLoader.get_source
app/http.py::Session app/http.py::Session.send app/http.py::Session.close app/http.py::Request
app/http.py::Response app/http.py::Response.json app/http.py::connect app/http.py::retry
app/config.py::Config app/config.py::Config.load app/config.py::load_config app/config.py::Config.run
app/lexer.py::Lexer app/lexer.py::tokenize app/lexer.py::Lexer.run app/parser.py::Parser
app/parser.py::Parser.parse_args app/parser.py::Parser.render app/parser.py::Parser.run
app/errors.py::TemplateNotFound app/errors.py::AppError app/utils.py::cache app/utils.py::write
app/utils.py::Buffer.write app/utils.py::Stream.write app/utils.py::File.write app/utils.py::run
app/utils.py::Pool.run app/utils.py::Retry.load
""".split() + [f"app/models.py::Model{i}.get" for i in range(120)]


def _table() -> SymbolIndex:
    files = sorted({d.split("::")[0] for d in DEFINITIONS})
    rows = [(f, "file", f, "", f.rsplit("/", 1)[-1]) for f in files]
    for d in DEFINITIONS:
        f, q = d.split("::")
        kind = "method" if "." in q else ("class" if q[0].isupper() else "function")
        rows.append((d, kind, f, q, q.rsplit(".", 1)[-1]))
    return SymbolIndex(*map(list, zip(*rows)))


TABLE = _table()
PLANNER = RetrievalPlanner()
G, L, S, H = "structural_graph", "fast_lexical", "semantic", "hybrid_fusion"
IN, OUT = "incoming", "outgoing"

#: (question, plan, relation, direction). Relation and direction are checked for graph plans.
SUITE: list[tuple[str, str, str | None, str | None]] = [
    # -- callers ------------------------------------------------------------------------------
    ("who calls invoke", G, "calls", IN),
    ("what calls invoke?", G, "calls", IN),
    ("callers of invoke", G, "calls", IN),
    ("invoke callers", G, "calls", IN),
    ("who invokes echo", G, "calls", IN),
    ("which code calls parse_args", G, "calls", IN),
    ("list the callers of Context.invoke", G, "calls", IN),
    ("show every caller of echo", G, "calls", IN),
    ("where does echo get called", G, "calls", IN),
    ("where is render called", G, "calls", IN),
    ("render is called where?", G, "calls", IN),
    ("echo called from where", G, "calls", IN),
    ("functions calling format_help", G, "calls", IN),
    ("methods that call load_config", G, "calls", IN),
    ("anything that invokes Session.send", G, "calls", IN),
    ("call sites of echo", G, "calls", IN),
    ("call sites for tokenize", G, "calls", IN),
    ("calls to tokenize", G, "calls", IN),
    ("invocations of Session.send", G, "calls", IN),
    ("incoming calls to render", G, "calls", IN),
    ("who ends up calling connect", G, "calls", IN),
    ("what code paths call retry", G, "calls", IN),
    ("echo callers?", G, "calls", IN),
    ("Context.invoke's callers", G, "calls", IN),
    ("who calls `Template.render`?", G, "calls", IN),
    ("which functions invoke escape", G, "calls", IN),
    ("find callers for handle_error", G, "calls", IN),
    ("callers: validate", G, "calls", IN),
    ("who is calling tokenize", G, "calls", IN),
    ("where do we call connect", G, "calls", IN),
    ("who calls run_engine()", G, "calls", IN),
    ("callers of the retry function", G, "calls", IN),
    ("who calls get", G, "calls", IN),
    ("who calls write or echo", G, "calls", IN),
    ("which methods call Engine.load", G, "calls", IN),
    ("where is tokenize invoked", G, "calls", IN),
    ("who calls the validate method?", G, "calls", IN),
    ("show me who calls format_help", G, "calls", IN),
    ("list functions that call retry", G, "calls", IN),
    ("Who calls Lexer.run", G, "calls", IN),
    # -- callees ------------------------------------------------------------------------------
    ("what does invoke call", G, "calls", OUT),
    ("what does Context.invoke call?", G, "calls", OUT),
    ("which functions does echo call", G, "calls", OUT),
    ("callees of render", G, "calls", OUT),
    ("render callees", G, "calls", OUT),
    ("functions called by render", G, "calls", OUT),
    ("what is called by Session.send", G, "calls", OUT),
    ("what gets called inside Template.render", G, "calls", OUT),
    ("what does tokenize invoke", G, "calls", OUT),
    ("calls made by connect", G, "calls", OUT),
    ("calls inside Template.render", G, "calls", OUT),
    ("outgoing calls of parse_args", G, "calls", OUT),
    ("which helpers does format_help call", G, "calls", OUT),
    ("echo calls what?", G, "calls", OUT),
    ("what functions get invoked from main", G, "calls", OUT),
    ("list everything Session.send calls", G, "calls", OUT),
    ("what does render end up calling", G, "calls", OUT),
    ("the functions that tokenize calls", G, "calls", OUT),
    ("what does run_engine call directly", G, "calls", OUT),
    ("calls from handle_error", G, "calls", OUT),
    ("what methods does Engine.run invoke?", G, "calls", OUT),
    ("callees: Lexer.run", G, "calls", OUT),
    ("Engine.run's callees", G, "calls", OUT),
    ("what gets invoked when main runs", G, "calls", OUT),
    ("which methods does run_engine delegate to", G, "calls", OUT),
    ("inside Engine.run, what gets called?", G, "calls", OUT),
    ("what does connect call out to", G, "calls", OUT),
    ("which code paths reach escape", G, "calls", IN),
    # -- uses / impact ------------------------------------------------------------------------
    ("what uses echo?", G, "uses", IN),
    ("who uses Session", G, "uses", IN),
    ("where is Template used", G, "uses", IN),
    ("usages of render", G, "uses", IN),
    ("echo usages", G, "uses", IN),
    ("users of Config", G, "uses", IN),
    ("code using validate", G, "uses", IN),
    ("where is the Config class used?", G, "uses", IN),
    ("what does render use", G, "uses", OUT),
    ("which helpers are used by render", G, "uses", OUT),
    ("what is used by Session.send", G, "uses", OUT),
    ("impact of changing tokenize", G, "uses", IN),
    ("blast radius of load_config", G, "uses", IN),
    ("what is affected by tokenize", G, "uses", IN),
    ("places that use escape", G, "uses", IN),
    ("all usages of `Environment.get_template`", G, "uses", IN),
    # -- dependencies -------------------------------------------------------------------------
    ("dependencies of render", G, "depends", OUT),
    ("what does Session depend on", G, "depends", OUT),
    ("render dependencies", G, "depends", OUT),
    ("what depends on Config", G, "depends", IN),
    ("dependents of load_config", G, "depends", IN),
    ("everything that depends on Environment", G, "depends", IN),
    ("what relies on Lexer", G, "depends", IN),
    ("what does Parser rely on", G, "depends", OUT),
    ("deps of run_engine", G, "depends", OUT),
    ("which modules depend on Session", G, "depends", IN),
    # -- references ---------------------------------------------------------------------------
    ("where is Config referenced", G, "references", IN),
    ("references to echo", G, "references", IN),
    ("what refers to Lexer", G, "references", IN),
    ("find all references of Template", G, "references", IN),
    ("who references Session.send", G, "references", IN),
    ("what does render reference", G, "references", OUT),
    ("symbols referenced by render", G, "references", OUT),
    ("where is AppError mentioned", G, "references", IN),
    ("references to the Request class", G, "references", IN),
    ("which functions reference TemplateNotFound", G, "references", IN),
    # -- imports ------------------------------------------------------------------------------
    ("who imports app.http", G, "imports", IN),
    ("which modules import app.lexer", G, "imports", IN),
    ("where is Session imported", G, "imports", IN),
    ("importers of app.config", G, "imports", IN),
    ("modules importing Lexer", G, "imports", IN),
    ("which files import Environment", G, "imports", IN),
    ("what does app.cli import", G, "imports", OUT),
    ("imports of app.templates", G, "imports", OUT),
    ("what does app/cli.py import?", G, "imports", OUT),
    ("who imports `app.utils`", G, "imports", IN),
    # -- inheritance --------------------------------------------------------------------------
    ("subclasses of BaseLoader", G, "inherits", IN),
    ("what inherits from BaseLoader", G, "inherits", IN),
    ("classes that extend BaseLoader", G, "inherits", IN),
    ("which classes derive from AppError", G, "inherits", IN),
    ("BaseLoader subclasses", G, "inherits", IN),
    ("children of BaseLoader", G, "inherits", IN),
    ("classes derived from BaseLoader", G, "inherits", IN),
    ("who subclasses Command", G, "inherits", IN),
    ("where is Command subclassed", G, "inherits", IN),
    ("child classes of Command", G, "inherits", IN),
    ("base classes of FileSystemLoader", G, "inherits", OUT),
    ("what does FileSystemLoader inherit from", G, "inherits", OUT),
    ("parents of FileSystemLoader", G, "inherits", OUT),
    ("FileSystemLoader superclasses", G, "inherits", OUT),
    ("what is FileSystemLoader derived from", G, "inherits", OUT),
    ("what does Group extend", G, "inherits", OUT),
    ("the mro of Group", G, "inherits", OUT),
    ("what is the base class of PackageLoader", G, "inherits", OUT),
    # -- overrides ----------------------------------------------------------------------------
    ("what overrides BaseLoader.get_source", G, "overrides", IN),
    ("overrides of get_source", G, "overrides", IN),
    ("which classes override get_source", G, "overrides", IN),
    ("implementations of BaseLoader.get_source", G, "overrides", IN),
    ("where is get_source overridden", G, "overrides", IN),
    ("what does FileSystemLoader.get_source override", G, "overrides", OUT),
    # -- raises / instantiation ---------------------------------------------------------------
    ("what raises TemplateNotFound", G, "raises", IN),
    ("where is TemplateNotFound raised", G, "raises", IN),
    ("which exceptions does load_config raise", G, "raises", OUT),
    ("where is Environment instantiated", G, "instantiates", IN),
    ("who constructs Session", G, "instantiates", IN),
    ("where are Request objects created", G, "instantiates", IN),
    ("instantiations of Engine", G, "instantiates", IN),
    ("functions returning Response", G, "returns", IN),
    ("what returns a Template", G, "returns", IN),
    # -- typos, topics named first, trailing phrases -------------------------------------------
    ("calers of tokenize", G, "calls", IN),
    ("whcih methods invoke escape", G, "calls", IN),
    ("Session.send: anyone calling this?", G, "calls", IN),
    ("load_config -> what does it call", G, "calls", OUT),
    ("is validate called anywhere?", G, "calls", IN),
    ("what does connect end up calling under the hood?", G, "calls", OUT),
    ("what does escape call, if anything", G, "calls", OUT),
    ("i need all the places that call retry", G, "calls", IN),
    ("calls out of Engine.run", G, "calls", OUT),
    ("wich functions are invoked from inside `connect`", G, "calls", OUT),
    # -- several clauses: the question is one of them, "it" stands for the code named before --
    ("I'm refactoring `load_config()` - where does it get called?", G, "calls", IN),
    ("BUG-12: connect hangs on Windows. Need the list of functions connect() calls.", G, "calls", OUT),
    ("nit: `retry` looks private - is it invoked from anywhere else?", G, "calls", IN),
    ("Which places are calling Engine.run? I want to know before I change it.", G, "calls", IN),
    ("in the parser, what invokes `Parser.parse_args`?", G, "calls", IN),
    ("incoming calls: Template.render", G, "calls", IN),
    ("outgoing call edges from escape", G, "calls", OUT),
    ("FileSystemLoader.get_source overrides which base method?", G, "overrides", OUT),
    ("I keep seeing Session.send and I'd love to know which functions actually invoke it?", G, "calls", IN),
    ("[TICKET] Audit all call sites of run_engine before deprecating it.", G, "calls", IN),
    ("Task: enumerate the direct calls made by Engine.run so we can estimate the refactor.", G, "calls", OUT),
    ("I'm moving Lexer.run into another module - which functions does it call that I'd need to bring along?",
     G, "calls", OUT),
    ("what calls are made inside Template.render()", G, "calls", OUT),
    ("What are the functions that Engine.run is calling inside of it?", G, "calls", OUT),
    ("Would you mind finding all the functions that call handle_error?", G, "calls", IN),
    ("what's upstream of escape in the call graph?", G, "calls", IN),
    ("Yields the names of all templates referenced by extends, includes and imports.", S, None, None),
    ("how is a macro called with caller() inside a call block", S, None, None),
    ("names referenced by Template.render", G, "references", OUT),
    ("who creates Session objects?", G, "instantiates", IN),
    ("which objects does Engine.run create", G, "instantiates", OUT),
    # -- look-ups -----------------------------------------------------------------------------
    ("where is invoke defined", L, None, None),
    ("definition of echo", L, None, None),
    ("go to Template.render", L, None, None),
    ("`parse_args`", L, None, None),
    ("Session.send", L, None, None),
    ("render_template", L, None, None),
    ("find class Environment", L, None, None),
    ("where is the Lexer class", L, None, None),
    ("show me echo", L, None, None),
    ("jump to the definition of tokenize", L, None, None),
    ("locate get_template", L, None, None),
    ("where does handle_error live", L, None, None),
    ("echo", L, None, None),
    ("function named validate", L, None, None),
    ("a function called escape", L, None, None),
    ("where is `Context.forward` declared?", L, None, None),
    ("open the Parser class", L, None, None),
    ("invoke", L, None, None),
    ("app.http.Session", L, None, None),
    ("source of load_config", L, None, None),
    ("locate load_config in app", L, None, None),
    ("which file defines run_engine?", L, None, None),
    # -- behaviour ----------------------------------------------------------------------------
    ("how are templates compiled into python code", S, None, None),
    ("how does the lexer split text into tokens", S, None, None),
    ("retry a request after a connection timeout", S, None, None),
    ("parse command line options into a dictionary", S, None, None),
    ("what happens when a template is not found", S, None, None),
    ("how do I use Environment to load templates from a folder", S, None, None),
    ("escape html in rendered output", S, None, None),
    ("read configuration values from environment variables", S, None, None),
    ("Convert the value to a string and strip whitespace.", S, None, None),
    ("This calls the callback with the current context.", S, None, None),
    ("Invokes the command with the given context.", S, None, None),
    ("The loader calls get_source for each template name it is given.", S, None, None),
    ("Return the response body decoded as json.", S, None, None),
    ("why does the session close its connections on exit", S, None, None),
    ("Uses the cache when the template has not changed.", S, None, None),
    ("Calling the hook twice raises an error.", S, None, None),
    ("the function that writes the help page to the terminal", S, None, None),
    ("which function decides how to page long output", S, None, None),
    ("what does echo return", H, None, None),
    ("how is the Context object created", S, None, None),
    # Docstring sentences with relation words or symbol names in them: behaviour.
    ("For use as a postprocessor for render.", S, None, None),
    ("Expect a given token type and return it.", S, None, None),
    ("Return a shallow copy of the instance.", S, None, None),
    ("Writes a usage line into the buffer.", S, None, None),
    ("Subclasses have to override this method to load bytecode into a bucket.", S, None, None),
    ("Open the file lazily.", S, None, None),
    ("Format an object using.", S, None, None),
    ("Dump the macro definition for the def created by render.", S, None, None),
]


def _route(query: str):
    s = query_signals(query, TABLE)
    plan, trace = PLANNER.plan(s)
    return s, plan, trace


@pytest.mark.parametrize("query,plan,relation,direction", SUITE, ids=[q for q, *_ in SUITE])
def test_each_phrasing_gets_its_plan_and_direction(query, plan, relation, direction):
    s, chosen, trace = _route(query)
    assert chosen.plan == plan, f"{query!r}: {trace.reasons}"
    if plan == G:
        assert (s.relation, s.direction) == (relation, direction), f"{query!r}: {s.rule}"
        walk = {IN: "callers", OUT: "callees"}[direction]
        assert chosen.graph.direction == walk and chosen.graph.relation == relation


def test_the_suite_is_large_and_covers_every_relation():
    assert len(SUITE) >= 150
    graph = {(r, d) for _, p, r, d in SUITE if p == G}
    for relation in ("calls", "uses", "depends", "references", "imports", "inherits", "overrides"):
        assert {(relation, IN), (relation, OUT)} <= graph, relation


def test_the_graph_plan_walks_the_edges_the_question_names():
    edges = {q: _route(q)[1].graph.edge_types for q in
             ("who imports app.http", "subclasses of BaseLoader", "where is Config referenced", "who calls invoke")}
    assert edges == {"who imports app.http": ("imports",), "subclasses of BaseLoader": ("inherits",),
                     "where is Config referenced": ("references", "calls"), "who calls invoke": ("calls",)}


def test_plain_words_are_targets_only_when_the_table_knows_them():
    # "invoke" names four definitions: with the table it is the target; without, the
    # planner cannot tell it from a verb and falls back to a mixed query.
    assert _route("who calls invoke")[1].plan == G
    s = query_signals("who calls invoke")
    assert s.structural < 0.5 and PLANNER.plan(s)[0].plan == H
    # Words the table does not know stay words: no target, no graph plan.
    s, plan, _ = _route("who calls the code that frobs widgets")
    assert s.targets == () and s.structural < 0.5 and plan.plan != G


def test_specificity_falls_with_the_number_of_definitions():
    ev = {e.word: e for e in _route("who calls get or echo")[0].evidence}
    assert ev["echo"].definitions == 1 and ev["echo"].specificity == 1.0
    assert ev["get"].definitions == 120 and ev["get"].specificity < 0.15
    assert ev["echo"].score > ev["get"].score


def test_names_joined_by_or_are_all_targets():
    s = _route("who calls write or echo")[0]
    assert s.targets == ("echo", "write")


COURTESY_BEFORE = ["", "hey, ", "hi! ", "please ", "can you tell me ", "could you please show me ",
                   "hello, could you tell me ", "quick question: ", "I want to know ", "so, ", "do you know "]
COURTESY_AFTER = ["", "?", " ? thanks", ", please", " thank you!", "?? thx", ". Cheers", " please :)",
                  " thanks in advance", "!"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SUITE), st.sampled_from(COURTESY_BEFORE), st.sampled_from(COURTESY_AFTER))
def test_courtesy_never_changes_a_plan(row, before, after):
    query = row[0]
    bare = _route(query)
    wrapped = _route(before + query + after)
    assert wrapped[1] == bare[1], (before + query + after, wrapped[2].reasons, bare[2].reasons)
    assert (wrapped[0].relation, wrapped[0].direction, wrapped[0].targets) == \
        (bare[0].relation, bare[0].direction, bare[0].targets)
