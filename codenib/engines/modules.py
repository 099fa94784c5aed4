"""Python module names of repository files: pure path helpers (no I/O, no parsing)."""

from __future__ import annotations


def package_dirs_of(rel_paths) -> set[str]:
    """Folders that are packages (hold `__init__.py`); '' is the repository root itself."""
    return {"" if p == "__init__.py" else p.rsplit("/", 1)[0] for p in rel_paths
            if p == "__init__.py" or p.endswith("/__init__.py")}


def module_name_for(rel_path: str, package_dirs: set[str], root_package: str | None = None) -> str:
    """Dotted module name of a file: its path from the top-most folder that is a package.

    `src/click/core.py` is `click.core` when `src/click/__init__.py` exists and `src/` has none.
    When the indexed root is itself a package (`codenib/` with its `__init__.py`), its
    name (`root_package`) heads the module path, as the code's own absolute imports spell it.
    """
    parts = rel_path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]          # a package's module is its folder
    start = len(parts) - 1
    while start > 0 and "/".join(parts[:start]) in package_dirs:
        start -= 1
    name = ".".join(parts[max(start, 0):])
    if root_package and "" in package_dirs and start <= 0:
        return f"{root_package}.{name}" if name else root_package
    return name
