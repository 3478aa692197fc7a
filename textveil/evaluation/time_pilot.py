"""The pilot that times a comparison's settings before the long work: a few texts of each
setting released with a seed of its own (never kept), utility tasks and attacks on a share of
them, and how busy the machine was meanwhile; read by :mod:`textveil.evaluation.time_estimate`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textveil.corpus.labelled import LabelledCorpus
from textveil.evaluation.experiment import Sweep, SweepPoint
from textveil.evaluation.experiment_plan import EvaluationCorpora, ExperimentPlan
from textveil.evaluation.releasing import cached_release
from textveil.evaluation.time_plan import (
    ATTACK_PILOT_SHARE,
    Counts,
    PILOT_FIRST_TEXTS,
    PILOT_MOST_SECONDS,
    PILOT_TIME_SHARE,
    PointPlan,
    PointTarget,
    RELEASE_ROLES,
    UTILITY_PILOT_TEXTS,
    _words,
    pilot_seed,
    pilot_size,
    stratified_sample,
    text_words,
)


@dataclass
class SettingPilot:
    """One (mechanism, setting)'s pilot: the pilot texts released (or read from the cache, where
    the run will read its releases back), and each utility task measured on that release."""

    texts: int = 0
    words: int = 0
    seconds: float | None = None
    """The largest chunk's release: its texts, words and seconds (None: nothing released, the run
    releases nothing at this point); see :attr:`chunks` for every chunk."""
    utility_seconds: dict[str, float] = field(default_factory=dict)
    mechanism: str = ""
    chunks: list[tuple[int, int, float]] = field(default_factory=list)
    """Each chunk released: (texts, words, seconds)."""

    def __post_init__(self) -> None:
        if self.seconds is not None and not self.chunks:
            self.chunks.append((self.texts, self.words, self.seconds))

    @property
    def per_word(self) -> float | None:
        """Seconds per input word of the setting's releases: the largest chunk's (nearest the run's
        batches).

        >>> SettingPilot(32, 6400, 12.8).per_word
        0.002
        >>> SettingPilot(chunks=[(16, 600, 2.0), (32, 1200, 2.4)]).per_word
        0.002
        """
        if not self.chunks:
            return None
        _, words, seconds = max(self.chunks, key=lambda chunk: chunk[1])
        return seconds / words if words else None


@dataclass
class TaskPilot:
    """One utility task's pilot: prepared on the utility pilot texts, and the original texts
    measured (what the unmodified point costs it)."""

    prepare_seconds: float
    words: float
    """Words the pilot runner read of one release (its sample of the pilot texts)."""
    sample_size: int | None
    unmodified_seconds: float


@dataclass
class AttackPilot:
    """One attack's pilot: fitted on the known texts of a few authors, scored on their judged texts."""

    fit_seconds: float
    fit_words: int
    score_seconds: float
    score_words: int

    @property
    def fit_per_word(self) -> float:
        return self.fit_seconds / self.fit_words if self.fit_words else 0.0

    @property
    def score_per_word(self) -> float:
        return self.score_seconds / self.score_words if self.score_words else 0.0


@dataclass
class Pilot:
    """Everything the pilot measured; :func:`textveil.evaluation.time_estimate.estimate_run` extrapolates it."""

    texts: int
    of: int
    utility_texts: int
    settings: dict[str, SettingPilot] = field(default_factory=dict)
    tasks: dict[str, TaskPilot] = field(default_factory=dict)
    attacks: dict[str, AttackPilot] = field(default_factory=dict)
    attack_authors: int = 0
    not_piloted: dict[str, str] = field(default_factory=dict)
    """Tasks or attacks the pilot could not time, and why (counted as costing nothing)."""
    warm_up_seconds: dict[str, float] = field(default_factory=dict)
    """Each mechanism's first release (a model loaded), timed apart."""
    seconds: float = 0.0
    others_busy: float | None = None
    """Cores other processes (and the host) kept busy during the pilot: the estimate holds while
    that stays so (a language model's two threads wait on each other when one core is taken)."""
    end_reading: CpuReading | None = None
    phases: dict[str, float] = field(default_factory=dict)
    """What the pilot's own seconds went to: the attacks, the utility tasks prepared (their models
    loaded), the releases (each mechanism's first release included), the utility measures."""

    def rate(self, release_id: str, mechanism: str) -> float:
        """Seconds per word of a setting's releases; a setting piloted without a release (its
        releases are cached) borrows the mean rate of its mechanism's other settings."""
        own = self.settings.get(release_id)
        if own is not None and own.per_word is not None:
            return own.per_word
        others = [s.per_word for s in self.settings.values() if s.mechanism == mechanism and s.per_word is not None]
        return float(np.mean(others)) if others else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"texts": self.texts, "of": self.of, "utility_texts": self.utility_texts,
                "attack_authors": self.attack_authors, "seconds": round(self.seconds, 3),
                "warm_up_seconds": {k: round(v, 3) for k, v in self.warm_up_seconds.items()},
                "others_busy_cores": self.others_busy,
                "phases": {k: round(v, 3) for k, v in self.phases.items()},
                "settings": {key: {"chunks": [{"texts": t, "words": w, "seconds": round(c, 3)} for t, w, c in s.chunks],
                                   "seconds_per_word": s.per_word,
                                   "utility_seconds": {k: round(v, 3) for k, v in s.utility_seconds.items()}}
                             for key, s in self.settings.items()},
                "not_piloted": dict(self.not_piloted)}


def run_pilot(targets: Sequence[PointTarget], plans: Sequence[PointPlan], corpora: EvaluationCorpora,
              plan: ExperimentPlan, embeddings: Any, *, log: Callable[[str], None] | None = None) -> Pilot:
    """Time the pilot of every unfinished point of ``targets`` (built sweeps, their ``plans`` in the
    same order), the utility tasks and the attacks of ``plan``: see the module's notes."""
    say = log or (lambda message: None)
    started, reading = time.perf_counter(), cpu_reading()
    live = [(t, p) for t, p in zip(targets, plans) if not p.finished and t.sweep is not None]
    if not live:
        return Pilot(0, 0, 0)
    first = live[0][0].sweep
    assert first is not None
    test, train = first.utility_test, first.utility_train
    seed = pilot_seed(plan.seed)
    counts = Counts.of(corpora, plan.collapse_per_label)
    per_setting = max(sum(p.releases.get(role, 0) * counts_texts(counts, role) for role in RELEASE_ROLES)
                      for _, p in live)
    lengths = [text_words(t) for t in test.texts]
    chunks = pilot_chunks(lengths, pilot_size(per_setting, len(test)), seed)
    texts = test.subset(chunks[0])
    local = stratified_sample([lengths[i] for i in chunks[0]], UTILITY_PILOT_TEXTS, seed)  # within the first
    pilot = Pilot(sum(map(len, chunks)), len(test), len(local))
    say(f"estimating the time: a pilot of each setting on {len(chunks[0])} of the {len(test)} texts, then twice as "
        f"many while it costs under {PILOT_TIME_SHARE:.0%} of the setting's releases (at most {pilot.texts}; stratified "
        f"by length, released with a seed of their own, never kept); utility tasks on {len(local)} of them, attacks on "
        f"{ATTACK_PILOT_SHARE:.0%} of the authors")

    begun = time.perf_counter()
    _pilot_attacks(pilot, plan, corpora, embeddings)
    pilot.phases["attacks"] = time.perf_counter() - begun
    runners = _pilot_tasks(pilot, plan, first, corpora, embeddings, train, texts.subset(local), seed)
    pilot.phases["utility tasks prepared"] = time.perf_counter() - begun - pilot.phases["attacks"]
    pilot.phases["releases"] = pilot.phases["utility measured"] = 0.0
    warmed: set[str] = set()
    for target, point_plan in live:
        sweep = target.sweep
        assert sweep is not None
        # a copy at the pilot's own seed: the run's mechanism and its random stream stay untouched
        pilot_mechanism = sweep.mechanism.with_params(**sweep.changes_at(target.point, seed))
        setting = SettingPilot(0, 0, None, mechanism=target.mechanism)
        released: tuple[list[str], list[str] | None] | None = None
        if point_plan.released:  # the run releases something at this point: time the pilot's release
            words = sum((point_plan.releases.get(role, 0) - point_plan.cached.get(role, 0)) * counts.words(role)
                        for role in RELEASE_ROLES)
            try:
                if target.mechanism not in warmed:  # a model loaded, a first call warmed: paid once, not a rate
                    warmed.add(target.mechanism)
                    shortest = min(range(len(texts)), key=lambda i: (text_words(texts.texts[i]), i))
                    begun = time.perf_counter()
                    pilot_mechanism.release_corpus([texts.texts[shortest]], [texts.labels[shortest]])
                    pilot.warm_up_seconds[target.mechanism] = time.perf_counter() - begun
                    pilot.phases["releases"] += pilot.warm_up_seconds[target.mechanism]
                release = None
                for chunk in chunks:  # twice as many texts each time, while the budget allows
                    part = test.subset(chunk)
                    begun = time.perf_counter()
                    made = pilot_mechanism.release_corpus(part.texts, part.labels)
                    setting.chunks.append((len(part), _words(part.texts), time.perf_counter() - begun))
                    release = release or made  # the first chunk's: the utility pilot's texts
                    spent = sum(seconds for _, _, seconds in setting.chunks)
                    if spent >= min(PILOT_MOST_SECONDS, PILOT_TIME_SHARE * words * (setting.per_word or 0.0)):
                        break
            except Exception as error:  # noqa: BLE001 - the run itself says what is wrong, if anything
                pilot.not_piloted[target.release_id] = f"its pilot release failed ({error})"
                pilot.settings[target.release_id] = setting
                continue
            assert release is not None
            released = ([release.texts[i] for i in local], None) if release.aligned else (
                list(release.texts), list(release.labels or []))
        else:  # every release of the point is cached: measure the utility tasks on the cached one
            released = _cached_pilot_release(sweep, target.point, chunks[0], local)
        pilot.phases["releases"] += sum(seconds for _, _, seconds in setting.chunks)
        applicable = [name for name in point_plan.tasks if name in runners]
        for name in applicable if released is not None else []:
            begun = time.perf_counter()
            try:
                runners[name].measure(released[0], released[1])
            except Exception as error:  # noqa: BLE001 - a pilot that fails must not stop the run
                pilot.not_piloted.setdefault(name, f"its measure failed on the pilot ({error})")
                continue
            setting.utility_seconds[name] = time.perf_counter() - begun
            pilot.phases["utility measured"] += setting.utility_seconds[name]
        pilot.settings[target.release_id] = setting
    pilot.seconds = time.perf_counter() - started
    pilot.end_reading = cpu_reading()
    pilot.others_busy = others_busy(reading, pilot.end_reading)
    return pilot


def pilot_chunks(lengths: Sequence[int], most: int, seed: int) -> list[list[int]]:
    """The pilot's texts as chunks of :data:`PILOT_FIRST_TEXTS`, then twice as many each time (at
    most ``most`` texts in all), each stratified by length among the texts not yet taken: a chunk
    stands for the corpus, and no text is released twice (the entity stage remembers a text it
    has read: a second reading would cost nothing).

    >>> [len(chunk) for chunk in pilot_chunks(list(range(1, 301)), 60, seed=1)]
    [16, 32, 12]
    >>> sorted(sum(pilot_chunks([3, 1, 2], 10, seed=1), []))
    [0, 1, 2]
    """
    left = list(range(len(lengths)))
    chunks: list[list[int]] = []
    size, taken = PILOT_FIRST_TEXTS, 0
    while left and taken < most:
        picked = stratified_sample([lengths[i] for i in left], min(size, most - taken), seed + len(chunks))
        chunk = [left[i] for i in picked]
        chunks.append(chunk)
        taken += len(chunk)
        left = [i for i in left if i not in set(chunk)]
        size *= 2
    return chunks


@dataclass(frozen=True)
class CpuReading:
    """The machine's CPU time and this process's, at one moment (seconds)."""

    wall: float
    busy: float
    own: float


def cpu_reading() -> CpuReading | None:
    """The machine's busy CPU seconds (``/proc/stat``, the host's steal counted as busy: a core it
    takes is not ours) and this process's CPU seconds, now; None where ``/proc/stat`` is not read."""
    import os

    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return CpuReading(time.monotonic(), (user + nice + system + irq + softirq + steal) / tick, sum(os.times()[:2]))


def others_busy(start: CpuReading | None, end: CpuReading | None) -> float | None:
    """How many cores other processes (and the host) kept busy between two readings, on average.

    >>> others_busy(CpuReading(0.0, 10.0, 1.0), CpuReading(10.0, 25.0, 6.0))
    1.0
    >>> others_busy(None, CpuReading(1.0, 1.0, 1.0)) is None
    True
    """
    if start is None or end is None or end.wall <= start.wall:
        return None
    return round(max(0.0, (end.busy - start.busy) - (end.own - start.own)) / (end.wall - start.wall), 2)


def counts_texts(counts: Counts, role: str) -> int:
    """The texts one release of ``role`` reads.

    >>> counts_texts(Counts(10, 1000, 5, 400, 5, 400, 5, 5), "joint")
    15
    """
    return {"unknown": counts.unknown_texts, "utility": counts.utility_texts, "known": counts.known_texts,
            "joint": counts.known_texts + counts.unknown_texts}[role]


def _pilot_attacks(pilot: Pilot, plan: ExperimentPlan, corpora: EvaluationCorpora, embeddings: Any) -> None:
    """Each attack fitted on the known texts of the first authors and scored on their judged
    texts, apart from the attack cache (a fit on a subset is never the run's)."""
    from textveil.attacks.base import evaluate_attack
    from textveil.attacks.registry import make_attack

    known, unknown = corpora.risk_known, corpora.risk_unknown
    authors = list(dict.fromkeys(known.labels))
    kept = set(authors[:min(len(authors), max(2, math.ceil(ATTACK_PILOT_SHARE * len(authors))))])
    pilot.attack_authors = len(kept)
    fit = known.subset([i for i, label in enumerate(known.labels) if label in kept])
    judged = unknown.subset([i for i, label in enumerate(unknown.labels) if label in kept])
    for name in plan.attacks:
        try:
            begun = time.perf_counter()
            attack = make_attack(name, shared={"embeddings": embeddings, "random_state": plan.seed})
            attack.fit(list(fit.texts), list(fit.labels))
            fitted = time.perf_counter()
            if len(judged):
                evaluate_attack(attack, [], [], list(judged.texts), list(judged.labels), top_k=plan.top_k,
                                collapse_per_label=plan.collapse_per_label, fit=False)
            pilot.attacks[name] = AttackPilot(fitted - begun, _words(fit.texts), time.perf_counter() - fitted,
                                              _words(judged.texts))
        except Exception as error:  # noqa: BLE001 - an attack that cannot fit a few authors is not timed
            pilot.not_piloted[name] = f"could not be fitted on {len(kept)} authors ({error})"


def _pilot_tasks(pilot: Pilot, plan: ExperimentPlan, sweep: Sweep, corpora: EvaluationCorpora, embeddings: Any,
                 train: LabelledCorpus, texts: LabelledCorpus, seed: int) -> dict[str, Any]:
    """Each utility task prepared on the utility pilot ``texts`` (and a share of the training texts
    as large), after a warm-up on one text that loads its models; returns the prepared runners."""
    from textveil.evaluation.utility_tasks import UTILITY_TASKS

    def runner_of(name: str) -> Any:
        return UTILITY_TASKS.make(name, shared={"language_model": plan.language_model}, embeddings=embeddings,
                                  seed=plan.seed, attributes=corpora.attributes)

    share = len(texts) / max(1, len(sweep.utility_test))
    train_lengths = [text_words(t) for t in train.texts]
    training = train.subset(stratified_sample(train_lengths, max(2, math.ceil(share * len(train))), seed))
    runners: dict[str, Any] = {}
    for name in plan.utility:
        runner = runner_of(name)
        if sweep.missing_labels(runner) is not None:  # the run skips it too
            continue
        try:  # models loaded here, once per process: the run finds them loaded
            runner_of(name).prepare(training, texts.subset([0]))
        except Exception:  # noqa: BLE001 - a task that needs more than one text warms up below
            pass
        try:
            begun = time.perf_counter()
            runner.prepare(training, texts)
            prepared = time.perf_counter()
            runner.measure(list(texts.texts))
        except Exception as error:  # noqa: BLE001 - counted as costing nothing, and said so
            pilot.not_piloted[name] = f"could not be prepared on {len(texts)} texts ({error})"
            continue
        sample = getattr(runner, "sample_size", None)  # a task that reads a fixed sample (fluency)
        read = _words(texts.texts) * min(1.0, (sample or len(texts)) / max(1, len(texts)))
        pilot.tasks[name] = TaskPilot(prepared - begun, read, sample, time.perf_counter() - prepared)
        runners[name] = runner
    return runners


def _cached_pilot_release(sweep: Sweep, point: SweepPoint, chosen: Sequence[int], local: Sequence[int]
                          ) -> tuple[list[str], list[str] | None] | None:
    """The utility pilot texts as the cache holds the point's first release of them (None where
    it is not aligned or not there)."""
    from textveil.evaluation.sweep_seeds import role_seeds

    seeds = role_seeds(sweep.seeds_at(point)[0])
    role = "utility" if sweep.has_utility_corpus else "risk"
    held = cached_release(sweep.mechanism.with_params(**sweep.changes_at(point, seeds[role])), sweep.utility_test,
                          sweep.cache)
    if held is None or not held.aligned:
        return None
    return [held.texts[chosen[i]] for i in local], None


# -- the estimate -----------------------------------------------------------------------------
