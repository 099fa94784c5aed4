"""PNG plots of an evaluation: Recall@k curves, per-plan bars and per-kind bars."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from codenib.eval import metrics
from codenib.eval.breakdowns import AUTO, ORACLE
from codenib.eval.reportdata import Evaluation


def write_plots(evaluation: Evaluation, folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    s = evaluation.summary
    heads = [m for m in metrics.HEADLINE_MEASURES if m in s["measures"]]
    written = []
    # Recall@k curves, one panel per level, one line per system.
    levels = s["levels"]
    fig, axes = plt.subplots(1, len(levels), figsize=(6 * len(levels), 4), squeeze=False)
    ks = list(evaluation.curve_ks)
    for ax, lv in zip(axes[0], levels):
        for name, by_level in evaluation.curves.items():
            if lv in by_level:
                ax.plot(ks, by_level[lv], label=name)
        ax.set_xscale("log")
        ax.set_xlabel("k")
        ax.set_ylabel("R@k")
        ax.set_ylim(0, 1)
        ax.set_title(f"Recall@k, {lv} level")
        ax.grid(True, alpha=0.3)
        _legend_outside(ax)
    fig.tight_layout()
    fig.savefig(folder / "recall_at_k.png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    written.append("recall_at_k.png")
    # Per-plan bars: every plan of a --mode all run (with auto and oracle), else the plan groups.
    bars = _plan_bars(s, heads)
    if bars:
        _bar_chart(plt, bars, heads, "node" if "node" in levels else levels[0],
                   folder / "per_plan.png", "by plan")
        written.append("per_plan.png")
    if "kind" in s["breakdowns"] and s["primary"]:
        lv = "node" if "node" in levels else levels[0]
        kind_bars = {f"{k} (n={e['n'][lv]})": e["systems"][s["primary"]][lv]
                     for k, e in s["breakdowns"]["kind"].items() if s["primary"] in e["systems"]}
        _bar_chart(plt, {k: {lv: v} for k, v in kind_bars.items()}, heads, lv,
                   folder / "by_kind.png", f"{s['primary']} by query kind")
        written.append("by_kind.png")
    return written


# --- private helpers --------------------------------------------------------------------

def _plan_bars(s: dict, heads: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
    """label -> level -> measure -> value for the per-plan bar chart."""
    if s["run"]["multi_plan"] and s["inputs"]["plan"] is None:
        bars = {name: levels for name, levels in s["systems"].items() if name in s["run"]["plans"] or name == AUTO}
        if s["regret"]:
            bars[ORACLE] = s["regret"]["oracle"]
        return bars
    groups = s["breakdowns"].get("plan")
    if not groups or not s["primary"]:
        return {}
    lv = "node" if "node" in s["levels"] else s["levels"][0]
    return {f"{p} (n={e['n'][lv]})": e["systems"][s["primary"]] for p, e in groups.items()
            if s["primary"] in e["systems"]}


def _bar_chart(plt, bars: dict, heads: Sequence[str], level: str, path: Path, title: str) -> None:
    fig = bar_figure(plt, bars, heads, level, title)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def bar_figure(plt, bars: dict, heads: Sequence[str], level: str, title: str):
    """Grouped bars (label -> level -> measure -> value), the legend right of the axes so that
    it never covers a bar."""
    labels = list(bars)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels) * len(heads) / 3), 4))
    width = 0.8 / max(len(heads), 1)
    x = np.arange(len(labels))
    for i, m in enumerate(heads):
        vals = [bars[label].get(level, {}).get(m) for label in labels]
        ax.bar(x + i * width, [0.0 if v is None or math.isnan(v) else v for v in vals], width, label=m)
    ax.set_xticks(x + width * (len(heads) - 1) / 2)
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize="small")
    ax.set_ylim(0, 1)
    ax.set_title(f"{title}, {level} level")
    _legend_outside(ax)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _legend_outside(ax) -> None:
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
