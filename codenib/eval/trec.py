"""TREC run files (``qid Q0 docno rank score tag``): reading, writing, and rows of a run.

Not ir_measures' readers: `ir_measures.read_trec_run` drops the rank column, which orders
tied scores here, and neither it nor `read_trec_qrels` names the line of a malformed row (bad
input must name the file, line and fix). What is written here, ir_measures reads back with
the same numbers (tests/eval/test_trec_ir_measures.py).
"""

from __future__ import annotations

import math
import os
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from codenib.core.errors import BadInputError
from codenib.core.outputs import in_place_write, through_links, writing
from codenib.eval.io import Warn, warn_stderr


@dataclass(frozen=True, slots=True)
class TrecRow:
    """One line of a TREC run: ``qid Q0 docno rank score tag``."""

    qid: str
    docno: str
    rank: int
    score: float
    tag: str


def read_trec_run(path: str | os.PathLike) -> list[TrecRow]:
    """Read a TREC run file (``qid Q0 docno rank score tag``, whitespace separated)."""
    p = Path(path)
    rows = []
    for n, fields in trec_lines(p, 6, "TREC run", "write each line as: qid Q0 docno rank score tag"):
        qid, _, docno, rank, score, tag = fields
        try:
            rows.append(TrecRow(qid, docno, int(rank), float(score), tag))
        except ValueError:
            raise BadInputError(f"TREC run {p}, line {n}: rank {rank!r} or score {score!r} is "
                                "not a number", path=str(p),
                                fix="write rank as an integer and score as a number") from None
    return rows


def trec_lines(path: Path, width: int, what: str, fix: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each non-blank line of a whitespace-separated TREC file.

    Raises:
        BadInputError: a line has other than `width` fields (`fix` says how to write one).
    """
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != width:
                raise BadInputError(f"{what} {path}, line {n}: {len(fields)} fields, expected {width}",
                                    path=str(path), fix=fix)
            yield n, fields


def write_trec_run(rows: Iterable[TrecRow], path: str | os.PathLike) -> int:
    """Write `rows` as a TREC run (atomically); returns the number of lines."""
    p = Path(path)
    rows = list(rows)
    for r in rows:
        for what, value in (("qid", r.qid), ("node id", r.docno), ("tag", r.tag)):
            if not value or any(c.isspace() for c in value):
                raise BadInputError(f"{what} {value!r} is empty or holds whitespace and "
                                    "cannot be written to a TREC run", path=str(p),
                                    fix="keep the results in Parquet, or rename it")
    if in_place_write(p):
        # A device or a pipe (/dev/stdout, a FIFO): written in place. A rename would replace
        # the device node itself (as root, `/dev/full` became a regular file).
        with writing(p), open(p, "w", encoding="utf-8") as fh:
            fh.writelines(_trec_line(r) for r in rows)
        return len(rows)
    p = through_links(p)      # a link to a file: the file is replaced, the link stays
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.parent / f".{p.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with writing(p):
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.writelines(_trec_line(r) for r in rows)
            os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return len(rows)


def _trec_line(r: TrecRow) -> str:
    return f"{r.qid} Q0 {r.docno} {r.rank} {r.score!r} {r.tag}\n"


def trec_rows(run: Mapping[str, Sequence[str]], scores: Mapping[str, Sequence[float]],
              tag: str, *, warn: Warn | None = None) -> list[TrecRow]:
    """TREC rows of a run, with scores that keep its order under trec_eval.

    trec_eval (and ir_measures) re-sort each query by score; where a query's scores are
    tied, missing or out of rank order, they are replaced by ``n - rank + 1`` so the
    exported run evaluates exactly like the Parquet one.
    """
    warn = warn or warn_stderr
    tag = "_".join(tag.split()) or "codenib"
    rows, rewritten = [], 0
    for qid in sorted(run):
        docs = run[qid]
        s = list(scores.get(qid, ()))
        if len(s) != len(docs) or not _strictly_decreasing(s):
            s = [float(len(docs) - i) for i in range(len(docs))]
            rewritten += 1
        rows.extend(TrecRow(qid, d, i + 1, s[i], tag) for i, d in enumerate(docs))
    if rewritten:
        warn(f"{rewritten} query(ies) had tied or out-of-order scores; wrote rank-derived scores "
             "so that trec_eval keeps CodeNib's ranking")
    return rows


def trec_run_to_rankings(rows: Iterable[TrecRow]) -> tuple[dict[str, list[str]], dict[str, list[float]], str]:
    """Rankings as trec_eval orders them (score descending; ties by rank), scores and the tag."""
    by_q: dict[str, list[TrecRow]] = defaultdict(list)
    tag = ""
    for r in rows:
        by_q[r.qid].append(r)
        tag = tag or r.tag
    run, scores = {}, {}
    for qid, rs in by_q.items():
        rs.sort(key=lambda r: (-r.score, r.rank))
        run[qid] = [r.docno for r in rs]
        scores[qid] = [r.score for r in rs]
    return run, scores, tag


# --- private helpers --------------------------------------------------------------------

def _strictly_decreasing(values: Sequence[float]) -> bool:
    return all(math.isfinite(v) for v in values) and all(a > b for a, b in zip(values, values[1:]))
