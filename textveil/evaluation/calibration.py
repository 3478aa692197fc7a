"""Calibration: what an epsilon does to words, measured by sampling, so users can pick one.

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

import numpy as np

from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.sampling import make_rng
from textveil.privacy.parameters import check_epsilon
from textveil.text.tokenize import word_key


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


def plot_calibration(points: Sequence[CalibrationPoint], path: str, title: str = "") -> None:
    """Save the calibration curves as a PNG (two panels), written atomically."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from textveil.corpus.writing import atomic_write_bytes

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
