"""The imports edges of a block: one per import statement and file it reaches."""

from __future__ import annotations

import ast
from typing import Iterator

from codenib.compiler.lang.python_resolve.infer import Resolver
from codenib.compiler.lang.python_resolve.scopes import Scope
from codenib.compiler.lang.python_resolve.values import Value


def import_edges(resolver: Resolver, stmts: list[ast.stmt], scope: Scope, file_id: str,
                 skip: set[int]) -> Iterator[tuple[str, str, str]]:
    """One imports edge per import statement of `stmts` (nested ones too, but not inside
    the definitions whose id() is in `skip`) and file it reaches (its own file aside)."""
    module = scope.module
    for node in _import_statements(stmts, skip):
        targets: list[Value | None] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                targets.append(("module", alias.name) if resolver.module_path(alias.name) else None)
        elif isinstance(node, ast.ImportFrom):
            base = resolver.absolute_module(module, node.module, node.level)
            if base is None:
                continue
            if resolver.module_path(base):
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


#: Fields of a statement that hold nested statements (imports are statements: no
#: expression needs walking to find them).
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _import_statements(stmts: list, skip: set[int]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of a block and the blocks nested in it, in source order."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt
            continue
        if id(stmt) in skip:
            continue
        for name in _BLOCK_FIELDS:
            block = getattr(stmt, name, None)
            if block:
                yield from _import_statements(block, skip)
