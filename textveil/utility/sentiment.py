"""Does a release keep each user's sentiment? Paper 004's VADER task, and two companions.

VADER (Hutto and Gilbert 2014, package ``vaderSentiment``) scores a text with ``neg``,
``neu``, ``pos`` (proportions) and ``compound`` (in [-1, 1]). From those scores:

- ``cosine`` (paper 004, Table 2 "Sentiment"): one entry per user, their mean compound
  score over their texts; the cosine between the originals' vector and the release's.
- ``per_user_cosine``: per user, the cosine between the mean (neg, neu, pos, compound) of
  their originals and of their releases, averaged over users. ``neu`` is large and positive
  in almost every text, so this stays near 1 unless sentiment flips; it is the gentler scale.
- ``agreement``: the fraction of texts whose polarity (positive: compound >= 0.05, negative:
  <= -0.05, else neutral; VADER's own thresholds) the release keeps.

VADER scores a text as a whole, as paper 004 did with tweets; on long texts the compound
score saturates towards -1 or 1.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from textveil.corpus.labelled import group_indices
from textveil.errors import TextveilError
from textveil.utility.distributions import cosine
from textveil.utility.preprocess import check_parallel

SCORE_NAMES = ("neg", "neu", "pos", "compound")
POLARITY_THRESHOLD = 0.05


@lru_cache(maxsize=1)
def _analyzer() -> Any:
    try:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
    except ImportError:
        raise TextveilError("the sentiment task needs the 'vaderSentiment' package; pip install vaderSentiment") from None
    return SentimentIntensityAnalyzer()


def vader_scores(texts: Sequence[str]) -> np.ndarray:
    """``len(texts) x 4`` VADER scores, columns :data:`SCORE_NAMES`.

    >>> vader_scores(["I love this, it is great!", "This is awful."])[:, 3].round(2).tolist()
    [0.86, -0.46]
    """
    out = np.zeros((len(texts), len(SCORE_NAMES)))
    for row, text in enumerate(texts):
        out[row] = _text_scores(text)
    return out


@lru_cache(maxsize=16384)
def _text_scores(text: str) -> tuple[float, ...]:
    # Remembered per text: a sweep scores the same originals at every grid point, and texts a
    # release left unchanged, again and again; VADER is pure Python and costs ~20 ms a page.
    scores = _analyzer().polarity_scores(text)
    return tuple(scores[name] for name in SCORE_NAMES)


def polarity(compound: np.ndarray) -> np.ndarray:
    """-1, 0 or 1 per compound score, with VADER's +-0.05 thresholds.

    >>> polarity(np.array([0.5, 0.01, -0.3])).tolist()
    [1, 0, -1]
    """
    return np.where(compound >= POLARITY_THRESHOLD, 1, np.where(compound <= -POLARITY_THRESHOLD, -1, 0))


@dataclass(frozen=True)
class SentimentComparison:
    """The three sentiment scores of a release; see the module docstring."""

    cosine: float
    per_user_cosine: float
    agreement: float
    users: int
    texts: int

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def compare_sentiment(
    originals: Sequence[str], releases: Sequence[str], users: Sequence[Hashable],
    release_users: Sequence[Hashable] | None = None,
) -> SentimentComparison:
    """Score originals and releases with VADER once and compare them every way.

    ``release_users`` labels the releases when they are not aligned with the originals (a new
    corpus); then the per-text polarity agreement does not apply and is reported as NaN.

    >>> report = compare_sentiment(["I love it!", "Terrible day."], ["I love it!", "Terrible day."], ["a", "b"])
    >>> round(report.cosine, 9), round(report.per_user_cosine, 9), report.agreement
    (1.0, 1.0, 1.0)
    >>> flipped = compare_sentiment(["I love it!", "Terrible day."], ["I hate it!", "Wonderful day."], ["a", "b"])
    >>> round(flipped.cosine, 2), flipped.agreement
    (-0.99, 0.0)
    """
    aligned = release_users is None
    if aligned:
        check_parallel(originals, releases, users)
        release_users = users
    else:
        check_parallel(originals, users)
        check_parallel(releases, release_users)
    before, after = vader_scores(originals), vader_scores(releases)
    names, members = group_indices(list(users))
    released_rows = dict(zip(*group_indices(list(release_users))))
    mean_before = np.array([before[rows].mean(axis=0) for rows in members])
    mean_after = np.array([after[released_rows[name]].mean(axis=0) if released_rows.get(name)
                           else np.zeros(before.shape[1]) for name in names])
    compound = SCORE_NAMES.index("compound")
    return SentimentComparison(
        cosine=cosine(mean_before[:, compound], mean_after[:, compound]),
        per_user_cosine=float(np.mean([cosine(a, b) for a, b in zip(mean_before, mean_after)])),
        agreement=(float(np.mean(polarity(before[:, compound]) == polarity(after[:, compound]))) if aligned
                   else float("nan")),
        users=len(members),
        texts=len(originals),
    )


def sentiment_cosine(originals: Sequence[str], releases: Sequence[str], users: Sequence[Hashable],
                     release_users: Sequence[Hashable] | None = None) -> float:
    """Paper 004's sentiment utility: cosine of the per-user mean compound vectors."""
    return compare_sentiment(originals, releases, users, release_users).cosine


def per_user_sentiment_cosine(
    originals: Sequence[str], releases: Sequence[str], users: Sequence[Hashable]
) -> float:
    """Mean over users of the cosine of their mean (neg, neu, pos, compound) vectors."""
    return compare_sentiment(originals, releases, users).per_user_cosine


def sentiment_agreement(originals: Sequence[str], releases: Sequence[str]) -> float:
    """Fraction of texts whose VADER polarity (positive / neutral / negative) the release keeps.

    >>> sentiment_agreement(["Great!", "Awful.", "A table."], ["Superb!", "Lovely.", "A chair."])
    0.6666666666666666
    """
    return compare_sentiment(originals, releases, range(len(originals))).agreement
