"""Answering one query needs no Ray: `codenib query` and `codenib index` load no module of
`codenib.batch` and no `ray` (issue 39 item 4: the retrieval session and the localisation
weights live in `codenib.model`). Each check runs in a fresh interpreter and reads its
`sys.modules` after the command ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORT = ("Engine.start crashes on a fresh engine\n\nStarting an engine right after creating it fails:\n\n"
          "Traceback (most recent call last):\n  File \"pkg/core.py\", line 18, in start\n    self.prepare()\n"
          "AttributeError: 'Engine' object has no attribute 'ready'\n")

PRELUDE = """
import json, sys
def loaded():
    return sorted(m for m in sys.modules if m == "ray" or m.startswith(("ray.", "codenib.batch")))
"""


def _python(script: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PRELUDE + script], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("text", ["who calls prepare?", REPORT], ids=["structural", "bug-report"])
def test_the_query_module_answers_without_batch_or_ray(sparse_only_index_dir, text):
    out = _python(f"""
import argparse
from codenib.commands import query
p = argparse.ArgumentParser()
query.add_arguments(p)
code = query.run(p.parse_args([{str(sparse_only_index_dir)!r}, {text!r}, "-k", "3"]))
print(json.dumps({{"code": code, "loaded": loaded()}}))
""")
    assert out == {"code": 0, "loaded": []}


def test_the_query_command_line_answers_without_batch_or_ray(sparse_only_index_dir):
    out = _python(f"""
from codenib.commands.cli import main
code = main(["query", {str(sparse_only_index_dir)!r}, {REPORT!r}, "--json", "-k", "3"])
print()
print(json.dumps({{"code": code, "loaded": loaded()}}))
""")
    assert out == {"code": 0, "loaded": []}


def test_the_index_command_and_the_weights_fit_import_no_batch(fixture_repo, tmp_path):
    out = _python(f"""
import codenib.model.weights_fit
from codenib.commands.cli import main
code = main(["index", {str(fixture_repo)!r}, "--out", {str(tmp_path / "idx")!r}, "--no-dense", "--quiet"])
print(json.dumps({{"code": code, "loaded": loaded()}}))
""")
    assert out == {"code": 0, "loaded": []}
