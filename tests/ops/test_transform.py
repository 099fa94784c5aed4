"""Keyword extraction."""

from codenib.ops.transform import extract_keywords

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
