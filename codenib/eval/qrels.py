"""Reading relevance judgments (Parquet qrels or a TREC qrels text file) into `JudgedQrels`."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pyarrow as pa

from codenib.core.errors import BadInputError
from codenib.eval.io import Warn, read_parquet, string_column, warn_stderr
from codenib.eval.trec import trec_lines
from codenib.core.types import file_of


#: Columns of the qrels CodeNib writes (`codenib qrels`, a job's [qrels]); node rows carry their file.
QRELS_SCHEMA = pa.schema([("qid", pa.string()), ("node_id", pa.string()), ("file", pa.string()),
                          ("relevance", pa.int64())])


@dataclass(frozen=True, slots=True)
class JudgedQrels:
    """Relevance judgments at node level (None when only files are judged) and file level."""

    source: str
    nodes: dict[str, dict[str, int]] | None
    files: dict[str, dict[str, int]]

    @property
    def qids(self) -> set[str]:
        """Every judged qid (relevant or not)."""
        return set(self.files) | set(self.nodes or {})


def read_qrels(path: str | os.PathLike, *, warn: Warn | None = None) -> JudgedQrels:
    """Read qrels (Parquet: qid, node_id and/or file, relevance; or a TREC qrels text file)."""
    warn = warn or warn_stderr
    p = Path(path)
    if not p.is_file():
        raise BadInputError("no such qrels file", path=str(p),
                            fix="pass a Parquet file with columns qid, node_id (or file), relevance")
    if p.suffix != ".parquet":
        return _read_trec_qrels(p)
    table = read_parquet(p, "qrels")
    names = set(table.column_names)
    missing = [c for c in ("qid", "relevance") if c not in names]
    if missing or not names & {"node_id", "file"}:
        need = missing + ([] if names & {"node_id", "file"} else ["node_id or file"])
        raise BadInputError(
            f"qrels file {p} lacks column(s) {', '.join(need)} (has: {', '.join(sorted(names))})",
            path=str(p), fix="write qrels with columns qid (string), node_id and/or file (string), "
                             "relevance (int, >0 relevant)")
    rel = _integer_relevance(table, p, warn)
    qids = string_column(table, "qid", p, "qrels")
    nodes = table.column("node_id").to_pylist() if "node_id" in names else [None] * len(qids)
    files = table.column("file").to_pylist() if "file" in names else [None] * len(qids)
    node_q: dict[str, dict[str, int]] = defaultdict(dict)
    file_q: dict[str, dict[str, int]] = defaultdict(dict)
    duplicates = 0
    for i, (qid, node, f, r) in enumerate(zip(qids, nodes, files, rel)):
        if node is None and f is None:
            raise BadInputError(f"qrels file {p}, row {i}: both node_id and file are empty",
                                path=str(p), fix="give every judgment a node_id or a file")
        if node is not None:
            node = str(node)
            duplicates += node in node_q[qid]
            node_q[qid][node] = max(r, node_q[qid].get(node, r))
        f = str(f) if f is not None else file_of(node)
        file_q[qid][f] = max(r, file_q[qid].get(f, r))
    if duplicates:
        warn(f"{p}: {duplicates} duplicate (qid, node_id) judgment(s); kept the highest relevance")
    has_nodes = any(n is not None for n in nodes)
    return JudgedQrels(source=str(p), nodes=dict(node_q) if has_nodes else None, files=dict(file_q))


def merge_qrels(parts: Sequence[JudgedQrels], source: str | None = None) -> JudgedQrels:
    """Several judgment files as one (a set's file judgments and its function judgments): every
    judged item of every part, the highest relevance where two parts judge one item; no node
    judgments when no part has any."""
    nodes: dict[str, dict[str, int]] = defaultdict(dict)
    files: dict[str, dict[str, int]] = defaultdict(dict)
    for part in parts:
        for mine, theirs in ((nodes, part.nodes or {}), (files, part.files)):
            for qid, rels in theirs.items():
                for item, r in rels.items():
                    mine[qid][item] = max(r, mine[qid].get(item, r))
    has_nodes = any(part.nodes is not None for part in parts)
    return JudgedQrels(source=source or " + ".join(p.source for p in parts),
                       nodes=dict(nodes) if has_nodes else None, files=dict(files))


def qrels_table(qrels: JudgedQrels) -> pa.Table:
    """Judgments as the Parquet rows `read_qrels` reads back to the same `JudgedQrels`
    (`QRELS_SCHEMA`): a row per judged node (with its file), then a row per judged file;
    sorted by qid, then item."""
    rows: list[dict] = []
    for qid in sorted(qrels.qids):
        rows += [{"qid": qid, "node_id": n, "file": file_of(n), "relevance": r}
                 for n, r in sorted((qrels.nodes or {}).get(qid, {}).items())]
        rows += [{"qid": qid, "node_id": None, "file": f, "relevance": r}
                 for f, r in sorted(qrels.files.get(qid, {}).items())]
    return pa.Table.from_pylist(rows, schema=QRELS_SCHEMA)


# --- private helpers --------------------------------------------------------------------

def _integer_relevance(table: pa.Table, path: Path, warn: Warn) -> list[int]:
    col = table.column("relevance")
    fix = ("write relevance as integers (1 or more = relevant, 0 = judged not relevant), e.g. "
           "df['relevance'] = df['relevance'].astype('int64') before writing")
    if col.null_count:
        raise BadInputError(f"qrels file {path}: column relevance has {col.null_count} empty value(s)",
                            path=str(path), fix=fix)
    if pa.types.is_integer(col.type):
        return [int(v) for v in col.to_pylist()]
    if pa.types.is_floating(col.type):
        values = col.to_pylist()
        if all(math.isfinite(v) and float(v).is_integer() for v in values):
            warn(f"{path}: column relevance is {col.type}, not integer; its values are whole "
                 "numbers, so they are used as integers")
            return [int(v) for v in values]
        bad = next(v for v in values if not (math.isfinite(v) and float(v).is_integer()))
        raise BadInputError(f"qrels file {path}: column relevance holds non-integer value {bad!r}",
                            path=str(path), fix=fix)
    raise BadInputError(f"qrels file {path}: column relevance has type {col.type}, not integer",
                        path=str(path), fix=fix)


def _read_trec_qrels(path: Path) -> JudgedQrels:
    nodes: dict[str, dict[str, int]] = defaultdict(dict)
    files: dict[str, dict[str, int]] = defaultdict(dict)
    for n, fields in trec_lines(path, 4, "TREC qrels", "write each line as: qid 0 node_id relevance, "
                                                      "or pass a Parquet qrels file"):
        qid, _, doc, rel = fields
        try:
            r = int(rel)
        except ValueError:
            raise BadInputError(f"TREC qrels {path}, line {n}: relevance {rel!r} is not an integer",
                                path=str(path), fix="write relevance as an integer (1 = relevant)") from None
        nodes[qid][doc] = max(r, nodes[qid].get(doc, r))
        f = file_of(doc)
        files[qid][f] = max(r, files[qid].get(f, r))
    return JudgedQrels(source=str(path), nodes=dict(nodes), files=dict(files))
