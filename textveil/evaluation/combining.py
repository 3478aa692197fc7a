"""A point's repeated releases (``repeats`` > 1) combined into one result: attack accuracies and
utility values averaged with their spread, word counts summed. One release is returned as it is.
A keyed release's frequency analysis is combined by
:func:`textveil.evaluation.code_words.combine_frequency`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textveil.evaluation.releasing import with_changed_fraction

def _spread(values: list[float]) -> dict[str, Any]:
    """Standard deviation (n - 1) and the values, for a measurement repeated over releases."""
    return {"sd": float(np.std(values, ddof=1)), "values": [float(v) for v in values]}


def combine_attack_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One attack's results over repeated releases of a point: top-k accuracies averaged, the
    spread of top-1 kept (``top1_sd``, ``top1_values``). One result is returned as it is.

    >>> combined = combine_attack_results([{"topk": [0.2, 0.5], "top1": 0.2}, {"topk": [0.4, 0.7], "top1": 0.4}])
    >>> [round(x, 3) for x in combined["topk"]], round(combined["top1"], 3), round(combined["top1_sd"], 3)
    ([0.3, 0.6], 0.3, 0.141)
    """
    if len(results) == 1:
        return results[0]
    topk = np.mean([r["topk"] for r in results], axis=0).tolist()
    spread = _spread([r["top1"] for r in results])
    # one hit vector per release: none of them stands for the average (no paired test on it)
    first = {key: value for key, value in results[0].items() if key != "hits"}
    return {**first, "topk": topk, "top1": topk[0], "top1_sd": spread["sd"], "top1_values": spread["values"]}


def combine_utility_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One utility task over repeated releases: the mean value, with ``sd`` and ``values``."""
    if len(results) == 1:
        return results[0]
    values = [r["value"] for r in results]
    return {**results[0], "value": float(np.mean(values)), **_spread(values)}


def combine_release_stats(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Word counts of repeated releases, summed; the changed fraction over all of them."""
    if len(stats) == 1:
        return stats[0]
    combined = {key: sum(s.get(key, 0) for s in stats) for key in ("words_protected", "words_changed",
                                                                  "read_from_cache")}
    return {**with_changed_fraction(combined), "releases": len(stats)}
