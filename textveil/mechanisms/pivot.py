"""PIVOT (paper 003): a one-to-many word mapping that hides a corpus from frequency analysis
while keeping the contexts that word embeddings learn from; the owner keeps the key.

Every token of the corpus (words in lower case, punctuation and symbols alike; whitespace is
dropped) is replaced by an opaque code word, and one word is spread over several code words,
so the release's histogram no longer mirrors the language's. The release is the code words
joined by single spaces, one text per input text: nothing of the input's layout survives.

GOMM, as textveil builds it (the poster leaves the algorithm open):

1. **Grouping by count** (:func:`plan_code_words`). A frequency attacker sees code words and
   their counts only, so the groups that matter are the *count classes*: all code words with
   the same count. Each word is cut into parts of ``part_size`` occurrences and one remainder;
   then, from the largest count down, a class where one word owns more than 1/l of the code
   words has that word's surplus parts split in halves, which moves them into smaller, more
   populous classes. When it ends every class holds code words of at least l words in
   proportions no larger than 1/l: the best frequency guess of any code word is right with
   probability at most 1/l (:mod:`textveil.privacy.l_privacy`), which is the poster's
   l-privacy, reached exactly rather than "nearly". Rare words stay whole (one code word),
   because hundreds of other words share their count.
2. **Context-keeping assignment** (:func:`assign_code_words`). Occurrences are assigned left to
   right. An occurrence of ``w`` after the code word ``p`` reuses the part that ``w`` took after
   ``p`` before while it has room (the poster's Case 1: a repeated pair keeps one code-word
   pair); otherwise it takes ``w``'s open part, filled until full before the next one opens, so
   a new context goes to one fresh part (Case 2) instead of spreading over all of them (Case 3).
   Parts are filled exactly to their planned counts, so step 1's guarantee holds as planned.

The key (:class:`PivotKey`) maps each code word back to its word, with its count: texts map
back exactly (to their tokens, in lower case), and vectors trained on the release map back as
the count-weighted mean of a word's code words' vectors.

>>> release = Pivot(l=2, seed=1).encode(["the cat sat on the mat", "the dog sat"])
>>> [release.key.decode_text(r.text) for r in release.releases]
['the cat sat on the mat', 'the dog sat']
>>> release.releases[0].guarantee.kind, release.key.l
('l-privacy', 2)
"""

from __future__ import annotations

import bisect
import functools
import heapq
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from textveil.atomic_files import atomic_write_bytes
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import CorpusRelease, Mechanism, ProgressCallback, Release, release_statistics, texts_hash
from textveil.mechanisms.sampling import make_rng
from textveil.privacy.guarantee import Guarantee
from textveil.privacy.l_privacy import expected_tokens_recovered, frequency_attack_success, max_attainable_l
from textveil.privacy.secrets import Secret
from textveil.text.layout import release_units

KEY_FORMAT = "textveil.pivot-key/1"
CODE_WORD = re.compile(r"[a-z]{3}[0-9]{2}[a-z]{3}\Z")
"""Code words: three letters, two digits, three letters ("kqz47mbe"): never an English word."""


# -- step 1: which code words, of which counts ------------------------------------------


def corpus_counts(documents: Iterable[Sequence[str]]) -> Counter:
    """Each token's count over a corpus of token lists."""
    counts: Counter = Counter()
    for tokens in documents:
        counts.update(tokens)
    return counts


def check_attainable(counts: Mapping[str, int], l: int) -> None:
    """Refuse an l that the corpus cannot reach against a frequency attacker, in one line."""
    if len(counts) < l:
        raise InputError(f"the corpus has {len(counts)} distinct token(s), fewer than l = {l}: no code word can hide "
                         f"among {l} words; use a larger corpus or l <= {max(len(counts), 1)}")
    best = max_attainable_l(counts)
    if best < l:
        share = max(counts.values()) / sum(counts.values())
        raise InputError(
            f"l = {l} is out of reach for this corpus: its most frequent token makes up {share:.1%} of its tokens, "
            f"and a token that makes up more than 1/l of a corpus cannot be hidden from a frequency attacker by any "
            f"mapping; use l <= {best}")


def plan_code_words(counts: Mapping[str, int], l: int, part_size: int | None = None) -> dict[str, list[int]]:
    """GOMM's grouping: the count of each code word of each word, so that in every count class
    no word owns more than 1/l of the code words. Deterministic and public (an attacker who
    knows the mechanism can run it on the word counts; it learns only what l-privacy allows).
    ``part_size=None`` chooses it (:func:`choose_part_size`).

    >>> plan = plan_code_words({"the": 9, "a": 5, "cat": 2, "dog": 2, "on": 1, "mat": 1}, l=2, part_size=4)
    >>> plan["the"], plan["a"], plan["cat"]
    ([4, 2, 2, 1], [4, 1], [2])
    >>> from textveil.privacy.l_privacy import frequency_attack_success
    >>> frequency_attack_success(plan) <= 1 / 2
    True
    """
    if part_size is None:
        return plan_code_words(counts, l, choose_part_size(counts, l))
    if part_size < 1:
        raise InvalidParameterError(f"part_size must be at least 1, got {part_size}")
    check_attainable(counts, l)
    table = _CountClasses(l)
    for word in sorted(counts):  # sorted: the plan does not depend on the corpus's order
        full, remainder = divmod(int(counts[word]), part_size)
        for size, number in ((part_size, full), (remainder, 1)):
            if size and number:
                table.add(size, word, number)
    pending = [-size for size in table.owners]
    heapq.heapify(pending)
    while pending:
        size = -heapq.heappop(pending)
        owners = table.owners[size]
        while owners:
            word, owned = max(owners.items(), key=lambda item: (item[1], item[0]))
            total = table.totals[size]
            if l * owned <= total:
                break
            if size == 1:
                raise InputError(f"no mapping with l = {l} was found for this corpus (too many occurrences of one token "
                                 "among the rarest code words); leave --part-size out to let textveil choose one, or use a smaller l")
            # Moving x parts out leaves (owned - x) of (total - x): at most 1/l once x reaches this.
            moved = min(owned, math.ceil((l * owned - total) / (l - 1)))
            table.add(size, word, -moved)
            for _ in range(moved):
                for piece in table.cut(size, word):
                    if table.add(piece, word, 1):
                        heapq.heappush(pending, -piece)
    plan: dict[str, list[int]] = {}
    for size in sorted(table.owners, reverse=True):
        for word, number in table.owners[size].items():
            plan.setdefault(word, []).extend([size] * number)
    return plan


class _CountClasses:
    """The plan's count classes while it is repaired: who owns how many code words of each count."""

    def __init__(self, l: int) -> None:
        self.l = l
        self.owners: dict[int, Counter] = {}
        self.totals: dict[int, int] = {}
        self.populous: list[int] = []  # counts whose class could take a part of a new word, ascending

    def add(self, size: int, word: str, number: int) -> bool:
        """Add (or, negative, remove) parts; whether the class is new."""
        new = size not in self.owners
        if new:
            self.owners[size], self.totals[size] = Counter(), 0
        owners = self.owners[size]
        owners[word] += number
        if owners[word] <= 0:
            del owners[word]
        before, self.totals[size] = self.totals[size], self.totals[size] + number
        if before < self.l - 1 <= self.totals[size] and size not in self.populous:
            bisect.insort(self.populous, size)
        if not self.totals[size]:  # an emptied class is no class: the next part of its count opens it anew
            del self.owners[size], self.totals[size]
            if size in self.populous:
                self.populous.remove(size)
        return new

    def cut(self, size: int, word: str) -> list[int]:
        """Cut a part of ``size`` occurrences of ``word`` into smaller parts, each as large as a
        class can take: a class of count m takes one more part of ``word`` while ``word`` keeps at
        most 1/l of it. What no class can take becomes a part of its own (half the part, or the
        rest), whose class is repaired in its turn. Classes below ``size`` only grow until their
        turn, so one that is not populous enough now is rightly skipped."""
        pieces: list[int] = []
        left = size
        while left:
            piece = self._largest_taker(min(size - 1, left), word)
            if piece is None:
                piece = left if left < size else size - size // 2
            pieces.append(piece)
            self.add(piece, word, 1)  # counted at once, so the next piece sees it
            left -= piece
        for piece in pieces:  # the caller adds them for good (and learns which classes are new)
            self.add(piece, word, -1)
        return pieces

    def _largest_taker(self, at_most: int, word: str) -> int | None:
        index = bisect.bisect_right(self.populous, at_most) - 1
        while index >= 0:
            size = self.populous[index]
            if self.l * (self.owners[size][word] + 1) <= self.totals[size] + 1:
                return size
            index -= 1
        return None


CONTEXT_SAFE_L = 5
"""The smallest l at which the context-merging attacker decoded no more than the best frequency
attacker on both corpora measured (C50 and BBC News; docs/results/paper003-pivot): at l = 2 it
decoded 28.1% of C50's tokens against 26.6%."""

MIN_PARTS_OF_TOP = 8
"""The fewest code words the most frequent token is cut into when textveil chooses the part size."""


def choose_part_size(counts: Mapping[str, int], l: int) -> int:
    """The part size whose plan spreads the corpus's tokens over the fewest code words per word
    (weighted by count: a frequent word cut into many code words costs the embeddings most),
    among the powers of two that cut the most frequent token into at least
    :data:`MIN_PARTS_OF_TOP` parts. Public arithmetic of the counts, like the plan.

    Why the cap: with larger parts the most frequent words stay almost whole (one big code word
    and a few small pieces in rare classes), so whole tokens ride on few code words and an
    attacker who merges code words by their contexts can glue the pieces back. On BBC News at
    l = 2 the uncapped choice (65,536) let context merging decode 39%, 15% and 28% of tokens on
    three keys, against 34% expected of the best frequency attacker; the capped one (4,096) 10.5%
    and 22.3%, for 10-NN agreement 0.53 instead of 0.63 (docs/results/paper003-pivot).

    >>> choose_part_size({"the": 900, "a": 500, "cat": 200, "dog": 200, "on": 100, "mat": 100}, l=2)
    32
    """
    check_attainable(counts, l)
    largest = max(counts.values())
    cap = max(1, largest // MIN_PARTS_OF_TOP)
    candidates = [2 ** k for k in range(64) if 2 ** k <= cap]
    best, best_cost = candidates[0], math.inf
    for size in candidates:
        try:
            plan = plan_code_words(counts, l, size)
        except InputError:  # this size cannot be repaired; size 1 always can (check_attainable passed)
            continue
        cost = sum(counts[word] * len(parts) for word, parts in plan.items())
        if cost <= best_cost:  # ties go to the larger part size: fewer, fuller code words
            best, best_cost = size, cost
    return best


# -- step 2: which occurrence goes to which code word -----------------------------------


def assign_code_words(documents: Sequence[Sequence[str]], plan: Mapping[str, Sequence[int]],
                      rng: np.random.Generator) -> list[list[int]]:
    """For every token of every document, the index of the part (of ``plan``, numbered word by
    word in the plan's order) it is released as; every part ends with exactly its planned count.
    """
    starts: dict[str, int] = {}
    capacity: list[int] = []
    order: dict[str, list[int]] = {}
    for word, sizes in plan.items():
        starts[word] = len(capacity)
        capacity.extend(sizes)
        # The order in which a word's parts open is random, so which part takes which stretch
        # of the corpus tells nothing.
        order[word] = [starts[word] + int(i) for i in rng.permutation(len(sizes))]
    opened = dict.fromkeys(plan, 0)
    paired: dict[tuple[int, str], int] = {}
    assigned: list[list[int]] = []
    for tokens in documents:
        previous = -1
        row: list[int] = []
        for token in tokens:
            part = paired.get((previous, token), -1)
            if part < 0 or capacity[part] == 0:
                parts = order[token]
                while capacity[parts[opened[token]]] == 0:
                    opened[token] += 1
                part = parts[opened[token]]
                paired[(previous, token)] = part
            capacity[part] -= 1
            row.append(part)
            previous = part
        assigned.append(row)
    return assigned


def random_assignment(documents: Sequence[Sequence[str]], code_words_per_word: int, rng: np.random.Generator
                      ) -> tuple[dict[str, list[int]], list[list[int]]]:
    """The baseline one-to-many mapping: each word gets ``code_words_per_word`` code words (fewer
    if it occurs fewer times) and each occurrence goes to one of them uniformly at random.
    Returns the realised plan (the parts' counts) and the assignment."""
    counts = corpus_counts(documents)
    width = {word: max(1, min(code_words_per_word, count)) for word, count in sorted(counts.items())}
    starts, total = {}, 0
    for word, number in width.items():
        starts[word], total = total, total + number
    assigned = [[starts[t] + int(rng.integers(width[t])) for t in tokens] for tokens in documents]
    realised = np.bincount([p for row in assigned for p in row], minlength=total)
    plan = {word: [int(c) for c in realised[starts[word]:starts[word] + number] if c]
            for word, number in width.items()}
    # Drop empty parts and renumber so that parts are contiguous per word, as in a GOMM plan.
    renumber, index = {}, 0
    for word, number in width.items():
        for part in range(starts[word], starts[word] + number):
            if realised[part]:
                renumber[part], index = index, index + 1
    return plan, [[renumber[p] for p in row] for row in assigned]


def draw_code_words(count: int, rng: np.random.Generator) -> list[str]:
    """``count`` distinct opaque code words (:data:`CODE_WORD`), in random order."""
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    digits = np.frombuffer(b"0123456789", dtype=np.uint8)
    drawn: set[str] = set()
    words: list[str] = []
    while len(words) < count:
        need = count - len(words)
        rows = np.concatenate([letters[rng.integers(26, size=(need, 3))], digits[rng.integers(10, size=(need, 2))],
                               letters[rng.integers(26, size=(need, 3))]], axis=1)
        for row in rows:
            word = row.tobytes().decode("ascii")
            if word not in drawn:
                drawn.add(word)
                words.append(word)
    return words


# -- the key ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False, eq=False)
class PivotKey:
    """What the owner keeps: every word's code words with their counts, the parameters, and
    digests of the corpus and of the release it belongs to. Shown only as a digest (like a
    :class:`~textveil.privacy.secrets.Secret`); written by :meth:`save` with permissions 0600.
    """

    code_words: Mapping[str, tuple[tuple[str, int], ...]]
    l: int
    part_size: int
    mapping: str
    corpus_hash: str
    release_hash: str
    documents: int

    def as_secret(self) -> Secret:
        """The key as the face's secret type: what a log or report may show of it is its digest."""
        return Secret(self.to_json())

    def __repr__(self) -> str:
        return f"PivotKey({self.as_secret()})"

    __str__ = __repr__

    def __reduce__(self):  # a pickled key would travel into caches and worker payloads
        raise TypeError("a PivotKey is not picklable; save it with PivotKey.save and pass the path")

    @functools.cached_property
    def decoder(self) -> dict[str, str]:
        """Code word -> word (built once: every decoded text reads it)."""
        return {code: word for word, codes in self.code_words.items() for code, _ in codes}

    def plan(self) -> dict[str, list[int]]:
        """Word -> the counts of its code words (what the frequency attacker's success depends on)."""
        return {word: [count for _, count in codes] for word, codes in self.code_words.items()}

    def decode_tokens(self, text: str) -> list[str]:
        """The original tokens of one released text; a token that is not a code word of this key
        is an error naming it (a release of another key, or an edited one)."""
        decoder = self.decoder
        try:
            return [decoder[code] for code in text.split()]
        except KeyError as missing:
            raise InputError(f"'{missing.args[0]}' is not a code word of this key: the release was made with "
                             "another key or edited; decode it with its own key") from None

    def decode_text(self, text: str) -> str:
        """One released text mapped back: its tokens (lower-case words and marks) joined by spaces."""
        return " ".join(self.decode_tokens(text))

    def decode_vectors(self, vectors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Vectors trained on the release (code word -> vector) mapped back to words: each word's
        vector is the mean of its code words' vectors weighted by their counts. Code words the
        training left out (e.g. under its minimum count) are skipped; a word none of whose code
        words has a vector gets none."""
        decoded: dict[str, np.ndarray] = {}
        for word, codes in self.code_words.items():
            present = [(vectors[code], count) for code, count in codes if code in vectors]
            if present:
                weights = np.array([count for _, count in present], dtype=np.float64)
                stacked = np.vstack([np.asarray(v, dtype=np.float64) for v, _ in present])
                decoded[word] = (weights @ stacked / weights.sum()).astype(np.float32)
        return decoded

    def check_release(self, texts: Sequence[str], where: str = "the release") -> None:
        """Refuse a release this key was not made for (one line)."""
        if texts_hash(texts) != self.release_hash:
            raise InputError(f"{where} does not match this key (release digest {texts_hash(texts)}, the key's "
                             f"{self.release_hash}): give the key written with this release")

    def to_json(self) -> str:
        data = {"format": KEY_FORMAT, "l": self.l, "part_size": self.part_size, "mapping": self.mapping,
                "corpus_hash": self.corpus_hash, "release_hash": self.release_hash, "documents": self.documents,
                "code_words": {word: [list(pair) for pair in codes] for word, codes in self.code_words.items()}}
        return json.dumps(data, ensure_ascii=False, sort_keys=True)

    def save(self, path: str | os.PathLike[str], force: bool = False) -> Path:
        """Write the key, readable and writable by the owner only (0600), atomically. An existing
        key is never replaced unless ``force``: losing it loses the way back."""
        target = Path(path)
        if target.is_dir():
            raise InputError(f"key path '{target}' is a folder; give a file path for the key")
        if target.exists() and not force:
            raise InputError(f"key file '{target}' exists; a key is never overwritten (pass --force to replace it)")
        atomic_write_bytes(target, self.to_json().encode("utf-8"), mode=0o600)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PivotKey:
        source = Path(path)
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"key file '{source}' does not exist; give the key written by 'textveil pivot encode'") from None
        except (OSError, ValueError):
            data = None
        if not isinstance(data, dict) or data.get("format") != KEY_FORMAT:
            raise InputError(f"'{source}' is not a textveil PIVOT key ({KEY_FORMAT})")
        codes = {word: tuple((str(code), int(count)) for code, count in pairs)
                 for word, pairs in data["code_words"].items()}
        return cls(codes, int(data["l"]), int(data["part_size"]), str(data["mapping"]), str(data["corpus_hash"]),
                   str(data["release_hash"]), int(data["documents"]))


# -- the mechanism ---------------------------------------------------------------------


@dataclass(frozen=True)
class PivotEncoding:
    """A corpus released by PIVOT: one release per input text (aligned), and the key."""

    releases: list[Release]
    key: PivotKey
    success: float
    """The frequency attacker's best chance for any code word (at most 1/l for GOMM)."""
    tokens_recoverable: float
    """The share of tokens that attacker decodes right, in expectation."""


def normalised_tokens(text: str) -> list[str]:
    """The tokens PIVOT maps: words in lower case and every mark; whitespace is dropped.

    >>> normalised_tokens("The  CAT sat.\\n")
    ['the', 'cat', 'sat', '.']
    """
    return release_units(text)


class Pivot(Mechanism):
    """The ``pivot`` mechanism (GOMM). A corpus-level release: the mapping is built from the
    whole corpus's counts, so ``sanitize_many`` encodes its texts as one corpus, and the key is
    returned by :meth:`encode` (``sanitize_many`` drops it: use :meth:`encode` to keep it).
    """

    name = "pivot"
    placeholder_rule = "each placeholder is one token, mapped onto code words like any other"
    corpus_level: ClassVar[bool] = True
    release_command: ClassVar[str] = "textveil pivot encode CORPUS --l L --out RELEASE --key KEY"

    def __init__(self, *, l: int = 5, part_size: int | None = None, seed: int | None = None) -> None:
        self._check_parameters(l=l, part_size=part_size, seed=seed)
        self._rng = make_rng(seed)

    def encode(self, texts: Sequence[str], mapping: str = "gomm", progress: ProgressCallback | None = None
               ) -> PivotEncoding:
        """Release ``texts`` as one corpus and return the releases with the key.

        ``mapping`` is ``"gomm"`` (this mechanism) or, for comparisons only, a baseline with no
        guarantee: ``"cipher"`` (one code word per word) or ``"random"`` (l code words per word,
        occurrences assigned at random)."""
        texts = [str(t) for t in texts]
        documents = [normalised_tokens(text) for text in texts]
        counts = corpus_counts(documents)
        part_size = 0  # the baselines have none
        if mapping == "gomm":
            part_size = self.part_size or (choose_part_size(counts, self.l) if counts else 1)
            plan = plan_code_words(counts, self.l, part_size) if counts else {}
            assigned = assign_code_words(documents, plan, self._rng)
        elif mapping == "cipher":
            plan = {word: [count] for word, count in sorted(counts.items())}
            assigned = assign_code_words(documents, plan, self._rng)
        elif mapping == "random":
            plan, assigned = random_assignment(documents, self.l, self._rng)
        else:
            raise InvalidParameterError(f"unknown mapping '{mapping}'; use gomm, cipher or random")
        parts = [(word, size) for word, sizes in plan.items() for size in sizes]
        names = draw_code_words(len(parts), self._rng)
        released = [" ".join(names[p] for p in row) for row in assigned]
        code_words: dict[str, list[tuple[str, int]]] = {}
        for (word, size), name in zip(parts, names):
            code_words.setdefault(word, []).append((name, size))
        key = PivotKey({w: tuple(c) for w, c in code_words.items()}, self.l, part_size, mapping,
                       texts_hash(texts), texts_hash(released), len(texts))
        success = frequency_attack_success(plan)
        recoverable = expected_tokens_recovered(plan)
        releases = []
        for text, tokens in zip(released, documents):
            releases.append(Release(text, self._guarantee(len(tokens), success, len(names), mapping)))
            if progress is not None:
                progress(1)
        return PivotEncoding(releases, key, success, recoverable)

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        return self.encode(list(texts), progress=progress).releases

    def release_corpus(self, texts: Sequence[str], labels: Sequence[str] | None = None,
                       progress: ProgressCallback | None = None) -> CorpusRelease:
        releases = self.sanitize_many(texts, progress=progress)
        return CorpusRelease([r.text for r in releases], None if labels is None else list(labels), True,
                             release_statistics(releases))

    def _guarantee(self, tokens: int, success: float, code_words: int, mapping: str) -> Guarantee:
        unprotected = (
            "the number of tokens",
            "which tokens stand next to which (the release keeps every token's place: word embeddings learn from "
            "it); l bounds an attacker who uses counts, not one who also merges code words by their contexts, whose "
            "success is measured, not bounded (docs/results/paper003-pivot)",
            "the number of texts and their order",
        )
        if self.l < CONTEXT_SAFE_L:
            unprotected += (f"at l < {CONTEXT_SAFE_L} an attacker who merges code words by their contexts decoded "
                            "more tokens than the best frequency attacker in textveil's measurements "
                            f"(docs/results/paper003-pivot): use l >= {CONTEXT_SAFE_L} where contexts are a threat",)
        assumptions = ("the key stays with the owner and is never released",
                       "the attacker knows the mechanism, l and every word's count, but not the key")
        counts = (("the number of tokens", tokens),)
        protected = "every token (words in lower case, punctuation and symbols alike), as an opaque code word"
        if mapping != "gomm":
            return Guarantee(self.name, None, kind="none", unit="token", words_protected=tokens, protected=protected,
                             unprotected_in_general=unprotected, unprotected_in_record=counts, assumptions=assumptions,
                             how=f"pivot ({mapping} baseline): no formal guarantee; a frequency attacker's best "
                                 f"guess of a code word is right with probability up to {success:.3f}.")
        how = (
            f"pivot: l-privacy with l = {self.l} against frequency analysis (paper 003): each of this text's {tokens} "
            f"tokens (words in lower case, punctuation and symbols alike) was replaced by one of {code_words:,} opaque "
            f"code words, chosen so that for every code word of the release, an attacker who knows the mechanism and "
            f"every word's count guesses its word right with probability at most 1/l = {1 / self.l:.3f} (this "
            f"release: {success:.3f}). Casing, spacing and line breaks are not released.")
        return Guarantee(self.name, None, kind="l-privacy", unit="token", composition="l-privacy", l=self.l,
                         words_protected=tokens, protected=protected, unprotected_in_general=unprotected,
                         unprotected_in_record=counts, assumptions=assumptions, how=how)
