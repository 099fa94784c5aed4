"""scripts/mswe_dev.py on a two-instance Go fixture (two repositories): real indexes, real Ray
jobs, the tree-sitter BM25 baseline, its tables; and the function matching it scores by."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.scripts.script_loader import load_script


GO_FILES = {
    "go.mod": "module example.com/shop\n\ngo 1.21\n",
    "cart/cart.go": """package cart

import "example.com/shop/pricing"

// Cart holds items and their quantities.
type Cart struct {
\titems map[string]int
}

// Add puts qty of a sku into the cart.
func (c *Cart) Add(sku string, qty int) {
\tc.items[sku] += qty
}

// Total is the price of the cart after a coupon.
func (c *Cart) Total(prices map[string]float64, percent float64) float64 {
\tamount := 0.0
\tfor sku, qty := range c.items {
\t\tamount += prices[sku] * float64(qty)
\t}
\treturn pricing.ApplyDiscount(amount, percent)
}
""",
    "pricing/pricing.go": """package pricing

// ApplyDiscount takes a coupon's percentage off an amount.
func ApplyDiscount(amount, percent float64) float64 {
\treturn RoundCents(amount * (100 - percent) / 100)
}

// RoundCents truncates a price to whole cents.
func RoundCents(value float64) float64 {
\treturn float64(int(value*100)) / 100
}
""",
    "report/report.go": """package report

import "strings"

// Render writes one line per sales row.
func Render(rows []string) string {
\treturn strings.Join(rows, "\\n")
}
""",
    "cart/cart_test.go": """package cart

import "testing"

func TestAdd(t *testing.T) {
\tc := &Cart{items: map[string]int{}}
\tc.Add("apple", 2)
}
""",
}
ISSUES = {
    "acme__shop-1": ("acme/shop", "RoundCents drops a cent after a coupon\n\nCalling ApplyDiscount with a 10 percent "
                     "coupon rounds the price down: RoundCents truncates instead of rounding to whole cents.",
                     "pricing/pricing.go", "pricing/pricing.go::pkg.RoundCents"),
    "other__cart-2": ("other/cart", "Cart.Add ignores a negative quantity\n\nAdding a sku with a negative qty to "
                      "the cart with Add should fail, but Add keeps it in the cart items.",
                      "cart/cart.go", "cart/cart.go::Cart.Add"),
}




def _fixture(root: Path) -> tuple[Path, Path]:
    data, checkouts = root / "data", root / "checkouts"
    data.mkdir()
    for qid in ISSUES:
        for rel, text in GO_FILES.items():
            path = checkouts / qid / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    rows = [(q, *v) for q, v in ISSUES.items()]
    pq.write_table(pa.Table.from_pylist([{"qid": q, "query": t, "index": q} for q, _, t, _, _ in rows]),
                   data / "queries.parquet")
    pq.write_table(pa.Table.from_pylist([{"qid": q, "repo": r, "language": "go", "base_commit": "0" * 40}
                                         for q, r, _, _, _ in rows]), data / "instances.parquet")
    pq.write_table(pa.Table.from_pylist([{"qid": q, "file": f, "relevance": 1} for q, _, _, f, _ in rows]),
                   data / "qrels_file.parquet")
    pq.write_table(pa.Table.from_pylist([{"qid": q, "node_id": n, "name": n.rsplit(".", 1)[-1], "kind": "function",
                                          "relevance": 1} for q, _, _, _, n in rows]),
                   data / "qrels_function.parquet")
    return data, checkouts


def test_functions_match_by_file_and_last_name_segment_strictly():
    devsets = load_script("devsets")
    key = devsets.file_and_name
    assert key("a.go::pkg.Cart.Add#2") == key("a.go::Add") == "a.go::Add"
    assert key("b.go::Add") != key("a.go::Add")
    assert key("a.go") == "a.go"
    gold_funcs = {"q": {key("a.go::ns.A.f"), key("b.go::g")}}
    gold_files = {"q": {"a.go", "b.go"}}
    # File nodes take no function slot; a duplicate of one symbol takes one; both golds needed.
    ranks = {"q": ["a.go", "a.go::A.f", "a.go::A.f#2", "c.go::x", "c.go::y", "c.go::z", "b.go", "b.go::g"]}
    row = devsets.scores(ranks, ["q"], gold_files, gold_funcs, key)
    assert row["file@1"] == 0.0 and row["file@5"] == 1.0
    assert row["func@5"] == 1.0     # f, x, y, z, g: five named definitions
    ranks["q"].insert(1, "a.go::h")
    assert devsets.scores(ranks, ["q"], gold_files, gold_funcs, key)["func@5"] == 0.0


def test_codenib_evals_file_and_function_name_levels_give_the_scripts_figures():
    """`codenib eval --levels file,function_name` is what mswe_dev.py prints: the same rankings
    and gold give the same strict Acc at every cutoff (a job's report equals the script's)."""
    from codenib.eval import metrics

    devsets = load_script("devsets")
    key = devsets.file_and_name
    ranks = {"q1": ["a.go", "a.go::A.f", "a.go::A.f#2", "c.go::x", "c.go::y", "c.go::z", "b.go", "b.go::g"],
             "q2": ["c.go::T.x", "a.go::h", "c.go"], "q3": []}
    gold_files = {"q1": {"a.go", "b.go"}, "q2": {"c.go"}, "q3": {"d.go"}}
    gold_nodes = {"q1": {"a.go::ns.A.f", "b.go::g"}, "q2": {"c.go::x"}}
    row = devsets.scores(ranks, ["q1", "q2", "q3"], gold_files, {q: {key(n) for n in g} for q, g in gold_nodes.items()},
                         key)
    # Hand-computed: files q1 [a, c, b] 1 at 5, q2 [c, a] 1 at 1, q3 none; names q1 [a::f, c::x, c::y, c::z,
    # b::g] (5), q2 [c::x, a::h] (1).
    acc = {k: v for k, v in row.items() if "R@" not in k}
    assert acc == {"file@1": 1 / 3, "file@5": 2 / 3, "file@10": 2 / 3, "func@5": 1.0, "func@10": 1.0}
    got = {}
    for level, gold, ks, name in (("file", gold_files, (1, 5, 10), "file"), ("function_name", gold_nodes, (5, 10), "func")):
        lv = metrics.LEVELS[level]
        qrels = lv.qrels({q: {d: 1 for d in g} for q, g in gold.items()})
        per_query = metrics.evaluate(lv.run(ranks), qrels, [f"Acc@{k}" for k in ks])
        got.update({f"{name}@{k}": v for k, v in zip(ks, metrics.mean_of(per_query).values())})
    assert got == pytest.approx(acc)


def test_the_baseline_chunks_go_definitions_by_receiver():
    pytest.importorskip("tree_sitter_go", reason="the grammar wheels come with the tree-sitter readers")
    tsbaseline = load_script("tsbaseline")
    ids = [c.node_id for c in tsbaseline.chunks("cart/cart.go", GO_FILES["cart/cart.go"].encode())]
    assert ids[0] == "cart/cart.go"
    assert {"cart/cart.go::Cart", "cart/cart.go::Add", "cart/cart.go::Total"} <= set(ids)
    tokenize = tsbaseline.Tokenizer()
    assert {"round", "cent", "roundcent"} <= set(tokenize("RoundCents"))


def test_the_multilanguage_dev_script_prints_its_tables_on_a_go_fixture(tmp_path, capsys):
    pytest.importorskip("codenib.compiler.lang", reason="needs the tree-sitter readers (issue 25 items 1-3)")
    data, checkouts = _fixture(tmp_path)
    rc = load_script("mswe_dev").main(["--data", str(data), "--checkouts", str(checkouts),
                                 "--work", str(tmp_path / "work"), "--no-dense", "--modes", "auto,sparse"])
    assert rc == 0
    out = capsys.readouterr().out
    # The packaged weights' provenance, as their file records it (they may be in-sample here).
    from codenib.model.weights import load_packaged_provenance

    assert f"packaged weights were fitted on: {load_packaged_provenance()}." in out.replace("\n", " ")
    rows = [ln.split() for ln in out.splitlines() if ln.startswith(("BM25", "codenib"))]
    for system in (["BM25", "baseline"], ["codenib", "auto"], ["codenib", "sparse"]):
        for group in ("go", "overall", "acme/shop", "other/cart", "worst"):
            assert any(r[:3] == system + [group] for r in rows), (system, group)
    auto = next(r for r in rows if r[:3] == ["codenib", "auto", "overall"])
    assert float(auto[5]) == 1.0     # file@5: both gold files in the top 5 of a four-file repository
    assert float(auto[8]) == 1.0     # func@10: the gold method (a different container in the gold) matched
    assert "targets (auto):" in out and "auto by plan:" in out


def _mirrors(root: Path, data: Path) -> Path:
    """A git repository per fixture repository (MIRROR_ROOT/<owner>+<name>/repo): the files in
    two commits, pricing and cart changed together in the second; the instances' base commits
    point at its head."""
    import pygit2

    heads = {}
    for repo_name in {r for r, *_ in ISSUES.values()}:
        path = root / repo_name.replace("/", "+") / "repo"
        repo = pygit2.init_repository(str(path), initial_head="main")
        sig = pygit2.Signature("t", "t@example.org", 1_000_000, 0)
        parents = []
        for step, names in enumerate((["go.mod", "report/report.go", "cart/cart_test.go"],
                                      ["cart/cart.go", "pricing/pricing.go"])):
            for rel in names:
                (path / rel).parent.mkdir(parents=True, exist_ok=True)
                (path / rel).write_text(GO_FILES[rel])
            repo.index.add_all()
            repo.index.write()
            parents = [repo.create_commit("HEAD", sig, sig, f"step {step}: cents and carts", repo.index.write_tree(),
                                          parents)]
        heads[repo_name] = str(parents[0])
    instances = pq.read_table(data / "instances.parquet").to_pylist()
    pq.write_table(pa.Table.from_pylist([{**r, "base_commit": heads[r["repo"]]} for r in instances]),
                   data / "instances.parquet")
    return root


def test_the_multilanguage_dev_script_measures_history_leave_one_repository_out(tmp_path, capsys):
    pytest.importorskip("codenib.compiler.lang", reason="needs the tree-sitter readers (issue 25 items 1-3)")
    data, checkouts = _fixture(tmp_path)
    mirrors = _mirrors(tmp_path / "mirrors", data)
    rc = load_script("mswe_dev").main(["--data", str(data), "--checkouts", str(checkouts), "--work", str(tmp_path / "work"),
                                 "--no-dense", "--modes", "auto", "--history", str(mirrors)])
    assert rc == 0
    out = capsys.readouterr().out
    assert (tmp_path / "work" / "idx-sparse-history" / "acme__shop-1" / "history").is_dir()
    assert "history signals, leave-one-repository-out over 2 repositories" in out
    for row in ("similar changes", "change-proneness", "co-change", "all"):
        assert any(ln.strip().startswith(f"{row} ") and "chosen:" in ln for ln in out.splitlines()), row
    means = [ln.split() for ln in out.splitlines() if ln.startswith(("no history", "co-change", "BM25 baseline"))]
    assert any(m[:2] == ["no", "history"] and m[2] == "acme/shop" for m in means)
    assert "history index time per repository" in out
    assert any(ln.startswith("other/cart") and "1: first" in ln for ln in out.splitlines())
