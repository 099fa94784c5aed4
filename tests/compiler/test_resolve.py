"""Every edge type on the fixture repository, and import-resolution cases."""

import pytest

from codenib.compiler.lang.python_parse import parse_source, parse_syntax
from codenib.compiler.lang.python_resolve import build_edges, collect_edges
from codenib.compiler.lang.python_resolve.infer import Resolver
from codenib.compiler.walk import walk_repository
from codenib.compiler.lang.python_parse import parse_file
from codenib.engines.modules import module_name_for


def edges_of(files: dict[str, str]) -> set[tuple[str, str, str]]:
    parsed = [parse_source(rel, text.encode()) for rel, text in sorted(files.items())]
    edges = {(e.src, e.dst, e.type) for e in build_edges(parsed)}
    assert two_pass_edges(files) == edges
    return edges


def two_pass_edges(files: dict[str, str]) -> set[tuple[str, str, str]]:
    """The edges as `codenib index` finds them: pass 1 lets each tree go, pass 2 parses again."""
    items = sorted(files.items())
    resolver = Resolver([rel for rel, _ in items])
    for rel, text in items:
        pf = parse_source(rel, text.encode())
        resolver.add_file(pf, trim=True)
        assert pf.tree is None and all(not getattr(d.tree, "body", ()) for d in pf.definitions)
    again = (parse_syntax(rel, text.encode()) for rel, text in items)
    return {(e.src, e.dst, e.type) for e in collect_edges(resolver, again)}


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


# --- regressions found by comparing with jedi (scripts/jedi_calls.py) -----------------------

def calls_of(files: dict[str, str]) -> set[tuple[str, str]]:
    return {(s, d) for s, d, t in edges_of(files) if t == "calls"}


def test_calls_inside_a_resolved_attribute_receiver_are_kept():
    # `Engine(x).size` resolves to the property; the Engine(x) call in it is still a call.
    files = {"m.py": (
        "class Engine:\n    @property\n    def size(self): return 1\n"
        "    def diff(self, o) -> 'Engine': return self\n"
        "    @property\n    def is_empty(self): return True\n"
        "    def same(self, o):\n        return self.diff(o).is_empty\n"
        "def f(x):\n    return Engine(x).size\n"
    )}
    got = calls_of(files)
    assert ("m.py::f", "m.py::Engine") in got
    assert ("m.py::Engine.same", "m.py::Engine.diff") in got


def test_a_guard_cut_short_does_not_poison_the_cache():
    # a.py reaches p's binding of `sub` first, through the import, while module_attr(p, sub)
    # is in progress; the inner lookup must not be cached as unknown.
    files = {
        "a.py": "from p import sub\n",
        "p/__init__.py": "from . import sub\ndef f():\n    return sub.work()\n",
        "p/sub.py": "def work(): pass\n",
    }
    assert ("p/__init__.py::f", "p/sub.py::work") in calls_of(files)


def test_generic_bases_and_annotations_name_the_repository_class():
    files = {"m.py": (
        "from typing import Generic, TypeVar\nT = TypeVar('T')\n"
        "class Box(Generic[T]):\n    def get(self): pass\n"
        "class IntBox(Box[int]):\n    def twice(self):\n        self.get()\n"
        "def use(b: Box[int], c: 'Box[str] | None'):\n    b.get()\n    c.get()\n"
    )}
    got = edges_of(files)
    assert ("m.py::IntBox", "m.py::Box", "inherits") in got
    assert ("m.py::IntBox.twice", "m.py::Box.get", "calls") in got
    assert ("m.py::use", "m.py::Box.get", "calls") in got


def test_properties_read_as_their_getters_return_type():
    files = {"m.py": (
        "from functools import cached_property\n"
        "class Options:\n    def update(self): pass\n"
        "class Console:\n"
        "    @property\n    def options(self) -> Options: return Options()\n"
        "    @cached_property\n    def view(self): return None\n"
        "    def print(self):\n        self.options.update()\n        self.view()\n"
    )}
    got = edges_of(files)
    assert ("m.py::Console.print", "m.py::Options.update", "calls") in got
    # Calling a property's value runs the getter without calling it: a read, not a call.
    assert ("m.py::Console.print", "m.py::Console.view", "calls") not in got
    assert ("m.py::Console.print", "m.py::Console.view", "references") in got
    assert ("m.py::Console.print", "m.py::Console.options", "references") in got


def test_or_and_conditional_expressions_merge_their_operands():
    files = {"m.py": (
        "class Console:\n    def print(self): pass\n"
        "def get_console() -> Console: return Console()\n"
        "def f(console=None, other=None):\n"
        "    c = console or get_console()\n    c.print()\n"
        "    d = Console() if other is None else other\n    d.print()\n"
        "    e = None if other else Console()\n    e.print()\n"
    )}
    got = calls_of(files)
    assert ("m.py::f", "m.py::Console.print") in got
    assert ("m.py::f", "m.py::get_console") in got


def test_typed_containers_type_loop_variables_subscripts_and_lookups():
    files = {"m.py": (
        "from typing import Dict, Iterator, List\n"
        "class Item:\n    def run(self): pass\n"
        "class Bag:\n    items: List[Item]\n    by_name: Dict[str, Item]\n"
        "    def each(self) -> Iterator[Item]: ...\n"
        "    def loops(self):\n        for it in self.items:\n            it.run()\n"
        "    def enum(self):\n        for i, it in enumerate(self.items):\n            it.run()\n"
        "    def pairs(self):\n        for k, v in self.by_name.items():\n            v.run()\n"
        "    def index(self, k):\n        self.items[0].run()\n        self.by_name[k].run()\n"
        "    def get(self, k):\n        self.by_name.get(k).run()\n"
        "    def gen(self):\n        for it in sorted(self.each()):\n            it.run()\n"
        "    def comp(self):\n        return [it.run() for it in self.items]\n"
        "    def sliced(self):\n        self.items[1:].run()\n"
    )}
    got = calls_of(files)
    for method in ("loops", "enum", "pairs", "index", "get", "gen", "comp"):
        assert (f"m.py::Bag.{method}", "m.py::Item.run") in got, method
    assert ("m.py::Bag.sliced", "m.py::Item.run") not in got      # a slice is a list


def test_global_statement_rebinds_the_module_name():
    files = {"m.py": (
        "def fast(): pass\ndef slow(): pass\n"
        "def impl():\n    global impl\n    impl = fast if True else slow\n    return impl()\n"
        "def use():\n    impl()\n"
    )}
    got = calls_of(files)
    assert {("m.py::use", "m.py::fast"), ("m.py::use", "m.py::slow")} <= got


def test_a_repository_class_annotation_is_the_declared_type():
    files = {"m.py": (
        "from typing import Mapping\n"
        "class Spinner:\n    def finish(self): pass\n"
        "class Fancy(Spinner):\n    def finish(self): pass\n"
        "class Plain(Spinner):\n    def finish(self): pass\n"
        "class Cache:\n    def get(self, k): pass\n"
        "def f(flag):\n    s: Spinner\n    if flag:\n        s = Fancy()\n    else:\n        s = Plain()\n"
        "    s.finish()\n"
        "    c: Mapping[str, Spinner] = Cache()\n    c.get('x')\n"
    )}
    got = calls_of(files)
    assert ("m.py::f", "m.py::Spinner.finish") in got
    assert ("m.py::f", "m.py::Fancy.finish") not in got
    # A container annotation says less than the assigned repository class.
    assert ("m.py::f", "m.py::Cache.get") in got


def test_an_external_base_before_a_repository_base_owns_the_dunders():
    files = {"m.py": (
        "class Base(Exception):\n    def __init__(self, m): pass\n    def helper(self): pass\n"
        "class Err(ValueError, Base):\n"
        "    def __init__(self, m):\n        super().__init__(m)\n        super().helper()\n"
    )}
    got = calls_of(files)
    assert ("m.py::Err.__init__", "m.py::Base.__init__") not in got   # ValueError.__init__
    assert ("m.py::Err.__init__", "m.py::Base.helper") in got


def test_type_of_an_instance_and_typed_getitem():
    files = {"m.py": (
        "class Layout:\n    def __getitem__(self, k) -> 'Layout': return self\n"
        "    def split(self): pass\n"
        "    def copy(self):\n        clone = type(self)()\n        clone.split()\n"
        "def f(layout: Layout):\n    layout['main'].split()\n"
    )}
    got = calls_of(files)
    assert ("m.py::Layout.copy", "m.py::Layout") in got
    assert ("m.py::Layout.copy", "m.py::Layout.split") in got
    assert ("m.py::f", "m.py::Layout.split") in got


def test_tuple_unpacking_takes_the_annotated_item_types():
    files = {"m.py": (
        "from typing import Optional, Tuple\n"
        "class Cmd:\n    def make(self): pass\n"
        "class Ctx:\n    def exit(self): pass\n"
        "def resolve() -> Tuple[Optional[str], Cmd, Ctx]: ...\n"
        "def f():\n    name, cmd, ctx = resolve()\n    cmd.make()\n    ctx.exit()\n"
        "    name.make()\n    resolve()[1].make()\n"
        "def g():\n    a, b = Cmd(), Ctx()\n    a.make()\n    b.exit()\n"
        "def h():\n    first, *rest = resolve()\n    first.make()\n"
    )}
    got = calls_of(files)
    assert {("m.py::f", "m.py::Cmd.make"), ("m.py::f", "m.py::Ctx.exit")} <= got
    assert {("m.py::g", "m.py::Cmd.make"), ("m.py::g", "m.py::Ctx.exit")} <= got
    assert ("m.py::h", "m.py::Cmd.make") not in got      # starred targets are not guessed


def test_isinstance_narrows_in_the_branch_after_assert_and_after_an_early_exit():
    files = {"m.py": (
        "class Node:\n    def as_const(self): pass\n"
        "class Other:\n    def as_const(self): pass\n"
        "def branch(x, y):\n    if isinstance(x, Node) and y:\n        x.as_const()\n"
        "    else:\n        x.as_const()\n"
        "def asserted(x):\n    assert isinstance(x, Node)\n    x.as_const()\n"
        "def early(x):\n    if not isinstance(x, Node):\n        return None\n    return x.as_const()\n"
        "def rebinds(x):\n    if isinstance(x, Node):\n        x = make()\n        x.as_const()\n"
        "def nested(x):\n    if isinstance(x, Node):\n        def inner():\n            return 1\n"
        "        inner()\n"
    )}
    got = calls_of(files)
    assert ("m.py::branch", "m.py::Node.as_const") in got
    assert ("m.py::asserted", "m.py::Node.as_const") in got
    assert ("m.py::early", "m.py::Node.as_const") in got
    assert ("m.py::rebinds", "m.py::Node.as_const") not in got    # x no longer the checked one
    assert ("m.py::nested", "m.py::nested.inner") in got           # defs in a narrowed branch
    assert not [e for e in got if e[1] == "m.py::Other.as_const"]


def test_isinstance_with_a_base_keeps_the_narrower_known_type():
    files = {"m.py": (
        "class Base:\n    def go(self): pass\n"
        "class Leaf(Base):\n    def go(self): pass\n"
        "def f(x: Leaf):\n    if isinstance(x, Base):\n        x.go()\n"
    )}
    got = calls_of(files)
    assert ("m.py::f", "m.py::Leaf.go") in got
    assert ("m.py::f", "m.py::Base.go") not in got


def test_a_root_that_is_a_package_keeps_its_name_in_module_paths():
    files = {
        "__init__.py": "",
        "core.py": "from mypkg.util import helper\ndef run():\n    helper()\n",
        "util.py": "def helper(): pass\n",
        "sub/__init__.py": "",
        "sub/deep.py": "import mypkg.core\ndef go():\n    mypkg.core.run()\n",
    }
    parsed = [parse_source(rel, text.encode()) for rel, text in sorted(files.items())]
    got = {(e.src, e.dst) for e in build_edges(parsed, root_package="mypkg") if e.type == "calls"}
    assert got == {("core.py::run", "util.py::helper"), ("sub/deep.py::go", "core.py::run")}
    pkgs = {"", "sub"}
    assert module_name_for("sub/deep.py", pkgs, "mypkg") == "mypkg.sub.deep"
    assert module_name_for("__init__.py", pkgs, "mypkg") == "mypkg"
    assert module_name_for("scripts/x.py", pkgs, "mypkg") == "x"  # not inside the package


def _save_restore_class(n_methods: int) -> dict[str, str]:
    """A parser-like class: every method saves `self.pos`, moves it and puts it back."""
    methods = "".join(f"    def m{i}(self):\n        pos = self.pos\n        self.pos.advance()\n"
                      f"        self.pos = pos\n" for i in range(n_methods))
    return {"m.py": "class Cursor:\n    def advance(self): pass\n"
                    "class Parser:\n    def __init__(self):\n        self.pos = Cursor()\n" + methods}


def test_an_attribute_saved_and_restored_in_many_methods_keeps_its_type():
    got = calls_of(_save_restore_class(4))
    assert {f"m.py::Parser.m{i}" for i in range(4)} == {s for s, d in got if d == "m.py::Cursor.advance"}


def test_reading_an_attribute_inside_its_own_sources_is_a_cycle_cut_at_once():
    # `self.pos` -> the sources of Parser.pos -> `pos` in each method -> `self.pos` again: cut
    # there, the lookups of `pos` grow as the square of the methods (444 here); without the
    # cut they followed every path through the methods up to the depth cap (43,500).
    files = _save_restore_class(12)
    pf = parse_source("m.py", files["m.py"].encode())
    resolver = Resolver(["m.py"])
    resolver.add_file(pf)
    counted = []
    lookup = resolver.lookup
    resolver.lookup = lambda scope, name, depth=0: counted.append(name) or lookup(scope, name, depth)
    edges = {(e.src, e.dst) for e in collect_edges(resolver, [pf]) if e.type == "calls"}
    assert ("m.py::Parser.m11", "m.py::Cursor.advance") in edges
    assert counted.count("pos") < 1_000
