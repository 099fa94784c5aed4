"""The import graph of a package, in the figures a review reads: folders, modules and lines per
folder, the largest folder's share of lines, arrows between folders, module-level cycles.

Every import counts, at module level or inside a function (`ast`, nothing is imported):

    python scripts/import_graph.py                 # codenib/ of this checkout
    python scripts/import_graph.py --root OTHER/codenib --json
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import defaultdict
from pathlib import Path


def module_graph(root: Path) -> tuple[dict[str, set[str]], dict[str, int], dict[str, str]]:
    """Modules of the package at `root` (dotted names) -> the package modules they import,
    each module's line count, and the folder (dotted) it lives in."""
    package = root.name
    modules = {_dotted(p, root, package): p for p in sorted(root.rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    lines: dict[str, int] = {}
    folder = {m: ".".join([package, *p.parent.relative_to(root).parts]) for m, p in modules.items()}
    for name, path in modules.items():
        text = path.read_text(encoding="utf-8")
        lines[name] = text.count("\n")
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(text)):
            for target in _targets(node, name, is_pkg):
                # `from pkg import mod` names a module when there is one; else the package.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges, lines, folder


def figures(root: Path) -> dict:
    """The review's figures for the package at `root`."""
    edges, lines, folder = module_graph(root)
    folder_lines: dict[str, int] = defaultdict(int)
    folder_modules: dict[str, int] = defaultdict(int)
    for m, n in lines.items():
        folder_lines[folder[m]] += n
        folder_modules[folder[m]] += 1
    arrows = {(folder[a], folder[b]) for a, targets in edges.items() for b in targets if folder[a] != folder[b]}
    total = sum(lines.values()) or 1
    largest = max(folder_lines, key=folder_lines.get)
    # A layer is a top-level package (`codenib.compiler` with `lang/` and `resolve/` inside).
    layer = {m: ".".join(m.split(".")[:2]) for m in edges}
    layer_lines: dict[str, int] = defaultdict(int)
    for m, n in lines.items():
        layer_lines[layer[m]] += n
    layer_arrows = {(layer[a], layer[b]) for a, targets in edges.items() for b in targets if layer[a] != layer[b]}
    widest = max(layer_lines, key=layer_lines.get)
    return {
        "layers": len(layer_lines),
        "arrows_between_layers": len(layer_arrows),
        "largest_layer": widest,
        "largest_layer_share": round(layer_lines[widest] / total, 3),
        "modules": len(edges),
        "lines": total,
        "folders": len(folder_lines),
        "arrows_between_folders": len(arrows),
        "largest_folder": largest,
        "largest_folder_share": round(folder_lines[largest] / total, 3),
        "folder_lines": dict(sorted(folder_lines.items())),
        "folder_modules": dict(sorted(folder_modules.items())),
        "cycles": [sorted(c) for c in cycles(edges)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1] / "codenib"),
                    help="the package folder (default: this checkout's codenib/)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    root = Path(args.root)
    if not (root / "__init__.py").is_file():
        print(f"import_graph: {root} is not a package folder (no __init__.py)", file=sys.stderr)
        return 2
    f = figures(root)
    if args.json:
        print(json.dumps(f, indent=2))
        return 0
    print(f"layers {f['layers']}, arrows between layers {f['arrows_between_layers']}, largest layer "
          f"{f['largest_layer']} ({f['largest_layer_share']:.0%} of lines)")
    print(f"modules {f['modules']}, lines {f['lines']}, folders {f['folders']}, "
          f"arrows between folders {f['arrows_between_folders']}, largest folder {f['largest_folder']} "
          f"({f['largest_folder_share']:.0%} of lines), module cycles {len(f['cycles'])}")
    for name, n in f["folder_lines"].items():
        print(f"  {name:28s} {f['folder_modules'][name]:4d} modules {n:7d} lines")
    for cycle in f["cycles"]:
        print("  cycle: " + " -> ".join(cycle))
    return 0


def _dotted(path: Path, root: Path, package: str) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST, name: str, is_pkg: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        here = name if is_pkg else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            here = here.rpartition(".")[0]
        base = f"{here}.{base}" if base else here
    # `from pkg import mod` imports the module (the walk up in `module_graph` maps a name that
    # is no module, `from pkg import X`, to the package).
    return [f"{base}.{a.name}" for a in node.names]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in edges:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        out.append(component)
    return out


if __name__ == "__main__":
    sys.exit(main())
