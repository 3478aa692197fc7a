"""The report's figures: top-k identification curves (paper 004 Fig. 2), risk-utility maps
(paper 004 Fig. 4) and a comparison's frontier maps, rendered to PNG bytes with matplotlib's
non-interactive backend."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from textveil.evaluation.frontier import frontier_of, release_point  # noqa: E402
from textveil.evaluation.release_intervals import utility_interval  # noqa: E402
from textveil.evaluation.trainings import (  # noqa: E402
    TRAINING_KEYS,
    best_attack,
    line_label,
    lines_of,
    result_of,
    trainings_in,
)

# A training's line and marker style in the risk-utility maps: one colour per attack, clean
# solid and filled, release-trained dashed and hollow, same-key (keyed corpus releases) dash-dotted and
# half-filled, so an attack's trainings read as a group.
LINE_STYLES = {"clean": {"linestyle": "-", "fillstyle": "full"}, "release": {"linestyle": "--", "fillstyle": "none"},
               "same-key": {"linestyle": "-.", "fillstyle": "left"}}


def _png(figure: Any, rect: tuple[float, float, float, float] | None = None) -> bytes:
    """The figure as PNG bytes; ``rect`` keeps part of the figure free of panels (a legend below)."""
    buffer = io.BytesIO()
    figure.tight_layout(**({"rect": rect} if rect is not None else {}))
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


def _panel_grid(panels: int, columns: int, size: tuple[float, float] = (4.6, 3.6)) -> tuple[Any, Any, int]:
    """A figure of ``panels`` panels in rows of ``columns``, spare panels switched off."""
    columns = max(1, min(columns, panels))
    rows = max(1, -(-panels // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(size[0] * columns, size[1] * rows), squeeze=False)
    for panel in range(panels, rows * columns):
        axes[panel // columns][panel % columns].axis("off")
    return figure, axes, columns


def topk_curves(results: dict[str, Any]) -> bytes:
    """One panel per attack and training (an attack's trainings side by side): accuracy at
    top-1..k, one line per grid point, chance dashed."""
    points = in_parameter_order(results["points"])
    lines = lines_of(points)
    trainings = len(trainings_in(results))
    figure, axes, columns = _panel_grid(len(lines), trainings if trainings > 1 else 3)
    colours = plt.cm.viridis([i / max(1, len(points) - 1) for i in range(len(points))])
    for panel, (name, training) in enumerate(lines):
        axis = axes[panel // columns][panel % columns]
        measured = [(colour, point, result_of(point, name, training)) for colour, point in zip(colours, points)]
        measured = [(colour, point, result) for colour, point, result in measured if result is not None]
        for colour, point, result in measured:
            ks = range(1, len(result["topk"]) + 1)
            axis.plot(ks, result["topk"], marker="o", markersize=3, color=colour, label=point["label"])
        chance = measured[0][2]["chance"]
        axis.plot(range(1, len(chance) + 1), chance, linestyle="--", color="grey", label="chance")
        axis.set(title=line_label(name, training), xlabel="k", ylabel="top-k identification accuracy", ylim=(0, 1.02))
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # k counts candidates: no k = 1.5
        axis.grid(alpha=0.3)
    if lines:
        axes[0][0].legend(title=results["plan"]["parameter"], fontsize=7)
    return _png(figure)


def risk_utility_maps(results: dict[str, Any]) -> bytes:
    """One panel per utility task: x = utility of the release, y = top-1 of each attack under
    each training (one colour per attack, release-trained dashed and hollow, same-key dash-dotted) and the risk (the best of
    them, black dotted), each point labelled with its parameter value (lower-right is the
    place to be)."""
    points = in_parameter_order(results["points"])
    tasks = list(points[0]["utility"]) if points else []
    lines = lines_of(points)
    attacks = list(dict.fromkeys(attack for attack, _ in lines))
    figure, axes, columns = _panel_grid(len(tasks), 3, size=(4.8, 3.8))
    markers = "osD^v<>p*h"
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for panel, task in enumerate(tasks):
        axis = axes[panel // columns][panel % columns]
        for attack, training in lines:
            index = attacks.index(attack)
            key = TRAINING_KEYS[training]
            held = [p for p in points if result_of(p, attack, training) is not None]
            xs = [p["utility"][task]["value"] for p in held]
            ys = [p[key][attack]["top1"] for p in held]
            line, = axis.plot(xs, ys, marker=markers[index % len(markers)], color=colours[index % len(colours)],
                              label=line_label(attack, training), alpha=0.85, **LINE_STYLES[training])
            # repeated releases: one standard deviation each way, in both measures
            xerr = [p["utility"][task].get("sd", 0.0) for p in held]
            yerr = [p[key][attack].get("top1_sd", 0.0) for p in held]
            if any(xerr) or any(yerr):
                axis.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt="none", ecolor=line.get_color(), alpha=0.6, capsize=2)
            for x, y, point in zip(xs, ys, held):
                axis.annotate(point["label"], (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        if len(lines) > 1:
            axis.plot([p["utility"][task]["value"] for p in points], [best_attack(p)["top1"] for p in points],
                      color="black", linestyle=":", linewidth=2, label="risk: best of all", alpha=0.7)
        axis.set(xlabel=points[0]["utility"][task]["metric"] or task, ylabel="risk: top-1 identification", title=task)
        axis.grid(alpha=0.3)
    if tasks and lines:
        axes[0][0].legend(fontsize=7)
    return _png(figure)


def audit_claims(pairs: list[dict[str, Any]], title: str, unit: str = "privacy loss (nats)") -> bytes:
    """Claimed against audited loss per pair : the claim as a hollow bar, the lower
    bound proven as a filled one (red where it refutes the claim), the audit's power as a tick;
    a pair the Guarantee claims nothing for is marked "no claim"."""
    figure, axis = plt.subplots(figsize=(max(6.0, 0.75 * len(pairs) + 2), 4.2))
    positions = range(len(pairs))
    finite = [p["claim"] for p in pairs if p["claim"] is not None] + [p["bound"] for p in pairs]
    ceiling = max([1.0, *finite]) * 1.15
    for x, pair in zip(positions, pairs):
        claim = pair["claim"]
        if claim is None:
            axis.text(x, ceiling * 0.02, "no claim", rotation=90, ha="center", va="bottom", fontsize=8, color="grey")
        elif claim == 0:  # a bar of height 0 would not show: the claim is written instead
            axis.text(x, 0, "claim 0", ha="center", va="bottom", fontsize=7)
        else:
            axis.bar(x, claim, width=0.7, fill=False, edgecolor="black", label="claimed")
        failed = pair.get("passed") is False
        axis.bar(x, pair["bound"], width=0.4, color="tab:red" if failed else "tab:blue", label="audited lower bound")
        if pair.get("power") is not None:
            axis.plot([x - 0.35, x + 0.35], [pair["power"]] * 2, color="tab:green", linewidth=2,
                      label="smallest loss the audit would detect")
    axis.set_xticks(list(positions))
    axis.set_xticklabels([f"{p['kind']}\n{p['setting'][:22]}" for p in pairs], rotation=45, ha="right", fontsize=7)
    axis.set_ylim(0, ceiling)
    if ceiling > 20:  # claims of hundreds of nats beside bounds of a few: linear up to 1, logarithmic above
        axis.set_yscale("symlog", linthresh=1.0)
        axis.set_ylim(0, ceiling)
    axis.set_ylabel(unit)
    axis.set_title(title, fontsize=10)
    handles, labels = axis.get_legend_handles_labels()
    unique = dict(zip(labels, handles))  # one legend entry per kind of mark
    if unique:
        axis.legend(unique.values(), unique.keys(), fontsize=7, loc="upper left")
    return _png(figure)


# A mechanism's marker in the frontier maps, the same in every panel; no star: the star is the unmodified text.
MECHANISM_MARKERS = "osD^v<>phPX"
FRONTIER_STYLE = {"color": "black", "alpha": 0.5, "linewidth": 1.6, "marker": "o", "markersize": 12, "fillstyle": "none"}


def _error_bars(axis: Any, release: dict[str, Any], measure: str, risk: float, utility: float, colour: str) -> None:
    """A release's 95% intervals as error bars: the risk's up and down (Wilson or exact), the
    utility's across (bootstrap over texts), each where it was kept."""
    risk_found = (release.get("risk") or {}).get("interval")
    utility_found = utility_interval((release.get("utility") or {}).get(measure))
    if risk_found is None and utility_found is None:
        return
    yerr = [[risk - risk_found["low"]], [risk_found["high"] - risk]] if risk_found else None
    xerr = [[utility - utility_found.low], [utility_found.high - utility]] if utility_found else None
    axis.errorbar([utility], [risk], xerr=xerr, yerr=yerr, fmt="none", ecolor=colour, elinewidth=0.7, alpha=0.6,
                  capsize=2)


def frontier_maps(results: dict[str, Any]) -> bytes:
    """A comparison's releases (``textveil compare``), one panel per utility measure: x = utility,
    y = risk (best top-1 over every attack and training), one marker shape per mechanism (the
    same in every panel) with its releases joined in parameter order, the Pareto frontier as a
    step line, the unmodified text as a star, and the length floor (dotted) and chance (dashed)
    as labelled horizontal lines. A release a measure does not apply to is left out of its panel.
    Each release carries its 95% intervals as error bars (risk up and down, utility across)."""
    measures = list(results["utility_measures"])
    releases = results["releases"]
    by_id = {release["id"]: release for release in releases}
    frontier = frontier_of(results)
    # a release names its mechanism by the plan's label ("emp [layout=keep]"): two layouts of one mechanism differ
    mechanisms = list(dict.fromkeys([m.get("label") or m["name"] for m in results["plan"].get("mechanisms") or []]
                                    + [release["mechanism"] for release in releases]))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {name: {"marker": MECHANISM_MARKERS[i % len(MECHANISM_MARKERS)], "color": colours[i % len(colours)]}
              for i, name in enumerate(mechanisms)}
    unmodified = results.get("unmodified") or {}
    chance, floor = results.get("chance"), results.get("floor")
    figure, axes, columns = _panel_grid(len(measures), 3, size=(4.8, 3.8))

    for panel, measure in enumerate(measures):
        axis = axes[panel // columns][panel % columns]
        info = frontier[measure]
        for name in mechanisms:
            held = [(r, point) for r in in_parameter_order([r for r in releases if r["mechanism"] == name])
                    if (point := release_point(r, measure)) is not None]
            if not held:
                continue
            axis.plot([utility for _, (_, utility) in held], [risk for _, (risk, _) in held], linewidth=0.8,
                      markersize=6, alpha=0.9, **styles[name])
            for release, (risk, utility) in held:
                _error_bars(axis, release, measure, risk, utility, styles[name]["color"])
                if release.get("parameter") is not None:
                    axis.annotate(f"{release['parameter']:g}", (utility, risk), fontsize=6, xytext=(3, 3),
                                  textcoords="offset points")
        pareto = [point for point in (release_point(by_id[i], measure) for i in info["pareto"]) if point is not None]
        # in order of increasing risk; "steps-pre" rises first, then moves along: at a risk between
        # two frontier releases the best utility to be had is still the safer one's; each frontier
        # release ringed, so that a frontier of one release shows too
        axis.plot([utility for _, utility in pareto], [risk for risk, _ in pareto], drawstyle="steps-pre",
                  zorder=1, **FRONTIER_STYLE)
        clean = unmodified.get("utility", {}).get(measure, {}).get("value")
        if clean is not None and unmodified.get("risk"):
            axis.plot([clean], [unmodified["risk"]["top1"]], marker="*", markersize=14, color="gold",
                      markeredgecolor="black", linestyle="none", zorder=3)
        # labelled at opposite ends: the floor and chance are often a point or two apart
        for level, style, text, end in ((floor and floor.get("top1"), ":", "length floor", 0.99),
                                        (chance, "--", "chance", 0.01)):
            if level is not None:
                axis.axhline(level, linestyle=style, color="grey", linewidth=1)
                axis.text(end, level, f"{text} {level:.1%}", transform=axis.get_yaxis_transform(),
                          ha="right" if end > 0.5 else "left", va="bottom", fontsize=7, color="dimgrey")
        direction = "higher" if info["higher_is_better"] else "lower"
        # the measure's name, short: its full metric is in the report's table
        axis.set(title=measure, xlabel=f"{measure} ({direction} is better)",
                 ylabel="risk: top-1 identification (lower is better)")
        values = [u for r in releases if (point := release_point(r, measure)) is not None for u in (point[1],)]
        values += [clean] if clean is not None else []
        if not info["higher_is_better"] and values and min(values) > 0 and max(values) / min(values) > 20:
            axis.set_xscale("log")  # a ratio (perplexity) that spans orders of magnitude
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    if measures:
        # drawn by hand, so that a mechanism missing from the first panel still has its entry
        handles = [Line2D([], [], linewidth=0.8, label=name, **styles[name]) for name in mechanisms]
        handles += [Line2D([], [], marker="*", markersize=12, color="gold", markeredgecolor="black", linestyle="none",
                           label="unmodified text"),
                    Line2D([], [], label="Pareto frontier", **FRONTIER_STYLE)]
        # below the panels, not over a panel's points
        figure.legend(handles=handles, fontsize=8, loc="lower center", ncol=min(4, len(handles)),
                      bbox_to_anchor=(0.5, 0.0))
        rows = -(-len(handles) // 4)
        return _png(figure, rect=(0, min(0.3, 0.045 * rows / len(axes)), 1, 1))
    return _png(figure)
