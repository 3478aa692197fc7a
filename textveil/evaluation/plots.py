"""The report's figures: top-k identification curves (paper 004 Fig. 2) and risk-utility maps
(paper 004 Fig. 4), rendered to PNG bytes with matplotlib's non-interactive backend."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


def in_parameter_order(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Grid points from the strongest setting to the mildest, the unmodified text last (it is
    the limit of a growing epsilon), so a curve joins neighbouring settings whatever order the
    grid was given in.

    >>> [p["label"] for p in in_parameter_order([{"label": "none", "parameter": None},
    ...     {"label": "20", "parameter": 20.0}, {"label": "10", "parameter": 10.0}])]
    ['10', '20', 'none']
    """
    return sorted(points, key=lambda p: (p["parameter"] is None, p["parameter"] or 0.0))


def topk_curves(results: dict[str, Any]) -> bytes:
    """One panel per attack: accuracy at top-1..k, one line per grid point, chance dashed."""
    points = in_parameter_order(results["points"])
    attacks = list(points[0]["attacks"]) if points else []
    columns = max(1, min(3, len(attacks)))
    rows = max(1, -(-len(attacks) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.6 * rows), squeeze=False)
    colours = plt.cm.viridis([i / max(1, len(points) - 1) for i in range(len(points))])
    for panel, name in enumerate(attacks):
        axis = axes[panel // columns][panel % columns]
        for colour, point in zip(colours, points):
            result = point["attacks"][name]
            ks = range(1, len(result["topk"]) + 1)
            axis.plot(ks, result["topk"], marker="o", markersize=3, color=colour, label=point["label"])
        chance = points[0]["attacks"][name]["chance"]
        axis.plot(range(1, len(chance) + 1), chance, linestyle="--", color="grey", label="chance")
        axis.set(title=name, xlabel="k", ylabel="top-k identification accuracy", ylim=(0, 1.02))
        axis.grid(alpha=0.3)
    for panel in range(len(attacks), rows * columns):
        axes[panel // columns][panel % columns].axis("off")
    if attacks:
        axes[0][0].legend(title=results["plan"]["parameter"], fontsize=7)
    return _png(figure)


def risk_utility_maps(results: dict[str, Any]) -> bytes:
    """One panel per utility task: x = utility of the release, y = top-1 of each attack,
    each point labelled with its parameter value (lower-right is the place to be)."""
    points = in_parameter_order(results["points"])
    tasks = list(points[0]["utility"]) if points else []
    attacks = list(points[0]["attacks"]) if points else []
    columns = max(1, min(3, len(tasks)))
    rows = max(1, -(-len(tasks) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4.8 * columns, 3.8 * rows), squeeze=False)
    markers = "osD^v<>p*h"
    for panel, task in enumerate(tasks):
        axis = axes[panel // columns][panel % columns]
        for index, attack in enumerate(attacks):
            xs = [p["utility"][task]["value"] for p in points]
            ys = [p["attacks"][attack]["top1"] for p in points]
            line, = axis.plot(xs, ys, marker=markers[index % len(markers)], label=attack, alpha=0.85)
            # repeated releases: one standard deviation each way, in both measures
            xerr = [p["utility"][task].get("sd", 0.0) for p in points]
            yerr = [p["attacks"][attack].get("top1_sd", 0.0) for p in points]
            if any(xerr) or any(yerr):
                axis.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt="none", ecolor=line.get_color(), alpha=0.6, capsize=2)
            for x, y, point in zip(xs, ys, points):
                axis.annotate(point["label"], (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        axis.set(xlabel=points[0]["utility"][task]["metric"] or task, ylabel="risk: top-1 identification", title=task)
        axis.grid(alpha=0.3)
    for panel in range(len(tasks), rows * columns):
        axes[panel // columns][panel % columns].axis("off")
    if tasks and attacks:
        axes[0][0].legend(fontsize=7)
    return _png(figure)
