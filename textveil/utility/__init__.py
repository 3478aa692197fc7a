"""Utility tasks: what a release is still good for, each comparing original texts with their release.

The public names below are imported from their modules on first use, so importing this
package does not pay for scikit-learn, fastText or torch. The tasks as the harness runs them
are listed, once, in :data:`textveil.evaluation.utility_tasks.UTILITY_TASKS`.

>>> from textveil.utility import unigram_cosine
>>> unigram_cosine(["the cat sat"], ["The cat sat!"], ["user"])
1.0
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "FastTextTopicClassifier": "topic",
    "export_vec": "topic",
    "SemanticSimilarity": "similarity",
    "per_user_ngram_cosines": "distributions",
    "ngram_cosine": "distributions",
    "unigram_cosine": "distributions",
    "bigram_cosine": "distributions",
    "cosine": "distributions",
    "text_earth_movers_distance": "distributions",
    "document_earth_movers_distances": "distributions",
    "mean_earth_movers_distance": "distributions",
    "SentimentComparison": "sentiment",
    "compare_sentiment": "sentiment",
    "vader_scores": "sentiment",
    "sentiment_cosine": "sentiment",
    "per_user_sentiment_cosine": "sentiment",
    "sentiment_agreement": "sentiment",
    "ReleaseClassifier": "classification",
    "classification_f1": "classification",
    "macro_f1": "classification",
    "stylometric_distances": "stylometric_distance",
    "mean_stylometric_distance": "stylometric_distance",
    "content_words": "preprocess",
    "memorisation": "memorisation",
    "MemorisationScore": "memorisation",
}

__all__ = [*_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'textveil.utility' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"textveil.utility.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
