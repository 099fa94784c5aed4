"""Node ids, kinds, spans and the parse-error rules of DESIGN.md."""

from codenib.compiler.lang.python_parse import parse_source


def ids(src: str, path: str = "m.py") -> dict[str, tuple]:
    parsed = parse_source(path, src.encode())
    return {n.node_id: (n.kind, n.start_line, n.end_line) for n in parsed.nodes}


def test_file_class_method_function_and_nested_ids():
    src = (
        "class A:\n"            # 1
        "    def m(self):\n"    # 2
        "        def inner():\n"  # 3
        "            pass\n"      # 4
        "        return 1\n"      # 5
        "    class B:\n"          # 6
        "        def n(self): pass\n"  # 7
        "def f():\n"              # 8
        "    class Local:\n"      # 9
        "        pass\n"          # 10
    )
    assert ids(src) == {
        "m.py": ("file", 1, 10),
        "m.py::A": ("class", 1, 7),
        "m.py::A.m": ("method", 2, 5),
        "m.py::A.m.inner": ("function", 3, 4),
        "m.py::A.B": ("class", 6, 7),
        "m.py::A.B.n": ("method", 7, 7),
        "m.py::f": ("function", 8, 10),
        "m.py::f.Local": ("class", 9, 10),
    }


def test_start_line_is_first_decorator_line():
    src = "import functools\n\n@functools.lru_cache()\n@staticmethod\ndef g():\n    return 2\n"
    assert ids(src)["m.py::g"] == ("function", 3, 6)


def test_duplicate_qualnames_get_counters_in_order_of_appearance():
    src = (
        "class C:\n"
        "    @property\n"
        "    def x(self):\n"
        "        def helper(): pass\n"
        "    @x.setter\n"
        "    def x(self, v):\n"
        "        def helper(): pass\n"
        "if True:\n"
        "    def f(): pass\n"
        "else:\n"
        "    def f(): pass\n"
    )
    got = ids(src)
    assert got["m.py::C.x"][1:] == (2, 4)
    assert got["m.py::C.x#2"][1:] == (5, 7)
    # Nested ids continue the plain dotted path, then count their own duplicates.
    assert "m.py::C.x.helper" in got and "m.py::C.x.helper#2" in got
    assert got["m.py::f"][1:] == (9, 9) and got["m.py::f#2"][1:] == (11, 11)


def test_ids_use_the_relative_posix_path():
    parsed = parse_source("src/pkg/mod.py", b"def f():\n    pass\n")
    assert [n.node_id for n in parsed.nodes] == ["src/pkg/mod.py", "src/pkg/mod.py::f"]
    assert all(n.file == "src/pkg/mod.py" for n in parsed.nodes)


def test_signature_docstring_decorators_and_text():
    src = 'import x\n\n@x.deco(1)\nasync def fetch(url: str, *, retries=3) -> bytes:\n    """Fetch a URL."""\n    return b""\n'
    node = {n.node_id: n for n in parse_source("m.py", src.encode()).nodes}["m.py::fetch"]
    assert node.signature == "async def fetch(url: str, *, retries=3) -> bytes"
    assert node.docstring == "Fetch a URL."
    assert node.decorators == ("x.deco(1)",)
    assert node.text.startswith("m.py fetch\n@x.deco(1)")
    assert len(node.content_sha256) == 64


def test_class_text_is_an_outline_not_the_method_bodies():
    src = "class K(Base):\n    '''Doc.'''\n    size = 3\n    def run(self):\n        secret_body_token()\n"
    node = {n.node_id: n for n in parse_source("m.py", src.encode()).nodes}["m.py::K"]
    assert node.signature == "class K(Base)"
    assert "def run(self)" in node.text and "size = 3" in node.text
    assert "secret_body_token" not in node.text


def test_syntax_error_keeps_a_file_node_with_parse_error():
    parsed = parse_source("bad.py", b"def f(:\n    pass\n")
    assert [n.node_id for n in parsed.nodes] == ["bad.py"]
    assert parsed.nodes[0].parse_error.startswith("SyntaxError")
    assert "def f(" in parsed.nodes[0].text


def test_python2_file_is_a_parse_error():
    parsed = parse_source("old.py", b'print "hello"\n')
    assert parsed.parse_error and "SyntaxError" in parsed.parse_error


def test_non_utf8_bytes_are_a_parse_error_not_a_crash():
    parsed = parse_source("latin.py", b"x = '\xe9t\xe9'\n")
    assert parsed.parse_error and "utf-8" in parsed.parse_error
    assert parsed.nodes[0].text  # still indexed, with replacement characters


def test_coding_cookie_is_honoured():
    parsed = parse_source("latin.py", b"# -*- coding: latin-1 -*-\ndef caf\xe9():\n    pass\n")
    assert parsed.parse_error is None
    assert "latin.py::café" in [n.node_id for n in parsed.nodes]


def test_nul_byte_is_a_parse_error():
    parsed = parse_source("nul.py", b"x = 1\x00\ndef f(): pass\n")
    assert parsed.parse_error == "source contains a NUL byte"
    assert len(parsed.nodes) == 1


def test_form_feeds_and_unicode_separators_do_not_shift_spans():
    src = "x = 1\n# page\x0c break\ns = 'a\u2028b'\ndef f():\n    return 2\n"
    node = {n.node_id: n for n in parse_source("a.py", src.encode()).nodes}["a.py::f"]
    assert (node.start_line, node.end_line) == (4, 5)
    assert node.text == "a.py f\ndef f():\n    return 2"


def test_empty_file_is_one_line_file_node():
    parsed = parse_source("pkg/__init__.py", b"")
    assert [(n.node_id, n.start_line, n.end_line) for n in parsed.nodes] == [("pkg/__init__.py", 1, 1)]
    assert parsed.parse_error is None
