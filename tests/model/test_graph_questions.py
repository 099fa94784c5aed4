"""Graph questions beyond calls, end to end on a small repository: overrides, subclasses,
base classes, importers, raises and instantiation walk the edges the question names."""

from __future__ import annotations

import pytest

from codenib.compiler.build import build_index

from codenib.compiler.build_options import BuildOptions
from codenib.index.loaded import load_index
from tests.retrieval import Retrieval
from tests.fixture_repo import write_repo

FILES = {
    "lib/__init__.py": "",
    "lib/loaders.py": '''class BaseLoader:
    def get_source(self, name):
        raise NotImplementedError

    def load(self, name):
        return self.get_source(name)


class FileLoader(BaseLoader):
    def get_source(self, name):
        return open(name).read()


class CachedFileLoader(FileLoader):
    def get_source(self, name):
        return super().get_source(name)


class DictLoader(BaseLoader):
    def get_source(self, name):
        return {}[name]
''',
    "lib/errors.py": '''class TemplateNotFound(Exception):
    pass
''',
    "lib/env.py": '''from lib.loaders import FileLoader
from lib import errors


class Environment:
    def __init__(self):
        self.loader = FileLoader()

    def get_template(self, name):
        if not name:
            raise errors.TemplateNotFound(name)
        return self.loader.load(name)
''',
    "app.py": '''from lib.env import Environment


def main():
    return Environment().get_template("x")
''',
}


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    repo = write_repo(tmp_path_factory.mktemp("repo"), FILES)
    out = tmp_path_factory.mktemp("index") / "idx"
    build_index(repo, out, BuildOptions(dense=False, progress=False))
    return Retrieval(load_index(out), budget="balanced")


def _top(pipe, query: str, k: int = 3) -> list[str]:
    r = pipe.search(query, k=k)
    assert r.plan == "structural_graph", (query, r.trace["reasons"])
    return [c.node_id for c in r.candidates]


def test_overrides_of_a_method_are_the_same_name_in_subclasses(pipe):
    top = _top(pipe, "what overrides BaseLoader.get_source")
    # Direct subclasses first (in node order), then theirs.
    assert set(top[:2]) == {"lib/loaders.py::FileLoader.get_source", "lib/loaders.py::DictLoader.get_source"}
    assert top[2] == "lib/loaders.py::CachedFileLoader.get_source"
    assert _top(pipe, "what does CachedFileLoader.get_source override", 2) == [
        "lib/loaders.py::FileLoader.get_source", "lib/loaders.py::BaseLoader.get_source"]


def test_subclasses_and_bases_follow_inherits_edges(pipe):
    assert set(_top(pipe, "subclasses of BaseLoader", 2)) == {"lib/loaders.py::FileLoader",
                                                              "lib/loaders.py::DictLoader"}
    assert _top(pipe, "what does CachedFileLoader inherit from", 1) == ["lib/loaders.py::FileLoader"]


def test_importers_are_files(pipe):
    assert _top(pipe, "who imports lib.loaders", 1) == ["lib/env.py"]
    # A symbol stands for its file: what imports the module that defines Environment.
    assert _top(pipe, "which modules import Environment", 1) == ["app.py"]


def test_raises_and_instantiation(pipe):
    assert _top(pipe, "what raises TemplateNotFound", 1) == ["lib/env.py::Environment.get_template"]
    assert _top(pipe, "where is Environment instantiated", 1) == ["app.py::main"]
