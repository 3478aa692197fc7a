"""The floor: an attack that sees only how long each text is.

A release that changes every word still shows how many tokens each text has, and how many
texts each author wrote. This attack reads nothing else, so its accuracy is what such a
release leaks at the least; a report shows it beside the other attacks to tell how much of
their accuracy length alone explains.

* A text's length is its number of tokens: words (:func:`textveil.text.tokenize.find_words`)
  plus every other character that is not whitespace (punctuation, symbols, emoji). Whitespace
  never counts: a release normalises it.
* Each author's log token count is modelled as a Gaussian (scikit-learn's ``GaussianNB``
  with uniform priors); ``var_smoothing`` adds that fraction of the variance over all known
  texts to every author's variance, so that an author whose few texts happen to be of one
  length does not claim every text of exactly that length. Scores are log-likelihoods. On
  validation splits (C50: 35 known and 15 unknown stories per author; blog_short: 50 known
  and 20 unknown posts per user, collapsed) top-1 barely moves with ``var_smoothing`` from
  0.01 to 0.3 (C50 0.049 to 0.052, blog_short 0.027 to 0.033), and per-author kernel
  densities did no better (0.040 to 0.055 and 0.027 to 0.053 over bandwidths 0.05 to 0.4).
* Texts judged together (:meth:`LengthAttack.group_scores`) add up their log-likelihoods,
  plus the log-probability of the group's size: an author who wrote a share ``p`` of the
  known texts is expected to have ``p * N`` of ``N`` unknown texts, and the count is taken
  as Poisson (the limit of drawing the unknown texts like the known ones). Where every
  author has as many texts as every other (C50, blog_short) this term ranks no one higher.

>>> known = ["Hi!", "Yo.", "Hey you.", "A long, long text with many words in it.", "Another one of many words here."]
>>> attack = LengthAttack().fit(known, ["short", "short", "short", "long", "long"])
>>> attack.classes_, token_counts(["Hi!", "Hey you."]).tolist()
(['long', 'short'], [2, 3])
>>> [attack.classes_[i] for i in attack.scores(["Ok.", "Some text with quite a few more words."]).argmax(axis=1)]
['short', 'long']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from scipy.stats import poisson
from sklearn.naive_bayes import GaussianNB

from textveil.attacks.stylometric import averaging_matrix
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.text.tokenize import find_words

_SPACE = re.compile(r"\s+")


def token_counts(texts: Sequence[str]) -> np.ndarray:
    """Tokens per text: words plus the characters that are neither in a word nor whitespace.

    >>> token_counts(["Don't panic, Mr. O'Neil!", "", "  ", ":-)"]).tolist()
    [7, 0, 0, 3]
    """
    counts = np.empty(len(texts), dtype=np.int64)
    for row, text in enumerate(texts):
        words = find_words(text)
        non_space = len(_SPACE.sub("", text))
        counts[row] = len(words) + non_space - sum(map(len, words))
    return counts


class LengthAttack:
    """Per-author Gaussians over log token counts (see the module notes).

    ``var_smoothing``: the fraction of the overall variance added to each author's variance.
    ``group_size``: whether :meth:`group_scores` counts how many texts a group holds.
    """

    name = "length"

    def __init__(self, var_smoothing: float = 0.1, *, group_size: bool = True) -> None:
        if not var_smoothing > 0:
            raise InvalidParameterError(f"var_smoothing must be positive, got {var_smoothing}")
        self.var_smoothing = var_smoothing
        self.group_size = group_size
        self.classes_: list[str] = []

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> LengthAttack:
        """Fit each author's Gaussian, and their share of the known texts."""
        if len(texts) != len(labels):
            raise InvalidParameterError(f"{len(texts)} known texts but {len(labels)} labels")
        known = LabelledCorpus(list(texts), [str(label) for label in labels], name="known texts")
        self.classes_ = known.label_set
        if len(self.classes_) < 2:
            raise InvalidParameterError("the length attack needs known texts of at least two authors")
        uniform = np.full(len(self.classes_), 1.0 / len(self.classes_))
        self.model_ = GaussianNB(priors=uniform, var_smoothing=self.var_smoothing)
        self.model_.fit(_log_lengths(known.texts), known.labels)
        self.share_ = self.model_.class_count_ / self.model_.class_count_.sum()
        return self

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """``len(texts) x len(classes_)`` log-likelihoods of each text's length."""
        if not hasattr(self, "model_"):
            raise InvalidParameterError("the length attack is not fitted: call fit(known texts, labels) first")
        # GaussianNB adds the log prior, the same for every author here; take it off again.
        return self.model_.predict_joint_log_proba(_log_lengths(texts)) - np.log(self.model_.class_prior_)

    def group_scores(self, texts: Sequence[str], members: Sequence[Sequence[int]]) -> np.ndarray:
        """Each group's summed log-likelihoods, plus the log Poisson probability of its size."""
        mean = averaging_matrix(members, len(texts)) @ self.scores(texts)
        sizes = np.array([len(group) for group in members], dtype=np.float64)[:, None]
        totals = mean * sizes
        if self.group_size:
            expected = self.share_[None, :] * sizes.sum()
            totals = totals + poisson.logpmf(sizes, expected)
        return totals


def _log_lengths(texts: Sequence[str]) -> np.ndarray:
    """One column: log(1 + tokens), since lengths spread over orders of magnitude."""
    return np.log1p(token_counts(list(texts)))[:, None]
