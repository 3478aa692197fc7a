"""Guarantees and their arithmetic, calibration of privacy parameters."""

from textveil.privacy.earth_movers import (
    earth_movers_distance,
    indistinguishability_bound,
    theorem3_as_stated,
    utility_lower_bound,
)
from textveil.privacy.guarantee import Guarantee

__all__ = ["Guarantee", "earth_movers_distance", "indistinguishability_bound", "theorem3_as_stated", "utility_lower_bound"]
