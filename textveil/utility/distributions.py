"""How close a release keeps each user's words: paper 004's n-gram cosine, and Earth Mover's.

- :func:`per_user_ngram_cosines` / :func:`ngram_cosine`: for each user, the cosine between
  the n-gram count vector of all their original texts and that of all their released texts,
  averaged over users (paper 004, "distributional similarity"; 1 = every user's word
  distribution kept).
- :func:`document_earth_movers_distances` / :func:`mean_earth_movers_distance`: the Earth
  Mover's distance between each original and its release as bags of word vectors (paper 001's
  semantic metric; 0 = the same bag).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np
from scipy.spatial.distance import cdist

from textveil.corpus.labelled import group_indices
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.utility.preprocess import check_parallel, content_words, words


def per_user_ngram_cosines(
    originals: Sequence[str],
    releases: Sequence[str],
    users: Sequence[Hashable],
    n: int = 1,
    *,
    drop_stop_words: bool = False,
    release_users: Sequence[Hashable] | None = None,
) -> dict[Hashable, float]:
    """Per user, the cosine between the n-gram counts of their originals and of their releases.

    ``release_users`` labels the releases when they are not aligned with the originals (a
    released corpus of new texts, each labelled with the user it stands for).

    Words are lower-cased and punctuation dropped (:func:`~textveil.utility.preprocess.words`);
    n-grams do not cross text boundaries. One vocabulary is fitted on originals and releases
    together, so words that a release introduces count against it. A user whose originals and
    releases both hold no n-gram (e.g. one-word texts and bigrams) scores 1: nothing changed
    that could be counted.

    >>> per_user_ngram_cosines(["a b c", "x y"], ["a b c", "q r"], ["u1", "u2"], n=1)
    {'u1': 1.0, 'u2': 0.0}
    """
    from sklearn.feature_extraction.text import CountVectorizer

    if release_users is None:
        check_parallel(originals, releases, users)
        release_users = users
    else:
        check_parallel(originals, users)
        check_parallel(releases, release_users)
    if n < 1:
        raise InvalidParameterError(f"n-grams need n >= 1, got {n}")
    vectorizer = CountVectorizer(
        tokenizer=lambda text: words(text, drop_stop_words=drop_stop_words),
        lowercase=False, token_pattern=None, ngram_range=(n, n),
    )
    try:
        counts = vectorizer.fit_transform([*originals, *releases]).tocsr()
    except ValueError:  # "empty vocabulary": not one n-gram anywhere
        counts = None
    half = len(originals)
    released_rows = dict(zip(*group_indices(list(release_users))))
    cosines: dict[Hashable, float] = {}
    for user, rows in zip(*group_indices(list(users))):
        if counts is None:
            cosines[user] = 1.0
            continue
        a = np.asarray(counts[rows].sum(axis=0), dtype=np.float64).ravel()
        b = np.asarray(counts[[half + r for r in released_rows.get(user, [])]].sum(axis=0), dtype=np.float64).ravel()
        cosines[user] = cosine(a, b)
    return cosines


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors, clipped to [-1, 1]; two zero vectors are alike (1), one is not (0).

    >>> cosine(np.array([1.0, 0.0]), np.array([2.0, 0.0])), cosine(np.zeros(2), np.zeros(2))
    (1.0, 1.0)
    >>> cosine(np.array([1.0, 0.0]), np.zeros(2)), cosine(np.array([1.0]), np.array([-3.0]))
    (0.0, -1.0)
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm_a, norm_b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if norm_a == 0.0 and norm_b == 0.0:
        return 1.0
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0
    return float(np.clip(a @ b / (norm_a * norm_b), -1.0, 1.0))


def ngram_cosine(
    originals: Sequence[str],
    releases: Sequence[str],
    users: Sequence[Hashable],
    n: int = 1,
    *,
    drop_stop_words: bool = False,
    release_users: Sequence[Hashable] | None = None,
) -> float:
    """The mean over users of :func:`per_user_ngram_cosines` (paper 004's utility measure).

    >>> round(ngram_cosine(["the cat sat", "a dog ran"], ["the cat sat", "a dog sat"], ["u", "v"], n=2), 4)
    0.75
    """
    cosines = per_user_ngram_cosines(originals, releases, users, n, drop_stop_words=drop_stop_words,
                                     release_users=release_users)
    return float(np.mean(list(cosines.values())))


def unigram_cosine(originals: Sequence[str], releases: Sequence[str], users: Sequence[Hashable],
                   release_users: Sequence[Hashable] | None = None) -> float:
    """Mean per-user unigram cosine (paper 004, Table 2 "Uni-gram")."""
    return ngram_cosine(originals, releases, users, 1, release_users=release_users)


def bigram_cosine(originals: Sequence[str], releases: Sequence[str], users: Sequence[Hashable],
                  release_users: Sequence[Hashable] | None = None) -> float:
    """Mean per-user bigram cosine (paper 004, Table 2 "Bi-gram")."""
    return ngram_cosine(originals, releases, users, 2, release_users=release_users)


def text_earth_movers_distance(original: str, release: str, embeddings: WordEmbeddings) -> float:
    """Earth Mover's distance between the content words of two texts as bags of word vectors.

    Stop words and punctuation are removed and words lower-cased (paper 001, appendix B.1).
    Every word weighs 1/N of its bag, so for bags of different sizes this is Word Mover's
    distance (Kusner et al. 2015) with normalised bag-of-words weights: a word occurring k
    times is k points of weight 1/N. NaN when either text has no content word.

    >>> emb = WordEmbeddings(["market", "stocks", "bank"], [[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    >>> text_earth_movers_distance("The market.", "the stocks", emb)
    5.0
    >>> text_earth_movers_distance("market bank", "bank market", emb)
    0.0
    """
    bag_a, bag_b = content_words(original), content_words(release)
    if not bag_a or not bag_b:
        return float("nan")
    return word_bags_earth_movers_distance(bag_a, bag_b, embeddings)


def word_bags_earth_movers_distance(bag_a: Sequence[str], bag_b: Sequence[str], embeddings: WordEmbeddings) -> float:
    """Earth Mover's distance between two non-empty bags of words, each word weighing 1/N of
    its bag, with the mass the bags share cancelled first.

    With a metric ground cost the distance depends only on the difference of the two mass
    distributions (Kantorovich-Rubinstein duality), so the mass a word holds in both bags can
    stay where it is: only the words a release changed are transported. The answer is the same
    as transporting every word, and a lightly perturbed release costs a few vectors, not N.

    >>> emb = WordEmbeddings(["market", "stocks", "bank"], [[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    >>> round(word_bags_earth_movers_distance(["market", "bank", "bank"], ["stocks", "bank", "bank"], emb), 6)
    1.666667
    >>> word_bags_earth_movers_distance(["bank"], ["market", "bank"], emb)
    0.5
    """
    import ot

    counts_a, counts_b = Counter(bag_a), Counter(bag_b)
    mass_a = {word: count / len(bag_a) for word, count in counts_a.items()}
    mass_b = {word: count / len(bag_b) for word, count in counts_b.items()}
    for word in mass_a.keys() & mass_b.keys():
        shared = min(mass_a[word], mass_b[word])
        mass_a[word] -= shared
        mass_b[word] -= shared
    # Rounding leaves crumbs of 1e-17 where the masses were equal; they are not words to move.
    source = [(w, m) for w, m in mass_a.items() if m > 1e-12]
    target = [(w, m) for w, m in mass_b.items() if m > 1e-12]
    if not source or not target:
        return 0.0
    weights_a = np.array([m for _, m in source])
    weights_b = np.array([m for _, m in target])
    weights_b *= weights_a.sum() / weights_b.sum()  # equal totals up to rounding, as the solver requires
    cost = cdist(embeddings.embed([w for w, _ in source]).astype(np.float64),
                 embeddings.embed([w for w, _ in target]).astype(np.float64))
    return float(ot.emd2(weights_a, weights_b, cost))


def document_earth_movers_distances(
    originals: Sequence[str], releases: Sequence[str], embeddings: WordEmbeddings
) -> np.ndarray:
    """:func:`text_earth_movers_distance` of each original and its release (NaN where undefined)."""
    check_parallel(originals, releases)
    return np.array([text_earth_movers_distance(a, b, embeddings) for a, b in zip(originals, releases)])


def mean_earth_movers_distance(
    originals: Sequence[str], releases: Sequence[str], embeddings: WordEmbeddings
) -> float:
    """The mean Earth Mover's distance over the documents where it is defined.

    >>> emb = WordEmbeddings(["market", "stocks"], [[0.0, 0.0], [3.0, 4.0]])
    >>> mean_earth_movers_distance(["market", "market", "!"], ["market", "stocks", "?"], emb)
    2.5
    """
    distances = document_earth_movers_distances(originals, releases, embeddings)
    defined = distances[~np.isnan(distances)]
    if len(defined) == 0:
        raise InvalidParameterError(
            "no original and release both hold a content word; the Earth Mover's distance is undefined"
        )
    return float(defined.mean())
