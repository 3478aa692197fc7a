"""Mechanisms: one module each, one face (parameters at construction, then ``sanitize``)."""

from textveil.mechanisms.base import Change, Mechanism, Release
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.registry import MECHANISMS, make_mechanism, mechanism_class
from textveil.mechanisms.sampling import make_rng, sample_laplace_noise, sample_unit_directions

__all__ = [
    "MECHANISMS",
    "Change",
    "EarthMoversPrivacy",
    "Mechanism",
    "Release",
    "make_mechanism",
    "make_rng",
    "mechanism_class",
    "sample_laplace_noise",
    "sample_unit_directions",
]
