"""Edits to a copy of a corpus, for the incremental index benchmarks (bench_build,
bench_incremental, bench_far_apart): copy files, make a small commit to a share of them
(`modify_files`) or a release's worth of change (`rewrite_files`), deterministically, and
measure how much of a snapshot changed (`changed_files`)."""

from __future__ import annotations

import ast
import random
import re
import shutil
from pathlib import Path
from typing import Sequence

#: A "second commit" edits this share of the files, and at least this many.
DEFAULT_MODIFY_FRACTION = 0.03
MIN_MODIFIED_FILES = 2


def copy_files(src_root: Path, rel_paths: Sequence[str], dst_root: Path) -> None:
    for rel in rel_paths:
        dst = dst_root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src_root / rel, dst)


def edit_source(text: str, i: int, rng: random.Random) -> str:
    """A small commit to one file: a statement added to one function, maybe a new function."""
    lines = text.split("\n")
    edited = None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    funcs = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             and f.body and f.body[0].lineno > f.lineno and f.end_lineno] if tree else []
    rng.shuffle(funcs)
    for f in funcs[:5]:
        first = f.body[0]
        indent = lines[first.lineno - 1][:first.col_offset]
        if indent.strip():
            continue
        eol = "\r" if lines[f.end_lineno - 1].endswith("\r") else ""
        new = lines[:f.end_lineno] + [f"{indent}_bench_edit_{i} = {i}  # benchmark edit{eol}"] + lines[f.end_lineno:]
        candidate = "\n".join(new)
        try:
            ast.parse(candidate)
        except (SyntaxError, ValueError):
            continue
        edited = candidate
        break
    if edited is None or i % 2 == 0:
        base = edited if edited is not None else text
        base += "" if base.endswith("\n") else "\n"
        edited = (base + f"\n\ndef _bench_added_{i}(value):\n"
                  f'    """Added by the benchmark\'s second commit."""\n    return value + {i}\n')
    return edited


def modify_files(root: Path, rel_paths: Sequence[str], fraction: float, seed: int) -> list[str]:
    """Edit `fraction` of the files under `root` in place (deterministic); return their paths."""
    rng = random.Random(seed)
    count = min(len(rel_paths), max(MIN_MODIFIED_FILES, round(fraction * len(rel_paths))))
    chosen = sorted(rng.sample(sorted(rel_paths), count))
    for i, rel in enumerate(chosen):
        path = root / rel
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            text = fh.read()
        with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
            fh.write(edit_source(text, i, rng))
    return chosen


def rewrite_source(text: str, i: int) -> str:
    """A release's worth of change to one file: every function's body gains a statement, and
    every other top-level function or class is renamed (with its uses in the file), so that
    callers elsewhere read changed bindings too. Returns `text` unchanged if it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    lines = text.split("\n")
    funcs = sorted((f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and f.body and f.body[0].lineno > f.lineno and f.end_lineno), key=lambda f: -f.end_lineno)
    for f in funcs:   # bottom up: earlier line numbers stay valid
        first = f.body[0]
        indent = lines[first.lineno - 1][:first.col_offset]
        if indent.strip():
            continue
        eol = "\r" if lines[f.end_lineno - 1].endswith("\r") else ""
        lines.insert(f.end_lineno, f"{indent}_bench_rewrite_{i} = {i}  # benchmark rewrite{eol}")
    edited = "\n".join(lines)
    top = [d.name for d in tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    renamed = edited
    for name in top[::2]:
        renamed = re.sub(rf"\b{re.escape(name)}\b", f"{name}_r{i}", renamed)
    for candidate in (renamed, edited):
        try:
            ast.parse(candidate)
            return candidate
        except (SyntaxError, ValueError):
            continue
    return text


def rewrite_files(root: Path, rel_paths: Sequence[str], fraction: float, seed: int) -> list[str]:
    """`rewrite_source` applied to `fraction` of the files under `root` (deterministic); the
    paths of those that changed."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(sorted(rel_paths), min(len(rel_paths), round(fraction * len(rel_paths)))))
    changed = []
    for i, rel in enumerate(chosen):
        path = root / rel
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            text = fh.read()
        new = rewrite_source(text, i)
        if new != text:
            with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
                fh.write(new)
            changed.append(rel)
    return changed


def changed_files(a: Path | None, b: Path) -> tuple[int, int, float]:
    """Python files of snapshot `b` new or different from snapshot `a` (and deleted ones),
    all of b's files, and the share of b's source bytes in the changed files."""
    from codenib.compiler.walk import walk_repository

    new = {f.rel_path: f.abs_path.read_bytes() for f in walk_repository(b)[0]}
    total = sum(map(len, new.values())) or 1
    if a is None:
        return len(new), len(new), 1.0
    old = {f.rel_path: f.abs_path.read_bytes() for f in walk_repository(a)[0]}
    changed = [rel for rel, raw in new.items() if old.get(rel) != raw]
    deleted = set(old) - set(new)
    return len(changed) + len(deleted), len(new), sum(len(new[r]) for r in changed) / total
