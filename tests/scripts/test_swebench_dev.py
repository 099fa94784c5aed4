"""scripts/swebench_dev.py on a two-instance fixture: real indexes, real Ray jobs, its table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.model import bug_repo

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "swebench_dev.py"
TAIL = (" I expected the cart to keep every cent of the price after the coupon is applied, the way the "
        "receipt shows it, but it does not, and this breaks our monthly accounting for every customer.")


def _load_script():
    spec = importlib.util.spec_from_file_location("swebench_dev", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fixture(root: Path) -> tuple[Path, Path]:
    data, checkouts = root / "data", root / "checkouts"
    data.mkdir()
    issues = {"shop-a__shop-1": ("shop-a", bug_repo.TRACEBACK_REPORT + TAIL, "src/shop/pricing.py",
                                 "src/shop/pricing.py::round_cents"),
              "shop-b__shop-2": ("shop-b", bug_repo.BACKTICK_REPORT + TAIL, "src/shop/cart.py",
                                 "src/shop/cart.py::Cart.add")}
    for qid in issues:
        bug_repo.write_repo(checkouts / qid)
    rows = [(q, *v) for q, v in issues.items()]
    pq.write_table(pa.Table.from_pylist([{"qid": q, "query": t, "index": q} for q, _, t, _, _ in rows]),
                   data / "queries.parquet")
    pq.write_table(pa.Table.from_pylist([{"qid": q, "repo": f"x/{r}", "repo_short": r, "base_commit": "0" * 40}
                                         for q, r, _, _, _ in rows]), data / "instances.parquet")
    pq.write_table(pa.Table.from_pylist([{"qid": q, "file": f, "relevance": 1} for q, _, _, f, _ in rows]),
                   data / "qrels_file.parquet")
    pq.write_table(pa.Table.from_pylist([{"qid": q, "node_id": n, "relevance": 1} for q, _, _, _, n in rows]),
                   data / "qrels_function.parquet")
    return data, checkouts


def test_the_dev_script_prints_its_table_on_a_fixture(tmp_path, capsys):
    data, checkouts = _fixture(tmp_path)
    script = _load_script()
    rc = script.main(["--data", str(data), "--checkouts", str(checkouts), "--work", str(tmp_path / "work"),
                      "--no-dense", "--modes", "auto,sparse", "--ablation"])
    assert rc == 0
    out = capsys.readouterr().out
    lines = {tuple(line.split()[:4]) for line in out.splitlines() if line.startswith(("BM25", "codenib"))}
    for system in (("BM25", "baseline"), ("codenib", "auto"), ("codenib", "packaged"), ("codenib", "sparse")):
        assert system + ("overall",) in {ln[:3] for ln in lines}
    # Both reports route to files-first localisation; every auto fold used its own weights.
    assert "bug_localisation" in out.split("auto by plan:")[1]
    for repo in ("shop-a", "shop-b"):
        weights = json.loads((tmp_path / "work" / "weights-sparse" / f"without-{repo}.json").read_text())
        assert weights["weights"]["f_test"] != 0
    auto = [ln for ln in out.splitlines() if ln.startswith("codenib auto") and " overall " in ln][0]
    file_at_5 = float(auto.split()[5])
    assert file_at_5 == 1.0   # both gold files in the top 5 of a five-file repository
    assert "- test demotion" in out
    # The packaged weights' run finds both gold files too, and the issue's targets are read off it.
    packaged = [ln for ln in out.splitlines() if ln.startswith("codenib packaged") and " overall " in ln][0]
    assert float(packaged.split()[5]) == 1.0
    targets = out.split("targets (issue 28, `codenib packaged`, indexes WITHOUT history):")[1].splitlines()
    assert targets[1].split()[:2] == ["file@5", "1.000"] and targets[1].endswith(" met")
