"""Fluency: the perplexity of texts under a public causal language model.

A release's fluency is measured as its perplexity under the model textveil's ``paraphrase``
mechanism ships (SmolLM2-135M-Instruct, or any model :func:`~textveil.models.language_model.load_language_model`
reads), reported by the sweep as the ratio to the original texts' perplexity: 1 means as fluent
as the originals, 2 means the model finds the release twice as surprising per token.

The perplexity is token-weighted over the corpus, exp(sum of token NLL / number of predicted
tokens), so a long text weighs more than a short one, as in language-model evaluation. Each text
is cut to its first ``max_tokens`` model tokens and read after the model's start (BOS) token, so
its first token is predicted too and a one-token text counts; for SmolLM2 that start token is
``<|im_start|>``, the same for every text, so it shifts original and release alike. A text that
is empty (or only whitespace) has nothing to predict: it is skipped and counted.

Speed: about 85 tokens/s on a 2-core CPU for the bundled model (64 texts of about 100 tokens,
``batch_size=16``, float32; measured with two other CPU-bound jobs running, so about one core
free). The sweep's sample (:class:`~textveil.evaluation.utility_tasks.FluencyRunner`: 96 texts of
at most 64 tokens) therefore takes about a minute per release there; a CUDA GPU is much faster.

>>> from textveil.models.toy_language_model import toy_language_model
>>> toy = toy_language_model(["red", "blue", "green"])  # every logit 0: its 9 tokens equally likely
>>> score = perplexity(toy, ["red blue", "", "green"])
>>> round(score.perplexity, 4), score.tokens, score.texts, score.skipped
(9.0, 3, 2, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from textveil.errors import InvalidParameterError


@dataclass(frozen=True)
class FluencyScore:
    """A corpus perplexity: ``tokens`` predicted tokens over ``texts`` texts; ``skipped`` texts
    held no token to predict (empty, or one token under a model without a start token)."""

    perplexity: float
    tokens: int
    texts: int
    skipped: int
    per_text: tuple[tuple[float, int], ...] = ()
    """Per input text, in order: its summed token NLL and its predicted tokens ((0.0, 0) for a
    skipped one), so that a bootstrap over texts can recompute the perplexity."""


def is_empty(text: str) -> bool:
    """Whether ``text`` holds nothing to measure (empty or only whitespace).

    >>> is_empty("  \\n"), is_empty("a")
    (True, False)
    """
    return not text.strip()


def sample_indices(count: int, size: int, seed: int | None) -> list[int]:
    """At most ``size`` of the indices ``0 .. count - 1``, drawn without replacement by a generator
    seeded with ``seed`` (None reads as 0), in increasing order: the same seed, the same sample.

    >>> sample_indices(5, 10, 3)
    [0, 1, 2, 3, 4]
    >>> len(sample_indices(100, 8, 1)), sample_indices(100, 8, 1) == sample_indices(100, 8, 1)
    (8, True)
    """
    rng = np.random.default_rng(seed or 0)
    return sorted(int(i) for i in rng.choice(count, size=min(count, size), replace=False))


def start_token(model: Any) -> int | None:
    """The token a text is read after (the tokenizer's BOS, else the network config's), or None."""
    token = getattr(model.tokenizer, "bos_token_id", None)
    if token is None:  # a PyTorch network's config may name one where its tokenizer does not
        token = getattr(getattr(getattr(model.engine, "network", None), "config", None), "bos_token_id", None)
    if isinstance(token, (list, tuple)):
        token = token[0] if token else None
    return None if token is None else int(token)


def check_count(name: str, value: Any) -> int:
    """``value`` if it is an integer >= 1, else a one-line error naming ``name``.

    >>> check_count("max_tokens", 0)
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: max_tokens must be an integer >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def perplexity(model: Any, texts: Sequence[str], max_tokens: int = 128, batch_size: int = 16) -> FluencyScore:
    """The token-weighted perplexity of ``texts`` under ``model`` (a
    :class:`~textveil.models.language_model.LanguageModel`): exp(sum of token NLL / predicted
    tokens), each text cut to its first ``max_tokens`` model tokens.

    The model's engine scores the texts (transformers ``batch_size`` at a time, sorted by length,
    the padding masked; llama.cpp one text at a time), so a text's score does not depend on its
    batch. Raises :class:`~textveil.errors.InvalidParameterError` when no text holds a token.
    """
    check_count("max_tokens", max_tokens)
    check_count("batch_size", batch_size)
    start = start_token(model)
    if max_tokens + (start is not None) > model.context_length:
        raise InvalidParameterError(f"max_tokens = {max_tokens} does not fit the model's context of "
                                    f"{model.context_length} tokens: give a smaller max_tokens")
    texts = list(texts)
    sequences = []
    kept = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidParameterError(f"perplexity expects texts (str), got {type(text).__name__}")
        if is_empty(text):
            continue
        ids = model.encode(text)[:max_tokens]
        sequence = ([start] if start is not None else []) + ids
        if len(sequence) >= 2:  # at least one token is predicted from what precedes it
            sequences.append(sequence)
            kept.append(index)
    if not sequences:
        raise InvalidParameterError(f"perplexity: none of the {len(texts)} texts holds a token to predict "
                                    "(all empty); give at least one non-empty text")
    # Each text's log-likelihood from the model's engine (llama.cpp reads each text alone;
    # transformers in length-sorted batches, padding masked): a text's score never depends on its batch.
    scores = model.engine.token_log_likelihoods(sequences, batch_size=batch_size)
    total_nll = -float(sum(float(np.sum(score)) for score in scores))
    predicted = sum(len(score) for score in scores)
    per_text = [(0.0, 0)] * len(texts)
    for index, score in zip(kept, scores):
        per_text[index] = (-float(np.sum(score)), len(score))
    return FluencyScore(perplexity=math.exp(total_nll / predicted), tokens=predicted, texts=len(sequences),
                        skipped=len(texts) - len(sequences), per_text=tuple(per_text))
