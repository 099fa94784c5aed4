"""Module names: the file each module name stands for (the imports edges are `import_edges`)."""

from __future__ import annotations

from typing import Iterable

from codenib.compiler.lang.python_resolve.values import Value
from codenib.engines.modules import module_name_for, package_dirs_of
from codenib.core.types import make_node_id


class ModuleTable:
    """Every file's dotted module name and the file that each module name stands for.

    While one unit's edges are collected (`Names.begin_unit`), what it reads outside itself
    is noted in `reads` as keys (`codenib.compiler.lang.python_resolve.deps`): an incremental build
    resolves a unit again only when one of those keys changed.
    """

    def __init__(self, rel_paths: Iterable[str], root_package: str | None = None):
        self.reads: set[tuple] | None = None        # keys the unit read; None: not recorded
        rel_paths = list(rel_paths)
        package_dirs = package_dirs_of(rel_paths)
        self.module_of_file: dict[str, str] = {}
        self.modules: dict[str, str] = {}           # module name -> the file's relative path
        for rel_path in sorted(rel_paths, key=lambda p: (p.count("/"), p)):
            name = module_name_for(rel_path, package_dirs, root_package)
            self.module_of_file[rel_path] = name
            # First (shallowest) file wins a contested module name, e.g. two conftest.py.
            self.modules.setdefault(name, rel_path)
        # Every module and every dotted prefix of one (`a.b` of `a.b.c`), for O(1) checks.
        self._module_prefixes: set[str] = set()
        for name in self.modules:
            parts = name.split(".")
            self._module_prefixes.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))

    def note(self, key: tuple) -> None:
        """Record that the unit read `key` (module-table keys: of no file in particular)."""
        if self.reads is not None:
            self.reads.add(key)

    def module_path(self, module: str) -> str | None:
        """The file a module name stands for, if any."""
        self.note(("m", module))
        return self.modules.get(module)

    def has_module_prefix(self, module: str) -> bool:
        self.note(("p", module))
        return module in self._module_prefixes

    def absolute_module(self, module: str, name: str | None, level: int) -> str | None:
        """The absolute module a `from` import in `module` names (None above the root)."""
        if level == 0:
            return name
        path = self.module_path(module)
        is_pkg = path is not None and path.endswith("__init__.py")
        parts = module.split(".") if module else []
        if not is_pkg:
            parts = parts[:-1]
        if level - 1 > len(parts):
            return None
        base = parts[: len(parts) - (level - 1)]
        if name:
            base = base + name.split(".")
        return ".".join(base)

    def file_of_value(self, value: Value | None) -> str | None:
        if value is None:
            return None
        if value[0] == "module":
            path = self.module_path(value[1])
            return make_node_id(path) if path else None
        return value[1].split("::", 1)[0]
