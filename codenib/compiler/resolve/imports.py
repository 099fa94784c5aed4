"""Module names and imports: the file each module name stands for, and the imports edges."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable, Iterator

from codenib.engines.modules import module_name_for, package_dirs_of
from codenib.compiler.parse import ParsedFile
from codenib.types import make_node_id

if TYPE_CHECKING:
    from codenib.compiler.resolve.infer import Resolver
    from codenib.compiler.resolve.scopes import Scope, Value


class ModuleTable:
    """Every file's dotted module name and the file that each module name stands for."""

    def __init__(self, rel_paths: Iterable[str], root_package: str | None = None):
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

    def has_module_prefix(self, module: str) -> bool:
        return module in self._module_prefixes

    def absolute_module(self, module: str, name: str | None, level: int) -> str | None:
        """The absolute module a `from` import in `module` names (None above the root)."""
        if level == 0:
            return name
        path = self.modules.get(module)
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
            path = self.modules.get(value[1])
            return make_node_id(path) if path else None
        return value[1].split("::", 1)[0]


def import_edges(resolver: Resolver, pf: ParsedFile, scope: Scope,
                 file_id: str) -> Iterator[tuple[str, str, str]]:
    """One imports edge per import statement and file it reaches (its own file aside)."""
    module = scope.module
    for node in ast.walk(pf.tree):
        targets: list[Value | None] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                targets.append(("module", alias.name) if alias.name in resolver.modules else None)
        elif isinstance(node, ast.ImportFrom):
            base = resolver.absolute_module(module, node.module, node.level)
            if base is None:
                continue
            if base in resolver.modules:
                targets.append(("module", base))
            for alias in node.names:
                if alias.name == "*":
                    continue
                targets.append(resolver.module_attr(base, alias.name))
        else:
            continue
        # One count per import statement that reaches a file.
        dsts = {resolver.file_of_value(value) for value in targets}
        for dst in sorted(d for d in dsts if d is not None and d != file_id):
            yield (file_id, dst, "imports")
