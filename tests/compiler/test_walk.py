"""Which files a build reads."""

import errno
import os
import threading

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


def test_a_named_pipe_is_skipped_not_opened(tmp_path):
    # Opening a FIFO blocks until a writer comes: the walk used to hang forever on one.
    make(tmp_path, "a.py")
    os.mkfifo(tmp_path / "pipe.py")
    done: list = []
    worker = threading.Thread(target=lambda: done.append(walk_repository(tmp_path)), daemon=True)
    worker.start()
    worker.join(60)
    if not done:     # unblock the reader so the thread ends, then fail
        with open(tmp_path / "pipe.py", "wb"):
            pass
        pytest.fail("walk_repository blocked on a named pipe")
    files, skipped = done[0]
    assert [f.rel_path for f in files] == ["a.py"]
    assert [(s.rel_path, s.reason) for s in skipped] == [("pipe.py", "not a regular file (named pipe)")]


def test_a_symlink_loop_and_a_broken_link_are_skipped_and_named(tmp_path):
    make(tmp_path, "a.go", b"package a\n")
    os.symlink("y.go", tmp_path / "x.go")
    os.symlink("x.go", tmp_path / "y.go")
    os.symlink("gone.go", tmp_path / "z.go")
    files, skipped = walk_repository(tmp_path)
    assert [f.rel_path for f in files] == ["a.go"]
    reasons = {s.rel_path: s.reason for s in skipped}
    assert reasons["x.go"] == reasons["y.go"] == "symlink loop"
    assert reasons["z.go"].startswith("broken symlink")


def test_an_unreadable_folder_is_skipped_and_named_as_itself(tmp_path, monkeypatch):
    # As root nothing is unreadable, so the file system's refusal is played by os.stat and
    # os.scandir (what os.walk and pathlib call) raising EACCES under `locked/`.
    make(tmp_path, "a.py")
    make(tmp_path, "locked/b.py")
    locked = str(tmp_path / "locked")

    def refuse(real, the_folder_too):
        def call(path, *args, **kwargs):
            name = os.fspath(path)
            if name.startswith(locked + os.sep) or (the_folder_too and name == locked):
                raise PermissionError(errno.EACCES, "Permission denied", name)
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "stat", refuse(os.stat, False))
    monkeypatch.setattr(os, "scandir", refuse(os.scandir, True))
    files, skipped = walk_repository(tmp_path)
    assert [f.rel_path for f in files] == ["a.py"]
    assert [(s.rel_path, s.reason) for s in skipped] == [("locked/", "folder not readable: Permission denied")]
