"""The audit's statistics, tested on mechanisms whose loss is known exactly: randomised response
(a coin per input) at epsilon, where Pr[yes | x] / Pr[yes | x'] = e^epsilon."""

from __future__ import annotations

import math

import numpy as np
import pytest

from textveil.errors import InvalidParameterError
from textveil.privacy.audit import clopper_pearson, detectable_epsilon, loss_lower_bound


def _randomised_response(epsilon: float, trials: int, rng: np.random.Generator) -> tuple[int, int]:
    """Counts of "yes" over ``trials`` releases of a "yes" input and of a "no" input."""
    truthful = math.exp(epsilon) / (1 + math.exp(epsilon))
    return int(rng.binomial(trials, truthful)), int(rng.binomial(trials, 1 - truthful))


def test_the_bound_holds_with_its_confidence_and_approaches_the_true_loss():
    """Over 400 audits of a mechanism of known loss 1.0, the bound exceeds it at most as often as
    the confidence allows (1% at 0.99: 4 of 400 expected; 12 would have p < 0.001), and with many
    trials it comes close to it."""
    rng = np.random.default_rng(0)
    exceeded = sum(loss_lower_bound(*_randomised_response(1.0, 2000, rng), 2000, 0.99).epsilon > 1.0
                   for _ in range(400))
    assert exceeded <= 12
    tight = loss_lower_bound(*_randomised_response(1.0, 200_000, rng), 200_000, 0.99).epsilon
    assert 0.95 < tight <= 1.0


def test_a_broken_mechanism_is_caught_and_a_sound_one_is_not():
    """A claim of 0.5 for a mechanism of loss 2 is refuted; the same trials on a mechanism of
    loss 0.5 never prove more than 0.5."""
    rng = np.random.default_rng(1)
    assert loss_lower_bound(*_randomised_response(2.0, 5000, rng), 5000).epsilon > 0.5
    assert all(loss_lower_bound(*_randomised_response(0.5, 5000, rng), 5000).epsilon <= 0.5 for _ in range(50))


def test_clopper_pearson_covers_the_probability():
    rng = np.random.default_rng(2)
    covered = 0
    for _ in range(500):
        low, high = clopper_pearson(int(rng.binomial(100, 0.3)), 100, 0.95)
        covered += low <= 0.3 <= high
    assert covered >= 0.93 * 500  # exact intervals are conservative: at least 95% on average


def test_power_grows_with_trials_and_bad_counts_are_one_line():
    assert detectable_epsilon(0.5, 100_000) < detectable_epsilon(0.5, 1000) < detectable_epsilon(0.5, 100)
    with pytest.raises(InvalidParameterError, match="successes"):
        loss_lower_bound(11, 3, 10)
    with pytest.raises(InvalidParameterError, match="confidence"):
        clopper_pearson(1, 10, 1.5)
