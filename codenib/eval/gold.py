"""Judgments from patches: the files and definitions a fix changes, read with the index's own
readers (the spans of its nodes), as `codenib qrels` writes them.

For each row with a `patch` (a unified diff against the row's snapshot):

- file judgments: the files the patch changes that exist at the snapshot and that the index
  holds (docs, build files and added files are not judged);
- function judgments: for each old line the patch touches (`codenib.core.patches`), the
  innermost definition of the index whose span holds it (a function, method or type; an
  added line counts the definition around the line it follows).

When the snapshot's git objects are at hand (`repo` and `rev`), the patch must apply: every
line it shows as context or removed is that line of the file at `rev`. Otherwise a changed
line must lie inside its file. A row that fails becomes an error row; the others go on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pyarrow as pa

from codenib.compiler.source import GitTree
from codenib.core.errors import BadInputError
from codenib.core.mirrors import find_git_dir
from codenib.core.rows import column_of, read_rows
from codenib.core.patches import FileChange, read_patch
from codenib.eval.qrels import QRELS_SCHEMA

#: Node kinds that are not definitions (a file's own node).
FILE_KIND = "file"
#: Columns of the error rows written beside them.
ERRORS_SCHEMA = pa.schema([("qid", pa.string()), ("index", pa.string()), ("error", pa.string())])


@dataclass(frozen=True, slots=True)
class NodeSpan:
    """A node of an index and the lines it spans (1-based, inclusive)."""

    node_id: str
    kind: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Gold:
    """The judged files and definitions of one patch, each sorted."""

    files: tuple[str, ...]
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PatchRow:
    """One row of a query set that carries a patch."""

    qid: str
    index: str
    patch: str | None
    repo: str | None = None
    rev: str | None = None


def judge(rows: Sequence[PatchRow], index_root: str | os.PathLike, mirror_root: str | os.PathLike | None = None,
          log: Callable[[str], None] | None = None) -> tuple[pa.Table, pa.Table]:
    """The qrels (`QRELS_SCHEMA`) of every row's patch over its index under `index_root`, and
    the error rows (`ERRORS_SCHEMA`) of those that could not be judged: no patch, no index,
    no git directory or revision, a patch that is not a diff or does not apply."""
    log = log or (lambda message: None)
    judged: list[dict] = []
    errors: list[dict] = []
    spans_of: dict[str, dict[str, list[NodeSpan]]] = {}
    for row in rows:
        try:
            if row.patch is None:
                raise BadInputError("the row has no patch", fix="give the row a unified diff in `patch`")
            folder = _index_folder(row.index, index_root)
            if folder not in spans_of:
                spans_of[folder] = _load_spans(folder)
            lines_of = None
            if row.repo is not None and row.rev is not None:
                gitdir = find_git_dir(row.repo, mirror_root)
                if gitdir is None:
                    where = f" under --mirror-root {mirror_root}" if mirror_root is not None else ""
                    raise BadInputError(f"no git directory for repo {row.repo!r}{where}",
                                        fix="fetch the repository's mirror, or pass --mirror-root its folder")
                lines_of = _lines_of(GitTree.open(gitdir, row.rev, row.index))
            gold = gold_of(read_patch(row.patch), spans_of[folder], lines_of)
        except BadInputError as exc:
            errors.append({"qid": row.qid, "index": row.index, "error": str(exc)})
            log(f"{row.qid}: {exc}")
            continue
        judged += [{"qid": row.qid, "node_id": None, "file": f, "relevance": 1} for f in gold.files]
        judged += [{"qid": row.qid, "node_id": n, "file": n.split("::", 1)[0], "relevance": 1} for n in gold.nodes]
    return (pa.Table.from_pylist(judged, schema=QRELS_SCHEMA), pa.Table.from_pylist(errors, schema=ERRORS_SCHEMA))


def gold_of(changes: Sequence[FileChange], spans: Mapping[str, Sequence[NodeSpan]],
            lines_of: Callable[[str], list[str] | None] | None = None) -> Gold:
    """The judgments of a patch's `changes` over an index whose nodes, by file, are `spans`.

    `lines_of(path)` gives the file's lines at the snapshot (None: it has no such file);
    without it, only the line numbers are checked against the file's node.

    Raises:
        BadInputError: the patch does not apply to the snapshot (the first difference named).
    """
    files: set[str] = set()
    nodes: set[str] = set()
    for change in changes:
        if change.added:
            continue
        path = change.path
        _check_applies(change, spans.get(path), lines_of)
        if path not in spans:
            continue        # not a file the index holds: docs, build files, data
        files.add(path)
        for line in change.touched:
            node = innermost(spans[path], line)
            if node is not None:
                nodes.add(node)
    return Gold(tuple(sorted(files)), tuple(sorted(nodes)))


def innermost(spans: Sequence[NodeSpan], line: int) -> str | None:
    """The id of the smallest definition (not the file) whose span holds `line`; ties go to
    the later start, then the smaller id (None when no definition holds it)."""
    best: tuple[int, int, str] | None = None
    for s in spans:
        if s.kind != FILE_KIND and s.start_line <= line <= s.end_line:
            key = (s.end_line - s.start_line, -s.start_line, s.node_id)
            if best is None or key < best:
                best = key
    return best[2] if best is not None else None


def spans_by_file(table: pa.Table) -> dict[str, list[NodeSpan]]:
    """An index's nodes (node_id, kind, file, start_line, end_line columns) grouped by file."""
    out: dict[str, list[NodeSpan]] = {}
    cols = [table.column(c).to_pylist() for c in ("node_id", "kind", "file", "start_line", "end_line")]
    for node_id, kind, file, start, end in zip(*cols):
        out.setdefault(file, []).append(NodeSpan(node_id, kind, int(start or 0), int(end or 0)))
    return out


def read_patch_rows(path: str | os.PathLike) -> list[PatchRow]:
    """The rows of a query set (Parquet or JSONL) or a SWE-bench-shaped file: `qid` (or
    `instance_id`), `patch`, optional `index` (default: the qid), `repo`, `rev` (or
    `base_commit`).

    Raises:
        BadInputError: the file is missing or unreadable, lacks a qid or patch column, or
            repeats a qid.
    """
    p = Path(path)
    records = read_rows(p, "query set", "pass a Parquet or JSONL file with qid (or instance_id) and patch columns")
    names = set().union(*(r.keys() for r in records)) if records else set()
    qid_col = column_of(names, "qid")
    if qid_col is None or "patch" not in names:
        lacking = [w for w, ok in (("qid (or instance_id)", qid_col), ("patch", "patch" in names)) if not ok]
        raise BadInputError(f"query set {p} lacks column(s) {', '.join(lacking)} "
                            f"(has: {', '.join(sorted(names)) or 'no rows'})", path=str(p),
                            fix="write one row per query with qid and patch (a unified diff against its snapshot), "
                                "or pass a SWE-bench-shaped file (instance_id, patch, repo, base_commit)")
    rev_col = column_of(names, "rev")
    rows: list[PatchRow] = []
    seen: set[str] = set()
    for n, r in enumerate(records, 1):
        qid = _text(r.get(qid_col))
        if qid is None:
            raise BadInputError(f"query set {p}, row {n}: {qid_col} is empty", path=str(p),
                                fix=f"give every row a {qid_col}")
        if qid in seen:
            raise BadInputError(f"query set {p} repeats {qid_col} {qid!r}", path=str(p), fix="make every qid unique")
        seen.add(qid)
        rows.append(PatchRow(qid, _text(r.get("index")) or qid, _text(r.get("patch")),
                             _text(r.get("repo")), _text(r.get(rev_col)) if rev_col else None))
    return rows


def _lines_of(tree) -> Callable[[str], list[str] | None]:
    """A snapshot's file lines by path (None when it holds no such file)."""
    def lines(path: str) -> list[str] | None:
        data = tree.read_path(path)
        return data.decode("utf-8", "replace").splitlines() if data is not None else None
    return lines


def _index_folder(name: str, root: str | os.PathLike) -> str:
    from codenib.batch.query_rows import resolve_index_name

    folder, problem = resolve_index_name(name, root)
    if problem:
        raise BadInputError(problem)
    if not folder:
        raise BadInputError(f"no index {name!r} under --index-root {root}",
                            fix="build it first (`codenib index CHECKOUT --out ROOT/NAME`), or correct the row's index")
    return folder


def _load_spans(folder: str) -> dict[str, list[NodeSpan]]:
    """The node spans of the index at `folder` (its manifest and checksums verified first)."""
    from codenib.core.artifact import read_manifest
    from codenib.core.store_layout import read_nodes

    manifest = read_manifest(folder)
    return spans_by_file(read_nodes(folder, manifest, ["node_id", "kind", "file", "start_line", "end_line"]))


def _check_applies(change: FileChange, spans: Sequence[NodeSpan] | None,
                   lines_of: Callable[[str], list[str] | None] | None) -> None:
    path = change.path
    if lines_of is not None:
        lines = lines_of(path)
        if lines is None:
            raise BadInputError(f"the patch changes {path}, which the snapshot does not hold",
                                fix="give the patch against the row's revision")
        for n, text in change.expects:
            if n > len(lines) or lines[n - 1] != text:
                found = "past the end of the file" if n > len(lines) else repr(lines[n - 1][:80])
                raise BadInputError(f"the patch does not apply to {path}: line {n} is {found}, the patch "
                                    f"expects {text[:80]!r}", fix="give the patch against the row's revision")
        return
    if spans is None:
        return          # not indexed, and no source to read: nothing to check against
    last = max((s.end_line for s in spans if s.kind == FILE_KIND), default=None)
    beyond = [n for n, _ in change.expects if last is not None and n > last]
    if beyond:
        raise BadInputError(f"the patch does not apply to {path}: it shows line {beyond[0]}, and the file has "
                            f"{last} lines in the index", fix="give the patch against the index's revision")


def _text(v) -> str | None:
    if v is None:
        return None
    s = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return s if s.strip() else None
