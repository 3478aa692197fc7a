"""Arithmetic of the exponential mechanism over a vocabulary (paper 002, Theorem 2).

A draw from N outputs, rated in [0, 1] with sensitivity 1, cannot favour a small set B of good
outputs unless epsilon is large: at best every good output is rated 1 and every other 0, and
then Pr[B] = |B| / (|B| + (N - |B|) exp(-epsilon / 2)). Theorem 2 inverts this: for
Pr[B] >= p it is necessary that

    epsilon >= (2 * sensitivity / local_sensitivity) * ln(p / (1 - p) * (N - |B|) / |B|).

Pure arithmetic, no imports beyond :mod:`math`.
"""

from __future__ import annotations

import math

from textveil.errors import InvalidParameterError


def necessary_epsilon(
    outputs: int,
    good: int = 1,
    probability: float = 0.5,
    sensitivity: float = 1.0,
    local_sensitivity: float = 1.0,
) -> float:
    """Theorem 2's necessary epsilon for the exponential mechanism to put ``probability`` on a
    set of ``good`` outputs out of ``outputs`` (0 when the condition holds for any epsilon).

    >>> round(necessary_epsilon(20_000), 2)  # paper 002: "Omega(9.9)" is ln(20,000); the bound is 2 ln
    19.81
    >>> round(necessary_epsilon(20_000, good=5, probability=0.5), 2)
    16.59
    >>> necessary_epsilon(10, good=10)
    0.0
    """
    if outputs < 1 or not 1 <= good <= outputs:
        raise InvalidParameterError(f"need 1 <= good ({good}) <= outputs ({outputs})")
    if not 0.0 < probability < 1.0:
        raise InvalidParameterError(f"probability must lie strictly between 0 and 1, got {probability}")
    if sensitivity <= 0 or local_sensitivity <= 0:
        raise InvalidParameterError("sensitivities must be greater than 0")
    if good == outputs:
        return 0.0
    odds = probability / (1.0 - probability) * (outputs - good) / good
    return max(0.0, 2.0 * sensitivity / local_sensitivity * math.log(odds))


def best_case_probability(epsilon: float, outputs: int, good: int = 1, sensitivity: float = 1.0) -> float:
    """The largest Pr[B] the mechanism can give a set of ``good`` outputs (each rated 1, the
    rest 0): |B| / (|B| + (N - |B|) exp(-epsilon / (2 sensitivity))).

    >>> round(best_case_probability(necessary_epsilon(20_000, good=5), 20_000, good=5), 3)
    0.5
    """
    rest = (outputs - good) * math.exp(-epsilon / (2.0 * sensitivity))
    return good / (good + rest)


def two_set_token_epsilon(set_epsilon: float, token_epsilon: float, outputs: int) -> float:
    """The epsilon per token that the two-set sampler of paper 002's public code really gives.

    The sampler (:func:`textveil.mechanisms.sampling.sample_two_set_mechanism`) draws a lexical
    set L from the generator's own probabilities, with no noise; chooses L or the rest S by the
    exponential mechanism on their probability masses (in [0, 1], sensitivity 1) with
    ``set_epsilon``; and draws the token inside the chosen set by the exponential mechanism on
    the probabilities with ``token_epsilon``. Drawing L leaks without bound, so the only
    guarantee is that no token is ever too unlikely: whatever the input, a token is released with
    probability at least 1 / ((1 + e^(set_epsilon/2)) * N * e^(token_epsilon/2)) (chosen set S,
    at most N members, each weighed within e^(token_epsilon/2) of the others) and at most 1, so
    for any two inputs

        epsilon_token = ln(1 + e^(set_epsilon / 2)) + ln N + token_epsilon / 2.

    The bound is nearly reached (a token the generator is sure of under one input and gives 0
    under another: the ratio is e^(set_epsilon/2) (N - 1)), so it is the guarantee, not a loose
    reading of it. It is NOT set_epsilon, the epsilon the paper states: larger below about
    2 ln N (the ln N term dominates) and smaller above.

    >>> round(two_set_token_epsilon(5, 0.1, 20_000), 2)   # 20,000 outputs: not 5 but
    12.53
    >>> round(two_set_token_epsilon(50, 0.1, 20_000), 2)  # and at 50 the set choice counts half
    34.95
    >>> two_set_token_epsilon(5, 0.1, 1)
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: the two-set sampler needs at least 2 outputs, got 1
    """
    if outputs < 2:
        raise InvalidParameterError(f"the two-set sampler needs at least 2 outputs, got {outputs}")
    if not (set_epsilon > 0 and math.isfinite(set_epsilon)) or not (token_epsilon >= 0 and math.isfinite(token_epsilon)):
        raise InvalidParameterError("the set epsilon must be a finite number greater than 0 and the token epsilon "
                                    "a finite number of at least 0")
    half = set_epsilon / 2.0
    # ln(1 + e^half) without overflow for a large epsilon
    set_term = half + math.log1p(math.exp(-half))
    return set_term + math.log(outputs) + token_epsilon / 2.0
