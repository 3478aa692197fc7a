"""Attacks by name, in the lazy registry (:mod:`textveil.registry`): entries point at classes
by import path so that a face listing attacks does not import scikit-learn, fastText and the
embeddings all at once."""

from __future__ import annotations

from typing import Any

from textveil.registry import Entry, Registry

ATTACKS = Registry("attack", "run 'textveil attack --list' for the valid names")
for _name, _target, _defaults, _description in (
    ("impostors", "textveil.attacks.impostors:ImpostorsAttack", {},
     "Koppel et al. 2011 impostors: character n-gram profiles, random feature subsets, cosine votes (paper 001 DRauth)"),
    ("embedding-1nn", "textveil.attacks.embedding_neighbours:EmbeddingNearestNeighbour", {"k": 1},
     "1-NN author by Euclidean distance between mean word vectors (paper 001 SRauth)"),
    ("fasttext-char", "textveil.attacks.neural:FastTextAuthorship", {},
     "fastText supervised on character n-grams (stands for paper 002's neural classifier)"),
    ("length", "textveil.attacks.length:LengthAttack", {},
     "the floor: per-author Gaussians over log tokens per text, plus texts per author for groups"),
    ("ensemble", "textveil.attacks.ensemble:EnsembleAttack", {},
     "mean of row-standardised scores of several attacks (default: char3, char4, typed, word2, writeprints SVMs)"),
):
    ATTACKS.add(Entry(_name, _target, _description, defaults=_defaults))

# char4, char5 and typed (Sapkota et al. 2015) are not in paper 004: the authorship literature
# finds them the strongest character features, and a risk is only as high as the best attack.
# shape: the layout skeleton (word shapes, punctuation, spacing), what a release that copies the
# input's layout leaks whatever happens to its words.
# topic: content words only, what a text is about rather than how it is written: the part of the
# risk that no release which keeps the meaning can remove.
STYLOMETRIC_FEATURES = ("word1", "word2", "char1", "char2", "char3", "writeprints", "char4", "char5", "typed", "shape",
                        "topic")
STYLOMETRIC_CLASSIFIERS = ("svm", "nb", "knn", "rls")
_FEATURE_SOURCES = {"char4": "character 4-grams", "char5": "character 5-grams",
                    "typed": "typed character 3-grams, Sapkota et al. 2015",
                    "shape": "character 1-4-grams of the layout skeleton: word shapes, marks, spacing",
                    "topic": "content words only: lower-cased words of three letters or more, stop words left out"}
for _features in STYLOMETRIC_FEATURES:
    for _classifier in STYLOMETRIC_CLASSIFIERS:
        ATTACKS.add(Entry(
            f"{_features}-{_classifier}", "textveil.attacks.stylometric:StylometricAttack",
            f"stylometric suite ({_FEATURE_SOURCES.get(_features, 'paper 004 Table 1')}): "
            f"{_features} features, {_classifier} classifier",
            defaults={"features": _features, "classifier": _classifier},
        ))


# What a sweep runs unless told otherwise. The length attack is cheap and is the floor of every
# release: what the number of tokens, which even the default release copies, reveals by itself.
DEFAULT_ATTACKS = ("impostors", "embedding-1nn", "char3-svm", "length")


def attack_names() -> list[str]:
    return ATTACKS.names()


def make_attack(name: str, shared: dict[str, Any] | None = None, **overrides: Any) -> Any:
    """A new, unfitted attack by name; a clear error lists the valid names.

    ``shared`` holds resources an evaluation already has (``embeddings``); each is passed
    only to attacks whose constructor takes it.
    """
    return ATTACKS.make(name, shared=shared, **overrides)
