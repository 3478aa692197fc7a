"""Attacks by name. Entries point at classes by import path so that a face listing attacks
does not import scikit-learn, fastText and the embeddings all at once."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from textveil.errors import InvalidParameterError

# name -> (import path, keyword arguments, one-line description)
ATTACKS: dict[str, tuple[str, dict[str, Any], str]] = {
    "impostors": ("textveil.attacks.impostors:ImpostorsAttack", {},
                  "Koppel et al. 2011 impostors: character n-gram profiles, random feature subsets, cosine votes (paper 001 DRauth)"),
    "embedding-1nn": ("textveil.attacks.embedding_neighbours:EmbeddingNearestNeighbour", {"k": 1},
                      "1-NN author by Euclidean distance between mean word vectors (paper 001 SRauth)"),
    "fasttext-char": ("textveil.attacks.neural:FastTextAuthorship", {},
                      "fastText supervised on character n-grams (stands for paper 002's neural classifier)"),
}

STYLOMETRIC_FEATURES = ("word1", "word2", "char1", "char2", "char3", "writeprints")
STYLOMETRIC_CLASSIFIERS = ("svm", "nb", "knn", "rls")
for _features in STYLOMETRIC_FEATURES:
    for _classifier in STYLOMETRIC_CLASSIFIERS:
        ATTACKS[f"{_features}-{_classifier}"] = (
            "textveil.attacks.stylometric:StylometricAttack",
            {"features": _features, "classifier": _classifier},
            f"stylometric suite (paper 004 Table 1): {_features} features, {_classifier} classifier",
        )


def attack_names() -> list[str]:
    return list(ATTACKS)


def make_attack(name: str, shared: dict[str, Any] | None = None, **overrides: Any) -> Any:
    """A new, unfitted attack by name; a clear error lists the valid names.

    ``shared`` holds resources an evaluation already has (``embeddings``); each is passed
    only to attacks whose constructor takes it.
    """
    try:
        target, defaults, _ = ATTACKS[name]
    except KeyError:
        raise InvalidParameterError(
            f"unknown attack '{name}'; run 'textveil attack --list' for the valid names"
        ) from None
    module_name, class_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    accepted = inspect.signature(cls).parameters
    offered = {key: value for key, value in (shared or {}).items() if key in accepted}
    return cls(**{**offered, **defaults, **overrides})
