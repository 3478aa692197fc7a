"""Calibration: what a parameter does to words, measured by sampling, so users can pick one.

Two measurements. :func:`calibrate` is emp's own, word by word (below).
:func:`calibrate_releases` serves every mechanism with a swept parameter (SynTF, ER-AE,
AE-DP, emp too): it releases sample texts through the mechanism's public ``sanitize_many``
and asks which words appear anywhere in text and release, since a mechanism that writes a
new text keeps no word at its position.

emp's calibration:

For each epsilon: the fraction of word tokens that the mechanism leaves unchanged (their
noisy vector decodes back to themselves), and how many distinct substitutes a word gets over
repeated draws. A word outside the vocabulary is perturbed too but can never come back
unchanged (the release holds vocabulary words only), so the fraction is also given over the
in-vocabulary tokens, beside the out-of-vocabulary share. Tokens are sampled from the user's text (so frequent words weigh as they do
in it) or, without text, from the vocabulary with Zipf weights (rank r weighs 1/r).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.sampling import make_rng
from textveil.privacy.parameters import check_epsilon
from textveil.text.tokenize import find_words, word_key


@dataclass(frozen=True)
class CalibrationPoint:
    """Measured behaviour of ``emp`` at one epsilon."""

    epsilon: float
    unchanged_fraction: float  # over all sampled word tokens
    unchanged_stderr: float
    unchanged_in_vocabulary: float  # over the tokens that are vocabulary words
    out_of_vocabulary_fraction: float  # tokens outside the vocabulary: they can never come back unchanged
    distinct_substitutes: float  # mean number of distinct outputs per word over `draws` draws
    draws: int
    tokens_sampled: int
    word_types: int

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def sample_calibration_tokens(
    embeddings: WordEmbeddings, corpus_words: Sequence[str] | None, samples: int, rng: np.random.Generator
) -> list[str]:
    """Word tokens to calibrate on: drawn from the corpus, or Zipf-weighted from the vocabulary."""
    if corpus_words:
        picks = rng.integers(0, len(corpus_words), size=samples)
        return [corpus_words[i] for i in picks]
    weights = 1.0 / np.arange(1, len(embeddings) + 1)
    picks = rng.choice(len(embeddings), size=samples, p=weights / weights.sum())
    return [embeddings.words[i] for i in picks]


def calibrate(
    embeddings: WordEmbeddings,
    epsilons: Sequence[float],
    corpus_words: Sequence[str] | None = None,
    *,
    samples: int = 2000,
    word_types: int = 100,
    draws: int = 20,
    decode: str = "exact",
    seed: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[CalibrationPoint]:
    """Measure, for each epsilon, the unchanged fraction and the distinct substitutes per word.

    >>> toy = WordEmbeddings(["a", "b"], [[0.0], [100.0]])
    >>> [p.unchanged_fraction for p in calibrate(toy, [5.0], samples=50, word_types=2, draws=5, seed=0)]
    [1.0]
    """
    epsilons = [check_epsilon(e) for e in epsilons]
    if not epsilons:
        raise InvalidParameterError("give at least one epsilon to calibrate")
    if samples < 1 or word_types < 1 or draws < 1:
        raise InvalidParameterError("samples, word types and draws must all be at least 1")
    rng = make_rng(seed)
    tokens = sample_calibration_tokens(embeddings, corpus_words, samples, rng)
    types = list(dict.fromkeys(word_key(t) for t in tokens))[:word_types]
    points: list[CalibrationPoint] = []
    for epsilon in epsilons:
        mechanism = EarthMoversPrivacy(epsilon, embeddings, decode=decode, seed=int(rng.integers(2**63)))
        released = mechanism.perturb_words(tokens)
        same = np.array([word_key(a) == word_key(b) for a, b in zip(tokens, released)], dtype=float)
        in_vocabulary = np.array([t in embeddings for t in tokens])
        repeated = mechanism.perturb_words([t for t in types for _ in range(draws)])
        distinct = [len({word_key(w) for w in repeated[i * draws:(i + 1) * draws]}) for i in range(len(types))]
        points.append(
            CalibrationPoint(
                epsilon=epsilon,
                unchanged_fraction=float(same.mean()),
                unchanged_stderr=float(same.std(ddof=1) / np.sqrt(len(same))) if len(same) > 1 else 0.0,
                unchanged_in_vocabulary=float(same[in_vocabulary].mean()) if in_vocabulary.any() else float("nan"),
                out_of_vocabulary_fraction=float(1 - in_vocabulary.mean()),
                distinct_substitutes=float(np.mean(distinct)),
                draws=draws,
                tokens_sampled=len(tokens),
                word_types=len(types),
            )
        )
        if progress is not None:
            progress(1)
    return points


TEXT_WORDS = 40
"""Words per sample text of :func:`calibrate_releases`: a short post."""


@dataclass(frozen=True)
class ReleaseCalibrationPoint:
    """Measured releases of a mechanism at one value of its swept parameter (means over texts)."""

    parameter: str
    value: float
    words_from_text: float  # share of a release's word tokens that are words of its text
    words_from_text_stderr: float
    words_kept: float  # share of a text's word tokens whose word appears in its release
    release_overlap: float  # share of a release's word tokens that appear in another release of the same text
    draws: int  # releases per text
    texts: int
    tokens_sampled: int

    def to_dict(self) -> dict[str, Any]:
        """The point as data, its value under the parameter's name (``{"epsilon": 10.0, ...}``)."""
        data: dict[str, Any] = asdict(self)
        data[data.pop("parameter")] = data.pop("value")
        return data


def shared_share(tokens: Sequence[str], other: Sequence[str]) -> float:
    """The share of ``tokens`` whose word occurs anywhere in ``other`` (1.0 when ``tokens`` is
    empty). Not position by position: SynTF or an auto-encoder writes a new text.

    >>> shared_share(["the", "cat", "the", "sat"], ["the", "dog"])
    0.5
    """
    if not tokens:
        return 1.0
    present = set(other)
    return sum(token in present for token in tokens) / len(tokens)


def sample_texts(tokens: Sequence[str], words_per_text: int = TEXT_WORDS) -> list[str]:
    """Word tokens cut into texts of ``words_per_text`` words (the last may be shorter).

    >>> sample_texts(["a", "b", "c"], 2)
    ['a b', 'c']
    """
    return [" ".join(tokens[i:i + words_per_text]) for i in range(0, len(tokens), words_per_text)]


def calibrate_releases(
    make_mechanism: Callable[[float], Any],
    parameter: str,
    values: Sequence[float],
    texts: Sequence[str],
    *,
    draws: int = 2,
    progress: Callable[[int], None] | None = None,
) -> list[ReleaseCalibrationPoint]:
    """Release every text ``draws`` times at each value, with ``make_mechanism(value)`` (a
    mechanism with its own random state), and measure how much of each release comes from its
    text, how much of the text it keeps, and how alike two releases of one text are.

    >>> toy = WordEmbeddings(["a", "b"], [[0.0], [100.0]])
    >>> make = lambda epsilon: EarthMoversPrivacy(epsilon, toy, seed=0)
    >>> [(p.words_from_text, p.words_kept) for p in calibrate_releases(make, "epsilon", [5.0], ["a b a", "b"])]
    [(1.0, 1.0)]
    """
    if not values:
        raise InvalidParameterError(f"give at least one {parameter} to calibrate")
    if draws < 2:
        raise InvalidParameterError("calibrating releases needs at least 2 draws per text (it compares two)")
    words = [[word_key(w) for w in find_words(text)] for text in texts]
    texts = [text for text, text_words in zip(texts, words) if text_words]
    words = [text_words for text_words in words if text_words]
    if not texts:
        raise InvalidParameterError("the sample texts hold no words to calibrate on")
    points = []
    for value in values:
        releases = make_mechanism(value).sanitize_many([text for text in texts for _ in range(draws)])
        released = [[word_key(w) for w in find_words(r.text)] for r in releases]
        draws_of = [released[i * draws:(i + 1) * draws] for i in range(len(texts))]
        from_text = np.array([np.mean([shared_share(r, words[i]) for r in draws_of[i]]) for i in range(len(texts))])
        kept = [np.mean([shared_share(words[i], r) for r in draws_of[i]]) for i in range(len(texts))]
        alike = [shared_share(draws_of[i][0], draws_of[i][1]) for i in range(len(texts))]
        points.append(ReleaseCalibrationPoint(
            parameter=parameter, value=float(value), words_from_text=float(from_text.mean()),
            words_from_text_stderr=float(from_text.std(ddof=1) / np.sqrt(len(texts))) if len(texts) > 1 else 0.0,
            words_kept=float(np.mean(kept)), release_overlap=float(np.mean(alike)), draws=draws, texts=len(texts),
            tokens_sampled=sum(map(len, words))))
        if progress is not None:
            progress(1)
    return points


def plot_calibration(points: Sequence[CalibrationPoint], path: str, title: str = "") -> None:
    """Save the calibration curves as a PNG (two panels), written atomically."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from textveil.atomic_files import atomic_write_bytes

    eps = [p.epsilon for p in points]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.errorbar(eps, [p.unchanged_fraction for p in points], yerr=[2 * p.unchanged_stderr for p in points],
                  marker="o", label="all word tokens")
    left.plot(eps, [p.unchanged_in_vocabulary for p in points], marker="s", linestyle="--", label="in-vocabulary tokens")
    left.legend(loc="lower right")
    left.set(xlabel="epsilon (per word)", ylabel="fraction of word tokens unchanged", ylim=(0, 1.02))
    left.grid(alpha=0.3)
    right.plot(eps, [p.distinct_substitutes for p in points], marker="o", color="tab:red")
    right.set(xlabel="epsilon (per word)", ylabel=f"distinct substitutes per word ({points[0].draws} draws)")
    right.grid(alpha=0.3)
    figure.suptitle(title or "emp calibration")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    plt.close(figure)
    atomic_write_bytes(path, buffer.getvalue())
