"""Validation of privacy parameters, shared by every mechanism and every bound."""

from __future__ import annotations

import math

from textveil.errors import InvalidParameterError


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float, or fail with a clear message if it is not finite and > 0."""
    try:
        value = float(epsilon)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be a positive number, got {epsilon!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise InvalidParameterError(f"{name} must be a finite number greater than 0, got {epsilon!r}")
    return value
