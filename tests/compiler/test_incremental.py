"""`--reuse` builds: random edit sequences give the same index as a fresh build.

"The same" means byte for byte: nodes.parquet, edges.parquet, every file of sparse/
(bm25s arrays and vocabulary, hence every BM25 score) and of incr/ (the state the next
build compares against). Only the manifest differs (creation time, stage times, what was
reused).
"""

from __future__ import annotations

import ast
import gzip
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codenib.compiler.build import build_index

from codenib.compiler.build_options import BuildOptions
from codenib.compiler.lang.python_resolve.deps import key_string
from codenib.compiler.state import INCR_DIR, load_previous
from codenib.core.tokens import TokenizerConfig
from tests.fixture_repo import FILES, write_repo

#: Without the per-file store: fresh builds parse everything, reuse comes from `--reuse` alone.
OPTS = BuildOptions(dense=False, progress=False, use_cache=False)

#: The fixture repository plus files that exercise what resolution reads across files:
#: re-exports, a star import, bases in other files, typed attributes, a property.
BASE_FILES: dict[str, str] = {
    **FILES,
    "pkg/models.py": '''from .base import Base
from .util import Store


class Model(Base):
    store: Store

    def __init__(self):
        self.store = Store()
        self.parent = None

    @property
    def owner(self) -> "Model":
        return self

    def save(self):
        self.store.put(self)
        self.setup()
        return self.owner.store
''',
    "pkg/api.py": '''from pkg.models import *
from pkg import util


def make() -> Model:
    return Model()


def use():
    m = make()
    m.save()
    m.setup()
    m.store.put(1)
    m.parent.save()
    util.helper(m)
    return m.owner.save()


def engine():
    from pkg.core import Engine
    e = Engine("x")
    e.store.put(2)
    return e.size
''',
}

#: Whole definitions the edits add (each calls or subclasses something of the fixture).
NEW_DEFS = [
    "def extra(x):\n    return helper(x)\n",
    "def extra():\n    return Store().put(1)\n",
    "class Extra(Base):\n    def setup(self):\n        return slugify('x')\n",
    "def make():\n    return 'shadowed'\n",
    "def setup():\n    return None\n",
    # Same names again: `#2` ids, and one definition that is no unit of its own (in a block).
    "if True:\n    def make():\n        return Model()\n",
    "class Model:\n    def save(self):\n        def inner():\n            return helper(1)\n        return inner()\n",
]
#: Import lines the edits put at the top of a file.
NEW_IMPORTS = [
    "from pkg.util import helper\n",
    "from pkg.util import Store, slugify\n",
    "from pkg.base import Base\n",
    "from pkg.models import Model as Store\n",
    "from pkg.core import *\n",
    "import pkg.util as helper\n",
]


@settings(max_examples=int(os.environ.get("CODENIB_INCR_EXAMPLES", 50)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_incremental_builds_equal_fresh_builds_under_random_edits(data):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = dict(BASE_FILES)
        repo = _write(tmp / "repo", files)
        build_index(repo, tmp / "idx0", OPTS)
        previous = tmp / "idx0"
        for step in range(data.draw(st.integers(1, 4), label="steps")):
            edit = data.draw(st.sampled_from(EDITS), label="edit")
            files = edit(files, data)
            repo = _write(tmp / "repo", files)
            inc, full = tmp / f"inc{step}", tmp / f"full{step}"
            summary = build_index(repo, inc, BuildOptions(dense=False, progress=False, use_cache=False,
                                                              reuse=previous))
            build_index(repo, full, OPTS)
            _assert_same_index(inc, full)
            assert summary.reuse is not None and summary.reuse["files_kept"] >= 0
            previous = inc


def test_an_edit_inside_a_body_resolves_only_that_file(tmp_path):
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    build_index(repo, tmp_path / "a", OPTS)
    util = repo / "pkg" / "util.py"
    util.write_text(util.read_text().replace("return text.lower()", "return text.lower().strip()"))
    summary = build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, use_cache=False,
                                                              reuse=tmp_path / "a"))
    assert summary.reuse["files_parsed"] == 1 and summary.reuse["files_resolved"] == 1
    assert summary.reuse["texts_tokenized"] == 1       # slugify's text; the rest keep their counts
    build_index(repo, tmp_path / "c", OPTS)
    _assert_same_index(tmp_path / "b", tmp_path / "c")


def test_renaming_an_imported_function_resolves_its_importers_again(tmp_path):
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    build_index(repo, tmp_path / "a", OPTS)
    util = repo / "pkg" / "util.py"
    util.write_text(util.read_text().replace("def helper(x)", "def assist(x)"))
    summary = build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, use_cache=False,
                                                              reuse=tmp_path / "a"))
    # util.py changed; core.py (`from .util import helper as h`) and api.py (`util.helper`)
    # read the name that is gone. pkg/__init__.py star-imports util but looks nothing up.
    assert summary.reuse["files_parsed"] == 1
    assert summary.reuse["files_resolved"] == 3 and summary.reuse["dirty_keys"] >= 1
    edges = {(e["src"], e["dst"]) for e in pq.read_table(tmp_path / "b" / "edges.parquet").to_pylist()}
    assert ("pkg/core.py::Engine.start", "pkg/util.py::helper") not in edges
    build_index(repo, tmp_path / "c", OPTS)
    _assert_same_index(tmp_path / "b", tmp_path / "c")


def test_a_module_that_parses_again_resolves_files_that_reached_it_through_attributes(tmp_path):
    # chain.py imports only `pkg`; `pkg.util.helper` reaches util.py through attributes, so
    # while util.py does not parse, only the module table says chain.py depends on it.
    files = {**BASE_FILES, "pkg/chain.py": "import pkg\n\n\ndef chained():\n    return pkg.util.helper(1)\n"}
    good = files["pkg/util.py"]
    repo = write_repo(tmp_path / "repo", {**files, "pkg/util.py": good + "\ndef broken(:\n"})
    build_index(repo, tmp_path / "a", OPTS)
    (repo / "pkg" / "util.py").write_text(good)
    build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, use_cache=False,
                                                              reuse=tmp_path / "a"))
    edges = {(e["src"], e["dst"]) for e in pq.read_table(tmp_path / "b" / "edges.parquet").to_pylist()}
    assert ("pkg/chain.py::chained", "pkg/util.py::helper") in edges
    build_index(repo, tmp_path / "c", OPTS)
    _assert_same_index(tmp_path / "b", tmp_path / "c")


def test_the_state_records_what_each_unit_read_outside_itself(tmp_path):
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    build_index(repo, tmp_path / "a", OPTS)
    graph = load_previous(tmp_path / "a", None, TokenizerConfig(), lambda msg: None).graph
    rest = set(graph.reads_of("pkg/core.py"))          # module code and class bodies
    assert key_string(("n", "pkg/util.py", "helper")) in rest     # from .util import helper as h
    assert key_string(("d", "pkg/base.py::Base")) in rest         # class Engine(Base): its bases
    start = set(graph.reads_of("pkg/core.py::Engine.start"))
    assert key_string(("n", "pkg/core.py", "h")) in start         # h(self.name): the module's h
    assert key_string(("c", "pkg/core.py::Engine", "prepare")) in start   # self.prepare()
    prepare = set(graph.reads_of("pkg/core.py::Engine.prepare"))
    assert key_string(("c", "pkg/base.py::Base", "setup")) in prepare      # super().setup()
    # A unit's own scopes are its text: reads of them are not noted.
    assert not any(k.split("\x1f")[1].startswith("pkg/core.py::Engine.start") for k in start if k[0] in "ndc")


def test_an_index_without_incremental_state_is_rebuilt_in_full(tmp_path):
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    build_index(repo, tmp_path / "a", OPTS)
    old = tmp_path / "old"
    shutil.copytree(tmp_path / "a", old)
    shutil.rmtree(old / INCR_DIR)
    from codenib.core import artifact

    manifest = artifact.read_manifest(old, verify=False)
    manifest.pop("artifacts")
    artifact.write_manifest(old, manifest)     # an index as an older CodeNib wrote it
    logs: list[str] = []
    summary = build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, use_cache=False,
                                                              reuse=old),
                          log=logs.append)
    assert any("no incremental state" in line for line in logs)
    assert summary.reuse["files_kept"] == 0
    _assert_same_index(tmp_path / "b", tmp_path / "a")


def test_another_tokenizer_reuses_nodes_and_edges_but_counts_every_text(tmp_path):
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    build_index(repo, tmp_path / "a", OPTS)
    other = BuildOptions(dense=False, progress=False, use_cache=False, tokenizer=TokenizerConfig(stemmer=None))
    logs: list[str] = []
    summary = build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, use_cache=False,
                                                              reuse=tmp_path / "a",
                                                              tokenizer=TokenizerConfig(stemmer=None)),
                          log=logs.append)
    assert summary.reuse["files_parsed"] == 0 and summary.reuse["texts_tokenized"] == summary.manifest["counts"]["nodes"]
    assert any("tokenized with other settings" in line for line in logs)
    build_index(repo, tmp_path / "c", other)
    _assert_same_index(tmp_path / "b", tmp_path / "c")


# --- edits -----------------------------------------------------------------------------------

def _add_def(files: dict[str, str], data) -> dict[str, str]:
    path = data.draw(st.sampled_from(sorted(files)), label="file")
    code = data.draw(st.sampled_from(NEW_DEFS), label="def")
    return {**files, path: files[path].rstrip("\n") + "\n\n\n" + code}


def _delete_def(files: dict[str, str], data) -> dict[str, str]:
    path, node = _pick_def(files, data, nested=True)
    if node is None:
        return files
    return {**files, path: _cut(files[path], node)}


def _rename_def(files: dict[str, str], data) -> dict[str, str]:
    path, node = _pick_def(files, data, nested=True)
    if node is None:
        return files
    new_name = data.draw(st.sampled_from(["renamed", "helper", "Store", "setup", "put", "save", "owner"]),
                         label="name")
    lines = files[path].split("\n")
    keyword = "class" if isinstance(node, ast.ClassDef) else "def"
    lines[node.lineno - 1] = lines[node.lineno - 1].replace(f"{keyword} {node.name}", f"{keyword} {new_name}", 1)
    return {**files, path: "\n".join(lines)}


def _move_def(files: dict[str, str], data) -> dict[str, str]:
    path, node = _pick_def(files, data)
    if node is None:
        return files
    dst = data.draw(st.sampled_from(sorted(files)), label="to")
    lines = files[path].split("\n")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    block = "\n".join(lines[start - 1:node.end_lineno]) + "\n"
    rest = {**files, path: _cut(files[path], node)}
    return {**rest, dst: rest[dst].rstrip("\n") + "\n\n\n" + block}


def _change_import(files: dict[str, str], data) -> dict[str, str]:
    path = data.draw(st.sampled_from(sorted(files)), label="file")
    line = data.draw(st.sampled_from(NEW_IMPORTS), label="import")
    lines = files[path].split("\n")
    imports = [i for i, text in enumerate(lines) if text.startswith(("import ", "from "))]
    how = data.draw(st.sampled_from(["add", "replace", "remove"]), label="how")
    if imports and how != "add":
        which = data.draw(st.sampled_from(imports), label="which")
        lines[which] = line.rstrip("\n") if how == "replace" else ""
        return {**files, path: "\n".join(lines)}
    return {**files, path: line + files[path]}


def _edit_body(files: dict[str, str], data) -> dict[str, str]:
    path = data.draw(st.sampled_from(sorted(files)), label="file")
    text = files[path]
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return files
    methods = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
               and n.args.args and n.args.args[0].arg == "self"]
    if not methods:
        return files
    node = data.draw(st.sampled_from(methods), label="method")
    stmt = data.draw(st.sampled_from(["self.store = Store()", "self.store = None", "helper(1)",
                                      "self.parent = Model()"]), label="stmt")
    lines = text.split("\n")
    indent = " " * node.body[0].col_offset
    lines.insert(node.body[0].lineno - 1, indent + stmt)
    return {**files, path: "\n".join(lines)}


def _add_method(files: dict[str, str], data) -> dict[str, str]:
    """A method added to a class: a member that shadows a base's, or a new attribute."""
    path, node = _pick_def(files, data, nested=True)
    if not isinstance(node, ast.ClassDef):
        return files
    name = data.draw(st.sampled_from(["setup", "put", "save", "owner", "store", "start"]), label="name")
    body = data.draw(st.sampled_from(["return None", "return Store()", "self.store = Model()"]), label="body")
    lines = files[path].split("\n")
    indent = " " * (node.col_offset + 4)
    lines.insert(node.end_lineno, f"{indent}def {name}(self):\n{indent}    {body}")
    return {**files, path: "\n".join(lines)}


def _change_header(files: dict[str, str], data) -> dict[str, str]:
    """A definition's header as other files' inference reads it: return annotation,
    bases, or a decorator that makes a method a property or a static method."""
    path, node = _pick_def(files, data, nested=True)
    if node is None:
        return files
    lines = files[path].split("\n")
    line = lines[node.lineno - 1]
    indent = line[:len(line) - len(line.lstrip())]
    if isinstance(node, ast.ClassDef):
        base = data.draw(st.sampled_from(["", "(Base)", "(Store)", "(Model)", "(Engine)"]), label="bases")
        lines[node.lineno - 1] = f"{indent}class {node.name}{base}:"
    elif node.body[0].lineno > node.lineno:     # a one-line header: rewrite it
        args = ast.unparse(node.args)
        ret = data.draw(st.sampled_from(["", " -> Store", " -> 'Model'", " -> Engine", " -> int"]), label="returns")
        lines[node.lineno - 1] = f"{indent}def {node.name}({args}){ret}:"
        deco = data.draw(st.sampled_from(["", "@property", "@staticmethod", "@classmethod"]), label="decorator")
        if deco:
            lines.insert(node.lineno - 1, indent + deco)
    return {**files, path: "\n".join(lines)}


def _add_or_delete_file(files: dict[str, str], data) -> dict[str, str]:
    extra = ["pkg/extra.py", "pkg/sub/__init__.py", "pkg/sub/deep.py", "top.py", "pkg/util/__init__.py"]
    path = data.draw(st.sampled_from(extra + sorted(files)), label="path")
    if path in files:
        if len(files) <= 2:
            return files
        return {k: v for k, v in files.items() if k != path}
    code = data.draw(st.sampled_from(NEW_DEFS), label="def")
    header = data.draw(st.sampled_from(NEW_IMPORTS), label="import")
    return {**files, path: header + "\n\n" + code}


def _break_or_fix(files: dict[str, str], data) -> dict[str, str]:
    path = data.draw(st.sampled_from(sorted(files)), label="file")
    text = files[path]
    if "def broken(:" in text:
        return {**files, path: text.replace("\ndef broken(:\n", "\n")}
    return {**files, path: text + "\ndef broken(:\n"}


EDITS = [_add_def, _delete_def, _rename_def, _move_def, _change_import, _edit_body, _add_method,
         _change_header, _add_or_delete_file, _break_or_fix]


# --- helpers ---------------------------------------------------------------------------------

def _write(root: Path, files: dict[str, str]) -> Path:
    if root.exists():
        shutil.rmtree(root)
    return write_repo(root, files)


def _pick_def(files: dict[str, str], data, nested: bool = False):
    """A file and one of its definitions (top-level ones only, unless `nested`), mostly
    one whose name another file mentions: edits that other files' edges depend on."""
    candidates = []
    for path in sorted(files):
        try:
            tree = ast.parse(files[path])
        except SyntaxError:
            continue
        for n in (ast.walk(tree) if nested else tree.body):
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                used = any(n.name in text for other, text in files.items() if other != path)
                candidates.append((used, path, n))
    used = [c for c in candidates if c[0]]
    pool = used if used and data.draw(st.integers(0, 4), label="prefer used") else candidates
    if not pool:
        return sorted(files)[0], None
    _, path, node = data.draw(st.sampled_from(pool), label="def")
    return path, node


def _cut(text: str, node: ast.AST) -> str:
    lines = text.split("\n")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return "\n".join(lines[:start - 1] + lines[node.end_lineno:])


def _assert_same_index(a: Path, b: Path) -> None:
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file() and p.name != "manifest.json")
    assert names == sorted(p.relative_to(b).as_posix() for p in b.rglob("*")
                           if p.is_file() and p.name != "manifest.json")
    for name in names:
        if (a / name).read_bytes() != (b / name).read_bytes():
            if name.endswith(".parquet"):
                assert pq.read_table(a / name).to_pylist() == pq.read_table(b / name).to_pylist(), name
            pytest.fail(f"{name} differs between the incremental and the fresh build")


def test_the_per_file_store_serves_unchanged_files_to_a_build_without_reuse(tmp_path):
    cache = tmp_path / "store"
    with_cache = BuildOptions(dense=False, progress=False, cache=cache)
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    first = build_index(repo, tmp_path / "a", with_cache)
    assert first.manifest["cache"]["files_found"] == 0
    assert len(list(cache.rglob("*.json.gz"))) == len(BASE_FILES)
    util = repo / "pkg" / "util.py"
    util.write_text(util.read_text().replace("return text.lower()", "return text.lower().strip()"))
    second = build_index(repo, tmp_path / "b", with_cache)
    assert second.manifest["cache"]["files_found"] == len(BASE_FILES) - 1     # all but util.py
    build_index(repo, tmp_path / "c", OPTS)
    _assert_same_index(tmp_path / "b", tmp_path / "c")


def test_a_damaged_store_entry_is_parsed_again(tmp_path):
    cache = tmp_path / "store"
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    build_index(repo, tmp_path / "a", BuildOptions(dense=False, progress=False, cache=cache))
    entries = sorted(cache.rglob("*.json.gz"))
    assert len(entries) == len(BASE_FILES)
    for i, entry in enumerate(entries):
        # Three ways to be damaged: not gzip, gzip cut short, gzip of something not an entry.
        entry.write_bytes([b"{not json", entry.read_bytes()[:20], gzip.compress(b"{not json")][i % 3])
    summary = build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, cache=cache))
    assert summary.manifest["cache"]["files_found"] == 0
    _assert_same_index(tmp_path / "b", tmp_path / "a")


def test_the_store_sits_next_to_the_index_unless_told(tmp_path):
    repo = write_repo(tmp_path / "repo", BASE_FILES)
    build_index(repo, tmp_path / "indexes" / "a", BuildOptions(dense=False, progress=False))
    assert (tmp_path / "indexes" / ".codenib-cache").is_dir()
    build_index(repo, tmp_path / "indexes" / "b", BuildOptions(dense=False, progress=False, use_cache=False))
    assert {p.name for p in (tmp_path / "indexes").iterdir()} == {".codenib-cache", "a", "b"}


def _many_modules(n: int, renamed: set[int] = frozenset(), hub_args: str = "x") -> dict[str, str]:
    """`n` modules, each calling the hub's function and its neighbour's; the modules in
    `renamed` had a release's worth of change (their function renamed, their body changed)."""
    hub = "helper"
    files = {"pkg/__init__.py": "", "pkg/hub.py": f"def {hub}({hub_args}):\n    return x\n"}
    for i in range(n):
        name = f"f{i}_v2" if i in renamed else f"f{i}"
        body = "    y = x * 2\n    return y + 1\n" if i in renamed else "    return x\n"
        files[f"pkg/m{i}.py"] = (f"from pkg.hub import {hub}\nfrom pkg.m{(i + 1) % n} import *\n\n\n"
                                 f"def {name}(x):\n    {hub}(x)\n{body}")
    return files


def _reuse_build(tmp_path: Path, before: dict[str, str], after: dict[str, str]) -> tuple[list[str], dict]:
    """A --reuse build of `after` from an index of `before`: its log lines and reuse record;
    it must equal a fresh build of `after`."""
    build_index(_write(tmp_path / "repo", before), tmp_path / "a", OPTS)
    repo = _write(tmp_path / "repo", after)
    logs: list[str] = []
    summary = build_index(repo, tmp_path / "b", BuildOptions(dense=False, progress=False, use_cache=False,
                                                             reuse=tmp_path / "a"), log=logs.append)
    build_index(repo, tmp_path / "c", OPTS)
    _assert_same_index(tmp_path / "b", tmp_path / "c")
    return logs, summary.reuse


def test_far_apart_snapshots_build_the_graph_fresh_and_equal_a_fresh_build(tmp_path):
    # Issue 27 item 12: with half the files changed, resolving them again cost more than a
    # fresh build; the graph stage now builds fresh (and says so), the rest still reuses.
    logs, reuse = _reuse_build(tmp_path, _many_modules(120), _many_modules(120, renamed=set(range(0, 120, 2))))
    line = next(m for m in logs if m.startswith("reuse: nodes of"))
    assert "nodes of 62 unchanged files kept, 60 files parsed" in line
    assert "graph: fresh (60 files changed (49%), more than 35%" in line
    assert reuse["graph"].startswith("graph: fresh") and reuse["units_kept"] == 0


def test_a_change_that_every_file_reads_keeps_the_incremental_graph(tmp_path):
    # One file changed, but every module reads the header it changed: pass 2 runs over all
    # of them either way, and the cheap comparison of one file's keys is no reason to switch.
    logs, reuse = _reuse_build(tmp_path, _many_modules(120), _many_modules(120, hub_args="x, scale=1"))
    line = next(m for m in logs if m.startswith("reuse: nodes of"))
    assert "graph: reuse (1 files changed (1%))" in line
    assert reuse["files_kept"] == 121 and reuse["files_parsed"] == 1 and reuse["files_resolved"] == 121


def test_snapshots_close_together_keep_the_incremental_graph(tmp_path):
    logs, reuse = _reuse_build(tmp_path, _many_modules(120), _many_modules(120, renamed={3, 70}))
    line = next(m for m in logs if m.startswith("reuse: nodes of"))
    assert "graph: reuse (" in line and reuse["units_kept"] > 100


# --- literal edits that matter across files --------------------------------------------------

#: A small repository whose files read each other's names, bases and module table.
CROSS_FILES: dict[str, str] = {
    "app/__init__.py": "",
    "app/tools.py": "def tool():\n    return 1\n",
    "app/use_from.py": "from app.tools import tool\n\n\ndef a():\n    return tool()\n",
    "app/use_attr.py": "import app.tools\n\n\ndef b():\n    return app.tools.tool()\n",
    "app/roots.py": "class Root:\n    def ping(self):\n        pass\n\n\nclass Other:\n    def ping(self):\n        pass\n",
    "app/base.py": "from app.roots import Root, Other\n\n\nclass Base(Root):\n    pass\n",
    "app/child.py": "from app.base import Base\n\n\nclass Child(Base):\n    def go(self):\n        self.ping()\n",
    "app/loader.py": "import yaml\n\n\ndef load():\n    return yaml.safe_load('x')\n",
    "app/alone.py": "def alone():\n    return 0\n",
}


def _edges(index: Path) -> set[tuple[str, str, str]]:
    return {(e["src"], e["dst"], e["type"]) for e in pq.read_table(index / "edges.parquet").to_pylist()}


def test_a_removed_module_drops_the_edges_of_every_file_that_imported_it(tmp_path):
    after = {k: v for k, v in CROSS_FILES.items() if k != "app/tools.py"}
    _, reuse = _reuse_build(tmp_path, CROSS_FILES, after)
    edges = _edges(tmp_path / "b")
    assert not any(dst.startswith("app/tools.py") for _, dst, _ in edges)
    assert ("app/use_from.py::a", "app/tools.py::tool", "calls") in _edges(tmp_path / "a")
    # Only the two importers are resolved again; the other files keep their edges.
    assert reuse["files_parsed"] == 0 and reuse["files_resolved"] == 2


def test_a_base_changed_in_another_file_moves_the_calls_through_it(tmp_path):
    after = {**CROSS_FILES, "app/base.py": CROSS_FILES["app/base.py"].replace("Base(Root)", "Base(Other)")}
    _, reuse = _reuse_build(tmp_path, CROSS_FILES, after)
    assert ("app/child.py::Child.go", "app/roots.py::Root.ping", "calls") in _edges(tmp_path / "a")
    edges = _edges(tmp_path / "b")
    assert ("app/child.py::Child.go", "app/roots.py::Other.ping", "calls") in edges
    assert ("app/child.py::Child.go", "app/roots.py::Root.ping", "calls") not in edges
    # base.py changed; child.py (its class's bases, its method's self.ping) goes again.
    assert reuse["files_parsed"] == 1 and reuse["files_resolved"] == 2


def test_a_new_file_shadowing_an_external_import_gets_its_callers(tmp_path):
    after = {**CROSS_FILES, "yaml.py": "def safe_load(text):\n    return text\n"}
    _, reuse = _reuse_build(tmp_path, CROSS_FILES, after)
    assert not any(dst.startswith("yaml.py") for _, dst, _ in _edges(tmp_path / "a"))
    edges = _edges(tmp_path / "b")
    assert ("app/loader.py::load", "yaml.py::safe_load", "calls") in edges
    assert ("app/loader.py", "yaml.py", "imports") in edges
    assert reuse["files_parsed"] == 1 and reuse["files_resolved"] == 2    # yaml.py and loader.py


def test_a_new_module_that_wins_a_package_name_takes_its_importers(tmp_path):
    # A contested module name goes to the shallowest file: the new app/tools.py wins
    # `app.tools` over the package app/tools/__init__.py the importers resolved to.
    package = {k: v for k, v in CROSS_FILES.items() if k != "app/tools.py"}
    package["app/tools/__init__.py"] = "def tool():\n    return 2\n"
    _, reuse = _reuse_build(tmp_path, package, {**package, "app/tools.py": CROSS_FILES["app/tools.py"]})
    assert ("app/use_from.py::a", "app/tools/__init__.py::tool", "calls") in _edges(tmp_path / "a")
    edges = _edges(tmp_path / "b")
    assert ("app/use_from.py::a", "app/tools.py::tool", "calls") in edges
    assert ("app/use_attr.py::b", "app/tools.py::tool", "calls") in edges
    assert not any(dst.startswith("app/tools/__init__.py") for src, dst, _ in edges
                   if not src.startswith("app/tools/__init__.py"))
    # The new file, both importers, and the package (its module name went to the new file).
    assert reuse["files_parsed"] == 1 and reuse["files_resolved"] == 4


def test_an_attribute_saved_and_restored_in_many_methods_reuses_and_equals_a_fresh_build(tmp_path):
    # The cycle through a class attribute's sources (`pos = self.pos ... self.pos = pos`)
    # is cut the same way whichever methods are resolved again.
    def parser(extra: str = "") -> dict[str, str]:
        methods = "".join(f"    def m{i}(self):\n        pos = self.pos\n        self.pos.advance()\n"
                          f"        self.pos = pos\n" for i in range(6))
        return {**CROSS_FILES, "app/cursor.py": "class Cursor:\n    def advance(self):\n        pass\n",
                "app/parser.py": "from app.cursor import Cursor\n\n\nclass Parser:\n    def __init__(self):\n"
                                 "        self.pos = Cursor()\n" + methods + extra}

    _, reuse = _reuse_build(tmp_path, parser(), parser("    def m9(self):\n        self.pos = self.pos\n"))
    edges = _edges(tmp_path / "b")
    assert {("app/parser.py::Parser.m%d" % i, "app/cursor.py::Cursor.advance", "calls") for i in range(6)} <= edges
    assert reuse["files_parsed"] == 1 and reuse["units_kept"] > 0
