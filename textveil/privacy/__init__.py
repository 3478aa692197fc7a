"""Guarantees and their arithmetic, and checks of privacy parameters.

Pure arithmetic: nothing here imports a mechanism, an attack, an experiment or a plotting
library (tests/test_layering.py checks it). Measuring what an epsilon does to words by
sampling the mechanism is an experiment: :mod:`textveil.evaluation.calibration`.
"""

from __future__ import annotations

import importlib
from typing import Any

from textveil.privacy.guarantee import Guarantee
from textveil.privacy.secrets import Secret

# The Earth Mover's arithmetic needs scipy, which takes a second to import: loaded on first use,
# so a face that only reads guarantees (``textveil --help``) does not pay for it.
_EARTH_MOVERS = ("earth_movers_distance", "indistinguishability_bound", "theorem3_as_stated", "utility_lower_bound")


def __getattr__(name: str) -> Any:
    if name not in _EARTH_MOVERS:
        raise AttributeError(f"module 'textveil.privacy' has no attribute '{name}'")
    value = getattr(importlib.import_module("textveil.privacy.earth_movers"), name)
    globals()[name] = value
    return value

__all__ = ["Guarantee", "Secret", "earth_movers_distance", "indistinguishability_bound", "theorem3_as_stated", "utility_lower_bound"]
