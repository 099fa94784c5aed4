"""Fixtures of the model tests: a small library with tests, indexed without vectors."""

from __future__ import annotations

import pytest

from codenib.compiler.build import build_index

from codenib.compiler.build_options import BuildOptions
from codenib.index.loaded import load_index
from tests.model import bug_repo


@pytest.fixture(scope="session")
def bug_index(tmp_path_factory):
    repo = bug_repo.write_repo(tmp_path_factory.mktemp("bugrepo"))
    out = tmp_path_factory.mktemp("bugidx") / "idx"
    build_index(repo, out, BuildOptions(dense=False, progress=False))
    return load_index(out)
