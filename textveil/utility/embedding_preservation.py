"""Do word embeddings trained on a release keep the geometry of those trained on the original?

PIVOT (paper 003) hands a corpus to a third party that trains word embeddings on it, each
word replaced by several opaque code words; the owner maps the vectors back with its key.
Paper 003 measures utility as the accuracy of those embeddings: with dist(v, v') = 1 - cos(v, v'),

    dist(D, D') = sum over word pairs (w_i, w_j), s_ip in S_i, s_jq in S_j of
                  |dist(w_i, w_j) - dist(s_ip, s_jq)|

where dist(w_i, w_j) uses vectors trained on the original corpus D and dist(s_ip, s_jq) vectors
trained on the release D' (S_i: the code words of w_i). Here every pair weighs the same: the sum
over a pair's code-word pairs becomes their mean, and the result is the mean over word pairs
(:func:`pair_distance_change`; 0 = every distance kept, at most 2). A word that stands for
itself (vectors already mapped back) is its own single code word.

Around it, for a report (:func:`embedding_preservation`):

- :func:`neighbour_agreement`: how many of a word's k nearest neighbours survive;
- :func:`word_similarity_correlation`: Spearman's rho between human similarity judgements
  (WordSim-353, SimLex-999, as shipped in gensim's test data) and the vectors' cosines, and
  :func:`paired_similarity_correlation`: the same between two models' cosines;
- :func:`train_word2vec`: gensim's Word2Vec, reproducible for a seed.

Every function takes plain mappings (word -> vector, word -> code words), so vectors from any
trainer, and any key, fit.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from textveil.errors import InputError, InvalidParameterError

DATASETS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}
"""The word-similarity datasets, by name, and their files in gensim's test data."""

MAX_SENTENCE = 10_000
"""gensim's Word2Vec reads at most this many tokens of one sentence and drops the rest."""


# -- training ----------------------------------------------------------------------------


def _stable_hash(text: str) -> int:
    """A string hash that does not change between processes (Python's ``hash`` is salted)."""
    return zlib.crc32(text.encode("utf-8"))


def train_word2vec(token_lists: Iterable[Sequence[str]], *, vector_size: int = 100, window: int = 5,
                   min_count: int = 5, epochs: int = 5, sg: int = 0, seed: int = 0,
                   workers: int = 1, sample: float = 1e-3) -> dict[str, np.ndarray]:
    """Word2Vec vectors (gensim) for every token that occurs at least ``min_count`` times.

    ``token_lists`` is the corpus, one token list per document (or sentence); ``sg`` is 0 for
    CBOW, 1 for skip-gram; ``sample`` is the down-sampling threshold of frequent tokens (0: none;
    on a corpus of a few thousand tokens the default skips most occurrences of the frequent ones);
    the other parameters are gensim's. Returns token -> float32 vector.

    With ``workers=1`` the vectors depend on the corpus, the parameters and ``seed`` only, in
    any process: gensim's ``hashfxn`` (which seeds vectors drawn for a string) is Python's
    ``hash`` unless told, salted anew in every process, so a stable hash (CRC-32) is passed.
    Several workers train faster but race on the shared vectors, so two runs then differ.

    >>> corpus = [["the", "cat", "sat", "on", "the", "mat"], ["the", "dog", "sat"]] * 20
    >>> vectors = train_word2vec(corpus, vector_size=8, min_count=2, epochs=2)
    >>> sorted(vectors), vectors["cat"].dtype, vectors["cat"].shape
    (['cat', 'dog', 'mat', 'on', 'sat', 'the'], dtype('float32'), (8,))
    >>> bool((train_word2vec(corpus, vector_size=8, min_count=2, epochs=2)["cat"] == vectors["cat"]).all())
    True
    """
    for name, value in (("vector_size", vector_size), ("window", window), ("min_count", min_count),
                        ("epochs", epochs), ("workers", workers)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidParameterError(f"{name} must be a whole number of at least 1, got {value!r}")
    if not 0 <= sample < 1:
        raise InvalidParameterError(f"sample is a down-sampling threshold in [0, 1), got {sample}")
    if sg not in (0, 1):
        raise InvalidParameterError(f"sg must be 0 (CBOW) or 1 (skip-gram), got {sg!r}")
    # gensim would silently drop every token of a long document past its 10,000th: cut it into
    # pieces instead (a window straddling a cut loses a few contexts, not whole documents).
    documents = list(token_lists)
    if any(isinstance(tokens, str) for tokens in documents):  # would be read letter by letter
        raise InputError("word2vec needs token lists, not strings; split each text into its tokens first")
    sentences = [list(tokens[start:start + MAX_SENTENCE])
                 for tokens in map(list, documents) for start in range(0, len(tokens), MAX_SENTENCE)]
    counts = Counter(token for sentence in sentences for token in sentence)
    if not counts:
        raise InputError("the corpus for word2vec has no tokens; give at least one non-empty token list")
    if max(counts.values()) < min_count:
        raise InputError(f"no token of the corpus occurs min_count = {min_count} times (the most frequent "
                         f"occurs {max(counts.values())} times); lower min_count or give a larger corpus")
    from gensim.models import Word2Vec  # imported lazily: gensim is slow to import

    model = Word2Vec(sentences, vector_size=vector_size, window=window, min_count=min_count, epochs=epochs,
                     sg=sg, seed=seed, workers=workers, sample=sample, hashfxn=_stable_hash)
    matrix = np.asarray(model.wv.vectors, dtype=np.float32)
    return {token: matrix[row] for row, token in enumerate(model.wv.index_to_key)}


# -- dist(D, D') ------------------------------------------------------------------------


def _unit_rows(vectors: Sequence[Any], what: str) -> np.ndarray:
    """The vectors as rows of unit length (a zero vector stays zero: its cosine with all is 0)."""
    try:
        matrix = np.vstack([np.asarray(v, dtype=np.float64).ravel() for v in vectors])
    except ValueError:
        raise InputError(f"the vectors of {what} do not all have the same length; give vectors of one model") from None
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _check_mapping(vectors: Mapping[str, Any], what: str) -> None:
    if not vectors:
        raise InputError(f"{what} holds no vectors; give a mapping word -> vector with at least one entry")


def _unique(words: Iterable[str]) -> list[str]:
    if isinstance(words, str):  # a lone word would be read as its letters
        raise InputError(f"words must be a list of words, got the string {words!r}")
    return list(dict.fromkeys(words))


def _code_name(code: Any) -> str:
    """A code word given alone, or as a (code word, count) pair as a PIVOT key lists them."""
    return code[0] if isinstance(code, (tuple, list)) else code


def _sample_pairs(n: int, max_pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``max_pairs`` distinct pairs (i < j) of ``n`` items, as arrays i and j sorted by j:
    all of them when they fit, otherwise drawn uniformly without replacement."""
    total = n * (n - 1) // 2
    if total <= max_pairs:
        ranks = np.arange(total, dtype=np.int64)
    else:
        ranks = np.sort(rng.choice(total, size=max_pairs, replace=False)).astype(np.int64)
    # Pair (i, j), i < j, has rank j (j - 1) / 2 + i: j from the square root, corrected for rounding.
    j = ((1 + np.sqrt(1 + 8 * ranks.astype(np.float64))) // 2).astype(np.int64)
    j -= j * (j - 1) // 2 > ranks
    j += (j + 1) * j // 2 <= ranks
    return ranks - j * (j - 1) // 2, j


def pair_distance_change(original: Mapping[str, Any], released: Mapping[str, Any], words: Iterable[str],
                         code_words: Mapping[str, Sequence[Any]] | None = None, max_pairs: int = 20000,
                         max_codes: int = 20, seed: int = 0) -> float:
    """Paper 003's dist(D, D'), every word pair weighing the same: the mean over word pairs of
    the mean over their code-word pairs of |dist(w_i, w_j) - dist(s_ip, s_jq)|, dist = 1 - cos.

    ``original``: word -> vector trained on the original corpus; ``released``: token -> vector
    trained on the release; ``code_words``: word -> its code words (alone or as the (code word,
    count) pairs of a PIVOT key's ``code_words``), or None when the release's tokens are the
    words themselves (e.g. vectors already mapped back); ``words``: the words compared, such as
    the most frequent words present in both.

    Up to ``max_pairs`` word pairs and up to ``max_codes`` code words per word are compared,
    drawn at random (``seed``) when there are more. Code words without a vector in ``released``
    are skipped, and so is a word without a vector in ``original`` or none of whose code words
    has one. 0 means every distance kept; cosines lie in [-1, 1], so the result is at most 2.

    >>> original = {"cat": np.array([1.0, 0.1]), "dog": np.array([0.9, 0.3]), "car": np.array([0.0, 1.0])}
    >>> pair_distance_change(original, original, ["cat", "dog", "car"])
    0.0
    >>> released = {"c1": original["cat"], "c2": 2 * original["cat"], "d1": original["dog"], "r1": original["car"]}
    >>> codes = {"cat": ["c1", "c2", "c3"], "dog": ["d1"], "car": ["r1"]}
    >>> pair_distance_change(original, released, ["cat", "dog", "car"], codes)
    0.0
    >>> swapped = {"cat": original["car"], "dog": original["dog"], "car": original["cat"]}
    >>> round(pair_distance_change(original, swapped, ["cat", "dog", "car"]), 4)
    0.4395
    """
    _check_mapping(original, "the original mapping")
    _check_mapping(released, "the released mapping")
    if max_pairs < 1:
        raise InvalidParameterError(f"max_pairs must be at least 1, got {max_pairs}")
    if max_codes < 1:
        raise InvalidParameterError(f"max_codes must be at least 1, got {max_codes}")
    rng = np.random.default_rng(seed)
    kept: list[str] = []
    chosen: list[str] = []  # the code words compared, word after word
    sizes: list[int] = []
    for word in _unique(words):
        if word not in original:
            continue
        codes = [word] if code_words is None else [_code_name(c) for c in code_words.get(word, ())]
        present = [code for code in dict.fromkeys(codes) if code in released]
        if not present:
            continue
        if len(present) > max_codes:
            present = [present[i] for i in sorted(rng.choice(len(present), size=max_codes, replace=False))]
        kept.append(word)
        chosen.extend(present)
        sizes.append(len(present))
    if len(kept) < 2:
        raise InputError(f"only {len(kept)} of the words have a vector in the original mapping and at least one in "
                         "the released one; dist(D, D') needs two; give words (and code words) that both models know")
    words_unit = _unit_rows([original[w] for w in kept], "the original mapping")
    codes_unit = _unit_rows([released[c] for c in chosen], "the released mapping")
    size = np.asarray(sizes, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    firsts, seconds = _sample_pairs(len(kept), max_pairs, rng)
    changes = np.empty(len(seconds))
    # Pairs come sorted by their second word: one matrix product per word gives its code words
    # against every code word of all its partners at once.
    bounds = np.flatnonzero(np.diff(np.concatenate([[-1], seconds, [len(kept)]])))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        i, partners = seconds[lo], firsts[lo:hi]
        cos_words = words_unit[partners] @ words_unit[i]
        width = size[partners]
        offsets = np.concatenate([[0], np.cumsum(width)[:-1]])
        columns = np.repeat(start[partners] - offsets, width) + np.arange(width.sum())
        cos_codes = codes_unit[start[i]:start[i] + size[i]] @ codes_unit[columns].T
        # |dist(w_i, w_j) - dist(s_ip, s_jq)| = |cos(s_ip, s_jq) - cos(w_i, w_j)|
        per_column = np.abs(cos_codes - np.repeat(cos_words, width)).mean(axis=0)
        changes[lo:hi] = np.add.reduceat(per_column, offsets) / width
    return float(changes.mean())


# -- nearest neighbours -----------------------------------------------------------------


def _neighbours(unit: np.ndarray, k: int, block: int = 1024) -> np.ndarray:
    """Each row's k nearest other rows by cosine (rows of unit length), row by row in blocks so
    that a large vocabulary never needs its whole similarity matrix at once."""
    found = np.empty((len(unit), k), dtype=np.int64)
    for lo in range(0, len(unit), block):
        similarity = unit[lo:lo + block] @ unit.T
        rows = np.arange(similarity.shape[0])
        similarity[rows, lo + rows] = -np.inf  # a word is not its own neighbour
        found[lo:lo + block] = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    return found


def neighbour_agreement(original: Mapping[str, Any], other: Mapping[str, Any], words: Iterable[str],
                        k: int = 10) -> float:
    """The mean over ``words`` of |N_k(w) ∩ N'_k(w)| / k: how many of each word's k nearest
    neighbours (cosine) under ``original`` are among its k nearest under ``other``. Neighbours
    are searched among the words themselves, those with a vector in both mappings; 1 = every
    neighbourhood kept, while unrelated vectors agree by chance about k / (n - 1) of n words.

    >>> a = {"cat": np.array([1.0, 0.0]), "dog": np.array([0.9, 0.1]), "car": np.array([0.0, 1.0]),
    ...      "bus": np.array([0.1, 0.9])}
    >>> neighbour_agreement(a, a, ["cat", "dog", "car", "bus"], k=1)
    1.0
    >>> b = {**a, "car": np.array([0.8, 0.2])}  # the car's nearest word is now the dog, not the bus
    >>> neighbour_agreement(a, b, ["cat", "dog", "car", "bus"], k=1)
    0.75
    """
    _check_mapping(original, "the original mapping")
    _check_mapping(other, "the other mapping")
    if k < 1:
        raise InvalidParameterError(f"k must be at least 1, got {k}")
    kept = [w for w in _unique(words) if w in original and w in other]
    if len(kept) <= k:
        raise InputError(f"{len(kept)} of the words have a vector in both mappings; k = {k} neighbours need at "
                         f"least {k + 1}; give more words or a smaller k")
    ours = _neighbours(_unit_rows([original[w] for w in kept], "the original mapping"), k)
    theirs = _neighbours(_unit_rows([other[w] for w in kept], "the other mapping"), k)
    hits = [np.intersect1d(a, b, assume_unique=True).size for a, b in zip(ours, theirs)]
    return float(np.mean(hits) / k)


# -- word-similarity datasets -----------------------------------------------------------


def _check_dataset(dataset: str) -> None:
    if dataset not in DATASETS:
        raise InvalidParameterError(f"unknown word-similarity dataset {dataset!r}; use one of {', '.join(DATASETS)}")


@lru_cache(maxsize=len(DATASETS))
def similarity_pairs(dataset: str) -> tuple[tuple[str, str, float], ...]:
    """The (word, word, human score) rows of a dataset, words in lower case, read from the copy
    that gensim ships with its tests (lines starting with '#' are comments; tab-separated).

    >>> len(similarity_pairs("wordsim353")), len(similarity_pairs("simlex999"))
    (353, 999)
    >>> similarity_pairs("simlex999")[1]
    ('smart', 'intelligent', 9.2)
    """
    _check_dataset(dataset)
    from gensim.test.utils import datapath  # imported lazily: gensim is slow to import

    path = datapath(DATASETS[dataset])
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError:
        raise InputError(f"cannot read {dataset} from gensim's test data ('{path}'); reinstall gensim") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        try:
            rows.append((fields[0].strip().lower(), fields[1].strip().lower(), float(fields[2])))
        except (IndexError, ValueError):
            raise InputError(f"line {number} of '{path}' is not 'word<TAB>word<TAB>score'; reinstall gensim") from None
    return tuple(rows)


def _cosines(vectors: Mapping[str, Any], rows: Sequence[tuple[str, str, float]]) -> np.ndarray:
    first = _unit_rows([vectors[a] for a, _, _ in rows], "the vectors")
    second = _unit_rows([vectors[b] for _, b, _ in rows], "the vectors")
    return np.einsum("ij,ij->i", first, second)


def _spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's rho and its p-value; NaN for fewer than 3 pairs or a constant side, where
    a rank correlation says nothing."""
    if len(x) < 3:
        return math.nan, math.nan
    from scipy.stats import spearmanr

    with warnings.catch_warnings():  # a constant input warns and gives NaN: NaN is the answer
        warnings.simplefilter("ignore")
        result = spearmanr(x, y)
    return float(result.statistic), float(result.pvalue)


@dataclass(frozen=True)
class SimilarityScore:
    """Spearman's rho between a dataset's human scores and a model's cosines, over the pairs
    whose both words have vectors (rho and p-value are NaN when fewer than 3 pairs are)."""

    dataset: str
    rho: float
    p_value: float
    pairs_used: int
    pairs_total: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def word_similarity_correlation(vectors: Mapping[str, Any], dataset: str) -> SimilarityScore:
    """How well the cosines of ``vectors`` (word -> vector, words in lower case) rank a
    dataset's word pairs as people did: ``dataset`` is ``"wordsim353"`` or ``"simlex999"``.

    >>> rng = np.random.default_rng(0)
    >>> vectors = {w: rng.standard_normal(4) for w in ("tiger", "cat", "computer", "keyboard", "money", "cash")}
    >>> score = word_similarity_correlation(vectors, "wordsim353")
    >>> score.pairs_used, score.pairs_total, -1 <= score.rho <= 1
    (5, 353, True)
    """
    rows = similarity_pairs(dataset)
    _check_mapping(vectors, "the vectors")
    covered = [row for row in rows if row[0] in vectors and row[1] in vectors]
    if not covered:
        return SimilarityScore(dataset, math.nan, math.nan, 0, len(rows))
    rho, p_value = _spearman(np.array([score for _, _, score in covered]), _cosines(vectors, covered))
    return SimilarityScore(dataset, rho, p_value, len(covered), len(rows))


def paired_similarity_correlation(a: Mapping[str, Any], b: Mapping[str, Any], dataset: str) -> float:
    """Spearman's rho between the cosines of two models (e.g. the original vectors and those
    mapped back from a release) on a dataset's pairs that both cover; NaN below 3 pairs.

    >>> rng = np.random.default_rng(0)
    >>> vectors = {w: rng.standard_normal(4) for a, b, _ in similarity_pairs("simlex999")[:40] for w in (a, b)}
    >>> round(paired_similarity_correlation(vectors, {w: 3 * v for w, v in vectors.items()}, "simlex999"), 6)
    1.0
    """
    rows = similarity_pairs(dataset)
    _check_mapping(a, "the first mapping")
    _check_mapping(b, "the second mapping")
    covered = [row for row in rows if all(w in m for w in row[:2] for m in (a, b))]
    if not covered:
        return math.nan
    return _spearman(_cosines(a, covered), _cosines(b, covered))[0]


# -- everything, for a report -----------------------------------------------------------


def embedding_preservation(original: Mapping[str, Any], released: Mapping[str, Any],
                           code_words: Mapping[str, Sequence[Any]], decoded: Mapping[str, Any],
                           words: Iterable[str], k: int = 10, *, max_pairs: int = 20000, max_codes: int = 20,
                           seed: int = 0) -> dict[str, Any]:
    """Every measure of this module for one release, as a JSON-ready dict.

    ``original``: vectors trained on the original corpus; ``released``: vectors trained on the
    release (code word -> vector); ``code_words``: the key's word -> code words; ``decoded``:
    the released vectors mapped back to words; ``words``: the words compared (e.g. the 1,000
    most frequent words present in both).

    Keys: ``pair_distance_change`` (dist(D, D') over code words), ``pair_distance_change_decoded``
    (the same for the mapped-back vectors), ``neighbour_agreement`` (original vs mapped back,
    with ``k``), ``words`` (how many of ``words`` both the original and mapped-back vectors know)
    and, per dataset, ``{"original": ..., "decoded": ..., "paired": rho}``.
    """
    words = _unique(words)
    report: dict[str, Any] = {
        "words": sum(1 for w in words if w in original and w in decoded),
        "k": k,
        "pair_distance_change": pair_distance_change(original, released, words, code_words, max_pairs, max_codes,
                                                     seed),
        "pair_distance_change_decoded": pair_distance_change(original, decoded, words, None, max_pairs, max_codes,
                                                             seed),
        "neighbour_agreement": neighbour_agreement(original, decoded, words, k),
    }
    for dataset in DATASETS:
        report[dataset] = {"original": word_similarity_correlation(original, dataset).to_dict(),
                           "decoded": word_similarity_correlation(decoded, dataset).to_dict(),
                           "paired": paired_similarity_correlation(original, decoded, dataset)}
    return report
