"""CodeNib as a PyTerrier transformer (`pip install 'codenib[pyterrier]'`).

```python
import pyterrier as pt
from codenib.integrations.pyterrier import CodeNib, CodeNibFiles

auto, sparse = CodeNib("idx/click", mode="auto"), CodeNib("idx/click", mode="sparse")
pt.Experiment([auto, sparse], topics, qrels, eval_metrics=["RR@10", "R@10", "nDCG@10"])
```

`CodeNib` takes topics (`qid`, `query`) and returns PyTerrier's result frame: `qid`, `query`,
`docno` (the node id), `score`, `rank` (0-based, PyTerrier's convention), and CodeNib's `file`
and `plan`. `CodeNibFiles` ranks files instead (`docno` = file, a file ranking where its first
node ranks), for file-level qrels. The queries run as `codenib run` runs them (the planner per
query, then the plan in this process). PyTerrier and ir_measures order a query's results by
score: where CodeNib's scores are tied or out of rank order, `score` is rank-derived (n - rank),
as in `codenib eval --export-trec`, so `pt.Experiment` scores CodeNib's ranking and its numbers
are `codenib eval`'s; `codenib_score` keeps the original.

Only PyTerrier's Python core is used: nothing here starts Java or downloads Terrier.
"""

from __future__ import annotations

import math
from typing import Any

from codenib.core.errors import BadInputError, MissingDependencyError

try:
    import pandas as pd
    import pyterrier as pt
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(exc.name or "pyterrier", "'codenib[pyterrier]'",
                                 "codenib.integrations.pyterrier") from None

from codenib.integrations.ray_data import CodeNibRetrieve

#: Columns of the frames `CodeNib` returns, in order.
COLUMNS = ("qid", "query", "docno", "score", "rank", "file", "plan", "codenib_score")


class CodeNib(pt.Transformer):
    """Retrieve from a CodeNib index: topics (`qid`, `query`) in, ranked node ids out.

    Args:
        index: an index folder (`codenib index REPO --out DIR`).
        mode: `auto` (the planner chooses per query), `sparse`, `dense`, `hybrid` or `graph`.
        budget, k, rerank, llm, localise_weights, device: as `codenib run`'s options.

    Raises:
        BadInputError: an option value, or an index that cannot be used.
    """

    level = "node"

    def __init__(self, index: str, *, mode: str = "auto", budget: str = "balanced", k: int = 100,
                 rerank: str | None = None, llm: dict | None = None, localise_weights: str | None = None,
                 device: str = "auto"):
        if mode == "all":
            raise BadInputError("mode 'all' gives several rankings per query, which a PyTerrier result frame "
                                "cannot hold", fix="use one CodeNib transformer per mode in pt.Experiment")
        self.index, self.mode, self.budget, self.k, self.rerank = str(index), mode, budget, k, rerank
        self._retrieve = CodeNibRetrieve(index, mode=mode, budget=budget, k=k, rerank=rerank, llm=llm,
                                         localise_weights=localise_weights, device=device,
                                         run_tag=f"codenib-{mode}-{budget}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.index!r}, mode={self.mode!r}, budget={self.budget!r}, k={self.k})"

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        """The ranked results of `topics` (a query without results has no rows)."""
        import pyarrow as pa

        if not isinstance(topics, pd.DataFrame):
            raise BadInputError(f"topics must be a pandas DataFrame, got {type(topics).__name__}",
                                fix="pass a frame with columns qid and query")
        missing = [c for c in ("qid", "query") if c not in topics.columns]
        if missing:
            raise BadInputError(f"topics lack column(s) {missing}; they have {list(topics.columns)}",
                                fix="pass a frame with columns qid and query (pt.get_dataset(...).get_topics())")
        qids = [str(q) for q in topics["qid"]]
        query_of = dict(zip(qids, topics["query"]))
        table = self._retrieve(pa.table({"qid": pa.array(qids, pa.string()),
                                         "query": pa.array([_text(q) for q in topics["query"]], pa.string())}))
        by_q: dict[str, list[dict]] = {}
        for r in table.to_pylist():
            by_q.setdefault(r["qid"], []).append(r)
        rows = []
        for qid in dict.fromkeys(qids):  # topics' order
            ranked = self._ranked(sorted(by_q.get(qid, []), key=lambda r: r["rank"]))
            scores = [r["score"] for r in ranked]
            if not _strictly_decreasing(scores):
                scores = [float(len(ranked) - i) for i in range(len(ranked))]
            for i, (r, s) in enumerate(zip(ranked, scores)):
                rows.append({"qid": qid, "query": query_of[qid], "docno": r["docno"], "score": s, "rank": i,
                             "file": r["file"], "plan": r["plan"], "codenib_score": r["score"]})
        return pd.DataFrame(rows, columns=list(COLUMNS))

    def _ranked(self, rows: list[dict]) -> list[dict]:
        return [{**r, "docno": r["node_id"]} for r in rows]


class CodeNibFiles(CodeNib):
    """`CodeNib` at file level: `docno` is a file, ranked where its first node ranks (as
    `codenib eval`'s file level), with that node's score."""

    level = "file"

    def _ranked(self, rows: list[dict]) -> list[dict]:
        seen: set[str] = set()
        out = []
        for r in rows:
            if r["file"] not in seen:
                seen.add(r["file"])
                out.append({**r, "docno": r["file"]})
        return out


# --- private helpers --------------------------------------------------------------------

def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None  # pandas' missing value: an "empty query text" error, no rows
    return value if isinstance(value, str) else str(value)


def _strictly_decreasing(values: list[float]) -> bool:
    return all(math.isfinite(v) for v in values) and all(a > b for a, b in zip(values, values[1:]))
