"""CodeNib's call edges against jedi, an independent oracle (scripts/jedi_calls.py)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from codenib.compiler.lang.python_parse import parse_source

jedi = pytest.importorskip("jedi")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "jedi_calls.py"

#: Enough files for stable numbers (a few hundred call edges) in about a minute on 2 cores.
SAMPLE_FILES = 40


@pytest.fixture(scope="module")
def jc():
    spec = importlib.util.spec_from_file_location("jedi_calls", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["jedi_calls"] = module       # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


TINY_REPO = {
    "pkg/__init__.py": "",
    "pkg/b.py": (
        "def util():\n    pass\n"
        "def register(name):\n    return lambda f: f\n"
        "class Helper:\n    def work(self):\n        pass\n"
    ),
    "pkg/a.py": (
        "from pkg.b import Helper, register, util\n"
        "\n"
        "def top():\n"
        "    label = 'naïve'; util()\n"                       # columns count characters
        "\n"
        "class Runner:\n"
        "    factory = Helper()\n"                            # class body: the class's call
        "\n"
        "    @register('x')\n"                                # decorator: enclosing scope
        "    def run(self, h=util()):\n"                      # default: enclosing scope
        "        h2 = Helper()\n"
        "        h2.work()\n"
        "        self.run2()\n"
        "        def inner():\n"
        "            util()\n"
        "        inner()\n"
        "        return [util() for _ in range(2)]\n"         # builtins are not edges
        "\n"
        "    def run2(self):\n        pass\n"
        "\n"
        "    @property\n    def size(self):\n        return 1\n"
        "\n"
        "    @size.setter\n    def size(self, value):\n        Helper()\n"   # Runner.size#2
        "\n"
        "top()\n"                                             # module level: the file's call
    ),
}

TINY_EXPECTED = {
    ("pkg/a.py", "pkg/a.py::top"),
    ("pkg/a.py::top", "pkg/b.py::util"),
    ("pkg/a.py::Runner", "pkg/b.py::Helper"),
    ("pkg/a.py::Runner", "pkg/b.py::register"),
    ("pkg/a.py::Runner", "pkg/b.py::util"),
    ("pkg/a.py::Runner.run", "pkg/b.py::Helper"),
    ("pkg/a.py::Runner.run", "pkg/b.py::Helper.work"),
    ("pkg/a.py::Runner.run", "pkg/a.py::Runner.run2"),
    ("pkg/a.py::Runner.run", "pkg/a.py::Runner.run.inner"),
    ("pkg/a.py::Runner.run", "pkg/b.py::util"),
    ("pkg/a.py::Runner.run.inner", "pkg/b.py::util"),
    ("pkg/a.py::Runner.size", "pkg/b.py::Helper"),        # #2 stripped
}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_call_sites_attribute_owners_and_count_columns_in_characters(jc):
    text = TINY_REPO["pkg/a.py"]
    sites = jc.call_sites(parse_source("pkg/a.py", text.encode()), text)
    util_in_top = next(s for s in sites if s.owner == "pkg/a.py::top")
    assert (util_in_top.line, util_in_top.column, util_in_top.name) == (4, 21, "util")   # 22 in UTF-8 bytes
    owners = {(s.owner, s.name) for s in sites}
    assert ("pkg/a.py::Runner", "register") in owners and ("pkg/a.py::Runner", "util") in owners
    assert ("pkg/a.py::Runner.size#2", "Helper") in owners
    assert ("pkg/a.py", "top") in owners
    work = next(s for s in sites if s.name == "work")
    assert work.form == "x.f()" and work.column == 11


def test_jedi_edges_of_a_tiny_repository_match_the_hand_computed_ones(jc, tmp_path):
    root = write(tmp_path, TINY_REPO)
    assert jc.jedi_call_edges(root) == TINY_EXPECTED


def test_codenib_agrees_with_jedi_on_the_tiny_repository(jc, tmp_path):
    report = jc.compare(write(tmp_path, TINY_REPO))
    assert report.jedi == TINY_EXPECTED
    assert report.codenib == TINY_EXPECTED
    assert (report.precision, report.recall) == (1.0, 1.0)


@pytest.mark.slow
def test_codenib_calls_agree_with_jedi_on_a_sample_of_pip(jc, tmp_path):
    package = jc._default_root()
    if package is None:
        pytest.skip(f"{jc.DEFAULT_PACKAGE} is not installed")
    root = jc.prepare_root(package, tmp_path)
    report = jc.compare(root, sample=SAMPLE_FILES, seed=0, workers=2)
    print("\n".join(jc.summary(report, str(package))))
    assert len(report.jedi) > 100        # the sample holds enough edges to measure
    assert report.precision >= 0.9
    assert report.recall >= 0.6
