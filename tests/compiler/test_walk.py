"""Which files a build reads."""

import os

import pytest

from codenib.compiler.walk import MAX_FILE_BYTES, walk_repository
from codenib.core.errors import BadInputError


def make(root, rel, data=b"x = 1\n"):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_skips_hidden_venv_node_modules_build_outputs_and_caches(tmp_path):
    for rel in ["a.py", "pkg/b.py", ".git/hooks/x.py", ".hidden/c.py", "node_modules/d.py",
                "__pycache__/e.py", "build/f.py", "dist/g.py", "pkg.egg-info/h.py",
                "myenv/lib/i.py", "pkg/build/j.py", "notes.txt"]:
        make(tmp_path, rel)
    make(tmp_path, "myenv/pyvenv.cfg", b"home = /usr\n")
    files, _ = walk_repository(tmp_path)
    # `build` is skipped only at the top: pkg/build is a package's own folder.
    assert [f.rel_path for f in files] == ["a.py", "pkg/b.py", "pkg/build/j.py"]


def test_skips_large_and_binary_files_with_reasons(tmp_path):
    make(tmp_path, "big.py", b"#" * (MAX_FILE_BYTES + 1))
    make(tmp_path, "blob.py", bytes(range(256)) * 4)
    make(tmp_path, "nul.py", b"x = 1\x00\n")  # mostly text: kept, becomes a parse error
    files, skipped = walk_repository(tmp_path)
    assert [f.rel_path for f in files] == ["nul.py"]
    reasons = dict((s.rel_path, s.reason) for s in skipped)
    assert "larger than" in reasons["big.py"] and reasons["blob.py"] == "binary file"


def test_symlinks_leaving_the_root_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    repo = tmp_path / "repo"
    make(outside, "secret.py")
    make(repo, "inside.py")
    os.symlink(outside / "secret.py", repo / "link_out.py")
    os.symlink(repo / "inside.py", repo / "link_in.py")
    os.symlink(outside, repo / "linked_dir")
    files, skipped = walk_repository(repo)
    assert sorted(f.rel_path for f in files) == ["inside.py", "link_in.py"]
    assert ("link_out.py", "symlink leaves the repository root") in [(s.rel_path, s.reason) for s in skipped]


def test_missing_path_and_file_path_are_bad_input(tmp_path):
    with pytest.raises(BadInputError, match="does not exist"):
        walk_repository(tmp_path / "nope")
    make(tmp_path, "f.py")
    with pytest.raises(BadInputError, match="not a folder"):
        walk_repository(tmp_path / "f.py")


def test_the_size_limit_is_a_parameter(tmp_path):
    make(tmp_path, "small.py", b"x = 1\n" * 10)     # 60 bytes
    make(tmp_path, "large.py", b"x = 1\n" * 20)     # 120 bytes
    files, skipped = walk_repository(tmp_path, max_file_bytes=100)
    assert [f.rel_path for f in files] == ["small.py"]
    assert [(s.rel_path, s.reason) for s in skipped] == [
        ("large.py", "larger than 100 bytes (120 bytes; see --max-file-bytes)")]
    assert len(walk_repository(tmp_path, max_file_bytes=120)[0]) == 2


def test_paths_holding_the_node_id_separator_are_skipped(tmp_path):
    # `x.py` defining `C.py` has the id `x.py::C.py`, the id a file of that name would get.
    make(tmp_path, "x.py", b"class C:\n    def py(self):\n        pass\n")
    make(tmp_path, "x.py::C.py")
    make(tmp_path, "a::b/c.py")
    files, skipped = walk_repository(tmp_path)
    assert [f.rel_path for f in files] == ["x.py"]
    assert sorted(s.rel_path for s in skipped) == ["a::b/c.py", "x.py::C.py"]
    assert all("contains '::'" in s.reason for s in skipped)
