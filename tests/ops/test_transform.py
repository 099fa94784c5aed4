"""Keyword extraction and query signals."""

from codenib.ops.transform import extract_keywords, query_signals

REPORT = """TypeError when rendering nested templates with autoescape enabled

Traceback (most recent call last):
  File "src/jinja2/environment.py", line 1295, in render
    return self.environment.handle_exception()
  File "src/jinja2/runtime.py", line 780, in _invoke
    rv = self._func(*arguments)
TypeError: unsupported operand type(s) for +: 'Markup' and 'NoneType'

I expected `Template.render` to work with jinja2.runtime.Macro and MarkupSafe like in 3.0.
The failing code is in src/jinja2/runtime.py:780 and also in utils.py. """ + "More context words here. " * 20


def test_keywords_of_a_bug_report():
    kw = extract_keywords(REPORT)
    assert kw.paths[:2] == ("src/jinja2/environment.py", "src/jinja2/runtime.py")
    assert "utils.py" in kw.paths
    assert kw.traceback_functions == ("render", "_invoke")
    assert kw.errors == ("TypeError",)
    assert "Template.render" in kw.backticked
    assert "jinja2.runtime.Macro" in kw.dotted and "self.environment.handle_exception" in kw.dotted
    assert "handle_exception" not in kw.identifiers  # part of a dotted name, not standalone
    syms = kw.symbols()
    assert syms.index("jinja2.runtime.Macro") < syms.index("TypeError")


def test_identifier_shapes():
    kw = extract_keywords("snake_case camelCase PascalCase _private plain words e.g. v1.2.3")
    assert kw.identifiers == ("snake_case", "camelCase", "PascalCase", "_private")
    assert kw.dotted == ()


def test_signals():
    s = query_signals(REPORT)
    assert s.long_text and s.structural == 0 and s.semantic == 0.8
    lookup = query_signals("where is `Context.invoke` defined?")
    assert (lookup.lexical, lookup.target) == (1.0, "Context.invoke")
    callers = query_signals("who calls term_len?")
    assert (callers.direction, callers.target, callers.structural) == ("callers", "term_len", 0.9)
    callees = query_signals("which functions does Parser.subparse call?")
    assert (callees.direction, callees.target) == ("callees", "Parser.subparse")
    assert query_signals("functions called by do_join").direction == "callees"
    assert query_signals("where is get_bucket called from?").direction == "callers"
    prose = query_signals("Return the default stream encoding if not found.")
    assert prose.semantic == 1.0 and prose.lexical == 0 and prose.target is None
    assert query_signals("method reset").target == "reset"
    assert query_signals("tests for the lexer").about_tests
    assert not query_signals("the lexer of this environment").about_tests
