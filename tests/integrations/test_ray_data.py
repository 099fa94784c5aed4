"""Ray Data: `map_batches(CodeNibRetrieve, ...)` on the local Ray gives the rows `codenib run`
writes for the same queries, and `read_results` opens a results folder as a Dataset."""

import pyarrow as pa
import pytest

from codenib.batch.driver import RunOptions, run_job
from codenib.core.errors import BadInputError
from codenib.integrations.ray_data import CodeNibRetrieve, read_results
from codenib.core.results import read_results as read_result_rows
from codenib.core.types import RESULTS_SCHEMA
from tests.batch.conftest import QUERIES, write_queries


def key(rows):
    return sorted((r["qid"], r["rank"], r["node_id"], r["file"], r["plan"], r["index"], r["run_tag"]) for r in rows)


def scores(rows):
    return [s for _, s in sorted(((r["qid"], r["rank"]), r["score"]) for r in rows)]


@pytest.fixture(scope="module")
def codenib_run(ray_session, fixture_index_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rd")
    queries = write_queries(tmp / "q.parquet", QUERIES)
    out = tmp / "run"
    run_job(RunOptions(queries=str(queries), index=str(fixture_index_dir), out=str(out), k=5, shard_size=4,
                       progress=False, run_tag="rd"), log=lambda m: None)
    return queries, out


def test_map_batches_gives_the_rows_of_codenib_run(ray_session, fixture_index_dir, codenib_run):
    ray = ray_session
    queries, out = codenib_run
    ds = ray.data.read_parquet(str(queries)).map_batches(
        CodeNibRetrieve, fn_constructor_kwargs={"index": str(fixture_index_dir), "k": 5, "run_tag": "rd"},
        concurrency=1, num_cpus=0.5, batch_size=3, batch_format="pyarrow")
    rows = ds.take_all()
    expected = read_result_rows(out).to_pylist()
    assert len(expected) > 0 and len({r["qid"] for r in expected}) == len(QUERIES)
    assert key(rows) == key(expected)
    # Dense scores of another process's encoder agree to float error.
    assert scores(rows) == pytest.approx(scores(expected), abs=1e-6)
    assert set(rows[0]) == set(RESULTS_SCHEMA.names)


def test_read_results_opens_a_results_folder(ray_session, codenib_run):
    _, out = codenib_run
    ds = read_results(str(out))
    rows, expected = ds.take_all(), read_result_rows(out).to_pylist()
    assert key(rows) == key(expected) and scores(rows) == scores(expected)
    plans = read_results(str(out), plans=True).take_all()
    assert sorted(r["qid"] for r in plans) == sorted(q["qid"] for q in QUERIES)


def test_read_results_refuses_what_is_not_a_finished_results_folder(ray_session, codenib_run, tmp_path):
    with pytest.raises(BadInputError, match="not a results folder"):
        read_results(str(tmp_path))
    _, out = codenib_run
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    for p in out.glob("part-*.parquet"):
        (unfinished / p.name).write_bytes(p.read_bytes())
    with pytest.raises(BadInputError, match="_SUCCESS"):
        read_results(str(unfinished))
    assert read_results(str(unfinished), allow_partial=True).count() == read_result_rows(out).num_rows


def test_the_callable_in_process_and_its_bad_input(fixture_index_dir, tmp_path):
    retrieve = CodeNibRetrieve(str(fixture_index_dir), mode="sparse", k=3)
    out = retrieve(pa.table({"qid": [1, 2], "query": ["slugify", "   "]}))
    # qid 1 is a string in the rows; the empty query yields none.
    assert set(out.column("qid").to_pylist()) == {"1"} and out.num_rows == 3
    assert out.column("rank").to_pylist() == [1, 2, 3]
    assert set(out.column("plan").to_pylist()) == {"fast_lexical"}
    assert retrieve({"qid": ["a"], "query": ["slugify"]}).num_rows == 3  # a dict of columns
    assert retrieve(pa.table({"qid": pa.array([], pa.string()), "query": pa.array([], pa.string())})).num_rows == 0
    with pytest.raises(BadInputError, match="lacks column"):
        retrieve(pa.table({"id": ["a"], "text": ["x"]}))
    with pytest.raises(BadInputError, match="invalid mode"):
        retrieve(pa.table({"qid": ["a"], "query": ["x"], "mode": ["turbo"]}))
    with pytest.raises(BadInputError, match="mode"):
        CodeNibRetrieve(str(fixture_index_dir), mode="turbo")
    with pytest.raises(BadInputError, match="manifest.json"):
        CodeNibRetrieve(str(tmp_path / "nothing"))


def test_a_row_of_mode_all_is_refused_as_codenib_run_refuses_it(fixture_index_dir):
    # `--mode all` is a run's option; a query set's `mode` column takes a planner mode only
    # (batch/scan.py refuses `all` there), and so does a Ray Data batch.
    retrieve = CodeNibRetrieve(str(fixture_index_dir), mode="sparse", k=3)
    with pytest.raises(BadInputError, match="invalid mode 'all'"):
        retrieve(pa.table({"qid": ["a"], "query": ["slugify"], "mode": ["all"]}))
