"""Small questions about `ast` nodes that scopes, inference and edges all ask."""

from __future__ import annotations

import ast

FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


def annotation_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = annotation_name(node.value)
        return f"{head}.{node.attr}" if head else node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def generic_origin(base: ast.AST) -> ast.AST:
    """`Base[T]` names the class `Base`; any other expression is itself."""
    return base.value if isinstance(base, ast.Subscript) else base


def is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
