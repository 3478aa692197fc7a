"""Utility tasks: what a release is still good for, each comparing original texts with their release.

Listing the tasks (:data:`UTILITY_TASKS`) imports nothing heavy; the public names below are
imported from their modules on first use, so a face that only lists tasks does not pay for
scikit-learn, fastText or torch.

>>> sorted(UTILITY_TASKS)[:3]
['bigram-cosine', 'classification-f1', 'earth-movers']
>>> from textveil.utility import unigram_cosine
>>> unigram_cosine(["the cat sat"], ["The cat sat!"], ["user"])
1.0
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> one-line description, for the harness and the faces.
UTILITY_TASKS: dict[str, str] = {
    "topic-fasttext": "fastText topic accuracy on the release, trained on clean texts (paper 001 DRtopic; higher keeps more)",
    "semantic-similarity": "mean cosine of all-MiniLM-L6-v2 sentence embeddings, original vs release (stands for paper 002's USE)",
    "stylometric-l2": "mean L2 distance of standardised writeprints features, original vs release (paper 002; higher = style moved more)",
    "unigram-cosine": "per-user cosine of unigram counts, originals vs releases, averaged over users (paper 004)",
    "bigram-cosine": "per-user cosine of bigram counts, originals vs releases, averaged over users (paper 004)",
    "sentiment-cosine": "cosine of the per-user mean VADER compound sentiment vectors, originals vs releases (paper 004)",
    "classification-f1": "macro F1 on the release of a tf-idf linear classifier trained on original texts (paper 004)",
    "earth-movers": "mean Earth Mover's distance between content-word vector bags, original vs release (paper 001; lower keeps more)",
}

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
}

__all__ = ["UTILITY_TASKS", "utility_task_names", *_EXPORTS]


def utility_task_names() -> list[str]:
    """The registered utility task names, in registry order."""
    return list(UTILITY_TASKS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'textveil.utility' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"textveil.utility.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
