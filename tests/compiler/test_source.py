"""A snapshot read from git objects (`GitTree`) selects, skips and reads what a checkout of
the same commit gives the walk, and builds the same index."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pygit2
import pytest

from codenib.compiler.build import build_index
from codenib.compiler.build_options import BuildOptions
from codenib.compiler.source import FolderTree, GitTree
from codenib.compiler.walk import walk_repository
from codenib.core.errors import BadInputError
from tests.git_history import archive

NO_DENSE = BuildOptions(dense=False, progress=False, use_cache=False)

FILES = {
    "pkg/__init__.py": b"",
    "pkg/core.py": b"from pkg.util import slug\n\n\ndef run(x):\n    return slug(x)\n",
    "pkg/util.py": b"def slug(x):\n    return x.lower()\n",
    "web/app.js": b"const { slug } = require('./slug');\nfunction go(a) { return slug(a); }\n",
    "web/slug.js": b"function slug(a) { return a; }\nmodule.exports = { slug };\n",
    "go.mod": b"module example.com/demo\n",
    "cmd/main.go": b"package main\n\nfunc main() {}\n",
    "big.py": b"x = 1\n" * 400,
    "blob.py": bytes(range(256)) * 2,
    "dist.min.js": b"function a(){}\n",
    "x::y.py": b"z = 1\n",
    ".hidden/h.py": b"h = 1\n",
    "node_modules/dep/d.js": b"function d() {}\n",
    "venv/lib/v.py": b"v = 1\n",
    "env2/pyvenv.cfg": b"home = /usr\n",
    "env2/lib/e.py": b"e = 1\n",
}
LINKS = {"pkg/alias.py": "util.py", "loop_a.py": "loop_b.py", "loop_b.py": "loop_a.py",
         "gone.py": "nothing.py", "out.py": "../outside.py", "dirlink.py": "pkg"}


@pytest.fixture(scope="module")
def commit(tmp_path_factory):
    """A bare-free repository with one commit holding FILES and LINKS (blobs of mode 120000)."""
    root = tmp_path_factory.mktemp("src")
    repo = pygit2.init_repository(str(root / "repo"))
    builder = {}
    for rel, data in FILES.items():
        builder[rel] = (repo.create_blob(data), pygit2.enums.FileMode.BLOB)
    for rel, target in LINKS.items():
        builder[rel] = (repo.create_blob(target.encode()), pygit2.enums.FileMode.LINK)
    tree = _tree(repo, builder)
    sig = pygit2.Signature("t", "t@example.org", 1_700_000_000, 0)
    oid = repo.create_commit("HEAD", sig, sig, "init", tree, [])
    return repo, str(oid), root


def _tree(repo, entries: dict) -> pygit2.Oid:
    """A tree of `entries` (path -> (blob id, mode)), folders built bottom up."""
    here: dict = {}
    subdirs: dict = {}
    for rel, entry in entries.items():
        head, _, rest = rel.partition("/")
        if rest:
            subdirs.setdefault(head, {})[rest] = entry
        else:
            here[head] = entry
    builder = repo.TreeBuilder()
    for name, (oid, mode) in here.items():
        builder.insert(name, oid, mode)
    for name, sub in subdirs.items():
        builder.insert(name, _tree(repo, sub), pygit2.enums.FileMode.TREE)
    return builder.write()


def _checkout(repo, rev, dest):
    """`git checkout` of the commit: blobs as files, links as links."""
    return archive(repo, rev, dest)


def test_the_walk_of_a_commit_equals_the_walk_of_its_checkout(commit, tmp_path):
    repo, rev, root = commit
    checkout = _checkout(repo, rev, tmp_path / "snap")
    (tmp_path / "outside.py").write_text("o = 1\n")     # what `out.py` names, outside the root
    on_disk = walk_repository(checkout, max_file_bytes=1000)
    tree = GitTree.open(root / "repo" / ".git", rev, "snap")
    in_git = tree.walk(max_file_bytes=1000)
    assert [f.rel_path for f in in_git[0]] == [f.rel_path for f in on_disk[0]]
    assert [(s.rel_path, s.reason) for s in in_git[1]] == [(s.rel_path, s.reason) for s in on_disk[1]]
    reasons = {s.rel_path: s.reason for s in in_git[1]}
    assert reasons["loop_a.py"] == "symlink loop" and reasons["out.py"] == "symlink leaves the repository root"
    assert "dirlink.py" not in reasons and reasons["gone.py"].startswith("broken symlink")
    assert "larger than 1000 bytes" in reasons["big.py"] and reasons["blob.py"] == "binary file"
    for f in in_git[0]:
        assert tree.read(f) == FolderTree(checkout).read(on_disk[0][[g.rel_path for g in on_disk[0]].index(f.rel_path)])


def test_an_index_built_from_git_objects_equals_one_built_from_a_checkout(commit, tmp_path):
    repo, rev, root = commit
    checkout = _checkout(repo, rev, tmp_path / "snap")
    build_index(checkout, tmp_path / "from_disk", NO_DENSE, log=lambda m: None)
    build_index(GitTree.open(root / "repo" / ".git", rev, "snap"), tmp_path / "from_git", NO_DENSE,
                log=lambda m: None)
    for name in ("nodes.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "from_git" / name).equals(pq.read_table(tmp_path / "from_disk" / name)), name
    edges = pq.read_table(tmp_path / "from_git" / "edges.parquet").to_pylist()
    assert {"src": "pkg/core.py::run", "dst": "pkg/util.py::slug", "type": "calls", "count": 1} in edges


def test_a_revision_that_is_not_a_commit_and_a_folder_that_is_no_repository_are_bad_input(commit, tmp_path):
    repo, rev, root = commit
    with pytest.raises(BadInputError, match="is not a commit of the repository"):
        GitTree.open(root / "repo" / ".git", "0" * 40, "snap")
    with pytest.raises(BadInputError, match="not a git repository"):
        GitTree.open(tmp_path, rev, "snap")


def test_the_test_archive_helper_checks_links_out_as_links(commit, tmp_path):
    # tests.git_history.archive (also the checkouts of bench_snapshots' chain) keeps a link a
    # link, so a checkout's index and the git tree's index read the same files.
    repo, rev, _ = commit
    dest = archive(repo, rev, tmp_path / "out")
    for rel, target in LINKS.items():
        assert (dest / rel).is_symlink() and os.readlink(dest / rel) == target
    assert (dest / "pkg" / "alias.py").read_bytes() == FILES["pkg/util.py"]
