"""The layer contracts of DESIGN.md, checked with import-linter on the package as it is."""

from __future__ import annotations

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
