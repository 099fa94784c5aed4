"""The layer contracts of DESIGN.md, checked with import-linter on the package as it is, and
no import cycle between any two modules (`import_graph`)."""

from __future__ import annotations

import ast
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

def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """{module: the modules of the package it imports} for every module under `package_dir`:
    every import statement, at the top or inside a function (or under TYPE_CHECKING); relative
    imports resolved; `from pkg import mod` is an import of the module `pkg.mod`."""
    package_dir = Path(package_dir)
    top = package_dir.name
    files = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_pkg else parts)
        files[name] = (path, is_pkg)
    graph = {}
    for name, (path, is_pkg) in files.items():
        here = name if is_pkg else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")
                    base = base[:len(base) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in files else mod for a in node.names]
            else:
                continue
            deps.update(t for t in targets if t in files and t != name)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(frozenset(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


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
