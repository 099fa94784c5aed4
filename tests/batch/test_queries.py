"""Query-set validation and sharding (no Ray needed)."""

import json

import pytest

from codenib.batch.queries import read_query_set
from codenib.commands.cli import main
from codenib.errors import BadInputError
from tests.batch.conftest import QUERIES, write_queries


def test_parquet_and_jsonl_read_the_same(tmp_path, sparse_only_index_dir):
    pq_path = write_queries(tmp_path / "q.parquet", QUERIES)
    jl = tmp_path / "q.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in QUERIES))
    a = read_query_set(pq_path, index=sparse_only_index_dir)
    b = read_query_set(jl, index=sparse_only_index_dir)
    assert [r.qid for r in a.rows] == [r.qid for r in b.rows] == [q["qid"] for q in QUERIES]
    assert a.digest == b.digest


def test_shards_group_by_index_and_keep_order(tmp_path, fixture_index_dir, sparse_only_index_dir):
    rows = [{"qid": f"q{i}", "query": "x", "index": ("fixture" if i % 2 else "sparse_only")} for i in range(7)]
    qs = read_query_set(write_queries(tmp_path / "q.parquet", rows), index_root=fixture_index_dir.parent.parent)
    # Both fixtures live under different temp folders: only names under the root resolve.
    assert {r.index for r in qs.rows} == {"fixture", "sparse_only"}
    shards = qs.shards(2)
    for s in shards:
        assert len({r.index for r in s.rows}) == 1 and len(s.rows) <= 2
    assert [s.shard_id for s in shards] == list(range(len(shards)))


@pytest.mark.parametrize("rows,match", [
    ([{"qid": "a"}], "missing column"),
    ([{"qid": "a", "query": "x"}, {"qid": "a", "query": "y"}], "duplicate qid.*'a' \\(rows 1 and 2\\)"),
    ([{"qid": "", "query": "x"}], "empty or missing qid in row\\(s\\) 1"),
    ([{"qid": "a", "query": "x", "budget": "cheap"}], "invalid `budget` in row\\(s\\) 1"),
])
def test_whole_file_problems_are_bad_input(tmp_path, sparse_only_index_dir, rows, match):
    path = write_queries(tmp_path / "q.parquet", rows)
    with pytest.raises(BadInputError, match=match):
        read_query_set(path, index=sparse_only_index_dir)


def test_row_problems_become_error_rows(tmp_path, sparse_only_index_dir):
    rows = [{"qid": "a", "query": "  "}, {"qid": "b", "query": "fine", "index": "nope"},
            {"qid": "c", "query": "fine", "index": sparse_only_index_dir.name}]
    qs = read_query_set(write_queries(tmp_path / "q.parquet", rows), index_root=sparse_only_index_dir.parent)
    errors = {r.qid: r.error for r in qs.rows}
    assert errors["a"] == "empty query text"
    assert "index 'nope' not found" in errors["b"] and errors["c"] is None
    assert any("1 queries have empty text" in w for w in qs.warnings)


def test_cli_bad_inputs_exit_2_naming_file_and_fix(tmp_path, sparse_only_index_dir, capsys):
    bad_json = tmp_path / "q.jsonl"
    bad_json.write_text('{"qid": "a", "query": "x"}\nnot json\n')
    out = tmp_path / "out"
    assert main(["run", "--queries", str(bad_json), "--index", str(sparse_only_index_dir), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "q.jsonl" in err and "line 2" in err and "fix:" in err
    assert main(["run", "--queries", str(tmp_path / "missing.parquet"), "--index", str(sparse_only_index_dir),
                 "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    good = write_queries(tmp_path / "q.parquet", QUERIES)
    assert main(["run", "--queries", str(good), "--index", str(tmp_path / "typo"), "--out", str(out)]) == 2
    assert "holds no manifest.json" in capsys.readouterr().err
    assert main(["run", "--queries", str(good), "--out", str(out)]) == 2
    assert "exactly one of --index and --index-root" in capsys.readouterr().err
    assert main(["run", "--queries", str(good), "--index", str(sparse_only_index_dir), "--out", str(out),
                 "-k", "0"]) == 2
    assert "-k must be at least 1" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_an_empty_query_set_is_bad_input_in_either_format(tmp_path, sparse_only_index_dir, suffix, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / f"q{suffix}"
    if suffix == ".parquet":
        pq.write_table(pa.table({"qid": pa.array([], pa.string()), "query": pa.array([], pa.string())}), path)
    else:
        path.write_text("")
    with pytest.raises(BadInputError, match="the query set is empty"):
        read_query_set(path, index=sparse_only_index_dir)
    out = tmp_path / "out"
    assert main(["run", "--queries", str(path), "--index", str(sparse_only_index_dir), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"q{suffix}" in err and "is empty" in err and "add at least one query" in err
    assert not out.exists()
