"""The risk-utility frontier: exact cases, and the Pareto property on random points."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from textveil.evaluation.frontier import dominates, frontiers, most_useful_under, pareto_set

NAN = float("nan")


def test_a_dominated_point_is_left_out():
    # (0.2, 0.5) is riskier and no more useful than (0.1, 0.6); (0.3, 0.9) buys utility with risk
    assert pareto_set([(0.2, 0.5), (0.1, 0.6), (0.3, 0.9)]) == [1, 2]


def test_equal_risk_keeps_only_the_more_useful_and_equal_utility_only_the_safer():
    assert pareto_set([(0.1, 0.5), (0.1, 0.7)]) == [1]
    assert pareto_set([(0.1, 0.5), (0.2, 0.5)]) == [0]


def test_duplicates_are_all_kept_in_index_order():
    assert pareto_set([(0.3, 0.9), (0.1, 0.5), (0.1, 0.5), (0.2, 0.4)]) == [1, 2, 0]


def test_order_is_increasing_risk():
    assert pareto_set([(0.5, 0.9), (0.05, 0.1), (0.2, 0.6)]) == [1, 2, 0]


def test_lower_is_better_reverses_the_utility_comparison():
    points = [(0.1, 2.0), (0.2, 1.5), (0.3, 1.8), (0.4, 1.0)]
    assert pareto_set(points, higher_is_better=False) == [0, 1, 3]
    assert pareto_set(points, higher_is_better=True) == [0]
    assert dominates((0.1, 1.0), (0.2, 3.0), higher_is_better=False)
    assert not dominates((0.1, 1.0), (0.2, 3.0), higher_is_better=True)


def test_none_and_nan_are_ignored():
    points = [(0.1, None), (0.2, NAN), (0.3, 0.4), (None, 0.9)]
    assert pareto_set(points) == [2]
    assert most_useful_under(points, [0.15, 1.0]) == [None, 2]
    assert pareto_set([(0.1, None)]) == [] and most_useful_under([], [0.5]) == [None]


def test_most_useful_under_each_threshold():
    points = [(0.05, 0.3), (0.1, 0.6), (0.25, 0.6), (0.4, 0.9)]
    # at 0.3, 1 and 2 tie on utility: the safer wins; the threshold itself qualifies
    assert most_useful_under(points, [0.05, 0.1, 0.3, 0.5]) == [0, 1, 1, 3]
    assert most_useful_under(points, [0.5], higher_is_better=False) == [0]


def test_ties_in_risk_and_utility_go_to_the_lower_index():
    assert most_useful_under([(0.1, 0.5), (0.1, 0.5)], [0.2]) == [0]


def test_thresholds_below_every_risk_give_none():
    assert most_useful_under([(0.2, 0.5), (0.3, 0.9)], [0.0, 0.1, 0.19]) == [None, None, None]


def _results(releases, thresholds=(0.05, 0.2, 0.5)):
    return {"plan": {"thresholds": list(thresholds)},
            "utility_measures": {"sim": {"metric": "cosine", "higher_is_better": True},
                                 "ppl": {"metric": "perplexity ratio", "higher_is_better": False}},
            "releases": releases}


def _release(id_, risk, sim=None, ppl=None, not_applicable=None):
    utility = {name: {"value": value} for name, value in (("sim", sim), ("ppl", ppl)) if value is not None}
    return {"id": id_, "risk": {"attack": "svm", "training": "clean", "top1": risk}, "utility": utility,
            "not_applicable": not_applicable or {}}


def test_frontiers_per_measure_leave_out_releases_a_measure_does_not_apply_to():
    releases = [
        _release("emp 10", 0.1, sim=0.6, ppl=1.4),
        _release("emp 20", 0.3, sim=0.8, ppl=1.2),
        # a corpus-level release: no semantic similarity; its stale value must not count
        _release("synth", 0.02, sim=0.99, ppl=2.0, not_applicable={"sim": "synth releases a new corpus"}),
    ]
    found = frontiers(_results(releases))
    assert found["sim"] == {
        "higher_is_better": True, "metric": "cosine", "pareto": ["emp 10", "emp 20"],
        "best_under": [{"max_risk": 0.05, "release": None, "utility": None, "risk": None},
                       {"max_risk": 0.2, "release": "emp 10", "utility": 0.6, "risk": 0.1, "cannot_be_told_apart": []},
                       {"max_risk": 0.5, "release": "emp 20", "utility": 0.8, "risk": 0.3, "cannot_be_told_apart": []}],
    }
    assert found["ppl"]["higher_is_better"] is False
    assert found["ppl"]["pareto"] == ["synth", "emp 10", "emp 20"]
    assert [b["release"] for b in found["ppl"]["best_under"]] == ["synth", "emp 10", "emp 20"]


def test_frontiers_without_thresholds_or_releases():
    found = frontiers(_results([], thresholds=()))
    assert found["sim"]["pareto"] == [] and found["sim"]["best_under"] == []


# Values from small sets, so that ties and duplicates are common; None and NaN now and then.
values = st.one_of(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 1.0]), st.floats(0, 1), st.none(), st.just(NAN))
point_lists = st.lists(st.tuples(values, values), max_size=12)


def _usable(point):
    return all(v is not None and not math.isnan(v) for v in point)


@settings(max_examples=300, deadline=None)
@given(points=point_lists, higher=st.booleans(), thresholds=st.lists(st.floats(0, 1), max_size=4))
def test_pareto_property(points, higher, thresholds):
    kept = pareto_set(points, higher)
    usable = [i for i, p in enumerate(points) if _usable(p)]
    assert len(set(kept)) == len(kept) and set(kept) <= set(usable)
    for i in kept:  # nothing returned is dominated
        assert not any(dominates(points[j], points[i], higher) for j in usable)
    for i in set(usable) - set(kept):  # everything left out is dominated by something returned
        assert any(dominates(points[j], points[i], higher) for j in kept)
    assert [points[i][0] for i in kept] == sorted(points[i][0] for i in kept)
    # the most useful point under a threshold is at most that risky, and none that qualifies is more useful
    sign = 1 if higher else -1
    for threshold, best in zip(thresholds, most_useful_under(points, thresholds, higher)):
        qualifying = [i for i in usable if points[i][0] <= threshold]
        if best is None:
            assert not qualifying
        else:
            assert best in qualifying
            assert all(sign * points[best][1] >= sign * points[i][1] for i in qualifying)
            # and it is on the frontier or ties one there: a threshold answer is never needlessly risky
            assert any(points[k][1] == points[best][1] and points[k][0] == points[best][0] for k in kept)


@pytest.mark.parametrize("higher", [True, False])
def test_pareto_set_of_one_point_is_that_point(higher):
    assert pareto_set([(0.4, 0.4)], higher) == [0]


def test_the_most_useful_release_is_one_that_reads_and_its_ties_are_named():
    """A release whose fluency ratio is over the bound is only named as such, never chosen; one
    whose utility interval overlaps the chosen one's is named beside it (cannot be told apart)."""
    def release(name, risk, sim, low, high, fluency):
        return {"id": name, "risk": {"top1": risk},
                "utility": {"sim": {"value": sim, "interval": {"low": low, "high": high, "method": "bootstrap"}},
                            "fluency": {"value": fluency}}}

    results = {"plan": {"thresholds": [0.05, 0.2]},
               "utility_measures": {"sim": {"metric": "cosine", "higher_is_better": True},
                                    "fluency": {"metric": "ratio", "higher_is_better": False}},
               "releases": [release("salad", 0.03, 0.30, 0.28, 0.32, 14.4),
                            release("reads", 0.04, 0.20, 0.18, 0.22, 1.1),
                            release("close", 0.045, 0.19, 0.17, 0.21, 1.5),
                            release("far", 0.01, 0.10, 0.08, 0.12, 1.0),
                            release("risky", 0.15, 0.25, 0.23, 0.27, 1.0)]}
    at_5, at_20 = frontiers(results)["sim"]["best_under"]
    assert at_5["release"] == "reads" and at_5["more_useful_unreadable"] == "salad"
    assert at_5["cannot_be_told_apart"] == ["close"]  # "far" is told apart; "risky" is over 5%
    assert at_20["release"] == "risky" and at_20["cannot_be_told_apart"] == []
