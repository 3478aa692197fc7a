"""What a comparison's run will do, counted before it starts: the texts each setting releases
(stratified pilot samples, the pilot's own seed), what the caches already hold, and the plan of
each point; the first part of :mod:`textveil.evaluation.time_estimate`."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from textveil.corpus.labelled import LabelledCorpus
from textveil.evaluation.experiment import Sweep, SweepPoint
from textveil.evaluation.experiment_plan import EvaluationCorpora
from textveil.evaluation.release_cache import ReleaseCache
from textveil.evaluation.releasing import cached_share


PILOT_FIRST_TEXTS = 16
"""A setting's pilot releases this many texts first (a language model's batch of 16 rows on a CPU:
fewer rows than a batch leave the engine idle), then twice as many each time while its budget lasts."""
PILOT_TIME_SHARE = 0.1
"""A setting's pilot stops once it has spent this share of the setting's releases as estimated so
far: a fast mechanism (emp) goes on to larger chunks, whose rate is nearer the run's (spaCy and emp
work in batches: 32 texts cost twice as much a word as 300), a slow one stops early."""
PILOT_MOST_SECONDS = 45.0
"""And once it has spent this many seconds (a language model: 16 texts, then 32)."""
PILOT_TEXTS = 512
"""At most this many texts per setting."""
PILOT_SHARE = 0.3
"""At most this share of the texts a setting releases (the pilot of a tiny run stays small)."""
UTILITY_PILOT_TEXTS = 8
"""Texts each utility task is prepared and measured on: fluency reads every word with a language
model (on emp's releases a point's fluency costs more than its releases), so its pilot is smaller."""
ATTACK_PILOT_SHARE = 0.2
"""The share of the authors whose known texts each attack is fitted on in the pilot (at least 2)."""
PILOT_TAG = 0x706C7430
"""The spawn key under which the pilot's seed is drawn from the run's: the run's own seeds are
spawned under the parameter value's bits or a role's index (:mod:`textveil.evaluation.sweep_seeds`)."""
RELEASE_ROLES = ("unknown", "utility", "known", "joint")
"""What a point releases: the judged texts, a utility corpus's test texts, the known texts (for
the release-trained attacks) and, for a keyed mechanism, known and judged texts under one key."""
INTERVAL_RISKS = (0.05, 0.5)
"""The risks at which ``--minutes`` states the interval bought: a low risk a release aims for (the
comparison's first threshold) and 0.5, where a rate's interval is widest."""


def text_words(text: str) -> int:
    """Words as every count here counts them: runs between white space.

    >>> text_words("It rained  all day.")
    4
    """
    return len(text.split())


def stratified_sample(lengths: Sequence[int], count: int, seed: int | None) -> list[int]:
    """Indices of ``count`` texts (at most all), one drawn at random from each of ``count`` equal
    strata of the texts sorted by length: the sample's lengths follow the corpus's, short and long
    alike, which a plain random draw of 32 blog posts does not promise.

    >>> stratified_sample([5, 100, 7, 60, 8, 900], 3, seed=1)  # one short, one middling, one long
    [0, 3, 5]
    >>> stratified_sample([5, 100], 4, seed=1)
    [0, 1]
    """
    count = min(count, len(lengths))
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    rng = np.random.default_rng(seed)
    n = len(order)
    return sorted(order[int(rng.integers(s * n // count, (s + 1) * n // count))] for s in range(count))


def pilot_seed(seed: int | None) -> int:
    """The seed of the pilot's releases and samples, drawn from the run's seed under
    :data:`PILOT_TAG`: never one of the run's own release seeds.

    >>> pilot_seed(1) == pilot_seed(1) != pilot_seed(2)
    True
    """
    return int(np.random.SeedSequence(0 if seed is None else seed, spawn_key=(PILOT_TAG,)).generate_state(1)[0])


def pilot_size(texts_per_setting: int, available: int) -> int:
    """How many texts a setting's pilot may release at most: :data:`PILOT_TEXTS`, or
    :data:`PILOT_SHARE` of what the setting releases where that is fewer, never more than there are
    (and at least one); its time budget stops it earlier (:data:`PILOT_MOST_SECONDS`).

    >>> pilot_size(4500, 1500), pilot_size(900, 300), pilot_size(20, 6)
    (512, 270, 6)
    """
    return max(1, min(available, PILOT_TEXTS, math.ceil(PILOT_SHARE * texts_per_setting)))


def duration(seconds: float) -> str:
    """Seconds as a person reads them.

    >>> duration(42.4), duration(390), duration(7300)
    ('42 s', '6 min 30 s', '2 h 1 min')
    """
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


# -- what the run will do ------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    """The texts and words of a run's corpora that its costs grow with."""

    known_texts: int
    known_words: int
    unknown_texts: int
    unknown_words: int
    utility_texts: int
    utility_words: int
    labels: int
    judged: int
    """What a risk is a rate over: authors (judged per author) or judged texts."""

    @classmethod
    def of(cls, corpora: EvaluationCorpora, collapse_per_label: bool) -> Counts:
        """The counts of ``corpora``; the utility texts are the judged ones without a utility corpus."""
        known, unknown = corpora.risk_known, corpora.risk_unknown
        test = corpora.utility_test if (corpora.utility_train is not None and corpora.utility_test is not None) \
            else unknown
        return cls(len(known), _words(known.texts), len(unknown), _words(unknown.texts), len(test),
                   _words(test.texts), len(set(known.labels) | set(unknown.labels)),
                   len(set(unknown.labels)) if collapse_per_label else len(unknown))

    def words(self, role: str) -> int:
        """The words one release of ``role`` (:data:`RELEASE_ROLES`) reads.

        >>> Counts(10, 1000, 5, 400, 5, 400, 5, 5).words("joint")
        1400
        """
        return {"unknown": self.unknown_words, "utility": self.utility_words, "known": self.known_words,
                "joint": self.known_words + self.unknown_words}[role]

    def words_read(self, sample_size: int | None) -> float:
        """The words a utility task reads of one release: all its texts, or a fixed sample of them."""
        if sample_size is None or sample_size >= self.utility_texts or not self.utility_texts:
            return float(self.utility_words)
        return self.utility_words * sample_size / self.utility_texts


def _words(texts: Sequence[str]) -> int:
    return sum(text_words(text) for text in texts)


@dataclass
class PointTarget:
    """One point the run will measure (or read back), as the estimate needs it."""

    release_id: str
    mechanism: str
    """The mechanism's label (its name with the options that set it apart)."""
    name: str
    corpus_level: bool
    sweep: Sweep | None
    """The mechanism's sweep, built (None for a point read back: nothing of it is built)."""
    point: SweepPoint
    finished: bool = False


@dataclass
class PointPlan:
    """What one point will do: its releases by role (over its repeats), how many of them the
    release cache holds, each attack's fits and scorings, and the utility tasks it is measured by."""

    release_id: str
    mechanism: str
    finished: bool
    repeats: int = 1
    releases: dict[str, int] = field(default_factory=dict)
    cached: dict[str, float] = field(default_factory=dict)
    fits: int = 0
    scorings: int = 0
    tasks: tuple[str, ...] = ()

    def fresh(self) -> PointPlan:
        """The same point on other corpora (fewer authors): nothing of it measured or cached."""
        return replace(self, finished=False, cached={})

    @property
    def released(self) -> float:
        """Releases the point makes itself (not read from the cache; a share of one where a stopped
        release's parts are held)."""
        return sum(self.releases.values()) - sum(self.cached.values())


@dataclass
class SharedPlan:
    """What the run does once, for every point: clean attacks fitted, utility tasks prepared, the
    unmodified text measured (none of it when every point is read back)."""

    needed: bool
    clean_fits: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    unmodified: bool = False
    attacks: tuple[str, ...] = ()

    def fresh(self, attacks: Sequence[str]) -> SharedPlan:
        """The same on other corpora: every attack fitted, the unmodified text measured."""
        return replace(self, needed=True, clean_fits=tuple(attacks), unmodified=True)


def plan_point(target: PointTarget, cache: ReleaseCache, tasks: Sequence[str]) -> PointPlan:
    """What ``target``'s point will do, its releases looked up in ``cache`` (nothing released).
    ``tasks``: the utility tasks measured at it (those that apply to its mechanism)."""
    if target.finished or target.sweep is None:
        return PointPlan(target.release_id, target.mechanism, finished=True)
    from textveil.evaluation.sweep_seeds import role_seeds

    sweep, point = target.sweep, target.point
    releases: Counter[str] = Counter()
    cached: Counter[str] = Counter()  # releases read back: shares of one where parts are held
    seeds = sweep.seeds_at(point)
    for seed in seeds:
        for role, corpus, mechanism, cacheable in _releases_of(sweep, point, role_seeds(seed), bool(tasks)):
            releases[role] += 1
            if cacheable:
                cached[role] += cached_share(mechanism, corpus, cache)  # a part of a stopped release counts
    trainings = sweep.trainings_at(point)
    same_key = int(sweep.same_key_at(point))
    return PointPlan(target.release_id, target.mechanism, finished=False, repeats=len(seeds),
                     releases=dict(releases), cached=dict(cached),
                     fits=len(seeds) * (int("release" in trainings) + same_key),
                     scorings=len(seeds) * (int("clean" in trainings) + int("release" in trainings) + same_key),
                     tasks=tuple(tasks))


def _releases_of(sweep: Sweep, point: SweepPoint, seeds: dict[str, int | None], measured: bool
                 ) -> list[tuple[str, LabelledCorpus, Any, bool]]:
    """The releases one measurement of ``point`` makes, as :meth:`Sweep.measure_release` makes them:
    (role, corpus, the mechanism at its seed, whether the cache may hold it)."""
    from textveil.evaluation.code_words import joint_corpus
    from textveil.evaluation.sweep_seeds import point_seeds

    corpora = sweep.corpora
    at = lambda mechanism, seed: mechanism.with_params(**sweep.changes_at(point, seed))  # noqa: E731
    # a keyed release of the judged texts is encoded afresh each time (its key never reaches a cache)
    found = [("unknown", corpora.risk_unknown, at(sweep.mechanism, seeds["risk"]), not sweep.keyed)]
    if sweep.has_utility_corpus and not (sweep.keyed and not measured):
        found.append(("utility", sweep.utility_test, at(sweep.mechanism, seeds["utility"]), True))
    if "release" in sweep.trainings_at(point):
        found.append(("known", corpora.risk_known, at(sweep.attacker_mechanism, seeds["known"]), True))
    if sweep.same_key_at(point):
        order_seed, release_seed = point_seeds(seeds["same-key"], 2)
        joint, _ = joint_corpus(corpora.risk_known, corpora.risk_unknown, order_seed)
        found.append(("joint", joint, at(sweep.mechanism, release_seed), True))
    return found


def attack_cache_holds(folder: Any, name: str, texts: Sequence[str], labels: Sequence[str], seed: int | None,
                       embeddings: str) -> bool:
    """Whether the attack cache in ``folder`` holds attack ``name`` fitted on ``texts`` (the run reads
    it back: its clean fit costs nothing). Only the file is looked at; nothing is loaded."""
    from pathlib import Path

    from textveil.evaluation.attack_cache import attack_key

    return (Path(folder) / f"{attack_key(name, texts, labels, seed, embeddings)}.joblib").is_file()


# -- the pilot --------------------------------------------------------------------------------
