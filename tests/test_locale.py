"""Issue 38 item 11: CodeNib under a C locale (`LC_ALL=C PYTHONUTF8=0`, where Python's default
text encoding is ASCII) reads and writes every file as UTF-8, and takes non-ASCII arguments."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "codenib"
COMMAND_TIMEOUT_S = 300   # a loaded 2-CPU machine


def _c_locale() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING"))}
    return {**env, "LC_ALL": "C", "PYTHONUTF8": "0"}


def _codenib(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codenib.commands.cli", *args], env=_c_locale(),
                          capture_output=True, timeout=COMMAND_TIMEOUT_S)


def test_a_repository_with_non_ascii_names_indexes_and_answers_under_a_c_locale(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text('def grüße(x):\n    """Grüße an alle: 日本語"""\n    return x\n', encoding="utf-8")
    built = _codenib("index", str(repo), "--out", str(tmp_path / "idx"), "--no-dense", "--quiet")
    assert built.returncode == 0, built.stderr.decode("utf-8", "replace")
    answer = _codenib("query", str(tmp_path / "idx"), "grüße", "--json", "-k", "3")
    assert answer.returncode == 0, answer.stderr.decode("utf-8", "replace")
    out = json.loads(answer.stdout)
    assert out["query"] == "grüße"
    assert out["results"][0]["node_id"] == "a.py::grüße"


def test_every_text_file_codenib_opens_names_its_encoding():
    """A text-mode open, read_text or write_text without `encoding=` follows the locale."""
    unnamed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _text_io_without_encoding(node):
                unnamed.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert unnamed == []


def _text_io_without_encoding(call: ast.Call) -> bool:
    fn = call.func
    name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
    if any(k.arg == "encoding" for k in call.keywords):
        return False
    if name in ("read_text", "write_text"):
        return True
    if name != "open" or (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
                          and fn.value.id == "os"):
        return False
    # `open(path, mode)` or `path.open(mode)`: the mode is the first argument after the path.
    # A bare `x.open()` is taken for another object's method (`sink.open()`), not a file's.
    if isinstance(fn, ast.Attribute) and not call.args and not call.keywords:
        return False
    args = call.args[1:] if isinstance(fn, ast.Name) else call.args
    mode = next((k.value for k in call.keywords if k.arg == "mode"), args[0] if args else None)
    if mode is None:
        return True                                   # text read by default
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "b" not in mode.value
