"""One job spec from a SWE-bench-shaped file to the evaluation report (`codenib run --spec` with
[index_set], [qrels], [run] and [eval]): a small git repository of three commits, its mirror,
real index-set tasks on Ray; a re-run that redoes nothing it need not; the exit-2 checks made
before any work."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pygit2
import pytest

from codenib.commands.cli import main
from tests.batch.conftest import ray_session  # noqa: F401 - the fixture, shared with the batch tests
from tests.git_history import git_commit

PRICING = "def discount(amount, percent):\n    return amount * percent\n"
CART = ("class Cart:\n"
        "    def add(self, sku, qty):\n"
        "        self.items[sku] = qty\n"
        "\n"
        "    def total(self, prices):\n"
        "        return sum(prices[sku] for sku in self.items)\n")
TAX = "def vat(amount):\n    return amount * 0.2\n"
#: Fixes against the commits: the discount takes the percent off (line 2 of pricing.py, in
#: discount); the total counts quantities (line 6 of cart.py, in Cart.total).
FIX_DISCOUNT = ("--- a/shop/pricing.py\n+++ b/shop/pricing.py\n@@ -1,2 +1,2 @@\n"
                " def discount(amount, percent):\n-    return amount * percent\n"
                "+    return amount * (1 - percent / 100)\n")
FIX_TOTAL = ("--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -5,2 +5,2 @@\n     def total(self, prices):\n"
             "-        return sum(prices[sku] for sku in self.items)\n"
             "+        return sum(prices[sku] * qty for sku, qty in self.items.items())\n")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A mirror root holding acme/shop (three commits), and a SWE-bench-shaped JSONL of three
    instances: two fixes, and one at a revision the mirror lacks."""
    base = tmp_path_factory.mktemp("job")
    repo = pygit2.init_repository(str(base / "work" / "shop"))
    c1 = git_commit(repo, {"shop/__init__.py": "", "shop/pricing.py": PRICING, "shop/cart.py": CART},
                    "one", 1_700_000_000, [])
    c2 = git_commit(repo, {"shop/tax.py": TAX}, "two", 1_700_000_100, [c1])
    c3 = git_commit(repo, {"README.md": "# shop\n"}, "three", 1_700_000_200, [c2])
    mirrors = base / "mirrors"
    (mirrors / "acme+shop").mkdir(parents=True)
    (mirrors / "acme+shop" / "repo").symlink_to(base / "work" / "shop" / ".git")
    rows = [{"instance_id": "acme__shop-1", "repo": "acme/shop", "base_commit": str(c1), "patch": FIX_DISCOUNT,
             "problem_statement": "discount(amount, percent) returns the percent of the amount"},
            {"instance_id": "acme__shop-2", "repo": "acme/shop", "base_commit": str(c3), "patch": FIX_TOTAL,
             "problem_statement": "Cart.total ignores the quantity of each sku in the cart"},
            {"instance_id": "acme__shop-3", "repo": "acme/shop", "base_commit": "f" * 40, "patch": FIX_TOTAL,
             "problem_statement": "a revision the mirror does not hold"}]
    swe = base / "swe.jsonl"
    swe.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {"base": base, "mirrors": mirrors, "swe": swe, "commits": (str(c1), str(c2), str(c3))}


def _spec(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def _job(d, work, qrels_table, eval_extra=""):
    return f"""
[index_set]
mirror_root = "{d['mirrors']}"
dense = false

[qrels]
out = "{work / 'qrels.parquet'}"
{qrels_table}

[run]
queries = "{d['swe']}"
index_root = "{work / 'idx'}"
out = "{work / 'results'}"
k = 100

[eval]
queries = "{d['swe']}"
groups = "{d['swe']}"
out = "{work / 'report'}"
measures = ["Acc@1", "Acc@5", "Acc@10"]
levels = ["file", "function", "function_name"]
no_plots = true
{eval_extra}
"""


def test_one_spec_goes_from_a_swe_bench_file_to_the_report_and_a_rerun_redoes_nothing(
        ray_session, dataset, tmp_path, capsys):  # noqa: F811 - the fixture
    work = tmp_path / "work"
    spec = _spec(tmp_path / "job.toml", _job(dataset, work, ""))
    assert main(["run", "--spec", spec, "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "index-set: 2 built, 0 kept (already current), 1 error row(s)" in err

    # The indexes: one per instance, the missing revision an error row.
    report = {r["index"]: r for r in pq.read_table(work / "idx" / "_index_set.parquet").to_pylist()}
    assert {i: r["status"] for i, r in report.items()} == {"acme__shop-1": "built", "acme__shop-2": "built",
                                                          "acme__shop-3": "error"}
    # The judgments from the patches: the file each changes and the definition around its line.
    qrels = sorted((r["qid"], r["node_id"] or "", r["file"]) for r in pq.read_table(work / "qrels.parquet").to_pylist())
    assert qrels == [("acme__shop-1", "", "shop/pricing.py"), ("acme__shop-1", "shop/pricing.py::discount", "shop/pricing.py"),
                     ("acme__shop-2", "", "shop/cart.py"), ("acme__shop-2", "shop/cart.py::Cart.total", "shop/cart.py")]
    (error,) = pq.read_table(work / "qrels.errors.parquet").to_pylist()
    assert error["qid"] == "acme__shop-3" and "no index 'acme__shop-3'" in error["error"]
    # The report: each query names the one definition holding its words, so it ranks first:
    # Acc@1 = 1 at every level for both judged queries (the third has no judgments).
    metrics = json.loads((work / "report" / "metrics.json").read_text())
    assert metrics["levels"] == ["file", "function", "function_name"]
    assert metrics["queries"]["evaluated"] == {"file": 2, "function": 2, "function_name": 2}
    # Each query's repository from [eval] groups: one repository, so no mean over repositories.
    assert metrics["inputs"]["groups"] == str(dataset["swe"]) and metrics["macro"] is None
    assert set(metrics["breakdowns"]["repo"]) == {"acme/shop"}
    for level in ("file", "function", "function_name"):
        assert metrics["systems"]["results"][level] == {"Acc@1": 1.0, "Acc@5": 1.0, "Acc@10": 1.0}
    plans = {r["qid"]: r["error"] for r in pq.read_table(work / "results" / "plans.parquet").to_pylist()}
    assert plans["acme__shop-1"] is None and "acme__shop-3" in plans and plans["acme__shop-3"]

    # Re-run: the indexes are kept, the judgments written again, the results found complete.
    before = {p: (work / p).read_bytes() for p in ("qrels.parquet", "results/plans.parquet")}
    assert main(["run", "--spec", spec, "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "index-set: 0 built, 2 kept (already current), 1 error row(s)" in err
    assert "(0 run now, 3 already committed)" in err
    assert {p: (work / p).read_bytes() for p in before} == before
    assert json.loads((work / "report" / "metrics.json").read_text())["systems"] == metrics["systems"]

    # Given judgments instead (files merged; no patch read): the same report from them.
    files = tmp_path / "qrels_file.parquet"
    functions = tmp_path / "qrels_function.parquet"
    all_rows = pq.read_table(work / "qrels.parquet")
    pq.write_table(all_rows.filter(all_rows.column("node_id").is_null()).select(["qid", "file", "relevance"]), files)
    function_rows = all_rows.filter(all_rows.column("node_id").is_valid()).select(["qid", "node_id", "relevance"])
    other_set = pa.table({"qid": ["other-9"], "node_id": ["x.py::f"], "relevance": [1]}).cast(function_rows.schema)
    pq.write_table(pa.concat_tables([function_rows, other_set]), functions)
    given = _spec(tmp_path / "given.toml", _job(dataset, work, f'files = ["{files}", "{functions}"]'))
    assert main(["run", "--spec", given, "--quiet"]) == 0
    # A judged query of another set is left out: the job evaluates its own queries.
    assert (f"wrote 4 judgments of 2 queries (2 definitions) from 2 file(s) to {work / 'qrels.parquet'} "
            f"(1 judged queries that are not in {dataset['swe']} left out)") in capsys.readouterr().err
    assert not (work / "qrels.errors.parquet").exists()     # the derived judgments' errors no longer hold
    assert json.loads((work / "report" / "metrics.json").read_text())["systems"] == metrics["systems"]


def _bad(tmp_path, dataset, *, index_set="", qrels=None, run_extra="", eval_extra="", run_index=None, root=None):
    work = tmp_path / "work"
    qrels_table = qrels if qrels is not None else f'out = "{work / "qrels.parquet"}"'
    where = f'index = "{run_index}"' if run_index else f'index_root = "{root or work / "idx"}"'
    return _spec(tmp_path / "bad.toml", f"""
[index_set]
mirror_root = "{dataset['mirrors']}"
{index_set}

[qrels]
{qrels_table}

[run]
queries = "{dataset['swe']}"
{where}
out = "{work / 'results'}"
{run_extra}

[eval]
out = "{work / 'report'}"
{eval_extra}
""")


@pytest.mark.parametrize("case", ["single index", "other root", "dense type", "unknown key", "layout", "no out",
                                  "files and patches", "missing file", "no patch column", "users file",
                                  "out is input", "eval qrels", "eval level", "eval queries", "eval groups", "no mirror",
                                  "patches over s3"])
def test_bad_specs_exit_2_before_any_work(dataset, tmp_path, capsys, case, monkeypatch):
    # An endpoint on loopback that nothing serves: no check may reach beyond this machine.
    monkeypatch.setenv("CODENIB_S3_ENDPOINT", "http://127.0.0.1:9")
    work = tmp_path / "work"
    mine = tmp_path / "mine.parquet"          # a user's judgments
    pq.write_table(pa.table({"qid": ["q"], "file": ["a.py"], "relevance": [1]}), mine)
    kept = mine.read_bytes()
    no_patch = tmp_path / "plain.jsonl"
    no_patch.write_text(json.dumps({"instance_id": "x", "problem_statement": "y"}) + "\n")
    q = work / "q.parquet"
    spec, message = {
        "single index": (dict(run_index=str(work / "one")), "[index_set] builds one index per snapshot"),
        "other root": (dict(index_set=f'index_root = "{tmp_path / "elsewhere"}"'), "is not the run's index root"),
        "dense type": (dict(index_set='dense = "no"'), "`dense` must be true or false"),
        "unknown key": (dict(index_set="dense_vectors = false"), "unknown key(s) ['dense_vectors'] in [index_set]"),
        "layout": (dict(index_set='layout = "shared"'), "unknown `layout` 'shared'"),
        "no out": (dict(qrels='patches = "x.jsonl"'), "[qrels] has no `out`"),
        "files and patches": (dict(qrels=f'out = "{q}"\nfiles = ["{mine}"]\npatches = "p.jsonl"'),
                              "names both given `files` and `patches`"),
        "missing file": (dict(qrels=f'out = "{q}"\nfiles = ["{tmp_path / "gone.parquet"}"]'), "no such qrels file"),
        "no patch column": (dict(qrels=f'out = "{q}"\npatches = "{no_patch}"'), "lacks column(s) patch"),
        "users file": (dict(qrels=f'out = "{mine}"'), "is a file CodeNib did not write as judgments"),
        "out is input": (dict(qrels=f'out = "{mine}"\nfiles = ["{mine}"]'), "is one of the given files"),
        "eval qrels": (dict(eval_extra=f'qrels = "{mine}"'), "is not the file [qrels] writes"),
        "eval level": (dict(eval_extra='levels = ["function", "func_name"]'), "unknown level(s) ['func_name']"),
        "eval queries": (dict(eval_extra=f'queries = "{tmp_path / "gone.jsonl"}"'), "[eval] queries"),
        "eval groups": (dict(eval_extra=f'groups = "{tmp_path / "gone.parquet"}"'), "[eval] groups"),
        "no mirror": (dict(mirrors=tmp_path / "nowhere"), "no git directory for repo 'acme/shop'"),
        "patches over s3": (dict(root="s3://bucket/idx"), "[qrels] derives judgments from patches over local indexes"),
    }[case]
    data = {**dataset, "mirrors": spec.pop("mirrors", dataset["mirrors"])}
    assert main(["run", "--spec", _bad(tmp_path, data, **spec), "--quiet"]) == 2
    assert message in capsys.readouterr().err
    assert not work.exists()                 # nothing was built, written or started
    assert mine.read_bytes() == kept


def test_a_users_qrels_file_is_replaced_only_with_force(dataset, tmp_path):
    """`force = true` in [qrels] lets the job write over a file CodeNib did not write; the
    check passes, and what it plans is that file."""
    from codenib.commands.job_steps import plan_steps
    from codenib.commands.jobs import load_job_spec, run_options

    mine = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"qid": ["q"], "file": ["a.py"], "relevance": [1]}), mine)
    spec = load_job_spec(_bad(tmp_path, dataset, qrels=f'out = "{mine}"\nforce = true'))
    steps = plan_steps(spec, run_options(spec, {}))
    assert (steps.qrels.out, steps.qrels.force, steps.qrels.patches, steps.qrels.queries) == (
        str(mine), True, str(dataset["swe"]), str(dataset["swe"]))
    # [eval] reads the job's judgments and its queries unless it names its own.
    assert steps.eval_defaults == {"qrels": str(mine), "queries": str(dataset["swe"])}
    assert steps.index_set.index_root == str(tmp_path / "work" / "idx") and steps.index_set.dense is True
    assert steps.index_set.snapshots == str(dataset["swe"])   # the SWE-bench file serves as the snapshot set


def test_every_key_of_the_new_tables_is_type_checked():
    from codenib.commands import job_steps
    from codenib.commands.jobs import INDEX_SET_KEYS, QRELS_KEYS

    assert set(job_steps._INDEX_SET_TYPES) == set(INDEX_SET_KEYS)
    assert set(job_steps._QRELS_TYPES) | {"files"} == set(QRELS_KEYS)     # files: a list, checked on its own
