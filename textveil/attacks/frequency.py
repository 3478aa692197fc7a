"""Frequency analysis of a code-word release (Naveed, Kamara and Wright, CCS 2015), adapted to
one-to-many mappings such as PIVOT's, and a context-merging attack that PIVOT's poster leaves out.

The attacker sees the release: token lists of opaque code words. It knows, or estimates, how
often each word occurs (the original corpus's counts, :func:`reference_from_corpus`, or a public
proxy, :func:`reference_from_wordfreq`), and guesses each code word's word from its count.

* **Slots** (:func:`expected_slots`) are what the attacker expects the code words' counts to be,
  scaled to the release's size: one per word for an attacker who assumes a one-to-one cipher,
  or, for an attacker who knows the mechanism, one per part that the mechanism's public planning
  function (passed in as a callable; attacks never import a mechanism) cuts each word into.
* **Matching** code words to slots: by rank (:func:`rank_matching`, Naveed et al.'s frequency
  analysis) or by the assignment that minimises the summed ``|count - slot| ** p``
  (:func:`optimal_assignment`, their l_p-optimisation attack).
* **Context merging** (:func:`context_merging_attack`): code words of one word stand in the same
  contexts, so the attacker trains word2vec on the release itself, merges code words whose
  vectors agree, and runs frequency analysis on the merged counts, hoping each cluster is a
  whole word again.
* **Scoring** (:func:`score_recovery`): the share of tokens decoded right and, to compare with
  l-privacy's 1/l, the success rate of the best *count class* (code words of one count are
  exchangeable to a frequency attacker, so their successes are pooled).

>>> release = [["qa", "zb", "qa", "xc", "qa", "zb"]]
>>> counts = released_counts(release)
>>> slots = expected_slots({"the": 30, "cat": 20, "sat": 10}, total_tokens=sum(counts.values()))
>>> slots
[('the', 3.0), ('cat', 2.0), ('sat', 1.0)]
>>> rank_matching(counts, slots) == optimal_assignment(counts, slots) == {"qa": "the", "zb": "cat", "xc": "sat"}
True
>>> score = score_recovery([(rank_matching(counts, slots), {"qa": "the", "zb": "cat", "xc": "sat"}, counts)])
>>> score.tokens_recovered, score.class_success[3]
(1.0, (1, 1))
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.stats import beta

from textveil.errors import InputError, InvalidParameterError
from textveil.text.layout import is_mark, release_units
from textveil.utility.embedding_preservation import train_word2vec

Planner = Callable[[dict[str, int]], Mapping[str, Sequence[int]]]
"""A mechanism's public planning function: word counts -> the counts of each word's code words."""

Slot = tuple[str, float]
"""One expected code word: (word, expected count in the release)."""



# -- counts ----------------------------------------------------------------------------


def released_counts(token_lists: Iterable[Sequence[str]]) -> Counter:
    """Each code word's count over a release given as token lists (a released text's
    ``.text.split()``).

    >>> released_counts([["ab", "cd"], ["ab"]])
    Counter({'ab': 2, 'cd': 1})
    """
    return _count(token_lists, "the release")


def reference_from_corpus(token_lists: Iterable[Sequence[str]]) -> Counter:
    """The strongest auxiliary knowledge: the original corpus's own word counts (its token lists,
    tokenised as the mechanism tokenised them).

    >>> reference_from_corpus([["the", "cat"], ["the"]])
    Counter({'the': 2, 'cat': 1})
    """
    return _count(token_lists, "the reference corpus")


def reference_from_wordfreq(n: int = 50000, lang: str = "en") -> dict[str, float]:
    """A public proxy for word counts: the ``n`` most frequent words of ``lang`` in the
    ``wordfreq`` package, with their frequencies (shares of running text).

    Only entries that a release would hold as one word token are kept (lower case; "u.s" or
    emoji are dropped). wordfreq counts words only, never punctuation, so an attacker using this
    reference cannot guess marks: the code words of ".", "," and the like take some word's slot.

    >>> reference = reference_from_wordfreq(100)
    >>> reference["the"] > reference["of"] > 0, "." in reference
    (True, False)
    """
    if n < 1:
        raise InvalidParameterError(f"the wordfreq reference needs n >= 1 words, got {n}")
    import wordfreq  # imported lazily: it loads its word lists on first use

    try:
        words = wordfreq.top_n_list(lang, n)
    except LookupError:
        words = []
    if not words:
        raise InputError(f"wordfreq has no word list for language '{lang}'; give a language code it knows (e.g. 'en')")
    reference: dict[str, float] = {}
    for word in words:
        if release_units(word) == [word] and not is_mark(word):
            frequency = wordfreq.word_frequency(word, lang)
            if frequency > 0:
                reference[word] = frequency
    return reference


# -- slots -----------------------------------------------------------------------------


def expected_slots(reference: Mapping[str, float], total_tokens: int, planner: Planner | None = None) -> list[Slot]:
    """The code words the attacker expects, largest count first (ties by word).

    Without ``planner`` the attacker assumes a one-to-one cipher: one slot per word, of count
    (the word's share of the reference) * ``total_tokens``. With ``planner`` (e.g.
    ``lambda c: plan_code_words(c, l, part_size)``) the reference is first scaled to whole
    counts summing to ``total_tokens`` (largest remainders; words rounded to 0 are dropped),
    and each word gets one slot per part the planner cuts it into.

    >>> expected_slots({"a": 3, "b": 1}, 8)
    [('a', 6.0), ('b', 2.0)]
    >>> expected_slots({"a": 3, "b": 1}, 8, planner=lambda c: {w: [n // 2, n - n // 2] for w, n in c.items()})
    [('a', 3.0), ('a', 3.0), ('b', 1.0), ('b', 1.0)]
    """
    shares = _shares(reference)
    if not (isinstance(total_tokens, (int, np.integer)) and total_tokens >= 1):
        raise InvalidParameterError(f"total_tokens must be a whole number >= 1, got {total_tokens!r}")
    if planner is None:
        slots = [(word, float(share * total_tokens)) for word, share in shares.items()]
    else:
        plan = planner(_integer_counts(shares, int(total_tokens)))
        slots = [(word, float(size)) for word, sizes in plan.items() for size in sizes if size > 0]
    slots.sort(key=lambda slot: (-slot[1], slot[0]))
    return slots


def _shares(reference: Mapping[str, float]) -> dict[str, float]:
    """Each word's share of the reference; zero counts dropped, anything else refused."""
    if not reference:
        raise InputError("the reference is empty: give word counts (reference_from_corpus or reference_from_wordfreq)")
    values = np.array([float(v) for v in reference.values()])
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise InvalidParameterError("reference counts must be finite and non-negative")
    total = values.sum()
    if total <= 0:
        raise InputError("the reference holds no occurrences (every count is 0)")
    return {str(word): float(v) / total for word, v in zip(reference, values) if v > 0}


def _integer_counts(shares: Mapping[str, float], total: int) -> dict[str, int]:
    """Shares scaled to whole counts that sum to ``total`` exactly (largest remainder method),
    so a planner sees a corpus of the release's size; words rounded down to 0 are dropped."""
    words = sorted(shares)
    scaled = np.array([shares[w] for w in words]) * total
    whole = np.floor(scaled).astype(np.int64)
    short = int(total - whole.sum())
    if short > 0:
        # largest fractional parts first; ties by word (the order of `words`), for determinism
        order = np.lexsort((np.arange(len(words)), -(scaled - whole)))
        whole[order[:short]] += 1
    return {word: int(count) for word, count in zip(words, whole) if count > 0}


# -- matching --------------------------------------------------------------------------


def rank_matching(counts: Mapping[str, int], slots: Sequence[Slot]) -> dict[str, str]:
    """Frequency analysis: the i-th most frequent code word takes the word of the i-th largest
    slot. Code words of equal count are ordered by the code word itself, which is random, so a
    tie is broken at random. Code words beyond the number of slots (an attacker who assumed too
    few code words) take the word of the slot whose expected count is nearest to their count
    (the smaller slot when two are as near): the best guess from the count alone.

    >>> rank_matching({"x1": 5, "x2": 1, "x3": 4}, [("the", 4.5), ("cat", 1.2)])
    {'x1': 'the', 'x3': 'cat', 'x2': 'cat'}
    """
    codes, values = _sorted_codes(counts)
    words, expected = _sorted_slots(slots)
    matched = min(len(codes), len(words))
    guesses = {codes[i]: words[i] for i in range(matched)}
    guesses.update(_nearest(codes[matched:], values[matched:], words, expected))
    return guesses


def optimal_assignment(counts: Mapping[str, int], slots: Sequence[Slot], p: float = 2.0, max_size: int = 2000
                       ) -> dict[str, str]:
    """The l_p-optimisation attack: each code word takes a distinct slot so that the sum of
    ``|count - expected| ** p`` is least (``scipy.optimize.linear_sum_assignment``).

    A dense cost matrix over all code words does not fit in memory (40,000 x 35,000), and the
    frequent code words are where the counts tell most, so the problem is solved exactly for the
    ``max_size`` most frequent code words against the ``max_size + max_size // 2`` largest slots
    (the margin lets them skip slots the cipher-minded ranking would give them); the code words
    after them take the slots left over, by rank (:func:`rank_matching`), and code words beyond
    all slots take the nearest slot's word. With at most ``max_size`` code words and
    ``max_size * 3 // 2`` slots the solution is exact.

    >>> optimal_assignment({"x1": 10, "x2": 9, "x3": 1}, [("the", 10.0), ("cat", 2.0), ("sat", 1.0)], p=1)
    {'x1': 'the', 'x2': 'cat', 'x3': 'sat'}
    """
    if not (isinstance(p, (int, float)) and math.isfinite(p) and p > 0):
        raise InvalidParameterError(f"p must be a positive finite number, got {p!r}")
    if not (isinstance(max_size, (int, np.integer)) and max_size >= 1):
        raise InvalidParameterError(f"max_size must be a whole number >= 1, got {max_size!r}")
    codes, values = _sorted_codes(counts)
    words, expected = _sorted_slots(slots)
    rows = min(len(codes), int(max_size))
    columns = min(len(words), int(max_size) + int(max_size) // 2)
    # Scaled to at most 1 before the power so that a large p cannot overflow; the argmin is the same.
    scale = max(float(values[0]), float(expected[0]), 1.0)
    cost = np.abs(values[:rows, None] - expected[None, :columns]) / scale
    cost = cost ** p
    assigned_rows, assigned_columns = linear_sum_assignment(cost)
    guesses = {codes[r]: words[c] for r, c in zip(assigned_rows, assigned_columns)}
    used = np.zeros(len(words), dtype=bool)
    used[assigned_columns] = True
    # head rows left without a slot (more of them than slots) join the rest
    rest = [i for i in range(rows) if codes[i] not in guesses] + list(range(rows, len(codes)))
    free = np.flatnonzero(~used)
    matched = min(len(rest), len(free))
    guesses.update({codes[rest[i]]: words[free[i]] for i in range(matched)})
    left = rest[matched:]
    guesses.update(_nearest([codes[i] for i in left], values[left], words, expected))
    return guesses


def majority_matching(counts: Mapping[str, int], slots: Sequence[Slot]) -> dict[str, str]:
    """The best guess from a count alone: each code word takes the word that owns most of the
    slots of its count (of the nearest count when no slot has its own). Code words of one count
    are exchangeable to a frequency attacker, so this is the Bayes-optimal guess when the slots
    are exact (an attacker who knows the counts and the mechanism): its success on a count class
    is the largest share one word holds there, the bound that l-privacy caps at 1/l. Unlike rank
    matching and assignment, many code words may take one word.

    >>> majority_matching({"x1": 4, "x2": 4, "x3": 4, "x4": 1}, [("the", 4.0), ("the", 4.0), ("cat", 4.0), ("sat", 1.0)])
    {'x1': 'the', 'x2': 'the', 'x3': 'the', 'x4': 'sat'}
    """
    codes, values = _sorted_codes(counts)
    words, expected = _sorted_slots(slots)
    owners: dict[float, Counter] = {}
    for word, count in zip(words, np.round(expected)):
        owners.setdefault(float(count), Counter())[word] += 1
    sizes = np.array(sorted(owners))
    best = [max(owners[size].items(), key=lambda item: (item[1], item[0]))[0] for size in sizes]
    right = np.clip(np.searchsorted(sizes, values), 0, len(sizes) - 1)
    left = np.clip(right - 1, 0, len(sizes) - 1)
    pick = np.where(np.abs(values - sizes[left]) <= np.abs(sizes[right] - values), left, right)
    return {code: best[index] for code, index in zip(codes, pick)}


MATCHERS = {"rank": rank_matching, "assignment": optimal_assignment, "majority": majority_matching}
"""The ways of matching code words to slots, by name."""


def _sorted_codes(counts: Mapping[str, int]) -> tuple[list[str], np.ndarray]:
    if not counts:
        raise InputError("the release has no code words: give the released token lists (released_counts)")
    codes = sorted(counts, key=lambda code: (-counts[code], code))
    values = np.array([float(counts[code]) for code in codes])
    if np.any(values <= 0) or not np.all(np.isfinite(values)):
        raise InvalidParameterError("code-word counts must be positive")
    return codes, values


def _sorted_slots(slots: Sequence[Slot]) -> tuple[list[str], np.ndarray]:
    if len(slots) == 0:
        raise InputError("there are no slots to match: the reference gave no words (expected_slots)")
    ordered = sorted(slots, key=lambda slot: (-float(slot[1]), slot[0]))
    return [word for word, _ in ordered], np.array([float(count) for _, count in ordered])


def _nearest(codes: Sequence[str], values: np.ndarray, words: Sequence[str], expected: np.ndarray) -> dict[str, str]:
    """Each code word's guess from the slot nearest by count (``expected`` is in descending order)."""
    if not len(codes):
        return {}
    ascending = expected[::-1]
    right = np.clip(np.searchsorted(ascending, values), 0, len(ascending) - 1)
    left = np.clip(right - 1, 0, len(ascending) - 1)
    # the smaller slot wins a tie: the remaining code words are the release's rarest
    pick = np.where(np.abs(values - ascending[left]) <= np.abs(ascending[right] - values), left, right)
    return {code: words[len(words) - 1 - int(i)] for code, i in zip(codes, pick)}


# -- context merging -------------------------------------------------------------------


@dataclass(frozen=True)
class MergingResult:
    """The context-merging attack's guesses (code word -> word) and the clusters it merged
    (each a list of code words, most frequent first; singletons included)."""

    guesses: dict[str, str]
    clusters: list[list[str]]


def context_merging_attack(token_lists: Sequence[Sequence[str]], reference: Mapping[str, float], *,
                           planner: Planner | None = None, vector_size: int = 100, window: int = 5,
                           min_count: int = 5, epochs: int = 5, sample: float = 1e-3, neighbours: int = 10,
                           threshold: float = 0.6, seed: int = 0, workers: int = 1, method: str = "assignment",
                           vectors: Mapping[str, np.ndarray] | None = None) -> MergingResult:
    """Undo the one-to-many mapping with the release's own contexts, then run frequency analysis.

    1. Train gensim's ``Word2Vec`` (CBOW) on the release. It is reproducible across processes
       with ``workers=1``: the seed fixes its random draws and a CRC-32 hash replaces Python's
       salted ``hash`` for the initial vectors (more workers are faster but not reproducible).
       ``sample`` is word2vec's down-sampling of frequent tokens; on a release of a few thousand
       tokens the default skips most occurrences of the frequent code words, and 0 trains on all.
       With ``vectors`` (code word -> vector), those are used instead: the third party that
       trains embeddings on the release for the owner has them anyway.
    2. Centre the vectors (word2vec's vectors share a large common direction that makes every
       cosine near 1) and cluster code words whose vectors agree (:func:`context_clusters`);
       code words without a vector (under ``min_count``) stay their own cluster.
    3. Merge each cluster's counts into one pseudo code word and match the pseudo code words
       (``method``: ``"rank"``, :func:`rank_matching`, or ``"assignment"``,
       :func:`optimal_assignment`) to one slot per word: the attacker hopes clusters are whole
       words again. With ``planner`` the slots of the parts that the planner splits words into
       are offered too, so code words the clustering left apart can still match a part of their
       word (a split word then has both its whole slot and its parts' slots).
    4. Every code word takes its cluster's guess.
    """
    if method not in MATCHERS:
        raise InvalidParameterError(f"unknown matching method '{method}'; use one of: {', '.join(MATCHERS)}")
    for name, value in (("vector_size", vector_size), ("window", window), ("min_count", min_count),
                        ("epochs", epochs), ("neighbours", neighbours), ("workers", workers)):
        if not (isinstance(value, (int, np.integer)) and value >= 1):
            raise InvalidParameterError(f"{name} must be a whole number >= 1, got {value!r}")
    if not 0 <= sample < 1:
        raise InvalidParameterError(f"sample is a down-sampling threshold in [0, 1), got {sample}")
    if not -1.0 <= threshold <= 1.0:
        raise InvalidParameterError(f"threshold is a cosine similarity in [-1, 1], got {threshold}")
    token_lists = list(token_lists)  # read twice: counted here, trained on below
    counts = released_counts(token_lists)
    total = int(sum(counts.values()))
    slots = expected_slots(reference, total)
    if planner is not None:
        parts = expected_slots(reference, total, planner)
        pieces = Counter(word for word, _ in parts)
        slots += [slot for slot in parts if pieces[slot[0]] > 1]

    if vectors is None:
        vectors = train_word2vec(token_lists, vector_size=vector_size, window=window, min_count=min_count,
                                 epochs=epochs, sample=sample, seed=seed, workers=workers)
    frequent = sorted((code for code in counts if code in vectors), key=lambda code: (-counts[code], code))
    clusters: list[list[str]] = []
    if frequent:
        matrix = np.vstack([np.asarray(vectors[code], dtype=np.float32) for code in frequent])
        labels = context_clusters(matrix - matrix.mean(axis=0), neighbours=neighbours, threshold=threshold)
        grouped: dict[int, list[str]] = {}
        for code, label in zip(frequent, labels):  # `frequent` is in count order, so members are too
            grouped.setdefault(int(label), []).append(code)
        clusters = list(grouped.values())
    clustered = set(frequent)
    clusters += [[code] for code in sorted(counts, key=lambda c: (-counts[c], c)) if code not in clustered]
    clusters.sort(key=lambda members: (-sum(counts[c] for c in members), members[0]))

    # a cluster is named after its most frequent code word, which is random: ties stay random
    merged = {members[0]: sum(counts[c] for c in members) for members in clusters}
    match = MATCHERS[method](merged, slots)
    guesses = {code: match[members[0]] for members in clusters for code in members}
    return MergingResult(guesses, clusters)


def context_clusters(vectors: np.ndarray, neighbours: int = 10, threshold: float = 0.6, block: int = 1024
                     ) -> np.ndarray:
    """A cluster label per row of ``vectors``: rows are linked when each is among the other's
    ``neighbours`` nearest rows by cosine (rows tied with the last of them count too) and their
    cosine is at least ``threshold`` (mutual links keep a hub from chaining unrelated rows
    together), and clusters are the connected components. Similarities are computed ``block``
    rows at a time, so memory stays ``block x rows`` whatever the number of rows: 40,000 rows
    of 100 dimensions took 10 s on two slow cores when most rows had few neighbours above the
    threshold, and 15 s when every row had many (the matrix product is most of it).

    >>> vectors = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99], [-1.0, -1.0]])
    >>> context_clusters(vectors, neighbours=1, threshold=0.9).tolist()
    [0, 0, 1, 1, 2]
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise InvalidParameterError(f"vectors must be a matrix (rows x dimensions), got shape {vectors.shape}")
    n = len(vectors)
    k = min(int(neighbours), n - 1)
    if k < 1:
        return np.arange(n)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for start in range(0, n, block):
        stop = min(start + block, n)
        similar = unit[start:stop] @ unit.T
        similar[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        # Rows with k or fewer candidates above the threshold keep them all; only the others
        # need a partial sort (with well-trained vectors, few rows do), and each of those keeps
        # exactly its k best, all of which pass the threshold.
        above = similar >= threshold
        if np.count_nonzero(above) <= 4 * k * (stop - start):
            # sparse: list the candidates once (listing a dense block would take gigabytes)
            found = np.flatnonzero(above)
            rows, columns = np.divmod(found, n)
            candidates = np.bincount(rows, minlength=stop - start)
            kept = candidates[rows] <= k
            sources.append(rows[kept] + start)
            targets.append(columns[kept])
        else:
            candidates = np.count_nonzero(above, axis=1)
            few = np.flatnonzero((candidates > 0) & (candidates <= k))
            rows, columns = np.nonzero(above[few])
            sources.append(few[rows] + start)
            targets.append(columns)
        many = np.flatnonzero(candidates > k)
        if len(many):
            crowded = similar if len(many) == stop - start else similar[many]
            # the k-th largest value of each row, then everything at or above it: a partition of
            # values is several times faster than an argpartition (rows tied at the k-th value
            # keep all the tied columns)
            kth = np.partition(crowded, n - k, axis=1)[:, n - k]
            rows, columns = np.divmod(np.flatnonzero(crowded >= kth[:, None]), n)
            sources.append(many[rows] + start)
            targets.append(columns)
    rows = np.concatenate(sources) if sources else np.zeros(0, dtype=np.int64)
    columns = np.concatenate(targets) if targets else np.zeros(0, dtype=np.int64)
    links = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, columns)), shape=(n, n)).tocsr()
    mutual = links.multiply(links.T)
    _, labels = connected_components(mutual, directed=False)
    # number clusters in order of first appearance, so the labels read naturally
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inverse]


# -- scoring ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecoveryScore:
    """How much of the release an attack decoded (see :func:`score_recovery`)."""

    tokens_recovered: float
    types_recovered: float
    class_success: dict[int, tuple[int, int]]
    max_class_success: float | None
    max_class_upper: float | None
    max_class: int | None = None
    min_class: int = 20
    runs: int = 1
    tokens: int = 0
    code_words: int = 0
    word_types: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: class counts become string keys, (code words, right) pairs lists."""
        return {
            "tokens_recovered": self.tokens_recovered, "types_recovered": self.types_recovered,
            "max_class_success": self.max_class_success, "max_class_upper": self.max_class_upper,
            "max_class": self.max_class, "min_class": self.min_class, "runs": self.runs, "tokens": self.tokens,
            "code_words": self.code_words, "word_types": self.word_types,
            "class_success": {str(count): list(pair) for count, pair in sorted(self.class_success.items())},
        }


def score_recovery(runs: Sequence[tuple[Mapping[str, str], Mapping[str, str], Mapping[str, int]]],
                   min_class: int = 20) -> RecoveryScore:
    """Score guesses against the key, pooled over ``runs`` of ``(guesses, truth, counts)`` (code
    word -> guessed word, code word -> true word, code word -> count; several keys of one corpus
    may be pooled). A code word without a guess counts as wrong.

    * ``tokens_recovered``: the share of all released tokens whose code word was guessed right.
    * ``types_recovered``: the share of word types (pooled over runs) with at least half of their
      tokens decoded right.
    * ``class_success``: for each count, (code words of that count, of which guessed right),
      pooled over runs. Code words of one count are exchangeable to a frequency attacker, so this
      pooled rate estimates its chance of being right on any one of them.
    * ``max_class_success``: the largest rate among classes of at least ``min_class`` code words
      (``max_class`` is its count), to compare with l-privacy's bound 1/l; ``max_class_upper`` is
      its one-sided 95% Clopper-Pearson upper bound. Both are ``None`` when no class is that
      large. The maximum of many estimated rates is biased upwards; the bound holds for the one
      class, not for all at once.

    >>> truth = {"a1": "the", "a2": "the", "b1": "cat"}
    >>> guesses = {"a1": "the", "a2": "cat", "b1": "cat"}
    >>> score = score_recovery([(guesses, truth, {"a1": 2, "a2": 2, "b1": 1})], min_class=1)
    >>> score.tokens_recovered, score.types_recovered, score.class_success, score.max_class_success
    (0.6, 1.0, {1: (1, 1), 2: (2, 1)}, 1.0)
    """
    if not (isinstance(min_class, (int, np.integer)) and min_class >= 1):
        raise InvalidParameterError(f"min_class must be a whole number >= 1, got {min_class!r}")
    if len(runs) == 0:
        raise InputError("no runs to score: give (guesses, truth, counts) for at least one release")
    tokens = right_tokens = code_words = 0
    classes: dict[int, list[int]] = {}
    type_tokens: Counter = Counter()
    type_right: Counter = Counter()
    for index, run in enumerate(runs):
        if len(run) != 3:
            raise InvalidParameterError(f"run {index} is not a (guesses, truth, counts) triple")
        guesses, truth, counts = run
        for code, count in counts.items():
            count = int(count)
            if count <= 0:
                raise InvalidParameterError(f"run {index}: code word '{code}' has count {count}; counts must be "
                                            "positive")
            if code not in truth:
                raise InputError(f"run {index}: code word '{code}' is not in the truth mapping: score a release "
                                 "with its own key")
            word = truth[code]
            right = guesses.get(code) == word
            tokens += count
            right_tokens += count * right
            code_words += 1
            pooled = classes.setdefault(count, [0, 0])
            pooled[0] += 1
            pooled[1] += right
            type_tokens[word] += count
            type_right[word] += count * right
    if not tokens:
        raise InputError("the runs hold no code words to score: the release is empty")
    class_success = {count: (n, k) for count, (n, k) in sorted(classes.items())}
    eligible = [(k / n, count) for count, (n, k) in class_success.items() if n >= min_class]
    best = best_upper = best_class = None
    if eligible:
        best, best_class = max(eligible, key=lambda item: (item[0], -item[1]))
        n, k = class_success[best_class]
        best_upper = 1.0 if k == n else float(beta.ppf(0.95, k + 1, n - k))
    types = sum(1 for word in type_tokens if 2 * type_right[word] >= type_tokens[word])
    return RecoveryScore(tokens_recovered=right_tokens / tokens, types_recovered=types / len(type_tokens),
                         class_success=class_success, max_class_success=best, max_class_upper=best_upper,
                         max_class=best_class, min_class=int(min_class), runs=len(runs), tokens=tokens,
                         code_words=code_words, word_types=len(type_tokens))


def _count(token_lists: Iterable[Sequence[str]], what: str) -> Counter:
    counts: Counter = Counter()
    for tokens in token_lists:
        if isinstance(tokens, str):
            # iterating a text would count its characters: a silent, wrong answer
            raise InputError(f"{what} must be token lists, not texts: split each text first (text.split())")
        counts.update(tokens)
    if not counts:
        raise InputError(f"{what} holds no tokens: give at least one non-empty token list")
    return counts
