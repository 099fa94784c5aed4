"""`codenib index-set`: snapshots indexed from git objects as Ray tasks (a real local Ray), equal
to standalone indexes of checkouts; the shared store, resume, and error rows."""

from __future__ import annotations

import io
import json
import shutil

import pyarrow.parquet as pq
import pygit2
import pytest

from codenib.batch.indexset import MANIFEST_KEY, REPORT_NAME
from codenib.commands.cli import main
from codenib.compiler.history import HISTORY_VERSION
from tests.git_history import archive, git_commit

V1 = {"pkg/__init__.py": "", "pkg/a.py": "def f():\n    return g()\n\n\ndef g():\n    return 1\n",
      "pkg/b.py": "from pkg.a import f\n\n\ndef h():\n    return f()\n",
      "web/x.js": "const { y } = require('./y');\nfunction q() { return y(); }\n",
      "web/y.js": "function y() { return 1; }\nmodule.exports = { y };\n"}
#: The second commit changes one file of five.
V2 = {"pkg/a.py": "def f():\n    return g() + 1\n\n\ndef g():\n    return 2\n"}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    base = tmp_path_factory.mktemp("iset")
    repo = pygit2.init_repository(str(base / "repo"))
    c1 = git_commit(repo, V1, "one", 1_700_000_000, [])
    c2 = git_commit(repo, V2, "two", 1_700_000_100, [c1])
    return repo, base / "repo" / ".git", str(c1), str(c2)


def _set(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _report(root):
    return {r["index"]: r for r in pq.read_table(root / REPORT_NAME).to_pylist()}


def test_snapshots_equal_standalone_indexes_share_the_store_and_resume(ray_session, history, tmp_path, capsys):
    repo, gitdir, c1, c2 = history
    root = tmp_path / "indexes"
    first = _set(tmp_path / "one.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1}])
    assert main(["index-set", first, "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    both = _set(tmp_path / "both.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1},
                                          {"index": "s2", "repo": str(gitdir), "rev": c2},
                                          {"index": "s3", "repo": str(gitdir), "rev": "f" * 40}])
    assert main(["index-set", both, "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    report = _report(root)
    assert [report[i]["status"] for i in ("s1", "s2", "s3")] == ["kept", "built", "error"]
    # s2 follows s1 in commit order: built as --reuse of it, only the one changed file is read.
    assert (report["s2"]["files"], report["s2"]["files_kept"], report["s2"]["reused_from"]) == (5, 4, "s1")
    assert "is not a commit of" in report["s3"]["error"]
    assert "1 built, 1 kept (already current), 1 error row(s)" in capsys.readouterr().err

    # Each equals `codenib index` of a checkout of its commit (a folder of the same name).
    for name, rev in (("s1", c1), ("s2", c2)):
        checkout = archive(repo, rev, tmp_path / "checkouts" / name)
        alone = tmp_path / "alone" / name
        assert main(["index", str(checkout), "--out", str(alone), "--no-dense", "--quiet", "--no-cache"]) == 0
        for table in ("nodes.parquet", "edges.parquet"):
            assert pq.read_table(root / name / table).equals(pq.read_table(alone / table)), (name, table)
        capsys.readouterr()
        ranked = []
        for folder in (root / name, alone):
            assert main(["query", str(folder), "who calls g?", "--json"]) == 0
            ranked.append([(r["node_id"], r["score"]) for r in json.loads(capsys.readouterr().out)["results"]])
        assert ranked[0] == ranked[1] and ranked[0]

    # Killed mid-job: what finished stays, a re-run builds only what is missing.
    shutil.rmtree(root / "s2")
    assert main(["index-set", both, "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    report = _report(root)
    assert [report[i]["status"] for i in ("s1", "s2", "s3")] == ["kept", "built", "error"]
    assert report["s2"]["reused_from"] == "s1"


def test_an_index_built_by_an_older_reader_is_built_again(ray_session, history, tmp_path):
    """A re-run after an upgrade that changed a reader keeps nothing that reader built: the
    reader versions are part of what resume compares (the store keys its entries by them too)."""
    repo, gitdir, c1, c2 = history
    root = tmp_path / "indexes"
    one = _set(tmp_path / "one.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1}])
    assert main(["index-set", one, "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    assert main(["index-set", one, "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    assert _report(root)["s1"]["status"] == "kept"
    # As an index built by a CodeNib whose Python reader was one version older records it.
    path = root / "s1" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest[MANIFEST_KEY]["settings"]["readers"]["python"] -= 1
    path.write_text(json.dumps(manifest))
    assert main(["index-set", one, "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    report = _report(root)["s1"]
    assert (report["status"], report["files"], report["files_from_store"]) == ("built", 5, 5)
    rebuilt = json.loads(path.read_text())[MANIFEST_KEY]["settings"]["readers"]
    assert rebuilt["python"] == manifest[MANIFEST_KEY]["settings"]["readers"]["python"] + 1


def test_runs_without_a_base_share_file_versions_through_the_store(ray_session, history, tmp_path):
    # Two repositories' worth of runs: the same commits under two git directories are two
    # repositories, so s2 has no base to reuse; the store still gives it every file s1 parsed.
    _, gitdir, c1, c2 = history
    twin = tmp_path / "twin.git"
    shutil.copytree(gitdir, twin)
    root = tmp_path / "indexes"
    assert main(["index-set", _set(tmp_path / "a.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1}]),
                 "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    assert main(["index-set", _set(tmp_path / "b.jsonl", [{"index": "s2", "repo": str(twin), "rev": c2}]),
                 "--index-root", str(root), "--no-dense", "--quiet"]) == 0
    row = _report(root)["s2"]
    assert (row["files"], row["files_from_store"], row["reused_from"]) == (5, 4, None)


def test_runs_follow_commit_order_and_cut_each_repository(history):
    from codenib.batch.indexset import runs_of
    from codenib.batch.snapshot_set import Snapshot

    snaps = [(Snapshot(f"r{i}", "r", "/g1", "x"), f"c{i}", 10 - i) for i in range(9)] + \
            [(Snapshot("other", "o", "/g2", "x"), "d", 1)]
    runs = runs_of(snaps, 3)
    # 9 snapshots on 3 CPUs: two runs (none shorter than 4), oldest commit first; one for the other repository.
    assert [[s.index for s, _ in run] for run in runs] == [["r8", "r7", "r6", "r5"], ["r4", "r3", "r2", "r1", "r0"],
                                                          ["other"]]


def test_swe_bench_rows_find_their_mirror(ray_session, history, tmp_path):
    _, gitdir, c1, _ = history
    mirrors = tmp_path / "mirrors"
    (mirrors / "acme+demo").mkdir(parents=True)
    (mirrors / "acme+demo" / "repo").symlink_to(gitdir)
    rows = [{"instance_id": "acme__demo-1", "repo": "acme/demo", "base_commit": c1, "problem_statement": "f fails",
             "patch": ""}]
    snapshots = tmp_path / "swe.parquet"
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows), snapshots)
    assert main(["index-set", str(snapshots), "--index-root", str(tmp_path / "idx"), "--mirror-root", str(mirrors),
                 "--no-dense", "--quiet"]) == 0
    assert _report(tmp_path / "idx")["acme__demo-1"]["status"] == "built"


@pytest.mark.parametrize("rows,message", [
    ([{"index": "a", "repo": "/nowhere/repo.git", "rev": "HEAD"}], "row 1: no git directory for repo '/nowhere/repo.git'"),
    ([{"index": "a", "repo": "GITDIR", "rev": "HEAD"}, {"index": "a", "repo": "GITDIR", "rev": "HEAD"}],
     "row 2: index 'a' is named twice"),
    ([{"index": "../a", "repo": "GITDIR", "rev": "HEAD"}], "row 1: index '../a' is not a plain folder name"),
    ([{"index": "a", "repo": "GITDIR"}], "lacks column(s) rev (or base_commit)"),
])
def test_bad_snapshot_sets_exit_2_naming_the_row_and_write_nothing(history, tmp_path, capsys, rows, message):
    _, gitdir, _, _ = history
    path = _set(tmp_path / "set.jsonl", [{k: str(gitdir) if v == "GITDIR" else v for k, v in r.items()} for r in rows])
    assert main(["index-set", path, "--index-root", str(tmp_path / "idx"), "--no-dense", "--quiet"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "idx").exists()


def test_a_snapshot_set_that_is_not_parquet_exits_2(tmp_path, capsys):
    bad = tmp_path / "set.parquet"
    bad.write_bytes(b"not parquet")
    assert main(["index-set", str(bad), "--index-root", str(tmp_path / "idx"), "--quiet"]) == 2
    assert "cannot read the snapshot set as Parquet" in capsys.readouterr().err


def test_history_is_read_from_the_snapshots_own_repository_up_to_its_commit(ray_session, history, tmp_path):
    _, gitdir, c1, c2 = history
    root = tmp_path / "indexes"
    rows = [{"index": "s1", "repo": str(gitdir), "rev": c1}, {"index": "s2", "repo": str(gitdir), "rev": c2}]
    assert main(["index-set", _set(tmp_path / "set.jsonl", rows), "--index-root", str(root), "--no-dense",
                 "--history", "--quiet"]) == 0
    for name, commits in (("s1", [c1]), ("s2", [c2, c1])):
        assert pq.read_table(root / name / "history" / "commits.parquet").column("id").to_pylist() == commits
        manifest = json.loads((root / name / "manifest.json").read_text())
        assert manifest["history"]["head"] == commits[0]
        # The history reader's version is part of what a resume compares.
        assert manifest[MANIFEST_KEY]["settings"]["history_version"] == HISTORY_VERSION


def test_an_unexpected_failure_is_one_rows_error_and_the_run_goes_on(history, tmp_path, monkeypatch):
    # In-process (no Ray): a run of two snapshots whose first build raises something no
    # CodeNib code expected; the second is still built (afresh: there is no base).
    from codenib.batch.indexset import IndexSetOptions, build_run
    from codenib.batch.snapshot_set import Snapshot
    from codenib.compiler import build as build_module

    _, gitdir, c1, c2 = history
    real = build_module.build_index

    def flaky(tree, out, *args, **kwargs):
        if tree.commit == c1:
            raise RuntimeError("disk controller on fire")
        return real(tree, out, *args, **kwargs)

    monkeypatch.setattr(build_module, "build_index", flaky)
    run = [(Snapshot("s1", "r", str(gitdir), c1), c1), (Snapshot("s2", "r", str(gitdir), c2), c2)]
    rows = build_run(run, str(tmp_path / "idx"), str(tmp_path / "store"),
                     IndexSetOptions(snapshots="-", index_root=str(tmp_path / "idx"), dense=False, progress=False))
    assert [(r["index"], r["status"]) for r in rows] == [("s1", "error"), ("s2", "built")]
    assert rows[0]["error"] == "RuntimeError: disk controller on fire" and rows[1]["reused_from"] is None


def test_a_store_on_s3_gives_the_indexes_of_a_local_store_and_serves_a_fresh_root(ray_session, s3_endpoint, history,
                                                                                   tmp_path, monkeypatch, capsys):
    """`--store s3://...`: the indexes equal those of a run with a local store, the store
    holds each file version once, and a second run into a fresh index root parses nothing
    its first snapshot needs."""
    from tests.batch.s3 import listing, new_bucket

    _, gitdir, c1, c2 = history
    rows = _set(tmp_path / "set.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1},
                                         {"index": "s2", "repo": str(gitdir), "rev": c2}])
    assert main(["index-set", rows, "--index-root", str(tmp_path / "local"), "--no-dense", "--quiet"]) == 0
    bucket = new_bucket(s3_endpoint)
    store = f"s3://{bucket}/store"
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    assert main(["index-set", rows, "--index-root", str(tmp_path / "s3"), "--store", store, "--no-dense",
                 "--quiet"]) == 0
    for name in ("s1", "s2"):
        for table in ("nodes.parquet", "edges.parquet"):
            assert pq.read_table(tmp_path / "s3" / name / table).equals(
                pq.read_table(tmp_path / "local" / name / table)), (name, table)
    first = _report(tmp_path / "s3")
    assert [(first[i]["status"], first[i]["files_from_store"]) for i in ("s1", "s2")] == [("built", 0), ("built", 0)]
    # Five file versions at c1, and the one c2 changed: six entries, no local store.
    assert len([k for k in listing(s3_endpoint, bucket, "store") if k.startswith("v3/")]) == 6
    assert not (tmp_path / "s3" / ".codenib-store").exists()

    assert main(["index-set", rows, "--index-root", str(tmp_path / "fresh"), "--store", store, "--no-dense",
                 "--quiet"]) == 0
    again = _report(tmp_path / "fresh")
    # s1: all five files from the store; s2 keeps four from s1 and takes the changed one from the store.
    assert [(again[i]["files"], again[i]["files_from_store"], again[i]["files_kept"]) for i in ("s1", "s2")] == \
        [(5, 5, None), (5, 1, 4)]
    for name in ("s1", "s2"):
        assert pq.read_table(tmp_path / "fresh" / name / "nodes.parquet").equals(
            pq.read_table(tmp_path / "local" / name / "nodes.parquet"))

    # The store layout reads indexes back from a local store only: refused before any work.
    capsys.readouterr()
    assert main(["index-set", rows, "--index-root", str(tmp_path / "layout"), "--store", store, "--no-dense",
                 "--quiet", "--layout", "store"]) == 2
    assert "--layout store reads each index back from a local per-file store" in capsys.readouterr().err
    assert not (tmp_path / "layout").exists()


def test_a_store_in_a_missing_bucket_exits_2_before_any_work(s3_endpoint, history, tmp_path, monkeypatch, capsys):
    _, gitdir, c1, _ = history
    rows = _set(tmp_path / "set.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1}])
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    store = "s3://codenib-no-such-bucket/store"
    assert main(["index-set", rows, "--index-root", str(tmp_path / "idx"), "--store", store, "--no-dense",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert store in err and "does not exist" in err and "create the bucket" in err
    assert not (tmp_path / "idx").exists()


def test_the_store_layout_loads_and_searches_as_the_full_folders(ray_session, history, tmp_path, capsys):
    from codenib.core.artifact import read_manifest
    from codenib.core.errors import IndexFormatError
    from codenib.core.store_layout import read_nodes
    from codenib.index.loaded import load_index

    repo, gitdir, c1, c2 = history
    rows = [{"index": "s1", "repo": str(gitdir), "rev": c1}, {"index": "s2", "repo": str(gitdir), "rev": c2}]
    full, small = tmp_path / "full", tmp_path / "small"
    assert main(["index-set", _set(tmp_path / "f.jsonl", rows), "--index-root", str(full), "--no-dense",
                 "--quiet"]) == 0
    assert main(["index-set", _set(tmp_path / "s.jsonl", rows), "--index-root", str(small), "--no-dense",
                 "--quiet", "--layout", "store"]) == 0
    report = _report(small)
    # s2 was built as --reuse of s1 while s1 was still whole; then both were rewritten.
    assert [(report[i]["status"], report[i]["layout"], report[i]["reused_from"]) for i in ("s1", "s2")] == [
        ("built", "store", None), ("built", "store", "s1")]
    assert {r["layout"] for r in _report(full).values()} == {"full"}
    queries = ["who calls g?", "function y returns one", "def f():\n    return g() + 1\nwrong value in pkg/a.py"]
    for name in ("s1", "s2"):
        kept = sorted(p.name for p in (small / name).iterdir())
        assert kept == ["edges.parquet", "manifest.json", "store_files.parquet"], kept
        manifest = read_manifest(small / name)
        assert manifest["layout"]["store"] == "../.codenib-store"
        assert read_nodes(small / name, manifest).equals(pq.read_table(full / name / "nodes.parquet"))
        a, b = load_index(full / name), load_index(small / name)
        assert a.nodes == b.nodes and a.texts() == b.texts()
        for x, y in zip(a.sparse.search(queries, 20), b.sparse.search(queries, 20)):
            assert (x == y).all()
        for x, y in zip(a.file_sparse.search(queries, 5), b.file_sparse.search(queries, 5)):
            assert (x == y).all()
        ranked = []
        for folder in (full / name, small / name):
            assert main(["query", str(folder), queries[0], "--json"]) == 0
            ranked.append([(r["node_id"], r["score"]) for r in json.loads(capsys.readouterr().out)["results"]])
        assert ranked[0] == ranked[1] and ranked[0]

    # `--reuse` of a store-layout index builds afresh (it holds no incremental state), equal all the same.
    checkout = archive(repo, c2, tmp_path / "checkout")
    again = tmp_path / "again"
    assert main(["index", str(checkout), "--out", str(again), "--no-dense", "--quiet", "--no-cache",
                 "--reuse", str(small / "s1")]) == 0
    assert "is in the store layout" in capsys.readouterr().err
    assert pq.read_table(again / "nodes.parquet").equals(pq.read_table(full / "s2" / "nodes.parquet"))

    # Resumed: both current, kept as they are.
    assert main(["index-set", _set(tmp_path / "s.jsonl", rows), "--index-root", str(small), "--no-dense",
                 "--quiet", "--layout", "store"]) == 0
    assert [_report(small)[i]["status"] for i in ("s1", "s2")] == ["kept", "kept"]

    # The job packed the store's entries (no loose file left). The packs gone: loading names
    # the first file's entry, and the command exits 2.
    assert not list((small / ".codenib-store").rglob("*.json.gz"))
    assert len(list((small / ".codenib-store" / "packs").glob("*.idx"))) == 1
    entry = pq.read_table(small / "s2" / "store_files.parquet").to_pylist()[0]
    shutil.rmtree(small / ".codenib-store" / "packs")
    with pytest.raises(IndexFormatError, match=f"no readable entry for {entry['file']}"):
        load_index(small / "s2")
    capsys.readouterr()
    assert main(["query", str(small / "s2"), "who calls g?"]) == 2
    assert entry["entry"] in capsys.readouterr().err


def test_vectors_in_the_store_layout_are_read_back_from_the_vector_entries(ray_session, history, tmp_path, capsys):
    from codenib.index.loaded import load_index

    _, gitdir, c1, c2 = history
    rows = _set(tmp_path / "set.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1},
                                         {"index": "s2", "repo": str(gitdir), "rev": c2}])
    store = str(tmp_path / "store")
    full, small = tmp_path / "full", tmp_path / "small"
    assert main(["index-set", rows, "--index-root", str(full), "--store", store, "--quiet"]) == 0
    assert main(["index-set", rows, "--index-root", str(small), "--store", store, "--quiet", "--layout", "store"]) == 0
    # The second job found every file's vectors in the shared store: it encoded nothing.
    # s1: 5 files and 5 definitions; s2: the 2 changed definitions (the file node's text, its
    # outline of names, did not change).
    assert [r["texts_encoded"] for r in _report(full).values()] == [10, 2]
    assert [r["texts_encoded"] for r in _report(small).values()] == [0, 0]
    for name in ("s1", "s2"):
        assert sorted(p.name for p in (small / name).iterdir()) == ["edges.parquet", "manifest.json",
                                                                    "store_files.parquet"]
        a, b = load_index(full / name, device="cpu"), load_index(small / name, device="cpu")
        assert (a.dense.vectors == b.dense.vectors).all() and (a.dense.name_vectors == b.dense.name_vectors).all()
    # The command line searches the same (one snapshot: each query loads the model).
    ranked = []
    for folder in (full / "s2", small / "s2"):
        assert main(["query", str(folder), "a function that returns one", "--mode", "dense", "--json"]) == 0
        ranked.append([(r["node_id"], r["score"]) for r in json.loads(capsys.readouterr().out)["results"]])
    assert ranked[0] == ranked[1] and ranked[0]


def test_an_index_root_on_s3_gets_whole_indexes_manifest_last_and_resumes(ray_session, s3_endpoint, history,
                                                                          tmp_path, monkeypatch, capsys):
    """`--index-root s3://...`: each snapshot is built on the node and published, its
    manifest last; the copies equal a local root's indexes; a re-run keeps them; an index whose
    upload stopped before its manifest is built again; `--layout store` is refused."""
    from codenib.core.storage import StorageConfig
    from codenib.index.remote import IndexCacheDir
    from tests.batch.s3 import client, listing, new_bucket

    _, gitdir, c1, c2 = history
    rows = _set(tmp_path / "set.jsonl", [{"index": "s1", "repo": str(gitdir), "rev": c1},
                                         {"index": "s2", "repo": str(gitdir), "rev": c2}])
    local = tmp_path / "local"
    assert main(["index-set", rows, "--index-root", str(local), "--no-dense", "--quiet"]) == 0
    bucket = new_bucket(s3_endpoint)
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", s3_endpoint)
    root = f"s3://{bucket}/idx"
    assert main(["index-set", rows, "--index-root", root, "--no-dense", "--quiet"]) == 0
    objects = listing(s3_endpoint, bucket, "idx")
    report = {r["index"]: r for r in pq.read_table(io.BytesIO(objects["_index_set.parquet"])).to_pylist()}
    assert [(report[i]["status"], report[i]["reused_from"]) for i in ("s1", "s2")] == [("built", None), ("built", "s1")]
    # The store went under the root.
    assert any(k.startswith(".codenib-store/v3/") for k in objects)
    cache = IndexCacheDir(str(tmp_path / "cache"), storage=StorageConfig.from_env())
    for name in ("s1", "s2"):
        copy = cache.local(f"{root}/{name}")
        for table in ("nodes.parquet", "edges.parquet"):
            assert pq.read_table(copy / table).equals(pq.read_table(local / name / table)), (name, table)

    # Re-run: both kept. Then s2's manifest gone (an upload that stopped before it): s2 alone
    # is built again, afresh (its base s1 is on the store, not on this node).
    assert main(["index-set", rows, "--index-root", root, "--no-dense", "--quiet"]) == 0
    client(s3_endpoint).delete_object(Bucket=bucket, Key="idx/s2/manifest.json")
    assert main(["index-set", rows, "--index-root", root, "--no-dense", "--quiet"]) == 0
    again = {r["index"]: r for r in pq.read_table(io.BytesIO(
        listing(s3_endpoint, bucket, "idx/_index_set.parquet")[""])).to_pylist()}
    assert [(again[i]["status"], again[i]["reused_from"], again[i]["layout"]) for i in ("s1", "s2")] == [
        ("kept", None, "full"), ("built", None, "full")]
    assert pq.read_table(cache.local(f"{root}/s2") / "nodes.parquet").equals(pq.read_table(local / "s2" / "nodes.parquet"))
    # The other order: s1 built again, then s2 kept (s1's row still gets its layout).
    client(s3_endpoint).delete_object(Bucket=bucket, Key="idx/s1/manifest.json")
    assert main(["index-set", rows, "--index-root", root, "--no-dense", "--quiet"]) == 0
    third = {r["index"]: r for r in pq.read_table(io.BytesIO(
        listing(s3_endpoint, bucket, "idx/_index_set.parquet")[""])).to_pylist()}
    assert [(third[i]["status"], third[i]["layout"]) for i in ("s1", "s2")] == [("built", "full"), ("kept", "full")]

    capsys.readouterr()
    assert main(["index-set", rows, "--index-root", f"s3://{bucket}/other", "--no-dense", "--quiet",
                 "--layout", "store"]) == 2
    assert "pass --layout full, or a local --index-root" in capsys.readouterr().err
    assert not listing(s3_endpoint, bucket, "other")
