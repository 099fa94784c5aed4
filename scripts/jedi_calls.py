#!/usr/bin/env python
"""Compare CodeNib's `calls` edges with jedi's, an independent oracle; print precision/recall.

Both sides see the whole repository; call sites are evaluated in every file, or in a random
`--sample` of files (edges are then compared only where their caller lies in the sample).
jedi's edges: for each call whose callee is a name (`f(...)`, `a.b.f(...)`), `goto` with
`follow_imports=True` on the last name, falling back to `infer` when goto names no function
or class; a resolved definition inside the repository becomes an edge from the innermost
enclosing function/method/class (the file for module-level code; decorators, bases and
default arguments belong to the enclosing scope) to that definition's node. `#N` suffixes
are stripped on both sides before comparing (overload stubs and setters differ).
Calling what a property returns (`g.nodes()`) is no call of the getter on either side, and
calls whose callee is no name (`type(self)()`, `f()()`) are invisible to the jedi side.

Default corpus: the `pip` installed next to this interpreter. It is pure Python, present in
every virtualenv, ~440 files and ~5,300 functions (its own code plus vendored requests,
urllib3, rich, pygments, ...), and jedi goes through all of it in a few minutes on 2 cores.
A package folder (one with `__init__.py`) is copied under a temporary root first, so its
absolute imports (`pip._internal...`) name files of the repository for both tools. The
numbers move a little with pip's version (printed) and between jedi runs (a handful of
edges: jedi's caches depend on the order files are visited in).

    python scripts/jedi_calls.py                      # all of pip
    python scripts/jedi_calls.py --sample 60          # 60 random files of pip
    python scripts/jedi_calls.py ~/src/click --show 40
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import io
import os
import random
import re
import shutil
import sys
import sysconfig
import tempfile
import time
import tokenize
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from tqdm import tqdm

from codenib.compiler.lang.python_parse import ParsedFile, parse_file, parse_source
from codenib.compiler.lang.python_resolve import build_edges
from codenib.compiler.walk import walk_repository

#: The default corpus (see the module docstring for why pip).
DEFAULT_PACKAGE = "pip"
#: Disagreements printed per side unless --show says otherwise (enough to see patterns).
DEFAULT_SHOW = 20
#: Categories printed per side in the breakdown (the long tail is noise).
TOP_CATEGORIES = 12

_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_SUFFIX = re.compile(r"#\d+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")   # what both ast and parso count as a new line


@dataclass(frozen=True, slots=True)
class CallSite:
    """One call whose callee is a name, attributed to the scope that owns its edge."""

    owner: str      # node id of the innermost function/method/class, or the file's id
    line: int       # 1-based line of the callee's last name
    column: int     # 0-based column of that name, in characters (as jedi counts)
    name: str       # the callee's last name
    form: str       # f() | self.f() | super().f() | x.f() | x.y.f() | f().g() | expr.f()


@dataclass(frozen=True, slots=True)
class SiteResult:
    """What jedi made of one call site."""

    site: CallSite
    status: str                 # repo | external | unmapped | unresolved | error
    targets: tuple[str, ...]    # node ids (repo), or full names (external/unmapped)
    via: str                    # goto | infer


@dataclass(slots=True)
class Report:
    """The comparison's numbers and the material for its breakdown."""

    root: str
    files: int
    sampled_files: int
    functions: int
    sites: int
    status_counts: Counter
    classes: set[str]           # normalised ids of the repository's classes
    codenib: set[tuple[str, str]]
    jedi: set[tuple[str, str]]
    results: list[SiteResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def precision(self) -> float:
        return len(self.codenib & self.jedi) / len(self.codenib) if self.codenib else 1.0

    @property
    def recall(self) -> float:
        return len(self.codenib & self.jedi) / len(self.jedi) if self.jedi else 1.0


# --- call sites ------------------------------------------------------------------------------

def call_sites(pf: ParsedFile, text: str) -> list[CallSite]:
    """Every call in a parsed file whose callee ends in a name, with its owning node."""
    if pf.tree is None:
        return []
    lines = _LINE_BREAK.split(text)
    owners = {id(d.tree): d.node_id for d in pf.definitions}
    out: list[CallSite] = []

    def visit(node: ast.AST, owner: str) -> None:
        if isinstance(node, _DEF_TYPES):
            # Decorators, bases, keywords, defaults and annotations run in the enclosing scope.
            for dec in node.decorator_list:
                visit(dec, owner)
            if isinstance(node, ast.ClassDef):
                for expr in [*node.bases, *(k.value for k in node.keywords)]:
                    visit(expr, owner)
            else:
                visit(node.args, owner)
                if node.returns is not None:
                    visit(node.returns, owner)
            inner = owners.get(id(node), owner)
            for stmt in node.body:
                visit(stmt, inner)
            return
        if isinstance(node, ast.Call):
            site = _site(node, owner, lines)
            if site is not None:
                out.append(site)
        for child in ast.iter_child_nodes(node):
            visit(child, owner)

    visit(pf.tree, pf.file_node.node_id)
    return out


def _site(call: ast.Call, owner: str, lines: list[str]) -> CallSite | None:
    func = call.func
    if isinstance(func, ast.Name):
        line, col = func.lineno, _char_col(lines, func.lineno, func.col_offset)
        return CallSite(owner, line, col, func.id, "f()")
    if not isinstance(func, ast.Attribute) or func.end_lineno is None or func.end_col_offset is None:
        return None
    # The attribute's name ends the expression: `a.b .f` ends at f.
    line = func.end_lineno
    col = _char_col(lines, line, func.end_col_offset) - len(func.attr)
    return CallSite(owner, line, col, func.attr, _form(func.value))


def _form(receiver: ast.AST) -> str:
    if isinstance(receiver, ast.Name):
        return "self.f()" if receiver.id in ("self", "cls") else "x.f()"
    if isinstance(receiver, ast.Attribute):
        return "x.y.f()"
    if isinstance(receiver, ast.Call):
        if isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            return "super().f()"
        return "f().g()"
    return "expr.f()"


def _char_col(lines: list[str], lineno: int, byte_col: int) -> int:
    """ast counts UTF-8 bytes, jedi counts characters."""
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def decode(raw: bytes) -> str:
    """Source text as Python reads it (coding cookie, BOM); undecodable bytes replaced."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding, errors="replace")
    except (SyntaxError, LookupError):
        text = raw.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff")


# --- jedi ------------------------------------------------------------------------------------

def definition_index(parsed: Iterable[ParsedFile]) -> dict[tuple[str, int, str], str]:
    """(file, line of the `def`/`class` name, name) -> node id; jedi names definitions so."""
    index: dict[tuple[str, int, str], str] = {}
    for pf in parsed:
        for d in pf.definitions:
            index.setdefault((pf.rel_path, d.tree.lineno, d.tree.name), d.node_id)
    return index


def jedi_project(root: Path):
    """A jedi project that sees the repository (and its `src/`) and the standard library only.

    Installed packages are left off the path: a copy of the same package in site-packages
    would otherwise shadow the repository's files.
    """
    import jedi

    paths = [str(root)] + ([str(root / "src")] if (root / "src").is_dir() else [])
    stdlib = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib"):
        if stdlib.get(key) and stdlib[key] not in paths:
            paths.append(stdlib[key])
    dynload = os.path.join(stdlib["platstdlib"], "lib-dynload")
    if os.path.isdir(dynload):
        paths.append(dynload)
    return jedi.Project(str(root), sys_path=paths, smart_sys_path=False)


def resolve_site(script, site: CallSite, root: Path,
                 defs: dict[tuple[str, int, str], str]) -> SiteResult:
    """jedi's answer for one call site: goto(follow_imports), then infer as a fallback."""
    try:
        names = script.goto(site.line, site.column, follow_imports=True)
        via = "goto"
        if not any(n.type in ("function", "class") for n in names):
            names = script.infer(site.line, site.column)
            via = "infer"
    except Exception as exc:  # noqa: BLE001 - jedi bugs on odd code must not stop the run
        return SiteResult(site, "error", (type(exc).__name__,), "goto")
    repo: list[str] = []
    external: list[str] = []
    unmapped: list[str] = []
    for n in names:
        if n.type not in ("function", "class"):
            continue
        rel = _relative(n.module_path, root)
        if rel is None:
            external.append(n.full_name or n.name)
            continue
        node_id = defs.get((rel, n.line, n.name))
        if node_id is None:
            unmapped.append(f"{rel}:{n.line}:{n.name}")
        elif node_id not in repo:
            repo.append(node_id)
    if repo:
        return SiteResult(site, "repo", tuple(repo), via)
    if external:
        return SiteResult(site, "external", tuple(external), via)
    if unmapped:
        return SiteResult(site, "unmapped", tuple(unmapped), via)
    return SiteResult(site, "unresolved", (), via)


def _relative(path: Path | None, root: Path) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def jedi_file(root: Path, rel_path: str, project, defs: dict[tuple[str, int, str], str]) -> list[SiteResult]:
    """jedi's answer for every call site of one file (`root` resolved, as jedi reports paths)."""
    import jedi

    raw = (root / rel_path).read_bytes()
    text = decode(raw)
    pf = parse_source(rel_path, raw)
    sites = call_sites(pf, text)
    if not sites:
        return []
    try:
        script = jedi.Script(text, path=str(root / rel_path), project=project)
    except Exception as exc:  # noqa: BLE001 - one file jedi cannot load must not stop the run
        return [SiteResult(site, "error", (type(exc).__name__,), "goto") for site in sites]
    return [resolve_site(script, site, root, defs) for site in sites]


def jedi_call_edges(root: Path, rel_paths: list[str] | None = None,
                    workers: int = 1) -> set[tuple[str, str]]:
    """jedi's normalised call edges whose callers lie in `rel_paths` (all files when None)."""
    root = Path(root).resolve()
    sources, _ = walk_repository(root)
    parsed = [pf for pf in (parse_file(f) for f in sources) if pf.tree is not None]
    chosen = sorted(pf.rel_path for pf in parsed) if rel_paths is None else rel_paths
    return jedi_edges(run_jedi(root, chosen, definition_index(parsed), workers))


def jedi_edges(results: Iterable[SiteResult]) -> set[tuple[str, str]]:
    """Normalised (caller, callee) pairs of every site jedi resolved into the repository."""
    return {(normalize(r.site.owner), normalize(t))
            for r in results if r.status == "repo" for t in r.targets}


_WORKER: dict = {}


def _init_worker(root: str, defs: dict) -> None:
    _WORKER["root"] = Path(root)
    _WORKER["defs"] = defs
    _WORKER["project"] = jedi_project(Path(root))


def _work(rel_path: str) -> tuple[str, list[SiteResult]]:
    return rel_path, jedi_file(_WORKER["root"], rel_path, _WORKER["project"], _WORKER["defs"])


def run_jedi(root: Path, rel_paths: list[str], defs: dict, workers: int,
             progress: bool = True) -> list[SiteResult]:
    """jedi over the given files, biggest first across `workers` processes."""
    order = sorted(rel_paths, key=lambda p: -(root / p).stat().st_size)
    results: list[SiteResult] = []
    bar = tqdm(total=len(order), desc="jedi", unit="file", file=sys.stderr, disable=not progress)
    if workers <= 1:
        _init_worker(str(root), defs)
        for rel in order:
            results.extend(_work(rel)[1])
            bar.update()
    else:
        with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(str(root), defs)) as pool:
            for _, part in pool.map(_work, order, chunksize=1):
                results.extend(part)
                bar.update()
    bar.close()
    return results


# --- comparison ------------------------------------------------------------------------------

def normalize(node_id: str) -> str:
    """Strip `#N` duplicate suffixes: overload stubs and setters are numbered differently."""
    return _SUFFIX.sub("", node_id)


def codenib_calls(parsed: list[ParsedFile], files: set[str] | None = None) -> set[tuple[str, str]]:
    """CodeNib's normalised call edges whose caller lies in `files` (all when None)."""
    edges = build_edges(parsed)
    return {(normalize(e.src), normalize(e.dst)) for e in edges
            if e.type == "calls" and (files is None or e.src.split("::", 1)[0] in files)}


def prepare_root(path: Path, workdir: Path) -> Path:
    """The repository root to compare on: a package folder is copied under `workdir`."""
    path = path.resolve()
    if not (path / "__init__.py").is_file():
        return path
    dest = workdir / path.name
    shutil.copytree(path, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def compare(root: Path, sample: int | None = None, seed: int = 0, workers: int = 1) -> Report:
    """Run both sides on a prepared root and collect what is needed to report."""
    start = time.perf_counter()
    root = Path(root).resolve()
    sources, _ = walk_repository(root)
    parsed = [parse_file(f) for f in tqdm(sources, desc="parse", unit="file", file=sys.stderr)]
    parsed = [pf for pf in parsed if pf.tree is not None]
    rel_paths = sorted(pf.rel_path for pf in parsed)
    chosen = rel_paths
    if sample is not None and sample < len(rel_paths):
        chosen = sorted(random.Random(seed).sample(rel_paths, sample))
    chosen_set = set(chosen)
    ours = codenib_calls(parsed, chosen_set)
    defs = definition_index(parsed)
    results = run_jedi(root, chosen, defs, workers)
    functions = sum(1 for pf in parsed if pf.rel_path in chosen_set
                    for d in pf.definitions if d.kind != "class")
    classes = {normalize(d.node_id) for pf in parsed for d in pf.definitions if d.kind == "class"}
    return Report(
        root=str(root), files=len(rel_paths), sampled_files=len(chosen), functions=functions,
        sites=len(results), status_counts=Counter(r.status for r in results), classes=classes,
        codenib=ours, jedi=jedi_edges(results), results=results,
        seconds=time.perf_counter() - start,
    )


def breakdown(report: Report, show: int, seed: int = 0) -> Iterator[str]:
    """Lines describing the disagreements: categories, then sampled examples with source."""
    root = Path(report.root)
    by_owner: dict[str, list[SiteResult]] = defaultdict(list)
    for r in report.results:
        by_owner[normalize(r.site.owner)].append(r)
    source_cache: dict[str, list[str]] = {}

    def source_line(owner: str, line: int) -> str:
        rel = owner.split("::", 1)[0]
        if rel not in source_cache:
            source_cache[rel] = _LINE_BREAK.split(decode((root / rel).read_bytes()))
        lines = source_cache[rel]
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    def fp_reason(src: str, dst: str) -> tuple[str, SiteResult | None]:
        name = dst.rsplit("::", 1)[-1].rsplit(".", 1)[-1]
        sites = [r for r in by_owner.get(src, ()) if r.site.name == name]
        if not sites:
            return "no call site named like the callee (alias, or owner differs)", None
        for status, label in (("repo", "jedi: another repository definition"),
                              ("external", "jedi: outside the repository"),
                              ("unmapped", "jedi: a definition it maps to no node"),
                              ("unresolved", "jedi: unresolved"), ("error", "jedi: error")):
            hits = [r for r in sites if r.status == status]
            if hits:
                return f"{label} [{hits[0].site.form}]", hits[0]
        return "?", sites[0]

    false_pos = sorted(report.codenib - report.jedi)
    false_neg = sorted(report.jedi - report.codenib)
    rng = random.Random(seed)

    yield f"\nfalse positives (CodeNib only): {len(false_pos)}"
    reasons = {fp: fp_reason(*fp) for fp in false_pos}
    for label, n in Counter(r[0] for r in reasons.values()).most_common(TOP_CATEGORIES):
        yield f"  {n:6d}  {label}"
    for src, dst in sorted(rng.sample(false_pos, min(show, len(false_pos)))):
        label, r = reasons[(src, dst)]
        where = f"line {r.site.line}: {source_line(src, r.site.line)}" if r else ""
        jedi_said = f"  jedi -> {', '.join(r.targets)[:120]}" if r and r.targets else ""
        yield f"  - {src} -> {dst}\n      {label}; {where}{jedi_said}"

    yield f"\nfalse negatives (jedi only): {len(false_neg)}"
    fn_sites: dict[tuple[str, str], SiteResult] = {}
    for r in report.results:
        if r.status == "repo":
            for t in r.targets:
                fn_sites.setdefault((normalize(r.site.owner), normalize(t)), r)
    labels = {fn: f"{fn_sites[fn].site.form} via {fn_sites[fn].via}"
              + (" (class)" if fn[1] in report.classes else "") for fn in false_neg}
    for label, n in Counter(labels.values()).most_common(TOP_CATEGORIES):
        yield f"  {n:6d}  {label}"
    for src, dst in sorted(rng.sample(false_neg, min(show, len(false_neg)))):
        r = fn_sites[(src, dst)]
        yield (f"  - {src} -> {dst}\n      {labels[(src, dst)]}; "
               f"line {r.site.line}: {source_line(src, r.site.line)}")


def summary(report: Report, label: str) -> Iterator[str]:
    both = len(report.codenib & report.jedi)
    yield f"repository: {label}"
    yield (f"files: {report.sampled_files} compared of {report.files}; "
           f"functions/methods in them: {report.functions}; call sites: {report.sites}")
    yield "jedi per site: " + ", ".join(f"{k} {v}" for k, v in report.status_counts.most_common())
    yield (f"call edges: CodeNib {len(report.codenib)}, jedi {len(report.jedi)}, both {both}")
    yield f"precision {report.precision:.3f}   recall {report.recall:.3f}"
    yield f"elapsed {report.seconds:.1f}s"


def _default_root() -> Path | None:
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compare CodeNib's call edges with jedi's and print precision and recall.")
    parser.add_argument("root", nargs="?", type=Path,
                        help=f"repository root or package folder (default: the installed "
                             f"{DEFAULT_PACKAGE!r} package)")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="compare call sites of N random files only (default: all files)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the file sample and examples")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="jedi processes (default: one per CPU)")
    parser.add_argument("--show", type=int, default=DEFAULT_SHOW, metavar="N",
                        help=f"sampled disagreements printed per side (default {DEFAULT_SHOW})")
    args = parser.parse_args(argv)
    root = args.root or _default_root()
    if root is None or not root.is_dir():
        where = str(root) if root is not None else f"the installed {DEFAULT_PACKAGE} package"
        print(f"error: {where} is not a folder; pass a repository root as ROOT", file=sys.stderr)
        return 2
    label_extra = ""
    if args.root is None:
        label_extra = f" ({DEFAULT_PACKAGE} {importlib.metadata.version(DEFAULT_PACKAGE)})"
    if args.sample is not None and args.sample < 1:
        print("error: --sample must be at least 1", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="jedi-calls-") as tmp:
        prepared = prepare_root(root, Path(tmp))
        report = compare(prepared, args.sample, args.seed, max(1, args.workers))
        label = str(root.resolve()) + label_extra
        label += " (copied as a package)" if prepared != root.resolve() else ""
        for line in summary(report, label):
            print(line)
        for line in breakdown(report, args.show, args.seed):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
