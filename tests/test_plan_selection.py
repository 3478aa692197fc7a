"""The selection of a content plan: two exponential mechanisms (a cluster, then an item in it),
held to their exact probabilities, with power checks, and their likelihood ratios bounded."""

from __future__ import annotations

import numpy as np
import pytest

from tests.chi_square import pooled_chi_square_pvalue
from textveil.errors import InvalidParameterError
from textveil.mechanisms.plan_selection import (
    SelectionBank,
    exponential_probabilities,
    item_probabilities,
    select_plan,
)

ALPHA = 1e-3
rng = np.random.default_rng(3)
VECTORS = rng.normal(size=(12, 5))
CLUSTERS = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3])
BANK = SelectionBank.from_vectors([f"item {i}" for i in range(12)], VECTORS, CLUSTERS, lo=-0.5, hi=0.8)
DOCUMENT = VECTORS[4] + 0.5 * VECTORS[9]


def _draws(count: int, k: int, eps_cluster: float, eps_item: float, seed: int, **options) -> list[list[int]]:
    parent = np.random.default_rng(seed)
    return [select_plan(DOCUMENT, BANK, k, eps_cluster, eps_item, np.random.default_rng(s), **options)
            for s in parent.integers(0, 2**63, size=count)]


def test_the_probabilities_are_two_exponential_mechanisms_written_out() -> None:
    u = np.clip((BANK.vectors @ (DOCUMENT / np.linalg.norm(DOCUMENT)) + 0.5) / 1.3, 0, 1)
    eps_c, eps_i = 3.0, 5.0
    best = np.array([u[CLUSTERS == c].max() for c in range(4)])
    first = np.exp(eps_c * best / 2) / np.exp(eps_c * best / 2).sum()
    expected = np.array([first[CLUSTERS[i]] * np.exp(eps_i * u[i] / 2) / np.exp(eps_i * u[CLUSTERS == CLUSTERS[i]] / 2).sum()
                         for i in range(12)])
    np.testing.assert_allclose(item_probabilities(DOCUMENT, BANK, eps_c, eps_i), expected, rtol=1e-12)
    assert expected.sum() == pytest.approx(1.0)


@pytest.mark.parametrize(("eps_cluster", "eps_item"), [(2.0, 2.0), (6.0, 1.0), (20.0, 20.0)])
def test_the_draws_follow_the_exact_probabilities(eps_cluster: float, eps_item: float) -> None:
    plans = _draws(20_000, 1, eps_cluster, eps_item, seed=1)
    first = np.array([plan[0] for plan in plans])
    assert pooled_chi_square_pvalue(first, item_probabilities(DOCUMENT, BANK, eps_cluster, eps_item)) > ALPHA


def test_the_second_item_follows_its_probabilities_given_the_first() -> None:
    plans = _draws(30_000, 2, 4.0, 4.0, seed=2)
    given = max({plan[0] for plan in plans}, key=lambda i: sum(plan[0] == i for plan in plans))
    second = np.array([plan[1] for plan in plans if plan[0] == given])
    expected = item_probabilities(DOCUMENT, BANK, 4.0, 4.0, taken=[given])
    assert expected[given] == 0 and given not in set(second.tolist())
    assert pooled_chi_square_pvalue(second, expected) > ALPHA


def test_the_goodness_of_fit_has_power_against_a_missing_factor_two() -> None:
    plans = _draws(20_000, 1, 6.0, 6.0, seed=1, sensitivity=0.5)
    first = np.array([plan[0] for plan in plans])
    assert pooled_chi_square_pvalue(first, item_probabilities(DOCUMENT, BANK, 6.0, 6.0)) < ALPHA


def test_no_two_documents_change_a_plans_probability_by_more_than_its_epsilon() -> None:
    """For any two documents (random, one empty, one on the bank's far side), every plan of two
    items has a likelihood ratio within 2 * (epsilon_cluster + epsilon_item): the bound per document."""
    draw = np.random.default_rng(8)
    for _ in range(60):
        first, second = draw.normal(size=5), draw.normal(size=5) * draw.choice([0.0, 1.0, 50.0])
        eps_c, eps_i = float(draw.uniform(0.2, 10)), float(draw.uniform(0.2, 10))
        for a in range(12):
            p1 = item_probabilities(first, BANK, eps_c, eps_i)[a] * item_probabilities(first, BANK, eps_c, eps_i, [a])
            p2 = item_probabilities(second, BANK, eps_c, eps_i)[a] * item_probabilities(second, BANK, eps_c, eps_i, [a])
            mask = p1 > 0
            assert (mask == (p2 > 0)).all()
            assert np.abs(np.log(p1[mask]) - np.log(p2[mask])).max() <= 2 * (eps_c + eps_i) + 1e-9


def test_one_seed_one_plan_and_a_large_budget_picks_the_nearest_item() -> None:
    again = [select_plan(DOCUMENT, BANK, 3, 2.0, 2.0, np.random.default_rng(5)) for _ in range(3)]
    assert again[0] == again[1] == again[2] and len(set(again[0])) == 3
    assert select_plan(VECTORS[7], BANK, 1, 1e4, 1e4, np.random.default_rng(0)) == [7]


def test_bad_banks_and_plans_are_refused_in_one_line() -> None:
    with pytest.raises(InvalidParameterError, match="lo < hi"):
        SelectionBank.from_vectors(["a"], np.ones((1, 2)), np.array([0]), lo=1.0, hi=0.5)
    with pytest.raises(InvalidParameterError, match="0..C-1"):
        SelectionBank.from_vectors(["a", "b"], np.eye(2), np.array([0, 2]), lo=0.0, hi=1.0)
    with pytest.raises(InvalidParameterError, match="1 to 12 items"):
        select_plan(DOCUMENT, BANK, 13, 1.0, 1.0, np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="5 finite numbers"):
        select_plan(np.ones(4), BANK, 1, 1.0, 1.0, np.random.default_rng(0))
    assert exponential_probabilities(np.zeros(4), 1.0).tolist() == [0.25] * 4
