"""The arithmetic of l-privacy against frequency analysis (paper 003): what a frequency attacker
can learn from the counts of code words, and which l a corpus can reach at all.

A one-to-many mapping releases each word ``w`` as code words; the attacker sees only the
release's code words and their counts, and knows the mechanism and every word's count (the
strongest auxiliary knowledge: the original corpus's histogram). Code words are opaque and
drawn at random, so two code words with the same count are exchangeable to this attacker:
given the counts, each assignment of the code words of one count to the words that own parts
of that count is equally likely. The attacker's best guess for a code word of count ``n`` is
therefore the word owning the most parts of count ``n``, and it is right with probability

    max_w a(w, n) / K(n),   a(w, n): w's code words of count n,  K(n): all code words of count n.

l-privacy holds when this is at most ``1 / l`` for every ``n`` (:func:`frequency_attack_success`).

>>> parts = {"the": [3, 3], "cat": [3], "sat": [3], "mat": [1], "on": [1]}
>>> frequency_attack_success(parts)  # the owns 2 of the 4 code words of count 3
0.5
>>> round(expected_tokens_recovered(parts), 3), max_attainable_l({"the": 6, "cat": 3, "sat": 3, "mat": 1, "on": 1})
(0.5, 2)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence


def count_classes(parts: Mapping[str, Sequence[int]]) -> dict[int, Counter]:
    """The code words of each count: ``{count: Counter({word: code words of that count})}``.

    >>> count_classes({"a": [2, 1], "b": [2]})
    {2: Counter({'a': 1, 'b': 1}), 1: Counter({'a': 1})}
    """
    classes: dict[int, Counter] = {}
    for word, sizes in parts.items():
        for size in sizes:
            classes.setdefault(int(size), Counter())[word] += 1
    return classes


def class_success(owners: Counter) -> float:
    """The best frequency guess's chance of being right within one count class."""
    return max(owners.values()) / sum(owners.values())


def frequency_attack_success(parts: Mapping[str, Sequence[int]]) -> float:
    """The largest probability, over code words, that a frequency attacker who knows every
    word's count and the mechanism guesses a code word's word right: 1/l or less is l-privacy.
    """
    classes = count_classes(parts)
    return max((class_success(owners) for owners in classes.values()), default=0.0)


def expected_tokens_recovered(parts: Mapping[str, Sequence[int]]) -> float:
    """The share of the release's tokens that this attacker decodes right, in expectation, when it
    guesses the best word for every code word."""
    total = recovered = 0
    for size, owners in count_classes(parts).items():
        total += size * sum(owners.values())
        recovered += size * max(owners.values())
    return recovered / total if total else 0.0


def max_attainable_l(counts: Mapping[str, int]) -> int:
    """The largest l that any mapping of this corpus can reach against a frequency attacker.

    A word that makes up a share s of the tokens makes up at least s of the code words of some
    count (its parts of each count, summed over counts weighted by the count, give s of the
    tokens), so the best guess succeeds with probability at least s there: l <= 1 / max share.
    """
    total = sum(counts.values())
    largest = max(counts.values(), default=0)
    return total // largest if largest else 0
