"""The layer contracts of DESIGN.md, checked with import-linter on the package as it is, and
no import cycle between any two modules (`import_graph`)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(package_parent: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([str(LINT), "--no-cache", str(ROOT / "pyproject.toml")], cwd=package_parent,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def lint_available() -> None:
    if not LINT.exists():
        pytest.fail(f"import-linter is not installed beside {sys.executable}: run ./dev test (it installs .[dev])")


def test_the_package_keeps_every_layer_contract(lint_available):
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


@pytest.mark.parametrize("module, line, contract", [
    # ops importing the batch layer: an upward import
    ("ops/filter.py", "import codenib.batch.queries", "layers"),
    # index and compiler sit side by side
    ("index/graph.py", "import codenib.compiler.walk", "layers"),
    # a core module importing a layer above it
    ("core/tokens.py", "import codenib.model.signals", "layers"),
    # a new cycle inside one package
    ("ops/retrieve.py", "import codenib.ops.expand", "no import cycles"),
    # ... and inside a family's package (issue 39 item 3): the trace-name normalisers reading the parser
    ("model/reports/names.py", "import codenib.model.reports.traces", "no import cycles"),
    # the executor (and the plan classes) asking the planner: the plan must say it all
    ("model/executor.py", "import codenib.model.planner", "executor"),
    # answering one query needs no Ray: the session is model's, and `codenib query` imports no batch
    ("model/session.py", "import ray", "one query needs no Ray"),
    ("commands/query.py", "import codenib.batch.options", "one query needs no Ray"),
], ids=["upward", "index-compiler", "core", "cycle", "cycle-in-family", "executor", "ray-in-model", "batch-in-query"])
def test_an_import_that_breaks_a_contract_fails(lint_available, tmp_path, module, line, contract):
    shutil.copytree(ROOT / "codenib", tmp_path / "codenib", ignore=shutil.ignore_patterns("__pycache__", "data"))
    target = tmp_path / "codenib" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    done = _lint(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{contract}" in done.stdout.split("Broken contracts", 1)[1]


# --- no import cycle between modules ------------------------------------------------------------
# import-linter's acyclic contract compares the sibling modules of each package; a cycle through a
# package's __init__ (the `codenib.commands` registry importing its sub-commands, which imported
# `Command` back from it) or between modules of different packages escapes it. This graph is of
# modules, with every import in them.

def _load_import_graph_script():
    spec = importlib.util.spec_from_file_location("import_graph_script", ROOT / "scripts" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SCRIPT = _load_import_graph_script()


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (scripts/import_graph.py's graph)."""
    return _SCRIPT.module_graph(root)[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module."""
    return _SCRIPT.cycles(graph)


def test_no_module_of_the_package_is_in_an_import_cycle():
    found = [sorted(c) for c in cycles(import_graph(ROOT / "codenib"))]
    assert found == [], f"import cycles: {found}"


def test_the_cycle_check_sees_an_in_function_import_through_a_package(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import a\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from .. import b\n")
    (pkg / "b.py").write_text("def g():\n    from pkg.sub import X\n")
    assert import_graph(pkg)["pkg.sub.a"] == {"pkg.b"}
    assert [sorted(c) for c in cycles(import_graph(pkg))] == [["pkg.b", "pkg.sub", "pkg.sub.a"]]
