"""`codenib eval --html`: one self-contained report.html whose per-query rows match
per_query.parquet, with the details of each query; and legends that do not cover bars."""

import json
from html.parser import HTMLParser

import pyarrow.parquet as pq
import pytest

from codenib.commands.cli import main

from tests.eval.conftest import write_queries, write_results


class Page(HTMLParser):
    """Per-query bodies (their data-* attributes, measure cells, top-10 items, gold ranks), and
    every src/href and script tag of the page."""

    def __init__(self):
        super().__init__()
        self.queries: dict[str, dict] = {}
        self.refs: list[str] = []
        self.scripts: list[dict] = []
        self.images: list[str] = []
        self._q = None
        self._cell = None      # (kind, attrs) of the element whose text is being read
        self._text = []
        self._row = None
        self._top_system = None
        self._depth = 0        # tbody nesting inside a query's tbody (its detail tables have their own)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.refs += [a[k] for k in ("src", "href") if k in a]
        if tag == "script":
            self.scripts.append(a)
        if tag == "img":
            self.images.append(a.get("src", ""))
        if tag == "tbody" and self._q is not None:
            self._depth += 1
        if tag == "tbody" and a.get("class") == "query":
            self._q = {"attrs": {k[5:]: v for k, v in a.items() if k.startswith("data-")},
                       "cells": {}, "detail_measures": {}, "top": {}, "gold": {}, "text": ""}
            self.queries[a["data-qid"]] = self._q
        if self._q is None:
            return
        if tag == "tr" and "data-level" in a:
            self._row = a
        if tag == "div" and a.get("class") == "top":
            self._top_system = a["data-system"]
            self._q["top"][self._top_system] = []
        if tag == "td" and "data-measure" in a:
            self._start(("measure", a))
        elif tag == "td" and "data-system" in a and self._row and "data-item" in self._row:
            self._start(("gold", a))
        elif tag == "li" and "data-rank" in a:
            self._start(("top", a))
        elif tag == "pre" and not self._q["text"]:
            self._start(("text", a))

    def _start(self, cell):
        self._cell, self._text = cell, []

    def handle_data(self, data):
        if self._cell is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "tbody" and self._depth:
            self._depth -= 1
        elif tag == "tbody":
            self._q = None
        if tag == "tr":
            self._row = None
        if self._cell is None or tag not in ("td", "li", "pre"):
            return
        kind, a = self._cell
        text = "".join(self._text).strip()
        self._cell = None
        if kind == "measure" and self._row is None:
            self._q["cells"][a["data-measure"]] = (a.get("data-sort"), text)
        elif kind == "measure":
            key = (self._row["data-system"], self._row["data-level"], a["data-measure"])
            self._q["detail_measures"][key] = text
        elif kind == "gold":
            self._q["gold"][(self._row["data-level"], self._row["data-item"], a["data-system"])] = text
        elif kind == "top":
            self._q["top"][self._top_system].append((int(a["data-rank"]), text, a.get("class", "")))
        elif kind == "text":
            self._q["text"] = text


def parse(path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def per_query_values(out, system, level):
    t = pq.read_table(out / "per_query.parquet").to_pylist()
    return {(r["qid"], r["measure"]): r["value"] for r in t if r["system"] == system and r["level"] == level}


def test_html_report_rows_match_per_query_parquet(small_case):
    out = small_case["tmp"] / "report"
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
                 "--queries", str(small_case["queries"]), "--out", str(out), "--html"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert "report.html" in manifest["files"]
    page = parse(out / "report.html")
    # Self-contained: no script or stylesheet from elsewhere, every image inline.
    assert all(r.startswith("data:image/png;base64,") for r in page.refs), page.refs
    assert all("src" not in s for s in page.scripts)
    assert len(page.images) == 3  # recall_at_k, per_plan, by_kind

    values = per_query_values(out, "run", "node")
    # q1..q3 are judged (q3 without results); q4 has results but no judgments.
    assert set(page.queries) == {"q1", "q2", "q3"}
    for qid, q in page.queries.items():
        for measure, (sort_value, shown) in q["cells"].items():
            assert float(sort_value) == pytest.approx(values[(qid, measure)])
            assert shown == f"{values[(qid, measure)]:.3f}"
        for (system, level, measure), shown in q["detail_measures"].items():
            want = per_query_values(out, system, level)[(qid, measure)]
            assert shown == f"{want:.3f}"
    assert {q: p.queries[q]["attrs"]["plan"] for p in [page] for q in page.queries} == \
        {"q1": "fast_lexical", "q2": "semantic", "q3": ""}
    assert {q: page.queries[q]["attrs"]["kind"] for q in page.queries} == \
        {"q1": "lexical", "q2": "structural", "q3": "semantic"}
    # q1 finds its gold g at 2, q2 finds h at 3 (z never), q3 has no results.
    assert {q: page.queries[q]["attrs"]["hit"] for q in page.queries} == {"q1": "hit", "q2": "hit", "q3": "miss"}
    assert page.queries["q2"]["text"] == "who calls h"
    # ★ a gold node; ☆ a node of a gold file (a.py holds q1's gold g).
    assert page.queries["q1"]["top"]["run"] == [(1, "a.py::f ☆", "goldfile"), (2, "a.py::g ★", "gold"),
                                                (3, "b.py::h", "")]
    gold = page.queries["q2"]["gold"]
    assert gold[("node", "b.py::h", "run")] == "3"
    assert gold[("node", "d.py::z", "run")] == "not retrieved"
    assert gold[("file", "b.py", "run")] == "1"   # b.py::x, at 1, is in b.py
    assert page.queries["q3"]["top"]["run"] == []


def test_html_compare_shows_both_runs_with_wins_losses_and_ties(small_case, tmp_path):
    other = write_results(tmp_path / "other", {("q1", "semantic"): ["a.py::g"],
                                               ("q2", "semantic"): ["b.py::x", "c.py::y", "b.py::h"]})
    out = tmp_path / "cmp"
    assert main(["eval", "--results", str(small_case["results"]), "--compare", str(other),
                 "--qrels", str(small_case["qrels"]), "--out", str(out), "--no-plots", "--html"]) == 0
    page = parse(out / "report.html")
    # RR@10: q1 1/2 vs 1 (loss), q2 1/3 vs 1/3 (tie), q3 0 vs 0 (tie).
    assert {q: page.queries[q]["attrs"]["outcome"] for q in page.queries} == \
        {"q1": "loss", "q2": "tie", "q3": "tie"}
    assert page.queries["q1"]["top"]["other"] == [(1, "a.py::g ★", "gold")]
    assert page.queries["q1"]["gold"][("node", "a.py::g", "other")] == "1"
    assert page.queries["q1"]["gold"][("node", "a.py::g", "run")] == "2"
    assert page.images == []  # --no-plots
    c = json.loads((out / "metrics.json").read_text())["comparison"]["levels"]["node"]["RR@10"]
    assert (c["wins"], c["losses"], c["ties"]) == (0, 1, 2)


def test_html_needs_a_report_folder(small_case, capsys):
    assert main(["eval", "--results", str(small_case["results"]), "--qrels", str(small_case["qrels"]),
                 "--html"]) == 2
    assert "--html" in capsys.readouterr().err


def test_html_text_is_escaped(tmp_path):
    results = write_results(tmp_path / "run", {("q<1>", "semantic"): ["a.py::f"]})
    queries = write_queries(tmp_path / "q.parquet", [{"qid": "q<1>", "query": "</pre><script>alert(1)</script>"}])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q<1> 0 a.py::f 1\n")
    out = tmp_path / "rep"
    assert main(["eval", "--results", str(results), "--qrels", str(qrels), "--queries", str(queries),
                 "--out", str(out), "--no-plots", "--html"]) == 0
    page = parse(out / "report.html")
    assert page.queries["q<1>"]["text"] == "</pre><script>alert(1)</script>"
    assert len(page.scripts) == 1  # only the page's own


def test_bar_legend_does_not_cover_bars():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from codenib.eval.plots import bar_figure

    heads = ["R@10", "RR@10", "nDCG@10", "AP", "Acc@5"]
    bars = {p: {"node": {m: 1.0 for m in heads}} for p in ("semantic", "fast_lexical", "oracle")}
    fig = bar_figure(plt, bars, heads, "node", "by plan")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    patches = [p.get_window_extent(renderer) for p in ax.patches]
    assert len(patches) == 15
    assert not any(legend.overlaps(p) for p in patches)
    plt.close(fig)


def test_html_of_a_mode_all_run_shows_autos_choice(tmp_path):
    from tests.eval.conftest import write_qrels

    rankings = {("q1", "fast_lexical"): ["a.py::g"], ("q1", "semantic"): ["x.py::n", "a.py::g"]}
    plans = [{"qid": "q1", "plan": p, "mode": "all"} for _, p in rankings]
    plans.append({"qid": "q1", "plan": "semantic", "mode": "auto", "trace": '{"why": "semantic signals"}'})
    results = write_results(tmp_path / "all", rankings, plans=plans)
    qrels = write_qrels(tmp_path / "q.parquet", [{"qid": "q1", "node_id": "a.py::g", "relevance": 1}])
    out = tmp_path / "rep"
    assert main(["eval", "--results", str(results), "--qrels", str(qrels), "--out", str(out), "--no-plots",
                 "--html"]) == 0
    q = parse(out / "report.html").queries["q1"]
    assert q["attrs"]["plan"] == "semantic"              # auto chose semantic: g at rank 2
    assert q["cells"]["RR@10"][1] == "0.500"
    assert q["top"]["auto"] == [(1, "x.py::n", ""), (2, "a.py::g ★", "gold")]
    assert "semantic signals" in (out / "report.html").read_text()  # the trace of auto's row
