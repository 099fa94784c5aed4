"""`parse_delta.derive`: a version's outline derived from a neighbour's and the diff between
them is the outline a full parse gives, or None (never a different outline)."""

from __future__ import annotations

import pygit2
from hypothesis import given, settings
from hypothesis import strategies as st

from codenib.compiler.lang.python_parse import Outline, definition_spans, outline_spans, source_outline
from codenib.compiler.lang.python_delta import derive, plain_text

BASE = (b'"""Module."""\n'                           # 1
        b"import os\n"                               # 2
        b"\n"                                        # 3
        b"def f():\n"                                # 4
        b"    return 1\n"                            # 5
        b"\n"                                        # 6
        b"class A:\n"                                # 7
        b"    def m(self):\n"                        # 8
        b"        return 2\n"                        # 9
        b"\n"                                        # 10
        b"    def m(self):\n"                        # 11
        b"        return 3\n"                        # 12
        b"\n"                                        # 13
        b"def f():\n"                                # 14
        b"    return 4\n")                           # 15


def _hunks(old: bytes, new: bytes) -> list[tuple[int, int, int, int]]:
    patch = pygit2.Patch.create_from(old, new, context_lines=0)
    return [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


def _derive(old: bytes, new: bytes) -> Outline | None:
    return derive(source_outline("m.py", old), new, _hunks(old, new))


def test_an_edit_inside_a_class_is_derived_and_named_as_a_full_parse_names_it():
    new = BASE.replace(b"        return 2\n", b"        x = 2\n        return x\n")
    got = _derive(BASE, new)
    assert got is not None and got == source_outline("m.py", new)
    # Hand-computed: everything below the edit moves one line down; the repeats keep #2.
    assert outline_spans("m.py", got) == [("m.py::f", 4, 5), ("m.py::A", 7, 13), ("m.py::A.m", 8, 10),
                                          ("m.py::A.m#2", 12, 13), ("m.py::f#2", 15, 16)]
    assert outline_spans("m.py", got) == definition_spans("m.py", new)


def test_an_edit_to_a_later_method_parses_that_method_alone(monkeypatch):
    """Behind a stand-in header (`class A:` and an indented `pass`), only the class's touched
    body statement is parsed again; the class's span grows with it."""
    from codenib.compiler.lang import python_delta as parse_delta

    parsed: list[str] = []
    outline = parse_delta.text_outline

    def recording(text, rel_path="<region>", first_line=1):
        parsed.append(text)
        return outline(text, rel_path, first_line)

    monkeypatch.setattr(parse_delta, "text_outline", recording)
    new = BASE.replace(b"        return 3\n", b"        y = 3\n        return y\n")
    got = _derive(BASE, new)
    assert got == source_outline("m.py", new)
    assert parsed == ["class A:\n    pass\n    def m(self):\n        y = 3\n        return y\n"]
    assert outline_spans("m.py", got)[:4] == [("m.py::f", 4, 5), ("m.py::A", 7, 13), ("m.py::A.m", 8, 9),
                                              ("m.py::A.m#2", 11, 13)]


def test_a_method_dedented_out_of_its_class_is_parsed_as_the_file_reads_it():
    """A region that leaves the class (a line back at column 0) is not taken as the class's:
    the whole class is parsed again, and the result is still the full parse's."""
    new = BASE.replace(b"    def m(self):\n        return 3\n", b"def m(self):\n    return 3\n")
    assert _derive(BASE, new) == source_outline("m.py", new)
    assert ("m.py::m", 11, 12) in definition_spans("m.py", new)


def test_a_new_definition_before_a_repeat_renumbers_the_repeat():
    new = BASE.replace(b"\nclass A:", b"\ndef f():\n    pass\n\nclass A:")
    got = _derive(BASE, new)
    assert got == source_outline("m.py", new)
    assert [i for i, _, _ in outline_spans("m.py", got)][-1] == "m.py::f#3"


def test_edits_that_reach_outside_their_statement_are_refused_not_guessed():
    opens_a_string = BASE.replace(b"    return 1\n", b'    return """1\n')
    indents_into_the_class = BASE.replace(b"\ndef f():\n    return 4\n", b"\n    def f(self):\n        return 4\n")
    decorates_the_next = BASE.replace(b"    return 1\n\n", b"    return 1\n\n@decorator\n")
    for new in (opens_a_string, indents_into_the_class, decorates_the_next):
        got = _derive(BASE, new)
        assert got is None or got == source_outline("m.py", new)
    assert _derive(BASE, opens_a_string) is None
    # The class's new method is a statement of the class, read by the full parse (not derived).
    assert _derive(BASE, indents_into_the_class) is None


def test_only_plain_utf8_texts_are_derived():
    assert plain_text(b"x = 1\n") == "x = 1\n"
    assert plain_text(b"# -*- coding: utf-8 -*-\nx = 1\n") is not None
    assert plain_text(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n") is None
    assert plain_text(b"x = 1\r\n") is None
    assert plain_text(b"\xef\xbb\xbfx = 1\n") is None
    assert plain_text(b"x = '\xff'\n") is None
    assert _derive(BASE, BASE.replace(b"import os\n", b"import os\r\n")) is None


# --- property: derive equals a full parse, or declines ----------------------------------------

#: Whole statements a base is made of (each parses), with repeats to exercise `#N`.
BLOCKS = [
    b"def f():\n    return 1\n",
    b"def g(a,\n      b):\n    return (a +\n            b)\n",
    b"@dec\n@other(1)\ndef h():\n    pass\n",
    b"class K:\n    '''Doc.'''\n    def m(self):\n        def inner():\n            pass\n        return inner\n\n    x = 1\n",
    b"class K:\n    @property\n    def p(self):\n        return 2\n",
    b"if TYPE_CHECKING:\n    def f():\n        pass\nelse:\n    class K:\n        pass\n",
    b"try:\n    import a\nexcept ImportError:\n    def a():\n        pass\n",
    b'TEXT = """\ndef not_a_def():\n    pass\n"""\n',
    b"x = 1; y = 2\n",
    b"# a comment\n\n",
    b"async def co():\n    await z\n",
    b"VALUE = [\n    1,\n    2,\n]\n",
]
#: Lines an edit inserts: statements, and pieces that break or bend the structure.
LINES = [b"def f():", b"    return 0", b"class K:", b"    def m(self):", b"        pass", b"x = 3",
         b'"""', b"    '''", b"(", b")", b"else:", b"@dec", b"", b"# note", b"    x = 4", b"\\",
         b"if x:", b"        y = (1,", b"async def co():", b"def \xc3\xa9():", b"  odd = 1"]


@st.composite
def _versions(draw):
    base = b"".join(draw(st.lists(st.sampled_from(BLOCKS), min_size=1, max_size=8)))
    lines = base.split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        what = draw(st.sampled_from(["insert", "delete", "replace"]))
        new = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=3))
        if what == "insert":
            lines[at:at] = new
        elif what == "delete":
            del lines[at:at + draw(st.integers(1, 3))]
        else:
            lines[at:at + 1] = new
    return base, b"\n".join(lines)


@settings(max_examples=400, deadline=None)
@given(_versions())
def test_derived_outlines_equal_full_parses(versions):
    old, new = versions
    base = source_outline("m.py", old)
    if base is None:
        return
    got = derive(base, new, _hunks(old, new))
    if got is not None:
        assert got == source_outline("m.py", new)
        assert outline_spans("m.py", got) == definition_spans("m.py", new)
    back = derive(base, old, [])                  # no hunks: nothing to derive
    assert back is None
