"""Every edge type on the fixture repository, and import-resolution cases."""

import pytest

from codenib.compiler.parse import parse_source
from codenib.compiler.resolve import build_edges, module_name_for
from codenib.compiler.walk import walk_repository
from codenib.compiler.parse import parse_file


def edges_of(files: dict[str, str]) -> set[tuple[str, str, str]]:
    parsed = [parse_source(rel, text.encode()) for rel, text in sorted(files.items())]
    return {(e.src, e.dst, e.type) for e in build_edges(parsed)}


@pytest.fixture(scope="module")
def fixture_edges(fixture_repo):
    files, _ = walk_repository(fixture_repo)
    return build_edges([parse_file(f) for f in files])


def typed(edges, kind):
    return {(e.src, e.dst) for e in edges if e.type == kind}


def test_contains_edges(fixture_edges):
    contains = typed(fixture_edges, "contains")
    assert ("pkg/core.py", "pkg/core.py::Engine") in contains
    assert ("pkg/core.py::Engine", "pkg/core.py::Engine.start") in contains
    assert ("pkg/core.py::run_engine", "pkg/core.py::run_engine.inner") in contains
    assert ("pkg/core.py::Engine", "pkg/core.py::Engine.size#2") in contains


def test_calls_edges_are_exactly_the_resolvable_calls(fixture_edges):
    assert typed(fixture_edges, "calls") == {
        ("pkg/base.py::Base.build", "pkg/base.py::Base"),                  # cls()
        ("pkg/core.py::Engine.__init__", "pkg/util.py::Store"),            # util.Store() module attribute
        ("pkg/core.py::Engine.prepare", "pkg/base.py::Base.setup"),        # super().setup()
        ("pkg/core.py::Engine.start", "pkg/core.py::Engine.prepare"),      # self.prepare()
        ("pkg/core.py::Engine.start", "pkg/util.py::helper"),              # aliased import h()
        ("pkg/core.py::Engine.start", "pkg/util.py::Store.put"),           # self.store typed in __init__
        ("pkg/core.py::Engine.start", "pkg/util.py::slugify"),             # util.slugify()
        ("pkg/core.py::run_engine", "pkg/core.py::Engine"),                # instantiation calls the class
        ("pkg/core.py::run_engine", "pkg/core.py::Engine.start"),          # engine = Engine(...)
        ("pkg/core.py::run_engine", "pkg/core.py::run_engine.inner"),      # nested def
        ("pkg/core.py::run_engine.inner", "pkg/core.py::Engine.prepare"),  # closure variable
        ("pkg/util.py::helper", "pkg/util.py::slugify"),
        ("scripts/tool.py", "scripts/tool.py::main"),                      # module-level call
        ("scripts/tool.py::main", "pkg/core.py::run_engine"),              # pkg.run_engine via __init__
        ("scripts/tool.py::main", "pkg/core.py::Engine"),                  # re-exported class
        ("scripts/tool.py::main", "pkg/core.py::Engine.start"),
        ("scripts/tool.py::main", "pkg/util.py::Store"),                   # from-import alias S
        ("scripts/tool.py::main", "pkg/util.py::Store.put"),               # S().put
    }


def test_inherits_and_references(fixture_edges):
    assert typed(fixture_edges, "inherits") == {("pkg/core.py::Engine", "pkg/base.py::Base")}
    refs = typed(fixture_edges, "references")
    # Default values and annotations belong to the enclosing scope (here the file).
    assert ("pkg/core.py", "pkg/core.py::run_engine") in refs
    assert ("pkg/core.py", "pkg/core.py::Engine") in refs
    # Functions and classes used as values.
    assert ("pkg/core.py::uses_reference", "pkg/core.py::run_engine") in refs
    assert ("pkg/core.py::uses_reference", "pkg/core.py::Engine") in refs


def test_imports_resolve_relative_aliased_star_and_reexports(fixture_edges):
    imports = typed(fixture_edges, "imports")
    assert ("pkg/__init__.py", "pkg/core.py") in imports
    assert ("pkg/__init__.py", "pkg/util.py") in imports       # from .util import *
    assert ("pkg/core.py", "pkg/base.py") in imports
    assert ("scripts/tool.py", "pkg/__init__.py") in imports   # import pkg
    assert ("scripts/tool.py", "pkg/core.py") in imports       # Engine re-exported by pkg/__init__
    assert all(dst != "os" for _, dst in imports)              # stdlib is outside the repository


def test_repeated_edges_collapse_with_a_count():
    edges = build_edges([parse_source("m.py", b"def f(): pass\ndef g():\n    f()\n    f()\n    f()\n")])
    calls = [e for e in edges if e.type == "calls"]
    assert [(e.src, e.dst, e.count) for e in calls] == [("m.py::g", "m.py::f", 3)]


def test_unresolvable_calls_produce_no_edge():
    got = edges_of({"m.py": "import json\ndef f(x):\n    x.run()\n    json.dumps(x)\n    getattr(x, 'y')()\n    undefined()\n"})
    assert not [e for e in got if e[2] == "calls"]


def test_local_variable_shadows_module_function():
    got = edges_of({"m.py": "def run(): pass\ndef f(run):\n    run()\ndef g():\n    run = 3\n    run()\n"})
    assert not [e for e in got if e[2] == "calls"]


def test_star_import_and_package_reexport_chain():
    files = {
        "a/__init__.py": "from .impl import *\n",
        "a/impl.py": "__all__ = ['work']\ndef work(): pass\n",
        "b.py": "import a\nfrom a import work as w\ndef go():\n    a.work()\n    w()\n",
    }
    got = edges_of(files)
    assert ("b.py::go", "a/impl.py::work", "calls") in got
    assert ("b.py", "a/impl.py", "imports") in got


def test_relative_import_two_levels_up_and_submodule_attribute():
    files = {
        "p/__init__.py": "",
        "p/tools.py": "def tool(): pass\n",
        "p/sub/__init__.py": "",
        "p/sub/mod.py": "from .. import tools\nfrom ..tools import tool as t\ndef f():\n    tools.tool()\n    t()\n",
        "q.py": "import p.tools\ndef g():\n    p.tools.tool()\n",
    }
    got = edges_of(files)
    assert ("p/sub/mod.py::f", "p/tools.py::tool", "calls") in got
    assert ("q.py::g", "p/tools.py::tool", "calls") in got
    assert ("p/sub/mod.py", "p/tools.py", "imports") in got


def test_methods_resolve_through_in_repository_bases_and_annotations():
    files = {
        "m.py": (
            "class A:\n    def hello(self): pass\n"
            "class B(A):\n    def go(self):\n        self.hello()\n"
            "def use(b: 'B', maybe: 'A | None'):\n    b.hello()\n    maybe.hello()\n"
            "def make() -> B:\n    return B()\n"
            "def chain():\n    make().go()\n"
            "def handler():\n    try:\n        pass\n    except Err as e:\n        e.show()\n"
            "class Err(Exception):\n    def show(self): pass\n"
        )
    }
    got = {(s, d) for s, d, t in edges_of(files) if t == "calls"}
    assert ("m.py::B.go", "m.py::A.hello") in got
    assert ("m.py::use", "m.py::A.hello") in got
    assert ("m.py::chain", "m.py::B.go") in got
    assert ("m.py::chain", "m.py::make") in got
    assert ("m.py::handler", "m.py::Err.show") in got


def test_conditional_definitions_are_all_call_targets():
    files = {
        "w.py": "def stream(): pass\n",
        "m.py": "import sys\nif sys.platform == 'win32':\n    from w import stream\nelse:\n    def stream(): pass\ndef f():\n    stream()\n",
    }
    got = {(s, d) for s, d, t in edges_of(files) if t == "calls"}
    assert got == {("m.py::f", "w.py::stream"), ("m.py::f", "m.py::stream")}


def test_decorator_calls_and_defaults_belong_to_the_enclosing_scope():
    files = {"m.py": "def deco(x):\n    return x\ndef d2(f): return f\nclass C:\n    @d2\n    @deco(1)\n    def m(self, v=deco(2)): pass\n"}
    got = edges_of(files)
    assert ("m.py::C", "m.py::deco", "calls") in got
    assert ("m.py::C", "m.py::d2", "references") in got
    assert not [e for e in got if e[0] == "m.py::C.m"]


def test_module_names_follow_packages_from_the_topmost_package_folder():
    pkgs = {"src/click", "src/click/sub"}
    assert module_name_for("src/click/core.py", pkgs) == "click.core"
    assert module_name_for("src/click/__init__.py", pkgs) == "click"
    assert module_name_for("src/click/sub/x.py", pkgs) == "click.sub.x"
    assert module_name_for("tests/test_x.py", pkgs) == "test_x"
    assert module_name_for("setup.py", pkgs) == "setup"
