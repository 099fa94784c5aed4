"""`report.html`: one self-contained page to browse an evaluation (no server, no network).

Inline CSS and JavaScript, the PNG plots embedded as base64 data URLs. It holds the measures
table, the plots, and a per-query table that sorts (click a column head) and filters (plan,
kind, index, hit or miss, and with a comparison win/loss/tie); a click on a query opens its
text, plan, trace, top 10 with the gold items marked, and the rank of every gold item. With a
second run (`--compare`) both runs stand side by side per query.

A query is a *hit* when a gold item of the main level (node, or file when only files are
judged) is in the top 10 of that level's ranking. Each query's outcome compares the two runs
on one measure (`RR@10` when it was computed).
"""

from __future__ import annotations

import base64
import json
import math
from html import escape
from typing import Mapping, Sequence

from codenib.eval import metrics
from codenib.eval.reportdata import Evaluation
from codenib.core.types import file_of

#: The report's file name in the report folder.
HTML_NAME = "report.html"
#: How many results of each ranking the page shows per query.
TOP = 10
#: The measure that decides a query's win, loss or tie against the compared run (if computed).
OUTCOME_MEASURE = "RR@10"
#: The gold items (per query and level) whose ranks the page lists; more are counted.
MAX_GOLD_SHOWN = 50

_LEVEL_RUN = {name: level.run for name, level in metrics.LEVELS.items()}


def main_level(evaluation: Evaluation) -> str:
    """The level the per-query table shows: node, or the first level judged."""
    levels = evaluation.summary["levels"]
    return "node" if "node" in levels else levels[0]


def render_html(evaluation: Evaluation, figures: Mapping[str, bytes]) -> str:
    """The whole page; `figures` maps PNG file names to their bytes (embedded in order)."""
    s = evaluation.summary
    level = main_level(evaluation)
    systems = list(evaluation.per_query)
    a = s["primary"] or systems[0]
    b = s["comparison"]["b"] if s.get("comparison") else None
    outcome_m = OUTCOME_MEASURE if OUTCOME_MEASURE in s["measures"] else s["measures"][0]
    heads = [m for m in metrics.HEADLINE_MEASURES if m in s["measures"]] or list(s["measures"][:5])
    parts = [_HEAD.replace("{title}", escape(f"CodeNib evaluation: {a}" + (f" vs {b}" if b else ""))),
             f"<h1>CodeNib evaluation: <code>{escape(a)}</code>"
             + (f" vs <code>{escape(b)}</code>" if b else "") + "</h1>",
             _inputs(s), _measures_table(s)]
    if s.get("macro"):
        parts.append(_macro_table(s["macro"], heads))
    if s.get("comparison"):
        parts.append(_comparison_table(s["comparison"], heads))
        if s["comparison"].get("macro"):
            parts.append(_comparison_table(s["comparison"]["macro"] | {"a": s["comparison"]["a"],
                                                                        "b": s["comparison"]["b"]}, heads,
                                           "Comparison over repositories",
                                           " A and B are means over repositories, each counting the same."))
    if figures:
        parts.append("<h2>Plots</h2>")
        for name, data in figures.items():
            parts.append(f'<figure><img alt="{escape(name)}" src="data:image/png;base64,'
                         f'{base64.b64encode(data).decode("ascii")}"><figcaption>{escape(name)}</figcaption></figure>')
    parts.append(_query_table(evaluation, level, a, b, heads, outcome_m))
    parts.append(f"<script>{_SCRIPT}</script></body></html>\n")
    return "\n".join(parts)


def query_rows(evaluation: Evaluation) -> list[dict]:
    """What the per-query table shows, one dict per query (also what the tests compare)."""
    s = evaluation.summary
    level = main_level(evaluation)
    a = s["primary"] or next(iter(evaluation.per_query))
    b = s["comparison"]["b"] if s.get("comparison") else None
    outcome_m = OUTCOME_MEASURE if OUTCOME_MEASURE in s["measures"] else s["measures"][0]
    gold = evaluation.judgments.get(level, {})
    qids = sorted({q for by_m in evaluation.per_query[a].get(level, {}).values() for q in by_m})
    ranking_a = _LEVEL_RUN[level](evaluation.runs.get(a, {}))
    rows = []
    for q in qids:
        info = evaluation.query_info.get(q, {})
        ranks = _gold_ranks(ranking_a.get(q, []), gold.get(q, {}))
        first = min((r for r in ranks.values() if r is not None), default=None)
        row = {"qid": q, "plan": info.get("plan", ""), "kind": info.get("kind", ""),
               "index": info.get("index", ""), "hit": first is not None and first <= TOP,
               "first_gold_rank": first,
               "values": {m: evaluation.per_query[a][level][m][q] for m in s["measures"]}}
        if b is not None:
            va = evaluation.per_query[a][level][outcome_m][q]
            vb = evaluation.per_query[b][level][outcome_m][q]
            row["compare_value"] = vb
            row["outcome"] = "win" if va > vb else "loss" if va < vb else "tie"
        rows.append(row)
    return rows


# --- private helpers --------------------------------------------------------------------

def _gold_ranks(ranking: Sequence[str], rels: Mapping[str, int]) -> dict[str, int | None]:
    """1-based rank of each relevant item in `ranking` (None: not retrieved)."""
    first: dict[str, int] = {}
    for i, item in enumerate(ranking, 1):
        first.setdefault(item, i)
    return {item: first.get(item) for item, r in sorted(rels.items()) if r > 0}


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _sort_value(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value))


def _inputs(s: dict) -> str:
    rows = "".join(f"<tr><th>{escape(k)}</th><td><code>{escape(str(v))}</code></td></tr>"
                   for k, v in s["inputs"].items() if v is not None)
    counts = s["queries"]
    evaluated = ", ".join(f"{lv} {n}" for lv, n in counts["evaluated"].items())
    rows += f"<tr><th>evaluated queries</th><td>{escape(evaluated)}</td></tr>"
    rows += (f"<tr><th>judged without results</th><td>{counts['judged_without_results']}</td></tr>"
             f"<tr><th>with errors</th><td>{counts['with_errors']}</td></tr>")
    warnings = "".join(f"<li>{escape(w)}</li>" for w in s.get("warnings", []))
    return (f'<table class="kv">{rows}</table>'
            + (f'<details><summary>{len(s["warnings"])} warning(s)</summary><ul>{warnings}</ul></details>'
               if warnings else ""))


def _measures_table(s: dict) -> str:
    measures = s["measures"]
    head = "".join(f"<th>{escape(m)}</th>" for m in measures)
    body = []
    for name, levels in s["systems"].items():
        for lv, values in levels.items():
            cells = "".join(f'<td data-measure="{escape(m)}">{_fmt(values.get(m))}</td>' for m in measures)
            body.append(f'<tr data-system="{escape(name)}" data-level="{escape(lv)}"><td>{escape(name)}</td>'
                        f"<td>{escape(lv)}</td>{cells}</tr>")
    return (f'<h2>Measures</h2><table id="measures" class="grid"><thead><tr><th>system</th><th>level</th>'
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def _macro_table(macro: dict, heads: Sequence[str]) -> str:
    body = []
    for name, levels in macro["systems"].items():
        for lv, by_m in levels.items():
            cells = "".join(f"<td>{_fmt(by_m[m]['mean'])} <small>± {_fmt(by_m[m].get('margin95'))} (worst "
                            f"{_fmt(by_m[m]['worst'])}, "
                            f"{escape(by_m[m]['worst_group'])})</small></td>" for m in heads)
            body.append(f"<tr><td>{escape(name)}</td><td>{escape(lv)}</td><td>{macro['groups'][lv]}</td>{cells}</tr>")
    head = "".join(f"<th>{escape(m)}</th>" for m in heads)
    return ("<h2>Mean over repositories</h2><p>Each measure averaged within each repository, then over "
            "the repositories, each counting the same; ± the half-width of its 95% confidence interval over the "
            "repositories; the worst repository beside it.</p>"
            f'<table id="macro" class="grid"><thead><tr><th>system</th><th>level</th><th>repositories</th>{head}'
            f"</tr></thead><tbody>{''.join(body)}</tbody></table>")


def _comparison_table(c: dict, heads: Sequence[str], title: str = "Comparison", about: str = "") -> str:
    body = []
    for lv, by_m in c["levels"].items():
        for m in heads:
            t = by_m.get(m)
            if t is None:
                continue
            body.append(f"<tr><td>{escape(lv)}</td><td>{escape(m)}</td><td>{_fmt(t['mean_a'])}</td>"
                        f"<td>{_fmt(t['mean_b'])}</td><td>{_fmt(t['delta'])}</td><td>{_fmt(t['permutation_p'])}</td>"
                        f"<td>{t['wins']}</td><td>{t['losses']}</td><td>{t['ties']}</td></tr>")
    return (f"<h2>{escape(title)}</h2><p>A = <code>{escape(c['a'])}</code>, B = <code>{escape(c['b'])}</code>; "
            f"wins are queries where A scores higher.{escape(about)}</p><table class=\"grid\"><thead><tr><th>level</th>"
            "<th>measure</th><th>A</th><th>B</th><th>Δ</th><th>permutation p</th><th>A wins</th>"
            f"<th>B wins</th><th>ties</th></tr></thead><tbody>{''.join(body)}</tbody></table>")


def _select(name: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{escape(v)}">{escape(v) or "(none)"}</option>' for v in values)
    return f'<label>{name} <select data-filter="{name}"><option value="*">all</option>{opts}</select></label>'


def _query_table(evaluation: Evaluation, level: str, a: str, b: str | None, heads: Sequence[str],
                 outcome_m: str) -> str:
    rows = query_rows(evaluation)
    filters = [_select(attr, sorted({r[attr] for r in rows})) for attr in ("plan", "kind", "index")]
    filters.append(_select("hit", ["hit", "miss"]))
    if b is not None:
        filters.append(_select("outcome", ["win", "loss", "tie"]))
    head = ['<th data-type="text">qid</th>', '<th data-type="text">plan</th>', '<th data-type="text">kind</th>',
            '<th data-type="text">index</th>', '<th data-type="text">hit</th>',
            '<th data-type="num">first gold rank</th>']
    head += [f'<th data-type="num">{escape(m)}</th>' for m in heads]
    if b is not None:
        head += [f'<th data-type="num">{escape(outcome_m)} of {escape(b)}</th>', '<th data-type="text">outcome</th>']
    ncols = len(head)
    bodies = []
    for r in rows:
        q = r["qid"]
        attrs = (f'data-qid="{escape(q)}" data-plan="{escape(r["plan"])}" data-kind="{escape(r["kind"])}" '
                 f'data-index="{escape(r["index"])}" data-hit="{"hit" if r["hit"] else "miss"}"')
        if b is not None:
            attrs += f' data-outcome="{r["outcome"]}"'
        first = r["first_gold_rank"]
        cells = [f"<td>{escape(q)}</td>", f"<td>{escape(r['plan'])}</td>", f"<td>{escape(r['kind'])}</td>",
                 f"<td>{escape(r['index'])}</td>", f"<td>{'hit' if r['hit'] else 'miss'}</td>",
                 f'<td data-sort="{first if first is not None else ""}">{first if first is not None else "–"}</td>']
        cells += [f'<td data-measure="{escape(m)}" data-sort="{_sort_value(r["values"][m])}">'
                  f'{_fmt(r["values"][m])}</td>' for m in heads]
        if b is not None:
            cells += [f'<td data-sort="{_sort_value(r["compare_value"])}">{_fmt(r["compare_value"])}</td>',
                      f'<td class="{r["outcome"]}">{r["outcome"]}</td>']
        detail = _detail(evaluation, q, a, b)
        bodies.append(f'<tbody class="query" {attrs}><tr class="summary">{"".join(cells)}</tr>'
                      f'<tr class="detail" hidden><td colspan="{ncols}">{detail}</td></tr></tbody>')
    return (f"<h2>Queries ({level} level)</h2><p>Click a column head to sort, a query to open it. "
            f"Hit: a gold item in the top {TOP}." + (f" Outcome: {escape(a)} against {escape(b)} on "
                                                      f"{escape(outcome_m)}." if b else "") + "</p>"
            f'<div class="filters">{"".join(filters)} <span id="shown"></span></div>'
            f'<table id="queries" class="grid"><thead><tr>{"".join(head)}</tr></thead>{"".join(bodies)}</table>')


def _detail(evaluation: Evaluation, q: str, a: str, b: str | None) -> str:
    info = evaluation.query_info.get(q, {})
    s = evaluation.summary
    out = [f'<div class="qtext"><b>Query</b><pre>{escape(info.get("text") or "(text not known: pass --queries)")}</pre></div>',
           f'<p><b>plan</b> <code>{escape(info.get("plan") or "–")}</code></p>']
    if info.get("error"):
        out.append(f'<p class="err"><b>error</b> {escape(info["error"])}</p>')
    if info.get("trace"):
        try:
            trace = json.dumps(json.loads(info["trace"]), indent=2, ensure_ascii=False)
        except ValueError:
            trace = info["trace"]
        out.append(f"<details><summary>trace</summary><pre>{escape(trace)}</pre></details>")
    systems = [a] + ([b] if b else [])
    # Every measure at every level, for each run.
    mhead = "".join(f"<th>{escape(m)}</th>" for m in s["measures"])
    mrows = []
    for name in systems:
        for lv, by_m in evaluation.per_query.get(name, {}).items():
            if q in next(iter(by_m.values()), {}):
                mrows.append(f'<tr data-system="{escape(name)}" data-level="{escape(lv)}"><td>{escape(name)}</td>'
                             f"<td>{escape(lv)}</td>"
                             + "".join(f'<td data-measure="{escape(m)}">{_fmt(by_m[m][q])}</td>' for m in s["measures"])
                             + "</tr>")
    out.append(f'<table class="grid small"><thead><tr><th>run</th><th>level</th>{mhead}</tr></thead>'
               f"<tbody>{''.join(mrows)}</tbody></table>")
    node_gold = evaluation.judgments.get("node", {}).get(q, {})
    file_gold = evaluation.judgments.get("file", {}).get(q, {})
    tops = []
    for name in systems:
        ranking = evaluation.runs.get(name, {}).get(q, [])
        items = []
        for i, node in enumerate(ranking[:TOP], 1):
            cls = "gold" if node_gold.get(node, 0) > 0 else (
                "goldfile" if file_gold.get(file_of(node), 0) > 0 else "")
            mark = " ★" if cls == "gold" else " ☆" if cls == "goldfile" else ""
            items.append(f'<li class="{cls}" data-rank="{i}"><code>{escape(node)}</code>{mark}</li>')
        tops.append(f'<div class="top" data-system="{escape(name)}"><b>{escape(name)}: top {TOP}</b>'
                    + (f"<ol>{''.join(items)}</ol>" if items else "<p>no results</p>") + "</div>")
    out.append(f'<div class="side">{"".join(tops)}</div><p class="legend">★ gold item, ☆ in a gold file</p>')
    # Where each gold item ranked, per level and run.
    grows = []
    for lv, judged in evaluation.judgments.items():
        rels = judged.get(q, {})
        rankings = {name: _LEVEL_RUN[lv](evaluation.runs.get(name, {})).get(q, []) for name in systems}
        ranks = {name: _gold_ranks(r, rels) for name, r in rankings.items()}
        gold = list(ranks[a])
        for item in gold[:MAX_GOLD_SHOWN]:
            cells = "".join(f'<td data-system="{escape(name)}">{ranks[name][item] or "not retrieved"}</td>'
                            for name in systems)
            grows.append(f'<tr data-level="{escape(lv)}" data-item="{escape(item)}"><td>{escape(lv)}</td>'
                         f"<td><code>{escape(item)}</code></td><td>{rels[item]}</td>{cells}</tr>")
        if len(gold) > MAX_GOLD_SHOWN:
            grows.append(f"<tr><td>{escape(lv)}</td><td colspan=\"{2 + len(systems)}\">and "
                         f"{len(gold) - MAX_GOLD_SHOWN} more gold items</td></tr>")
    rank_heads = "".join(f"<th>rank in {escape(name)}</th>" for name in systems)
    out.append(f'<table class="grid small gold-ranks"><thead><tr><th>level</th><th>gold item</th>'
               f"<th>relevance</th>{rank_heads}</tr></thead><tbody>{''.join(grows)}</tbody></table>")
    return "".join(out)


_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
code,pre{font-family:ui-monospace,monospace;font-size:12px}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;max-height:30em;overflow:auto}
table.grid{border-collapse:collapse;margin:.5em 0}
table.grid th,table.grid td{border:1px solid #ccc;padding:2px 6px;text-align:left}
table.grid td[data-measure],table.grid td[data-sort]{text-align:right}
table.kv th{text-align:left;padding-right:1em}
#queries thead th{cursor:pointer;background:#eee;position:sticky;top:0}
#queries th[data-dir=asc]::after{content:" ▲"} #queries th[data-dir=desc]::after{content:" ▼"}
tr.summary{cursor:pointer} tr.summary:hover{background:#f0f6ff}
td.win{color:#070} td.loss{color:#a00}
li.gold{background:#dfd} li.goldfile{background:#ffd}
.side{display:flex;gap:2em;flex-wrap:wrap} .err{color:#a00}
figure{display:inline-block;margin:.5em} img{max-width:100%}
.filters label{margin-right:1em}
</style></head><body>"""

_SCRIPT = """
(function(){
  var table = document.getElementById('queries');
  if (!table) return;
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function(th, i){
    th.addEventListener('click', function(){
      var dir = th.dataset.dir === 'asc' ? 'desc' : 'asc';
      Array.prototype.forEach.call(heads, function(h){ delete h.dataset.dir; });
      th.dataset.dir = dir;
      var num = th.dataset.type === 'num';
      var bodies = Array.prototype.slice.call(table.tBodies);
      function key(b){
        var c = b.rows[0].cells[i];
        var v = c.dataset.sort !== undefined ? c.dataset.sort : c.textContent;
        if (!num) return v;
        return v === '' ? null : parseFloat(v);
      }
      bodies.sort(function(x, y){
        var a = key(x), b = key(y);
        if (a === b) return 0;
        if (a === null) return 1;   // missing values last either way
        if (b === null) return -1;
        var r = a < b ? -1 : 1;
        return dir === 'asc' ? r : -r;
      });
      bodies.forEach(function(b){ table.appendChild(b); });
    });
  });
  var selects = document.querySelectorAll('select[data-filter]');
  function apply(){
    var shown = 0, all = table.tBodies.length;
    Array.prototype.forEach.call(table.tBodies, function(b){
      var ok = true;
      selects.forEach(function(s){
        if (s.value !== '*' && b.dataset[s.dataset.filter] !== s.value) ok = false;
      });
      b.hidden = !ok;
      if (ok) shown++;
    });
    document.getElementById('shown').textContent = shown + ' of ' + all + ' queries shown';
  }
  selects.forEach(function(s){ s.addEventListener('change', apply); });
  table.addEventListener('click', function(e){
    var tr = e.target.closest('tr.summary');
    if (!tr) return;
    var d = tr.nextElementSibling;
    d.hidden = !d.hidden;
  });
  apply();
})();
"""
