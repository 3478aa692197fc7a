"""Mechanisms: one module each, one face (parameters at construction, ``fit``, ``with_params``,
``sanitize``, ``save``/``load``); see :mod:`textveil.mechanisms.base`.

The mechanism classes are imported on first use, so ``import textveil.mechanisms`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from textveil.mechanisms.base import Change, CorpusRelease, Mechanism, Release
from textveil.mechanisms.registry import MECHANISMS, make_mechanism, mechanism_class
from textveil.mechanisms.sampling import (
    make_rng,
    sample_exponential_mechanism,
    sample_laplace_noise,
    sample_uniform_indices,
    sample_unit_directions,
)

_CLASSES = {
    "EarthMoversPrivacy": "earth_movers", "RandomReplacement": "random_replacement", "SynTF": "syntf",
    "ERAE": "autoencoder", "AEDP": "autoencoder", "Pivot": "pivot", "PivotKey": "pivot",
}

__all__ = [
    "AEDP",
    "ERAE",
    "MECHANISMS",
    "Change",
    "CorpusRelease",
    "EarthMoversPrivacy",
    "Mechanism",
    "Pivot",
    "PivotKey",
    "RandomReplacement",
    "Release",
    "SynTF",
    "make_mechanism",
    "make_rng",
    "mechanism_class",
    "sample_exponential_mechanism",
    "sample_laplace_noise",
    "sample_uniform_indices",
    "sample_unit_directions",
]


def __getattr__(name: str) -> Any:
    module = _CLASSES.get(name)
    if module is None:
        raise AttributeError(f"module 'textveil.mechanisms' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"textveil.mechanisms.{module}"), name)
    globals()[name] = value
    return value
