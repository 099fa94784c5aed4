"""Query-set validation and sharding (no Ray needed)."""

import json

import pytest

from codenib.batch.queries import read_query_set
from codenib.commands.cli import main
from codenib.core.errors import BadInputError
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


# --- index names stay under --index-root ----------------------------------------------------------

def _index_farm(tmp_path, index_dir):
    """root/ holding a copy of an index (`click`), a nested one (`org/click`), a symlink inside
    the root to it (`alias`), and an index outside the root with a symlink leading to it."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(index_dir, root / "click")
    shutil.copytree(index_dir, root / "org" / "click")
    (root / "alias").symlink_to(root / "click", target_is_directory=True)
    outside = tmp_path / "idx" / "click"
    shutil.copytree(index_dir, outside)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    return root, outside


@pytest.mark.parametrize("name,problem", [
    ("../idx/click", "is not a name under --index-root"),
    ("click/../../idx/click", "is not a name under --index-root"),
    ("../../../tmp/x", "is not a name under --index-root"),
    ("ABSOLUTE", "is not a name under --index-root"),
    ("escape", "leads outside --index-root"),
])
def test_index_names_cannot_leave_the_index_root(tmp_path, sparse_only_index_dir, name, problem):
    root, outside = _index_farm(tmp_path, sparse_only_index_dir)
    name = str(outside) if name == "ABSOLUTE" else name
    rows = [{"qid": "bad", "query": "helper", "index": name}, {"qid": "good", "query": "helper", "index": "click"},
            {"qid": "nested", "query": "helper", "index": "org/click"},
            {"qid": "alias", "query": "helper", "index": "alias"}]
    qs = read_query_set(write_queries(tmp_path / "q.parquet", rows), index_root=root)
    by = {r.qid: r for r in qs.rows}
    assert by["bad"].index_path == "" and problem in by["bad"].error
    assert "fix: write the index's folder relative to" in by["bad"].error
    assert by["good"].index_path == str((root / "click").resolve()) and by["good"].error is None
    assert by["nested"].index_path == str((root / "org" / "click").resolve())
    assert by["alias"].index_path == str((root / "click").resolve())  # a link inside the root is fine
    assert any("is not a name under --index-root" in w for w in qs.warnings)


def test_a_name_is_not_looked_up_outside_the_root_either(tmp_path, sparse_only_index_dir, monkeypatch):
    # The old resolver fell back to the name as a path of its own (relative to the cwd).
    root, outside = _index_farm(tmp_path, sparse_only_index_dir)
    monkeypatch.chdir(outside.parent)
    rows = [{"qid": "a", "query": "helper", "index": "click"}, {"qid": "b", "query": "helper", "index": "idx2"}]
    import shutil
    shutil.copytree(sparse_only_index_dir, outside.parent / "idx2")
    qs = read_query_set(write_queries(tmp_path / "q.parquet", rows), index_root=root)
    by = {r.qid: r for r in qs.rows}
    assert by["a"].index_path == str((root / "click").resolve())
    assert by["b"].index_path == "" and "not found under" in by["b"].error


def test_rerank_resolves_index_names_under_the_root_only(tmp_path, sparse_only_index_dir):
    from codenib.batch.options import RerankOptions
    from codenib.batch.rerank import _resolve

    root, outside = _index_farm(tmp_path, sparse_only_index_dir)
    options = RerankOptions(results=str(tmp_path / "r"), out=str(tmp_path / "o"), index_root=str(root))
    assert _resolve("click", options, {}) == str((root / "click").resolve())
    for name in ("../idx/click", str(outside), "escape"):
        assert _resolve(name, options, {"../idx/click": str(outside)}) == ""


# --- column types ---------------------------------------------------------------------------------

@pytest.mark.parametrize("column,values,found,expected", [
    ("query", [b"who calls helper?", b"slugify"], "binary", "string"),
    ("query", [1, 2], "int64", "string"),
    ("qid", [b"a", b"b"], "binary", "string or integer"),
    ("index", [b"x", b"y"], "binary", "string"),
])
def test_columns_of_the_wrong_type_are_named(tmp_path, sparse_only_index_dir, column, values, found, expected):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = {"qid": ["a", "b"], "query": ["who calls helper?", "slugify"]}
    data[column] = values
    path = tmp_path / "q.parquet"
    pq.write_table(pa.table(data), path)
    with pytest.raises(BadInputError) as info:
        read_query_set(path, index=sparse_only_index_dir)
    message = str(info.value)
    assert f"column `{column}` has type {found}; expected {expected}" in message
    assert "q.parquet" in message and "fix:" in message


def test_integer_qids_and_dictionary_strings_are_accepted(tmp_path, sparse_only_index_dir):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "q.parquet"
    pq.write_table(pa.table({"qid": pa.array([1, 2]), "query": pa.array(["helper", "slugify"]).dictionary_encode()}),
                   path)
    qs = read_query_set(path, index=sparse_only_index_dir)
    assert [(r.qid, r.query, r.error) for r in qs.rows] == [("1", "helper", None), ("2", "slugify", None)]


# --- query text is cleaned at the query-set edge --------------------------------------------------

def test_undecodable_and_control_text_is_cleaned_and_recorded_in_the_plan_row(tmp_path, fixture_index_dir,
                                                                              fixture_index):
    import pyarrow.parquet as pq

    from codenib.batch.query_rows import Shard
    from codenib.model.session import RetrievalSession
    from codenib.batch.worker import ShardOptions, process_shard
    from codenib.model.planner import plan_options, plan_rows
    path = tmp_path / "q.jsonl"
    # json.dumps writes lone surrogates as \udcxx escapes, which json.loads reads back as such.
    lines = [{"qid": "latin1", "query": "caf\udce9 editor"}, {"qid": "nul", "query": "who calls\x00 slugify?"},
             {"qid": "only-bad", "query": "\x00\x1b"}, {"qid": "fine", "query": "Store an item"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    qs = read_query_set(path, index=fixture_index_dir)
    by = {r.qid: r for r in qs.rows}
    assert by["latin1"].query == "caf\ufffd editor" and dict(by["latin1"].text_changes) == {"invalid_replaced": 1}
    assert by["nul"].query == "who calls  slugify?" and by["only-bad"].error == "empty query text"
    assert by["fine"].text_changes == ()
    assert any("the text of 3 queries was cleaned" in w for w in qs.warnings)
    rows = plan_rows(qs.rows, plan_options("balanced", rerank="embedding"),
                     {str(fixture_index.path): fixture_index.capabilities()})
    results, plans = process_shard(Shard(0, "ix", str(fixture_index.path), rows), RetrievalSession.of(fixture_index),
                                   ShardOptions(k=5))
    pq.write_table(results, tmp_path / "r.parquet")   # valid UTF-8 throughout
    pq.write_table(plans, tmp_path / "p.parquet")
    got = {p["qid"]: p for p in pq.read_table(tmp_path / "p.parquet").to_pylist()}
    assert json.loads(got["latin1"]["trace"])["query_text"] == {"invalid_replaced": 1}
    assert json.loads(got["nul"]["trace"])["query_text"] == {"controls_replaced": 1}
    assert got["latin1"]["error"] is None and got["nul"]["error"] is None
    assert got["only-bad"]["error"] == "empty query text"
    assert "query_text" not in json.loads(got["fine"]["trace"])
    assert {r["qid"] for r in results.to_pylist()} == {"latin1", "nul", "fine"}


def test_parquet_text_that_is_not_utf8_is_cleaned_in_queries_and_refused_in_qids(tmp_path, sparse_only_index_dir):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def latin1(*texts):  # a string column holding bytes that are not UTF-8, as a careless writer leaves it
        return pa.array([t.encode("latin-1") for t in texts], pa.binary()).view(pa.string())

    path = tmp_path / "q.parquet"
    pq.write_table(pa.table({"qid": ["a", "b"], "query": latin1("café editor", "helper")}), path)
    qs = read_query_set(path, index=sparse_only_index_dir)
    assert [(r.query, dict(r.text_changes)) for r in qs.rows] == [("caf\ufffd editor", {"invalid_replaced": 1}),
                                                                  ("helper", {})]
    pq.write_table(pa.table({"qid": latin1("é", "b"), "query": ["helper", "slugify"]}), path)
    with pytest.raises(BadInputError, match=r"`qid` in row\(s\) 1 holds bytes that are not UTF-8 text"):
        read_query_set(path, index=sparse_only_index_dir)


def test_a_set_that_interleaves_its_indexes_gets_a_hint_and_a_grouped_one_does_not(tmp_path, fixture_index_dir,
                                                                                   sparse_only_index_dir):
    # 2 indexes: 10 runs of one index in the interleaved set (> 4 per index), 2 in the grouped one.
    names = ["fixture" if i % 2 else "sparse_only" for i in range(10)]
    interleaved = [{"qid": f"q{i}", "query": "x", "index": n} for i, n in enumerate(names)]
    grouped = sorted(interleaved, key=lambda r: r["index"])
    root = fixture_index_dir.parent.parent
    hint = "indexes are interleaved (10 runs of one index)"
    mixed = read_query_set(write_queries(tmp_path / "mixed.parquet", interleaved), index_root=root)
    assert any(hint in w and "sort the set by `index`" in w for w in mixed.warnings)
    tidy = read_query_set(write_queries(tmp_path / "tidy.parquet", grouped), index_root=root)
    assert not any("interleaved" in w for w in tidy.warnings)


# --- JSONL fields are checked as Parquet columns are ------------------------------------------------

@pytest.mark.parametrize("lines,message", [
    (['{"qid": {"id": 1}, "query": "helper"}'],
     "column `qid` has type struct; expected string or integer (line 1 holds a JSON object)"),
    (['{"qid": "a", "query": "helper"}', '{"qid": ["b"], "query": "slugify"}'],
     "column `qid` has type list; expected string or integer (line 2 holds a JSON array)"),
    (['{"qid": "a", "query": {"text": "helper"}}'],
     "column `query` has type struct; expected string (line 1 holds a JSON object)"),
    (['{"qid": "a", "query": "helper"}', '{"qid": "b", "query": NaN}'],
     "column `query` has type double; expected string (line 2 holds NaN)"),
    (['{"qid": true, "query": "helper"}'],
     "column `qid` has type bool; expected string or integer (line 1 holds true or false)"),
    (['{"qid": 1, "query": "helper"}', '', '{"qid": "b", "query": "slugify"}'],
     "column `qid` mixes types: int64 (line 1) and string (line 3); a column has one type"),
    (['{"qid": "a", "query": "helper", "budget": 3}'],
     "column `budget` has type int64; expected string (line 1 holds an integer)"),
])
def test_jsonl_field_types_are_checked_as_parquet_columns_are(tmp_path, sparse_only_index_dir, lines, message):
    from codenib.batch.query_files import load_query_records

    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for read in (lambda: read_query_set(path, index=sparse_only_index_dir), lambda: load_query_records(path)):
        with pytest.raises(BadInputError) as info:
            read()
        assert message in str(info.value) and str(path) in str(info.value) and "fix:" in str(info.value)


def test_a_jsonl_column_codenib_does_not_read_may_hold_anything(tmp_path, sparse_only_index_dir):
    path = tmp_path / "q.jsonl"
    path.write_text('{"qid": "a", "query": "helper", "meta": {"x": 1}}\n{"qid": "b", "query": "slugify", "meta": 2}\n')
    qs = read_query_set(path, index=sparse_only_index_dir)
    assert [(r.qid, r.error) for r in qs.rows] == [("a", None), ("b", None)]
    from codenib.batch.query_files import load_query_records

    table, records = load_query_records(path)
    assert table.column("meta").to_pylist() == ['{"x": 1}', "2"] and [r["qid"] for r in records] == ["a", "b"]


def test_jsonl_bytes_that_are_not_utf8_are_refused_naming_the_line(tmp_path, sparse_only_index_dir):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"qid": "a", "query": "helper"}\n{"qid": "b", "query": "caf\xe9"}\n')
    with pytest.raises(BadInputError, match=r"line 2 is not UTF-8 text.*fix: save the file as UTF-8"):
        read_query_set(path, index=sparse_only_index_dir)


def test_an_index_column_that_index_overrides_is_named_in_a_warning(tmp_path, sparse_only_index_dir):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"qid": "a", "query": "helper", "index": "elsewhere"}) + "\n")
    scan = read_query_set(path, index=sparse_only_index_dir)
    assert any("its `index` column is not read: --index" in w for w in scan.warnings)
    plain = tmp_path / "p.jsonl"
    plain.write_text(json.dumps({"qid": "a", "query": "helper"}) + "\n")
    assert not any("`index` column" in w for w in read_query_set(plain, index=sparse_only_index_dir).warnings)
    swe = tmp_path / "swe.jsonl"     # its instance_id is read as `index` under --index-root only
    swe.write_text(json.dumps({"instance_id": "o__r-1", "problem_statement": "helper", "repo": "o/r"}) + "\n")
    assert not any("`index` column" in w for w in read_query_set(swe, index=sparse_only_index_dir).warnings)


def test_a_jsonl_file_saved_with_a_byte_order_mark_reads_as_without_one(tmp_path, sparse_only_index_dir):
    """Windows editors start UTF-8 files with U+FEFF; the first line is still JSON."""
    plain, marked = tmp_path / "plain.jsonl", tmp_path / "marked.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in QUERIES), encoding="utf-8")
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    a = read_query_set(plain, index=sparse_only_index_dir)
    b = read_query_set(marked, index=sparse_only_index_dir)
    assert [(r.qid, r.query) for r in a.rows] == [(r.qid, r.query) for r in b.rows] and a.digest == b.digest


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_a_swe_bench_file_is_read_as_a_query_set_as_it_is(tmp_path, sparse_only_index_dir, suffix):
    # instance_id is the qid and the index name (its snapshot, as `codenib index-set` names
    # it), problem_statement the query; the file's other columns are ignored.
    import pyarrow.parquet as pq

    root = tmp_path / "indexes"
    root.mkdir()
    import shutil

    for name in ("acme__x-1", "acme__x-2"):
        shutil.copytree(sparse_only_index_dir, root / name)
    rows = [{"instance_id": "acme__x-1", "repo": "acme/x", "base_commit": "a" * 40, "patch": "",
             "problem_statement": "where is slugify defined"},
            {"instance_id": "acme__x-2", "repo": "acme/x", "base_commit": "b" * 40, "patch": "",
             "problem_statement": "callers of run_engine"}]
    path = tmp_path / f"swe{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        write_queries(path, rows)
    out = tmp_path / "run"
    assert main(["run", "--queries", str(path), "--index-root", str(root), "--out", str(out), "--quiet"]) == 0
    plans = pq.read_table(out / "plans.parquet").to_pylist()
    assert sorted((p["qid"], p["error"]) for p in plans) == [("acme__x-1", None), ("acme__x-2", None)]
    results = [pq.read_table(p).to_pylist() for p in sorted(out.glob("part-*.parquet"))]
    assert {(r["qid"], r["index"]) for part in results for r in part} == {("acme__x-1", "acme__x-1"),
                                                                          ("acme__x-2", "acme__x-2")}
