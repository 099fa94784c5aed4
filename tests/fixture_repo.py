"""A small repository written by the tests, with hand-checked nodes and edges."""

from __future__ import annotations

from pathlib import Path

FILES: dict[str, str] = {
    "pkg/__init__.py": '''"""The pkg package."""
from .core import Engine, run_engine
from .util import *
''',
    "pkg/core.py": '''"""Core engine."""
import os
from . import util
from .util import helper as h
from .base import Base


class Engine(Base):
    """Runs jobs."""

    limit: int = 3

    def __init__(self, name: str):
        self.name = name
        self.store = util.Store()

    def start(self):
        self.prepare()
        h(self.name)
        self.store.put(self.name)
        return util.slugify(self.name)

    def prepare(self):
        super().setup()
        os.path.join("a", "b")

    @property
    def size(self):
        return 1

    @size.setter
    def size(self, value):
        pass


def run_engine(name):
    engine = Engine(name)
    engine.start()

    def inner():
        return engine.prepare()

    return inner()


def uses_reference(cb=run_engine) -> Engine:
    handlers = [run_engine, Engine]
    return handlers
''',
    "pkg/base.py": '''class Base:
    def setup(self):
        self.ready = True

    @classmethod
    def build(cls):
        return cls()
''',
    "pkg/util.py": '''__all__ = ["helper", "slugify", "Store"]


def helper(x):
    return slugify(x)


def slugify(text):
    return text.lower()


class Store:
    def put(self, item):
        self.items = [item]


def _private():
    return unknown_function()
''',
    "scripts/tool.py": '''import pkg
from pkg import Engine
from pkg.util import Store as S


def main():
    pkg.run_engine("x")
    e = Engine("y")
    e.start()
    S().put(1)
    missing.thing()


if __name__ == "__main__":
    main()
''',
}


def write_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    """Write the fixture repository (or `files`) under `root` and return it."""
    for rel, text in (files or FILES).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
