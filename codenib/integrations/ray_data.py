"""CodeNib retrieval as a step of your own Ray Data pipeline.

```python
import ray
from codenib.integrations.ray_data import CodeNibRetrieve, read_results

queries = ray.data.read_parquet("queries.parquet")          # qid, query (optional budget, mode)
queries = queries.repartition(8)                             # see "Blocks" below
results = queries.map_batches(CodeNibRetrieve, fn_constructor_kwargs={"index": "idx/click", "k": 10},
                              concurrency=2, num_cpus=0.5, batch_format="pyarrow")  # a CPU left for reads
results.write_parquet("my-results/")                          # the DESIGN result rows
earlier = read_results("runs/r1")                             # a `codenib run` folder as a Dataset
```

Each actor of the pool loads the index once (checksums verified) and answers every batch
sent to it with the rows `codenib run` writes for the same queries and options (`qid`,
`rank`, `node_id`, `file`, `score`, `plan`, `index`, `run_tag`): the planner plans each query in
the actor, and the plans run in-process as in the local path of `codenib run`. A query that
cannot run (empty text) yields no rows. Use `codenib run` for resumable, exactly-once jobs with
plans.parquet, provenance and a lock; use this for a retrieval step inside a pipeline of your
own (Ray Data retries and streams, but keeps no record of what was committed).

Blocks: Ray Data gives each block of the dataset to one actor as one task. A query file
written as one row group reads as one block, whatever `override_num_blocks` asks (Ray 2.60),
so one actor would answer every query while the others idle: `repartition` the queries into
a few blocks per actor first (`scripts/bench_ray_data.py` measures the difference).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa

from codenib.core.errors import BadInputError
from codenib.core.types import RESULTS_SCHEMA

_log = logging.getLogger(__name__)

#: What a batch is named in error messages (it has no file).
BATCH = "<Ray Data batch>"


class CodeNibRetrieve:
    """A callable class for `Dataset.map_batches`: one loaded index per actor.

    Args:
        index: an index folder (`codenib index ... --out DIR`); written into the `index` column.
        mode, budget, k, rerank, llm, localise_weights, run_tag: as `codenib run`'s options
            (`llm` is the [llm] settings as a mapping; the key comes from the environment).
        device: where the dense encoder runs (`auto`, `cpu`, `cuda`).

    Raises:
        BadInputError: an option value or an index that cannot be used (in the constructor,
            so the pool fails before any batch), or a batch without `qid` and `query`.
    """

    def __init__(self, index: str, *, mode: str = "auto", budget: str = "balanced", k: int = 100,
                 rerank: str | None = None, llm: dict | None = None, localise_weights: str | None = None,
                 run_tag: str | None = None, device: str = "auto"):
        from codenib.core.artifact import read_manifest
        from codenib.batch.options import RunOptions
        from codenib.model.session import RetrievalSession
        from codenib.batch.worker import ShardOptions
        from codenib.index.loaded import check_encoder
        from codenib.model.planner import planner_chooses
        path = Path(index)
        if not (path / "manifest.json").is_file():
            raise BadInputError("the index folder does not exist or holds no manifest.json", path=str(index),
                                fix=f"build it with `codenib index REPO --out {index}`")
        options = RunOptions(queries=BATCH, index=str(index), out=BATCH, mode=mode, budget=budget, k=k,
                             rerank=rerank, llm=dict(llm) if llm else None, localise_weights=localise_weights,
                             run_tag=run_tag, device=device, progress=False)
        options.validate()
        check_encoder(read_manifest(path, verify=False), None, path)
        self.index = str(index)
        self._path = str(path)
        self._options = options
        self._plan_options = options.plan_options()
        weights = options.weights()
        # Verified once here (checksums), as the driver of `codenib run` verifies before its actors load.
        self._session = RetrievalSession.load(self._path, verify=True, device=device, llm=options.llm,
                                              weights=weights)
        self._session.check()
        self._caps = {self._path: self._session.capabilities}
        self._symbols = {self._path: self._session.symbols} if planner_chooses(mode) else {}
        self._shard_opts = ShardOptions(budget, mode, k, rerank, run_tag or f"codenib-{mode}-{budget}",
                                        llm_configured=bool(llm), localise_weights=weights)

    def __repr__(self) -> str:
        o = self._options
        return f"CodeNibRetrieve(index={self.index!r}, mode={o.mode!r}, budget={o.budget!r}, k={o.k})"

    def __call__(self, batch: Any) -> pa.Table:
        """Result rows (RESULTS_SCHEMA) of the queries of `batch` (a pyarrow Table, a pandas
        DataFrame or a dict of columns: `qid`, `query`, optional `budget` and `mode`)."""
        from codenib.batch.query_rows import Shard
        from codenib.batch.worker import process_shard
        from codenib.model.planner import plan_rows
        rows = self._rows(_as_table(batch))
        if not rows:
            return RESULTS_SCHEMA.empty_table()
        planned = plan_rows(rows, self._plan_options, self._caps, self._symbols)
        results, plans = process_shard(Shard(0, self.index, self._path, planned), self._session, self._shard_opts)
        errors = [(q, e) for q, e in zip(plans.column("qid").to_pylist(), plans.column("error").to_pylist()) if e]
        if errors:
            _log.warning("CodeNibRetrieve: %d of %d queries failed and have no rows (first: %s: %s)",
                         len(errors), len(rows), *errors[0])
        return results

    def _rows(self, table: pa.Table):
        from codenib.batch.query_files import check_column_types
        from codenib.batch.query_rows import QueryRow
        from codenib.model.planner import MODES
        from codenib.model.planspec import BUDGETS
        from codenib.core.querytext import clean_query_text

        missing = [c for c in ("qid", "query") if c not in table.column_names]
        if missing:
            raise BadInputError(f"the batch lacks column(s) {missing}; it has {sorted(table.column_names)}",
                                path=BATCH, fix="give the dataset `qid` and `query` columns")
        check_column_types(table, BATCH)
        n = table.num_rows

        def col(name: str) -> list:
            return table.column(name).to_pylist() if name in table.column_names else [None] * n

        rows = []
        for qid, query, budget, mode in zip(col("qid"), col("query"), col("budget"), col("mode")):
            if qid is None or str(qid) == "":
                raise BadInputError("a row of the batch has an empty qid", path=BATCH, fix="give every row a qid")
            # As `batch/scan.py` reads a query set: a row's mode is a planner mode, never `all`.
            for what, value, valid in (("budget", budget, tuple(BUDGETS)), ("mode", mode, MODES)):
                if value not in (None, "") and value not in valid:
                    raise BadInputError(f"query {qid}: invalid {what} {value!r}", path=BATCH,
                                        fix=f"use one of: {', '.join(valid)} (or leave it empty)")
            cleaned = clean_query_text(query)
            rows.append(QueryRow(str(qid), cleaned.text, self.index, self._path, budget or None, mode or None,
                                 None if cleaned.text.strip() else "empty query text",
                                 text_changes=tuple(cleaned.changes().items())))
        return tuple(rows)


def read_results(path: str, *, allow_partial: bool = False, plans: bool = False):
    """A results folder of `codenib run` or `codenib rerank` as a Ray Dataset.

    The result rows of its committed part files (`plans=True`: the rows of plans.parquet,
    one per query and plan). A folder without `_SUCCESS` (a job still running, or stopped)
    is bad input unless `allow_partial`.

    Raises:
        BadInputError: not a results folder, or unfinished without `allow_partial`.
    """
    import ray.data

    from codenib.core.results import ResultsFolder

    folder = ResultsFolder(Path(path))
    if not folder.path.is_dir() or not (folder.manifest_path.is_file() or folder.parts()):
        raise BadInputError("not a results folder (no _manifest.json or part-*.parquet)", path=str(path),
                            fix="pass the --out folder of `codenib run` or `codenib rerank`")
    if not folder.complete and not allow_partial:
        raise BadInputError("the results folder has no _SUCCESS: its job has not finished", path=str(path),
                            fix="re-run the same `codenib run` to finish it, or pass allow_partial=True")
    if plans:
        if not folder.plans_path.is_file():
            raise BadInputError("the results folder holds no plans.parquet", path=str(path),
                                fix="re-run the job that wrote it")
        return ray.data.read_parquet(str(folder.plans_path))
    parts = folder.parts()
    if not parts:
        return ray.data.from_arrow(RESULTS_SCHEMA.empty_table())
    return ray.data.read_parquet([str(p) for p in parts])


# --- private helpers --------------------------------------------------------------------

def _as_table(batch: Any) -> pa.Table:
    if isinstance(batch, pa.Table):
        return batch
    if isinstance(batch, dict):
        return pa.table({k: pa.array(list(v)) for k, v in batch.items()})
    if hasattr(batch, "to_dict") and hasattr(batch, "columns"):  # a pandas DataFrame
        return pa.Table.from_pandas(batch, preserve_index=False)
    raise BadInputError(f"a batch must be a pyarrow Table, a pandas DataFrame or a dict of columns, got "
                        f"{type(batch).__name__}", path=BATCH, fix='pass batch_format="pyarrow" to map_batches')
