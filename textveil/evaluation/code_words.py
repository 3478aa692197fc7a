"""What a release of code words under one secret key (PIVOT, whose guarantee is l-privacy) is
measured by besides the attacks on each text (:mod:`textveil.evaluation.experiment` runs them):

- the same-key training's corpus: the known and unknown texts encoded together under one key, in
  one random order (:func:`joint_corpus`), then cut back into the two (:func:`split_joint_release`);
- frequency analysis, scored with the key the release was encoded under
  (:func:`release_with_key`, :func:`frequency_recovery`), and combined over repeated releases
  (:func:`combine_frequency`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textveil.corpus.labelled import LabelledCorpus
from textveil.evaluation.releasing import encode_corpus
from textveil.mechanisms.base import CorpusRelease, Mechanism
from textveil.mechanisms.registry import MECHANISMS

def releases_code_words(name: str) -> bool:
    """Whether mechanism ``name`` releases opaque code words under a secret key (its guarantee is
    l-privacy: PIVOT), rather than text a reader or a text model can read.

    >>> releases_code_words("pivot"), releases_code_words("emp"), releases_code_words("")
    (True, False, False)
    """
    return bool(name) and name in MECHANISMS and MECHANISMS.entry(name).guarantee == "l-privacy"


def combine_frequency(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Frequency analysis over repeated releases of a point: each number the mean of the releases'
    (a reference that failed on any release keeps its first failure), with the values of tokens
    recovered kept. One result is returned as it is."""
    if len(results) == 1:
        return results[0]
    combined = dict(results[0])
    for name in ("success_bound", "tokens_recoverable"):
        combined[name] = float(np.mean([r[name] for r in results]))
    references = {}
    for reference, first in results[0]["references"].items():
        runs = [r["references"][reference] for r in results]
        failed = next((run for run in runs if "error" in run), None)
        if failed is not None:
            references[reference] = failed
            continue
        merged = dict(first)
        for name, value in first.items():
            values = [run[name] for run in runs]
            # a count class is a name, not a quantity: each release's best class is its own
            if name != "max_class" and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and None not in values:
                merged[name] = float(np.mean(values))
        merged["max_class"] = [run["max_class"] for run in runs]
        merged["tokens_recovered_values"] = [float(run["tokens_recovered"]) for run in runs]
        references[reference] = merged
    combined["references"] = references
    measured = [entry["tokens_recovered"] for entry in references.values() if "tokens_recovered" in entry]
    combined["tokens_recovered_max"] = max(measured) if measured else None
    combined["releases"] = len(results)
    return combined


def release_with_key(mechanism: Mechanism, corpus: LabelledCorpus, stats: dict[str, Any]) -> tuple[CorpusRelease, Any]:
    """``corpus`` encoded by a keyed ``mechanism`` (its parameters set for the point), with the key
    it was encoded under, its counts added to ``stats``. Encoded now, never read from the release
    cache: the key is kept in memory only, for the owner's scoring of frequency analysis, and the
    cache would not hold it."""
    released, key = encode_corpus(mechanism, corpus)
    for name, count in released.stats.items():
        stats[name] = stats.get(name, 0) + count
    stats["read_from_cache"] = stats.get("read_from_cache", 0)
    return released, key


def frequency_analysis(released: CorpusRelease, key: Any, known_texts: list[str],
                       part_size: int | None) -> dict[str, Any]:
    """Frequency analysis of a keyed release, scored with its key: the attacker guesses each code
    word's word from its count, with reference counts of its own (``known_texts`` among them)."""
    from textveil.evaluation.frequency_risk import frequency_recovery

    return frequency_recovery([text.split() for text in released.texts], key, known_texts=known_texts,
                              part_size=part_size)


def joint_corpus(known: LabelledCorpus, unknown: LabelledCorpus, seed: int | None) -> tuple[LabelledCorpus, list[int]]:
    """The known and unknown texts as one corpus (the same-key training encodes it under one key),
    in one random order drawn from ``seed``, and that order (each place's index in the known texts
    followed by the unknown ones).

    The order is random as a corpus of posts mixes its authors' labelled and unlabelled texts:
    PIVOT fills a word's code words in corpus order, so texts that stand near each other share code
    words, and the known texts all before the unknown ones would share fewer with them than a real
    corpus's texts do.

    >>> known = LabelledCorpus(["k0", "k1", "k2"], ["a", "b", "a"], name="known")
    >>> joint, order = joint_corpus(known, LabelledCorpus(["u0", "u1"], ["a", "b"], name="unknown"), seed=3)
    >>> sorted(order) == [0, 1, 2, 3, 4] and sorted(joint.texts) == ["k0", "k1", "k2", "u0", "u1"]
    True
    """
    texts, labels = known.texts + unknown.texts, known.labels + unknown.labels
    order = [int(i) for i in np.random.default_rng(seed).permutation(len(texts))]
    joint = LabelledCorpus([texts[i] for i in order], [labels[i] for i in order], name=f"{known.name} + {unknown.name}")
    return joint, order


def split_joint_release(released: CorpusRelease, joint: LabelledCorpus, order: list[int], known_count: int
                        ) -> tuple[list[str], list[str], list[str], list[str]]:
    """A release of :func:`joint_corpus`'s corpus cut back into its two parts: the known texts'
    code words and labels (in the release's order: what the attacks are fitted on), and the unknown
    texts' code words and labels in the unknown corpus's own order (what they are scored on).

    >>> known = LabelledCorpus(["k0", "k1", "k2"], ["a", "b", "a"], name="known")
    >>> unknown = LabelledCorpus(["u0", "u1"], ["a", "b"], name="unknown")
    >>> joint, order = joint_corpus(known, unknown, seed=3)
    >>> released = CorpusRelease([text.upper() for text in joint.texts], None, True, {})
    >>> known_texts, known_labels, unknown_texts, unknown_labels = split_joint_release(released, joint, order, 3)
    >>> sorted(zip(known_texts, known_labels)), unknown_texts, unknown_labels
    ([('K0', 'a'), ('K1', 'b'), ('K2', 'a')], ['U0', 'U1'], ['a', 'b'])
    """
    labels = released.labels if released.labels is not None else joint.labels
    known_at = [place for place, index in enumerate(order) if index < known_count]
    unknown_at = sorted((place for place, index in enumerate(order) if index >= known_count), key=lambda p: order[p])
    return ([released.texts[p] for p in known_at], [labels[p] for p in known_at],
            [released.texts[p] for p in unknown_at], [labels[p] for p in unknown_at])
