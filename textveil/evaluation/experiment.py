"""Sweep a mechanism's privacy parameter over labelled corpora; attack and measure each release.

The flow, for every grid point (plus the unmodified text): release the unknown texts of the
risk corpus and the test texts of the utility corpus (cached), score every attack and every
utility task (prepared once on clean text) on the release. Each attack is scored under two
trainings (:mod:`textveil.evaluation.trainings`): fitted once on the clean known texts, and
fitted afresh at each point on the known texts released by the same mechanism with an
independent seed, since the attacker knows the mechanism; the risk is the worse of the two.
Attacks and mechanisms meet only here.

A mechanism that encodes a whole corpus under one secret key (PIVOT, whose guarantee is
l-privacy) is measured in three more ways, because its release is made of code words:

- a third training, ``"same-key"`` (results under ``"attacks_same_key"``): the known and unknown
  texts encoded together as one corpus under one key, the attacks fitted on the known texts'
  code words and scored on the unknown texts' code words of that same release. Code words are
  consistent within a key, so this is the attack a corpus release implies when an author's
  labelled texts are released with their unlabelled ones; the other two trainings attack the
  unknown texts encoded alone ("release": trained on the known texts under the attacker's own
  fresh key, as Kerckhoffs allows). The risk is the best over all three, naming its training;
- frequency analysis beside the stylometric attacks (``"frequency"``): the attacker who knows the
  mechanism and l guesses each code word's word from its count, with reference counts of its
  own, scored with the key (:func:`textveil.evaluation.frequency_risk.frequency_recovery`);
- no utility task applies (:func:`not_applicable`): they read a release as English text.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from textveil.attacks.base import evaluate_attack
from textveil.attacks.registry import ATTACKS, DEFAULT_ATTACKS, make_attack
from textveil.building import build_mechanism, check_mechanism_options
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.evaluation.attack_cache import AttackCache, attack_key
from textveil.evaluation.release_cache import ReleaseCache
from textveil.evaluation.releasing import encode_corpus, release_corpus, with_changed_fraction
from textveil.evaluation.trainings import (
    SAME_KEY,
    SAME_KEY_RESULTS,
    TRAINING_KEYS,
    TRAININGS,
    attack_lines,
    best_attack,
    check_trainings,
    line_label,
)
from textveil.evaluation.utility_tasks import UTILITY_TASKS, UtilityRunner
from textveil.mechanisms.base import CorpusRelease, Mechanism
from textveil.mechanisms.registry import MECHANISMS
from textveil.pii.screened import as_attacker
from textveil.pii.stage import EntityOptions, EntityStage
from textveil.privacy.secrets import Secret

DEFAULT_UTILITY = ("topic-fasttext", "topic-5nn", "semantic-similarity")
UNMODIFIED = "none"


@dataclass
class ExperimentPlan:
    """What to sweep and what to measure."""

    mechanism: str = "emp"
    grid: list[float] = field(default_factory=lambda: [10.0, 15.0, 20.0, 25.0, 30.0])
    # The parameter the grid sweeps; "" means the mechanism's own (its registry entry says
    # which: epsilon for emp, none for Random-R, whose grid is then empty).
    parameter: str = ""
    attacks: list[str] = field(default_factory=lambda: list(DEFAULT_ATTACKS))
    utility: list[str] = field(default_factory=lambda: list(DEFAULT_UTILITY))
    seed: int | None = None
    top_k: int = 10
    collapse_per_label: bool = False
    include_unmodified: bool = True
    repeats: int = 1
    embeddings: str = "default"
    mechanism_options: dict[str, Any] = field(default_factory=dict)
    # What the attacks are fitted on: "clean" known texts, and/or the known texts "release"d
    # by the same mechanism (the attacker knows it); the risk is the strongest attack over both.
    trainings: list[str] = field(default_factory=lambda: list(TRAININGS))
    # A trained mechanism's folder (textveil train): released as trained, not fitted again.
    model: str | None = None
    # The model the release-aware attacker trained itself on its known texts (the same mechanism
    # and settings, another seed): its releases of the known texts train the release-trained
    # attacks. Default: the release's own model, as if it were public (the attacker's best case).
    attacker_model: str | None = None
    # The public language model the fluency task scores releases with: a .gguf file or a
    # Hugging Face folder; None is the bundled one (the paraphrase mechanism's).
    language_model: str | None = None
    # The entity stage before the mechanism: part of the release under test, so the release-aware
    # attacker's own releases go through it too.
    entities: EntityOptions = field(default_factory=EntityOptions)
    # For a mechanism that encodes a corpus under one key (pivot): also fit the attacks on the known
    # texts encoded with the unknown ones under one key, as one corpus release ("same-key").
    same_key: bool = True


@dataclass
class EvaluationCorpora:
    """Risk: known texts (the attacker's reference) and unknown texts (released, then attacked).
    Utility: training texts (clean) and test texts (released, then measured)."""

    risk_known: LabelledCorpus
    risk_unknown: LabelledCorpus
    utility_train: LabelledCorpus | None = None
    utility_test: LabelledCorpus | None = None
    attributes: dict[str, str] | None = None
    """Each author's attribute (industry, gender), for the attribute-F1 task."""
    split: dict[str, Any] | None = None
    """How the risk texts were split into known and unknown (:mod:`textveil.evaluation.splits`)."""


def swept_parameter(plan: ExperimentPlan) -> str | None:
    """The name of the parameter the grid sweeps: the plan's, else the mechanism's own; None for
    a mechanism that has none (its sweep is one release point)."""
    entry = MECHANISMS.entry(plan.mechanism)
    if plan.parameter:
        return entry.parameter(plan.parameter).name
    return entry.swept.name if entry.swept is not None else None


def validate(plan: ExperimentPlan, corpora: EvaluationCorpora) -> None:
    """Every check that can fail, before any work starts."""
    entry = MECHANISMS.entry(plan.mechanism)
    check_mechanism_options(plan.mechanism, plan.mechanism_options)
    check_trainings(plan.trainings)
    parameter = swept_parameter(plan)
    if parameter is None and plan.grid:
        raise InvalidParameterError(f"mechanism '{plan.mechanism}' has no parameter to sweep; leave out the grid")
    if parameter is not None and not plan.grid:
        raise InvalidParameterError(
            f"the grid is empty; give at least one value of {parameter} for {plan.mechanism}, e.g. --grid 10,20,30")
    if parameter is not None:
        if parameter in plan.mechanism_options:
            raise InvalidParameterError(f"{parameter} is swept by the grid; do not also give it as an option")
        for value in plan.grid:  # the mechanism's own check, naming the value that fails
            try:
                entry.parameter(parameter).check(value)
            except InvalidParameterError as error:
                raise InvalidParameterError(f"{parameter} {value!r} in the grid: {error}") from None
    for name in plan.attacks:
        ATTACKS.entry(name)  # an unknown name fails, naming where the valid ones are listed
    for name in plan.utility:
        if name not in UTILITY_TASKS:
            raise InvalidParameterError(
                f"unknown utility task '{name}'; valid tasks: {', '.join(sorted(UTILITY_TASKS.names()))}"
            )
    if plan.repeats < 1:
        raise InvalidParameterError(f"repeats must be at least 1, got {plan.repeats}")
    if plan.top_k < 1:
        raise InvalidParameterError(f"top-k must be at least 1, got {plan.top_k}")
    corpora.risk_known.validate(what="risk corpus (known texts)")
    corpora.risk_unknown.validate(min_labels=1, what="risk corpus (unknown texts)")
    missing = sorted(set(corpora.risk_unknown.labels) - set(corpora.risk_known.labels))
    if missing:
        raise InvalidParameterError(
            f"{len(missing)} author(s) of the unknown texts have no known text (e.g. '{missing[0]}'); "
            "every unknown author needs known texts"
        )
    if corpora.utility_train is not None and corpora.utility_test is not None:
        corpora.utility_train.validate(what="utility corpus (training texts)")
        corpora.utility_test.validate(min_labels=1, what="utility corpus (test texts)")


def _machine() -> dict[str, Any]:
    import os

    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()}


# The releases of one grid point, each with a seed spawned from the point's seed, in this
# order. "known" (the release-trained attacks' training texts) came after the first two, and
# "same-key" (a keyed mechanism's known and unknown texts encoded together) last: spawning one
# more child leaves the earlier ones as they were, so the earlier releases (and their cache
# entries) did not move when each was added.
RELEASE_ROLES = ("risk", "utility", "known", "same-key")


def _point_seeds(seed: int | None, count: int) -> list[int | None]:
    """``count`` independent seeds spawned from ``seed``; the first ones do not depend on ``count``.

    >>> _point_seeds(7, 3)[:2] == _point_seeds(7, 2) and len(set(_point_seeds(7, 3))) == 3
    True
    >>> _point_seeds(None, 3)
    [None, None, None]
    """
    if seed is None:
        return [None] * count
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(count)]


def point_seed(seed: int | None, value: float | None, repeat: int = 0) -> int | None:
    """The seed of one release at one parameter value: derived from the run's seed, the value
    and the repeat number alone, so a point releases the same text whatever else the grid
    holds (adding epsilon 12 to a grid leaves the release at 15, and its cache entry, as they
    were), and asking for more repeats keeps the first ones.

    >>> point_seed(1, 15.0) == point_seed(1, 15.0) != point_seed(1, 12.0)
    True
    >>> point_seed(1, 15.0, 1) != point_seed(1, 15.0)
    True
    >>> point_seed(None, 15.0) is None and point_seed(1, None) is None
    True
    """
    if seed is None or value is None:
        return None
    bits = int(np.float64(value).view(np.uint64))  # the exact value, as 64 bits
    key = (bits >> 32, bits & 0xFFFFFFFF) + ((repeat,) if repeat else ())
    return int(np.random.SeedSequence(seed, spawn_key=key).generate_state(1)[0])


def _spread(values: list[float]) -> dict[str, Any]:
    """Standard deviation (n - 1) and the values, for a measurement repeated over releases."""
    return {"sd": float(np.std(values, ddof=1)), "values": [float(v) for v in values]}


def combine_attack_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One attack's results over repeated releases of a point: top-k accuracies averaged, the
    spread of top-1 kept (``top1_sd``, ``top1_values``). One result is returned as it is.

    >>> combined = combine_attack_results([{"topk": [0.2, 0.5], "top1": 0.2}, {"topk": [0.4, 0.7], "top1": 0.4}])
    >>> [round(x, 3) for x in combined["topk"]], round(combined["top1"], 3), round(combined["top1_sd"], 3)
    ([0.3, 0.6], 0.3, 0.141)
    """
    if len(results) == 1:
        return results[0]
    topk = np.mean([r["topk"] for r in results], axis=0).tolist()
    spread = _spread([r["top1"] for r in results])
    return {**results[0], "topk": topk, "top1": topk[0], "top1_sd": spread["sd"], "top1_values": spread["values"]}


def combine_utility_results(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One utility task over repeated releases: the mean value, with ``sd`` and ``values``."""
    if len(results) == 1:
        return results[0]
    values = [r["value"] for r in results]
    return {**results[0], "value": float(np.mean(values)), **_spread(values)}


def combine_release_stats(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Word counts of repeated releases, summed; the changed fraction over all of them."""
    if len(stats) == 1:
        return stats[0]
    combined = {key: sum(s.get(key, 0) for s in stats) for key in ("words_protected", "words_changed",
                                                                  "read_from_cache")}
    return {**with_changed_fraction(combined), "releases": len(stats)}


def run_experiment(
    corpora: EvaluationCorpora,
    plan: ExperimentPlan,
    *,
    cache_folder: Path | None = None,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    text_progress: Callable[[str, float, int], None] | None = None,
) -> dict[str, Any]:
    """Run the sweep; returns the results as plain data (what ``results.json`` holds; the
    shape of a point's attack results is described in :mod:`textveil.evaluation.trainings`).

    ``progress(stage, done, total)`` is called as each release, attack and utility
    measurement finishes; ``stage`` says which (e.g. ``"epsilon 12: char3-svm (release-trained)"``).
    ``text_progress(stage, done, total)`` is called as each release goes, in texts.
    """
    validate(plan, corpora)
    say = log or (lambda message: None)
    ledger = _Ledger(progress, text_progress)
    started = time.perf_counter()
    from textveil.embeddings.default_model import load_embeddings

    with ledger.timed("load embeddings"):
        embeddings = load_embeddings(plan.embeddings, plan.mechanism_options.get("vocab_size"), log=say)
    parameter = swept_parameter(plan)
    first = {parameter: float(plan.grid[0])} if parameter is not None else {}
    with ledger.timed("load entity stage"):
        stage = EntityStage(plan.entities)
    mechanism = build_mechanism(plan.mechanism, plan.mechanism_options, embeddings, entities=stage, model=plan.model,
                                **first)
    fit_for_sweep(mechanism, plan, corpora, ledger, say)
    sweep = _Sweep(plan, corpora, embeddings, mechanism, parameter, ReleaseCache(cache_folder), ledger, say)
    sweep.attacker_mechanism = as_attacker(mechanism, plan.seed)
    if plan.attacker_model is not None:
        sweep.attacker_mechanism = _attacker_mechanism(plan, mechanism, embeddings, first, stage)
        say(f"release-trained attacks learn from the attacker's own model in {plan.attacker_model}")
    with ledger.timed("fit attacks"):
        sweep.fit_clean_attacks()
    with ledger.timed("prepare utility tasks"):
        sweep.prepare_utility()

    points_spec = ([_Point(UNMODIFIED, None, released=False)] if plan.include_unmodified else []) + (
        [_Point(f"{float(v):g}", float(v)) for v in plan.grid] if parameter is not None
        else [_Point(plan.mechanism, None)])
    ledger.total = sum(sweep.steps_per_point(point) for point in points_spec)
    points = [sweep.measure_point(point) for point in points_spec]

    ledger.timings["total"] = round(time.perf_counter() - started, 3)
    has_utility_corpus = sweep.has_utility_corpus
    return {
        "textveil_version": _version(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": _machine(),
        "plan": _shown_plan(plan, parameter),
        "mechanism": mechanism.fingerprint(),
        "corpora": {
            role: _describe(corpus)
            for role, corpus in (
                ("risk_known", corpora.risk_known), ("risk_unknown", corpora.risk_unknown),
                ("utility_train", corpora.utility_train if has_utility_corpus else None),
                ("utility_test", corpora.utility_test if has_utility_corpus else None),
            )
            if corpus is not None
        },
        "split": corpora.split,
        "embeddings": {"name": embeddings.name, "words": len(embeddings), "dim": embeddings.dim},
        "topic_chance": (1 / len(sweep.utility_train.label_set)) if has_utility_corpus else None,
        "points": points,
        "utility_not_applicable": sweep.skipped_utility,
        "timings": ledger.timings,
        "task_seconds": ledger.task_seconds,
        "release_cache": {"hits": sweep.cache.hits, "misses": sweep.cache.misses,
                          "folder": str(cache_folder) if cache_folder else None},
    }


def fit_for_sweep(mechanism: Mechanism, plan: ExperimentPlan, corpora: EvaluationCorpora, ledger: _Ledger,
                  say: Callable[[str], None], stage: str = "fit mechanism") -> None:
    """Fit a sweep's mechanism once, before any point: a trained model is released as trained;
    a model of each author learns from the known texts and their authors; any other learning
    mechanism from the clean texts no point releases."""
    if plan.model is not None:
        say(f"released with the model trained in {plan.model} (training data {mechanism.fingerprint()['training_data']})")
    elif mechanism.fit_uses_labels:  # a model of each author: on the known texts and their authors
        known = corpora.risk_known
        say(f"fitting mechanism {plan.mechanism} on {len(known)} known texts of {len(known.label_set)} authors")
        with ledger.timed(stage):
            mechanism.fit(known.texts, known.labels)
    elif mechanism.learns:  # once per sweep, on clean training texts only: never on the released ones
        training = _training_texts(corpora)
        say(f"fitting mechanism {plan.mechanism} on {len(training)} training texts")
        with ledger.timed(stage):
            mechanism.fit(training)


def _attacker_mechanism(plan: ExperimentPlan, mechanism: Mechanism, embeddings: Any,
                        first: dict[str, float], stage: EntityStage) -> Mechanism:
    """The attacker's own trained model: it must be the release's mechanism with the same settings."""
    assert plan.attacker_model is not None
    attacker = build_mechanism(plan.mechanism, plan.mechanism_options, embeddings, entities=stage,
                               model=plan.attacker_model, **first)
    ours, theirs = mechanism.fingerprint()["parameters"], attacker.fingerprint()["parameters"]
    differing = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
    if differing:
        raise InvalidParameterError(f"the attacker's model in '{plan.attacker_model}' was trained with other "
                                    f"{', '.join(differing)}: train it with the release's settings")
    return attacker


@dataclass(frozen=True)
class _Point:
    """One point of a sweep: the unmodified text, a value of the swept parameter, or the one
    release of a mechanism that has no parameter to sweep."""

    label: str
    value: float | None
    released: bool = True


def _training_texts(corpora: EvaluationCorpora) -> list[str]:
    """What a learning mechanism is fitted on: the clean texts no point releases (the known
    texts, and the utility corpus's training texts)."""
    texts = list(corpora.risk_known.texts)
    if corpora.utility_train is not None and corpora.utility_test is not None:
        texts += corpora.utility_train.texts
    return texts


def _shown_plan(plan: ExperimentPlan, parameter: str | None) -> dict[str, Any]:
    """The plan as results show it: the swept parameter named, a secret as its digest only."""
    shown = asdict(plan)
    shown["parameter"] = parameter or ""
    shown["mechanism_options"] = {k: str(v) if isinstance(v, Secret) else v for k, v in plan.mechanism_options.items()}
    shown["entities"] = plan.entities.public()
    return shown


@dataclass
class _Ledger:
    """Where a sweep's time goes, and how far it has come.

    ``timings`` is per stage. ``task_seconds`` is the same time by attack and utility task,
    summed over the grid: it says which task to drop or speed up when a sweep is too slow.
    """

    progress: Callable[[str, int, int], None] | None = None
    texts: Callable[[str, float, int], None] | None = None
    """``texts(stage, done, total)``: told as a release goes, in texts (a language model's release
    of a few hundred documents takes minutes: a log shows it moving)."""
    timings: dict[str, float] = field(default_factory=dict)
    task_seconds: dict[str, float] = field(default_factory=dict)
    done: int = 0
    total: int = 0

    @contextmanager
    def timed(self, stage: str, *books: dict[str, float]) -> Iterator[None]:
        """Add the time of the ``with`` block to ``stage`` in each book (default: ``timings``)."""
        clock = time.perf_counter()
        yield
        seconds = time.perf_counter() - clock
        for book in books or (self.timings,):
            book[stage] = round(book.get(stage, 0.0) + seconds, 3)

    def step(self, stage: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(stage, self.done, self.total)

    def releasing(self, stage: str, total: int) -> _TextCount | None:
        """A release's ``progress(n)``, passing the texts released so far on to ``texts``."""
        return None if self.texts is None else _TextCount(self.texts, stage, total)


class _TextCount:
    """One release's texts, told as they are released (``count(n)``), and all of them at the end
    (``finish()``: a release read back from the cache tells nothing on the way)."""

    def __init__(self, told: Callable[[str, float, int], None], stage: str, total: int) -> None:
        self.told, self.stage, self.total, self.done = told, stage, total, 0.0
        told(stage, 0.0, total)

    def __call__(self, count: float) -> None:
        self.done += count
        self.told(self.stage, self.done, self.total)

    def finish(self) -> None:
        if self.done < self.total:
            self.done = float(self.total)
            self.told(self.stage, self.done, self.total)


@dataclass
class _Measurement:
    """One release of one point, measured: attack results per training, utility, release stats."""

    attacks: dict[str, dict[str, dict[str, Any]]]
    utility: dict[str, dict[str, Any]]
    release: dict[str, Any]
    known_release: dict[str, Any] | None = None
    same_key_release: dict[str, Any] | None = None
    """A keyed mechanism's known and unknown texts encoded together (the same-key training's release)."""
    frequency: dict[str, Any] | None = None
    """A keyed mechanism's release under frequency analysis."""


class _Sweep:
    """The state a sweep shares between its points: corpora, embeddings, the mechanism (fitted
    once), fitted attacks, prepared utility tasks, the release cache and the ledger."""

    def __init__(self, plan: ExperimentPlan, corpora: EvaluationCorpora, embeddings: Any, mechanism: Mechanism,
                 parameter: str | None, cache: ReleaseCache, ledger: _Ledger, say: Callable[[str], None]) -> None:
        self.plan, self.corpora, self.embeddings, self.cache, self.ledger, self.say = (
            plan, corpora, embeddings, cache, ledger, say)
        self.mechanism, self.parameter = mechanism, parameter
        self.has_utility_corpus = corpora.utility_train is not None and corpora.utility_test is not None
        self.utility_train = corpora.utility_train if self.has_utility_corpus else corpora.risk_known
        self.utility_test = corpora.utility_test if self.has_utility_corpus else corpora.risk_unknown
        self.clean_attacks: dict[str, Any] = {}
        self.runners: dict[str, UtilityRunner] = {}
        self.skipped_utility: dict[str, str] = {}
        """Utility tasks of the plan not run, and why (they do not apply, or the corpora lack their labels)."""
        self.attacker_mechanism: Mechanism = mechanism
        """What releases the known texts for the release-trained attacks (by default the release's own)."""
        self.attack_cache: AttackCache | None = None
        """Where fitted attacks are kept between runs (a comparison's resume), if anywhere."""
        self.keyed = releases_code_words(plan.mechanism)
        """The mechanism encodes a corpus under one key (PIVOT): same-key attacks and frequency analysis too."""

    # -- set-up, once per sweep --------------------------------------------------------

    def fit_attack(self, name: str, known_texts: list[str], labels: list[str] | None = None) -> Any:
        """A fresh attack fitted on ``known_texts`` (clean or released) and their labels (by
        default the known labels; a released new corpus brings its own)."""
        labels = list(labels if labels is not None else self.corpora.risk_known.labels)

        def fit() -> Any:
            attack = make_attack(name, shared={"embeddings": self.embeddings, "random_state": self.plan.seed})
            attack.fit(list(known_texts), labels)
            return attack

        if self.attack_cache is None:
            return fit()
        key = attack_key(name, known_texts, labels, self.plan.seed, self.embeddings.name)
        return self.attack_cache.get_or_fit(key, fit)

    def fit_clean_attacks(self) -> None:
        # The unmodified point is measured with clean-trained attacks whatever the trainings:
        # with no mechanism, a release-trained attack is the clean-trained one.
        if "clean" not in self.plan.trainings and not self.plan.include_unmodified:
            return
        known = self.corpora.risk_known
        for name in self.plan.attacks:
            hits = self.attack_cache.hits if self.attack_cache is not None else 0
            with self.ledger.timed(f"fit {name}", self.ledger.task_seconds):
                self.clean_attacks[name] = self.fit_attack(name, known.texts)
            read = self.attack_cache is not None and self.attack_cache.hits > hits
            self.say(f"attack {name} {'read back, as fitted' if read else 'fitted'} on {len(known)} known texts")

    def prepare_utility(self, *, for_any_mechanism: bool = False) -> None:
        """Prepare every utility task that applies; ``for_any_mechanism`` prepares the tasks
        that compare each text with its own release too, whatever this sweep's mechanism (a
        comparison shares them, and each mechanism drops what does not apply to it)."""
        for name in self.plan.utility:
            runner = UTILITY_TASKS.make(name, shared={"language_model": self.plan.language_model},
                                        embeddings=self.embeddings, seed=self.plan.seed,
                                        attributes=self.corpora.attributes)
            reason = self.missing_labels(runner) or (
                None if for_any_mechanism else not_applicable(name, self.plan.mechanism, self.mechanism.corpus_level))
            if reason is not None:
                self.say(f"utility task {name} skipped: {reason}")
                self.skipped_utility[name] = reason
                continue
            self.say(f"preparing utility task {name}")
            with self.ledger.timed(f"prepare {name}", self.ledger.task_seconds):
                runner.prepare(self.utility_train, self.utility_test)
            self.runners[name] = runner

    def missing_labels(self, runner: UtilityRunner) -> str | None:
        """Why a task cannot run on these corpora (the labels it needs are missing), or None."""
        if runner.needs_attributes and not self.corpora.attributes:
            return "it needs each author's attribute (--attribute-field)"
        if runner.needs_topic_labels and not self.has_utility_corpus:
            return "it needs a utility corpus with topic labels (--utility-corpus)"
        return None

    # -- per point ---------------------------------------------------------------------

    def trainings_at(self, point: _Point) -> list[str]:
        """The trainings measured at a point: the unmodified text is measured once, clean."""
        return list(self.plan.trainings) if point.released else ["clean"]

    def same_key_at(self, point: _Point) -> bool:
        """Whether the same-key training is measured at a point (a keyed mechanism's releases)."""
        return self.keyed and self.plan.same_key and point.released

    def steps_per_point(self, point: _Point) -> int:
        releases = self.plan.repeats if point.released else 1
        trainings = self.trainings_at(point)
        per_release = 1 + len(self.plan.attacks) * len(trainings) + ("release" in trainings) + len(self.runners)
        if self.keyed and point.released:  # frequency analysis, and the same-key release and attacks
            per_release += 1 + (1 + len(self.plan.attacks)) * self.same_key_at(point)
        return releases * per_release

    def measure_point(self, point: _Point) -> dict[str, Any]:
        plan = self.plan
        # The unmodified text has no randomness: one measurement says all there is. A mechanism
        # without a swept parameter seeds its one point as the value 0 would be.
        seed_value = point.value if point.value is not None else (0.0 if point.released else None)
        seeds = [point_seed(plan.seed, seed_value, repeat) for repeat in range(plan.repeats if point.released else 1)]
        result: dict[str, Any] = {"label": point.label, "parameter": point.value, "seed": seeds[0], "seconds": {}}
        if len(seeds) > 1:
            result["seeds"] = seeds
        measured = [self.measure_release(point, seed, result["seconds"]) for seed in seeds]
        result["release"] = combine_release_stats([m.release for m in measured])
        known_releases = [m.known_release for m in measured if m.known_release is not None]
        if known_releases:  # what the release-trained attacks were fitted on
            result["known_release"] = combine_release_stats(known_releases)
        for training in plan.trainings:
            # at the unmodified point every training reads the one clean measurement
            source = training if training in measured[0].attacks else "clean"
            result[TRAINING_KEYS[training]] = {
                name: {**combine_attack_results([m.attacks[source][name] for m in measured]), "training": training}
                for name in plan.attacks
            }
        if not point.released and "release" in plan.trainings:
            result["release_training_is_clean"] = True
        if SAME_KEY in measured[0].attacks:
            result[SAME_KEY_RESULTS] = {
                name: {**combine_attack_results([m.attacks[SAME_KEY][name] for m in measured]), "training": SAME_KEY}
                for name in plan.attacks
            }
            result["same_key_release"] = combine_release_stats([m.same_key_release for m in measured
                                                                if m.same_key_release is not None])
        if measured[0].frequency is not None:
            result["frequency"] = combine_frequency([m.frequency for m in measured if m.frequency is not None])
        result["risk"] = best_attack(result)
        result["utility"] = {name: combine_utility_results([m.utility[name] for m in measured]) for name in self.runners}
        self.say(_point_summary(self.parameter or "", result, len(seeds)))
        return result

    def measure_release(self, point: _Point, seed: int | None, seconds: dict[str, float]) -> _Measurement:
        """Release the point once (its unknown, utility and, for release training, known
        texts), score every attack under every training and every utility task on it."""
        stage = f"{self.parameter} {point.label}" if self.parameter else point.label
        ledger, books = self.ledger, (self.ledger.timings, seconds)
        seeds = dict(zip(RELEASE_ROLES, _point_seeds(seed, len(RELEASE_ROLES))))
        release_stats = _empty_stats(point)
        key = None
        with ledger.timed("release", *books):
            if self.keyed and point.released:
                # encoded here, never read from the cache: the key (kept in memory only, for the
                # owner's scoring of frequency analysis) would not be there
                released_risk, key = self.release_with_key(self.corpora.risk_unknown, point, seeds["risk"],
                                                           release_stats)
            else:
                released_risk = self.release(self.corpora.risk_unknown, point, seeds["risk"], release_stats,
                                             stage=f"{stage}: releasing the unknown texts")
            # a keyed release has no utility task to serve: its utility texts are not encoded
            released_utility = (self.release(self.utility_test, point, seeds["utility"], release_stats,
                                             stage=f"{stage}: releasing the utility texts")
                                if self.has_utility_corpus and not (self.keyed and not self.runners)
                                else released_risk)
        ledger.step(f"{stage}: released")
        measurement = _Measurement({}, {}, with_changed_fraction(release_stats))
        unknown_labels = released_risk.labels if released_risk.labels is not None else self.corpora.risk_unknown.labels
        if key is not None:
            with ledger.timed("frequency analysis", *books), ledger.timed("frequency analysis", ledger.task_seconds):
                measurement.frequency = self.frequency(released_risk, key)
            ledger.step(f"{stage}: frequency analysis")

        if "clean" in self.trainings_at(point):
            with ledger.timed("attacks", *books):
                measurement.attacks["clean"] = {
                    name: self.score(name, attack, released_risk.texts, unknown_labels, "clean", stage)
                    for name, attack in self.clean_attacks.items()
                }
        if "release" in self.trainings_at(point):
            known_stats = _empty_stats(point)
            with ledger.timed("release known texts", *books):
                released_known = self.release(self.corpora.risk_known, point, seeds["known"], known_stats,
                                              self.attacker_mechanism, stage=f"{stage}: releasing the known texts")
            ledger.step(f"{stage}: released known texts")
            measurement.known_release = with_changed_fraction(known_stats)
            with ledger.timed("attacks (release-trained)", *books):
                measurement.attacks["release"] = {
                    name: self.score(name, self.fit_release_trained(name, released_known), released_risk.texts,
                                     unknown_labels, "release", stage)
                    for name in self.plan.attacks
                }
        if self.same_key_at(point):
            measurement.attacks[SAME_KEY], measurement.same_key_release = self.measure_same_key(
                point, seeds[SAME_KEY], stage, books)

        with ledger.timed("utility", *books):
            for name, runner in self.runners.items():
                with ledger.timed(f"measure {name}", ledger.task_seconds):
                    measurement.utility[name] = runner.measure(
                        released_utility.texts, None if released_utility.aligned else released_utility.labels)
                ledger.step(f"{stage}: {name}")
        return measurement

    def release(self, corpus: LabelledCorpus, point: _Point, seed: int | None, stats: dict[str, Any],
                mechanism: Mechanism | None = None, stage: str = "releasing") -> CorpusRelease:
        """A corpus released at one point (the unmodified point is the text itself) by the sweep's
        mechanism (or ``mechanism``), its statistics added to ``stats`` whether it was released
        now or read from the cache; its texts told to the ledger as ``stage`` goes."""
        if not point.released:
            return CorpusRelease(list(corpus.texts), list(corpus.labels), True, {})
        changes: dict[str, Any] = {"seed": seed}
        if self.parameter is not None:
            changes[self.parameter] = point.value
        hits = self.cache.hits
        counted = self.ledger.releasing(stage, len(corpus))
        released = release_corpus((mechanism or self.mechanism).with_params(**changes), corpus, self.cache,
                                  progress=counted)
        if counted is not None:
            counted.finish()
        for key, count in released.stats.items():
            stats[key] = stats.get(key, 0) + count
        # how many of the point's releases were read back: their seconds are not release speed
        stats["read_from_cache"] = stats.get("read_from_cache", 0) + self.cache.hits - hits
        return released

    def release_with_key(self, corpus: LabelledCorpus, point: _Point, seed: int | None,
                         stats: dict[str, Any]) -> tuple[CorpusRelease, Any]:
        """A keyed mechanism's release of ``corpus`` at one point, with its key (in memory only)."""
        changes: dict[str, Any] = {"seed": seed}
        if self.parameter is not None:
            changes[self.parameter] = point.value
        released, key = encode_corpus(self.mechanism.with_params(**changes), corpus)
        for name, count in released.stats.items():
            stats[name] = stats.get(name, 0) + count
        stats["read_from_cache"] = stats.get("read_from_cache", 0)
        return released, key

    def frequency(self, released: CorpusRelease, key: Any) -> dict[str, Any]:
        """Frequency analysis of a keyed release, scored with its key."""
        from textveil.evaluation.frequency_risk import frequency_recovery

        return frequency_recovery([text.split() for text in released.texts], key,
                                  known_texts=self.corpora.risk_known.texts,
                                  part_size=self.plan.mechanism_options.get("part_size"))

    def measure_same_key(self, point: _Point, seed: int | None, stage: str, books: tuple[dict[str, float], ...]
                         ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """The same-key training: the known and unknown texts encoded together under one key (one
        corpus release); each attack fitted on the known texts' code words and scored on the
        unknown texts' code words of that release. Returns the results and the release's stats.

        The two are encoded in one random order (drawn from ``seed``), as a corpus of posts mixes
        its authors' labelled and unlabelled texts: PIVOT fills a word's code words in corpus order,
        so texts that stand near each other share code words, and the known texts all before the
        unknown ones would share fewer with them than a real corpus's texts do."""
        known, unknown = self.corpora.risk_known, self.corpora.risk_unknown
        texts, labels = known.texts + unknown.texts, known.labels + unknown.labels
        order_seed, release_seed = _point_seeds(seed, 2)
        order = [int(i) for i in np.random.default_rng(order_seed).permutation(len(texts))]
        joint = LabelledCorpus([texts[i] for i in order], [labels[i] for i in order],
                               name=f"{known.name} + {unknown.name}")
        stats = _empty_stats(point)
        with self.ledger.timed("release known and unknown texts under one key", *books):
            released = self.release(joint, point, release_seed, stats)
        self.ledger.step(f"{stage}: released known and unknown texts under one key")
        cut = len(known)
        released_labels = released.labels if released.labels is not None else joint.labels
        known_at = [place for place, index in enumerate(order) if index < cut]
        unknown_at = sorted((place for place, index in enumerate(order) if index >= cut), key=lambda p: order[p])
        known_texts, known_labels = [released.texts[p] for p in known_at], [released_labels[p] for p in known_at]
        unknown_texts = [released.texts[p] for p in unknown_at]
        unknown_labels = [released_labels[p] for p in unknown_at]
        results = {}
        with self.ledger.timed("attacks (same-key)", *books):
            for name in self.plan.attacks:
                with self.ledger.timed(f"fit {line_label(name, SAME_KEY)}", self.ledger.task_seconds):
                    attack = self.fit_attack(name, known_texts, known_labels)
                results[name] = self.score(name, attack, unknown_texts, unknown_labels, SAME_KEY, stage)
        return results, with_changed_fraction(stats)

    def fit_release_trained(self, name: str, released_known: CorpusRelease) -> Any:
        with self.ledger.timed(f"fit {line_label(name, 'release')}", self.ledger.task_seconds):
            return self.fit_attack(name, released_known.texts, released_known.labels)

    def score(self, name: str, attack: Any, released_unknown: list[str], labels: list[str], training: str,
              stage: str) -> dict[str, Any]:
        """Top-k identification by a fitted attack of the released unknown texts' authors."""
        task = line_label(name, training) if training != "clean" else name
        plan = self.plan
        with self.ledger.timed(f"attack {task}", self.ledger.task_seconds):
            # fit=False: the attack is already fitted, so the known texts passed are not read
            result = evaluate_attack(
                attack, [], [], released_unknown, labels,
                top_k=plan.top_k, collapse_per_label=plan.collapse_per_label, fit=False,
            ).to_dict()
        self.ledger.step(f"{stage}: {line_label(name, training)}")
        return result


def releases_code_words(name: str) -> bool:
    """Whether mechanism ``name`` releases opaque code words under a secret key (its guarantee is
    l-privacy: PIVOT), rather than text a reader or a text model can read.

    >>> releases_code_words("pivot"), releases_code_words("emp"), releases_code_words("")
    (True, False, False)
    """
    return bool(name) and name in MECHANISMS and MECHANISMS.entry(name).guarantee == "l-privacy"


def not_applicable(task: str, name: str, corpus_level: bool) -> str | None:
    """Why utility ``task`` does not apply to the releases of mechanism ``name``, or None: a
    mechanism that releases a new corpus (``corpus_level``) has no text-by-text pairs to compare,
    and no task applies to a release of opaque code words.

    >>> not_applicable("semantic-similarity", "redact", False) is None
    True
    >>> not_applicable("semantic-similarity", "synth", True)
    'synth releases a new corpus, and semantic-similarity compares each text with its own release'
    >>> not_applicable("unigram-cosine", "pivot", True).startswith("pivot releases opaque code words")
    True
    """
    if releases_code_words(name):
        return (f"{name} releases opaque code words (the owner keeps the key), and the utility tasks read a release "
                "as English text: on code words their numbers would measure nothing. A code-word release serves its "
                "owner, who decodes it exactly, and a third party who trains word embeddings on it (textveil pivot "
                "decode-vectors maps them back); neither is a task of this harness")
    if corpus_level and UTILITY_TASKS.entry(task).needs_aligned_pairs:
        return f"{name} releases a new corpus, and {task} compares each text with its own release"
    return None


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


def _empty_stats(point: _Point) -> dict[str, Any]:
    """Release statistics before any release: the unmodified text protects no word."""
    return {"words_protected": 0, "words_changed": 0} if point.released else {"words_protected": 0}


def _point_summary(parameter: str, point: dict[str, Any], releases: int) -> str:
    """One log line per point: each attack's top-1 per training, the risk, and utility."""
    spread = f" (mean of {releases} releases)" if releases > 1 else ""
    lines = attack_lines(point)
    show_training = len({training for _, training, _ in lines}) > 1
    risk = point["risk"]
    return f"{parameter} {point['label']}".strip() + f"{spread}: " + ", ".join(
        [f"{line_label(n, t) if show_training else n} top-1 {r['top1']:.3f}" for n, t, r in lines]
        + [f"risk {risk['top1']:.3f} by {line_label(risk['attack'], risk['training'])}"]
        + [f"{n} {u['value']:.3f}" for n, u in point["utility"].items()]
        + ([f"frequency analysis decodes {point['frequency']['tokens_recovered_max']:.3f} of tokens "
            f"(1/l = {point['frequency']['claim']:.3f})"]
           if (point.get("frequency") or {}).get("tokens_recovered_max") is not None else [])
    )


def _version() -> str:
    from textveil.version import __version__

    return __version__


def _describe(corpus: LabelledCorpus) -> dict[str, Any]:
    return {"name": corpus.name, "documents": len(corpus), "labels": len(corpus.label_set), "hash": corpus.content_hash()}
