"""Guarantees and their arithmetic, and checks of privacy parameters.

Pure arithmetic: nothing here imports a mechanism, an attack, an experiment or a plotting
library (tests/test_layering.py checks it). Measuring what an epsilon does to words by
sampling the mechanism is an experiment: :mod:`textveil.evaluation.calibration`.
"""

from textveil.privacy.earth_movers import (
    earth_movers_distance,
    indistinguishability_bound,
    theorem3_as_stated,
    utility_lower_bound,
)
from textveil.privacy.guarantee import Guarantee

__all__ = ["Guarantee", "earth_movers_distance", "indistinguishability_bound", "theorem3_as_stated", "utility_lower_bound"]
