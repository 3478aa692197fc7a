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
- no utility task applies (:func:`~textveil.evaluation.experiment_plan.not_applicable`): they read
  a release as English text.

The sweep runs here (:func:`run_experiment`, :class:`Sweep`); its parts live beside it: the plan
and its checks in :mod:`textveil.evaluation.experiment_plan`, the seeds of its releases in
:mod:`textveil.evaluation.sweep_seeds`, its timings and progress in
:mod:`textveil.evaluation.sweep_clock`, repeated releases combined in
:mod:`textveil.evaluation.combining`, and a code-word release's extra measures in
:mod:`textveil.evaluation.code_words`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from textveil.attacks.base import evaluate_attack
from textveil.attacks.registry import make_attack
from textveil.building import build_mechanism
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.evaluation.attack_cache import AttackCache, attack_key
from textveil.evaluation.code_words import (
    combine_frequency,
    frequency_analysis,
    joint_corpus,
    release_with_key,
    releases_code_words,
    split_joint_release,
)
from textveil.evaluation.combining import combine_attack_results, combine_release_stats, combine_utility_results
from textveil.evaluation.experiment_plan import (
    UNMODIFIED,
    EvaluationCorpora,
    ExperimentPlan,
    first_setting,
    not_applicable,
    swept_parameter,
    validate,
)
from textveil.evaluation.release_cache import ReleaseCache
from textveil.evaluation.releasing import cached_release, cached_release_written, release_corpus, with_changed_fraction
from textveil.evaluation.sweep_clock import SweepClock
from textveil.evaluation.sweep_seeds import point_seed, point_seeds, role_seeds
from textveil.evaluation.trainings import (
    SAME_KEY,
    SAME_KEY_RESULTS,
    TRAINING_KEYS,
    attack_lines,
    best_attack,
    line_label,
)
from textveil.evaluation.utility_tasks import UTILITY_TASKS, UtilityRunner
from textveil.machine import describe_machine
from textveil.mechanisms.base import CorpusRelease, Mechanism
from textveil.pii.stage import EntityStage
from textveil.pii.staged import as_attacker
from textveil.privacy.release_budget import ReleaseBudget, combined_figures
from textveil.privacy.secrets import Secret
from textveil.version import __version__


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
    clock = SweepClock(progress, text_progress)
    started = time.perf_counter()
    from textveil.embeddings.default_model import load_embeddings

    with clock.timed("load embeddings"):
        embeddings = load_embeddings(plan.embeddings, plan.mechanism_options.get("vocab_size"), log=say)
    with clock.timed("load entity stage"):
        stage = EntityStage(plan.entities)
    sweep = build_sweep(plan, corpora, embeddings, stage, ReleaseCache(cache_folder), clock, say)
    mechanism, parameter = sweep.mechanism, sweep.parameter
    if plan.attacker_model is not None:
        sweep.attacker_mechanism = _attacker_mechanism(plan, mechanism, embeddings, stage)
        say(f"release-trained attacks learn from the attacker's own model in {plan.attacker_model}")
    with clock.timed("fit attacks"):
        sweep.fit_clean_attacks()
    with clock.timed("prepare utility tasks"):
        sweep.prepare_utility()

    unmodified = [SweepPoint(UNMODIFIED, None, released=False)] if plan.include_unmodified else []
    points_spec = unmodified + release_points(plan)
    clock.total = sum(sweep.steps_per_point(point) for point in points_spec)
    points = [sweep.measure_point(point) for point in points_spec]

    clock.timings["total"] = round(time.perf_counter() - started, 3)
    has_utility_corpus = sweep.has_utility_corpus
    return {
        "textveil_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": describe_machine(),
        "plan": _shown_plan(plan, parameter),
        "mechanism": mechanism.fingerprint(),
        "corpora": {
            role: describe_corpus(corpus)
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
        "timings": clock.timings,
        "task_seconds": clock.task_seconds,
        "release_cache": {"hits": sweep.cache.hits, "misses": sweep.cache.misses,
                          "folder": str(cache_folder) if cache_folder else None},
    }


def fit_for_sweep(mechanism: Mechanism, plan: ExperimentPlan, corpora: EvaluationCorpora, clock: SweepClock,
                  say: Callable[[str], None], stage: str = "fit mechanism") -> None:
    """Fit a sweep's mechanism once, before any point: a trained model is released as trained;
    a model of each author learns from the known texts and their authors; any other learning
    mechanism from the clean texts no point releases."""
    if plan.model is not None:
        say(f"released with the model trained in {plan.model} (training data {mechanism.fingerprint()['training_data']})")
    elif mechanism.fit_uses_labels:  # a model of each author: on the known texts and their authors
        known = corpora.risk_known
        say(f"fitting mechanism {plan.mechanism} on {len(known)} known texts of {len(known.label_set)} authors")
        with clock.timed(stage):
            mechanism.fit(known.texts, known.labels)
    elif mechanism.learns:  # once per sweep, on clean training texts only: never on the released ones
        training = _training_texts(corpora)
        say(f"fitting mechanism {plan.mechanism} on {len(training)} training texts")
        with clock.timed(stage):
            mechanism.fit(training)


def build_sweep(plan: ExperimentPlan, corpora: EvaluationCorpora, embeddings: Any, stage: EntityStage,
                cache: ReleaseCache, clock: SweepClock, say: Callable[[str], None], *, build_stage: str | None = None,
                fit_stage: str = "fit mechanism") -> Sweep:
    """The sweep of ``plan``'s mechanism: built once through the entity ``stage`` (at the grid's
    first value, with the plan's trained model), fitted once (:func:`fit_for_sweep`), its
    release-trained attacks learning from what the attacker would release with it
    (:func:`~textveil.pii.staged.as_attacker`). ``build_stage`` and ``fit_stage`` name those
    steps in the clock's timings (building is timed only where ``build_stage`` is given)."""
    with clock.timed(build_stage) if build_stage is not None else nullcontext():
        mechanism = build_mechanism(plan.mechanism, plan.mechanism_options, embeddings, entities=stage,
                                    model=plan.model, then=plan.then, **first_setting(plan))
    fit_for_sweep(mechanism, plan, corpora, clock, say, stage=fit_stage)
    sweep = Sweep(plan, corpora, embeddings, mechanism, swept_parameter(plan), cache, clock, say)
    sweep.attacker_mechanism = as_attacker(mechanism, plan.seed)
    return sweep


def release_points(plan: ExperimentPlan) -> list[SweepPoint]:
    """The released points of a sweep: one for each value of the grid, or the mechanism's one
    release where it has no parameter to sweep (its grid is empty: :func:`validate`)."""
    return [SweepPoint(f"{float(v):g}", float(v)) for v in plan.grid] or [SweepPoint(plan.mechanism, None)]


def _attacker_mechanism(plan: ExperimentPlan, mechanism: Mechanism, embeddings: Any, stage: EntityStage) -> Mechanism:
    """The attacker's own trained model: it must be the release's mechanism with the same settings."""
    assert plan.attacker_model is not None
    attacker = build_mechanism(plan.mechanism, plan.mechanism_options, embeddings, entities=stage,
                               model=plan.attacker_model, then=plan.then, **first_setting(plan))
    ours, theirs = mechanism.fingerprint()["parameters"], attacker.fingerprint()["parameters"]
    differing = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
    if differing:
        raise InvalidParameterError(f"the attacker's model in '{plan.attacker_model}' was trained with other "
                                    f"{', '.join(differing)}: train it with the release's settings")
    return attacker


@dataclass(frozen=True)
class SweepPoint:
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
    budget: ReleaseBudget | None = None
    """What the Guarantees of the judged texts' release state (None: not known, or no Guarantee each)."""


class Sweep:
    """The state a sweep shares between its points: corpora, embeddings, the mechanism (fitted
    once), fitted attacks, prepared utility tasks, the release cache and the clock."""

    def __init__(self, plan: ExperimentPlan, corpora: EvaluationCorpora, embeddings: Any, mechanism: Mechanism,
                 parameter: str | None, cache: ReleaseCache, clock: SweepClock, say: Callable[[str], None]) -> None:
        self.plan, self.corpora, self.embeddings, self.cache, self.clock, self.say = (
            plan, corpora, embeddings, cache, clock, say)
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
            with self.clock.timed(f"fit {name}", self.clock.task_seconds):
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
            with self.clock.timed(f"prepare {name}", self.clock.task_seconds):
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

    def trainings_at(self, point: SweepPoint) -> list[str]:
        """The trainings measured at a point: the unmodified text is measured once, clean."""
        return list(self.plan.trainings) if point.released else ["clean"]

    def same_key_at(self, point: SweepPoint) -> bool:
        """Whether the same-key training is measured at a point (a keyed mechanism's releases)."""
        return self.keyed and self.plan.same_key and point.released

    def steps_per_point(self, point: SweepPoint) -> int:
        releases = self.plan.repeats if point.released else 1
        trainings = self.trainings_at(point)
        per_release = 1 + len(self.plan.attacks) * len(trainings) + ("release" in trainings) + len(self.runners)
        if self.keyed and point.released:  # frequency analysis, and the same-key release and attacks
            per_release += 1 + (1 + len(self.plan.attacks)) * self.same_key_at(point)
        return releases * per_release

    def seeds_at(self, point: SweepPoint) -> list[int | None]:
        """The seed of each release of a point (one per repeat). A mechanism without a swept
        parameter seeds its one point as the value 0 would be; the unmodified text has no
        randomness: one measurement says all there is."""
        seed_value = point.value if point.value is not None else (0.0 if point.released else None)
        return [point_seed(self.plan.seed, seed_value, repeat)
                for repeat in range(self.plan.repeats if point.released else 1)]

    def cached_budget(self, point: SweepPoint) -> dict[str, Any] | None:
        """The budget figures of a point's judged texts (the released unknown texts), read from
        the releases the cache holds, nothing released; None where it does not hold them all or
        they were kept without a budget (the figures then read "not recorded")."""
        budgets = []
        for seed in self.seeds_at(point):
            mechanism = self.mechanism.with_params(**self.changes_at(point, role_seeds(seed)["risk"]))
            released = cached_release(mechanism, self.corpora.risk_unknown, self.cache)
            budgets.append(None if released is None else released.budget)
        return combined_figures(budgets)

    def release_digest(self, point: SweepPoint) -> str:
        """A digest of what a point's releases are made by: the mechanism's fingerprint at each of
        its seeds (its code's choices, the model, the vocabulary). A stored point whose digest
        differs was measured on other releases (:func:`textveil.evaluation.comparison.run_comparison`
        measures it again)."""
        from textveil.evaluation.release_cache import release_digest

        return release_digest([self.mechanism.with_params(**self.changes_at(point, role_seeds(seed)["risk"]))
                               .fingerprint() for seed in self.seeds_at(point)])

    def releases_written(self, point: SweepPoint) -> float | None:
        """When the last of a point's judged releases (as made now) was cached; None if one is not."""
        times = [cached_release_written(self.mechanism.with_params(**self.changes_at(point, role_seeds(seed)["risk"])),
                                        self.corpora.risk_unknown, self.cache) for seed in self.seeds_at(point)]
        return None if any(t is None for t in times) else max(t for t in times if t is not None)

    def measurable_from_cache(self, point: SweepPoint) -> bool:
        """Whether measuring a point again would release nothing: its judged, utility and known
        texts' releases are all cached (a keyed release never is: its key is not kept)."""
        if not point.released:
            return True
        if self.keyed:
            return False
        needs = [(self.mechanism, self.corpora.risk_unknown, "risk")]
        if self.has_utility_corpus:
            needs.append((self.mechanism, self.utility_test, "utility"))
        if "release" in self.trainings_at(point):
            needs.append((self.attacker_mechanism, self.corpora.risk_known, "known"))
        return all(cached_release(mechanism.with_params(**self.changes_at(point, role_seeds(seed)[role])), corpus,
                                  self.cache) is not None
                   for seed in self.seeds_at(point) for mechanism, corpus, role in needs)

    def measure_point(self, point: SweepPoint) -> dict[str, Any]:
        plan = self.plan
        seeds = self.seeds_at(point)
        result: dict[str, Any] = {"label": point.label, "parameter": point.value, "seed": seeds[0], "seconds": {}}
        if point.released:
            result["release_digest"] = self.release_digest(point)
        if len(seeds) > 1:
            result["seeds"] = seeds
        measured = [self.measure_release(point, seed, result["seconds"]) for seed in seeds]
        result["release"] = combine_release_stats([m.release for m in measured])
        if point.released:  # the budget of the judged texts' releases, beside their risk
            result["budget"] = combined_figures(m.budget for m in measured)
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

    def measure_release(self, point: SweepPoint, seed: int | None, seconds: dict[str, float]) -> _Measurement:
        """Release the point once (its unknown, utility and, for release training, known
        texts), score every attack under every training and every utility task on it."""
        stage = f"{self.parameter} {point.label}" if self.parameter else point.label
        clock, books = self.clock, (self.clock.timings, seconds)
        seeds = role_seeds(seed)
        release_stats = _empty_stats(point)
        key = None
        with clock.timed("release", *books):
            if self.keyed and point.released:
                # encoded here, never read from the cache: the key (in memory only) would not be there
                keyed = self.mechanism.with_params(**self.changes_at(point, seeds["risk"]))
                released_risk, key = release_with_key(keyed, self.corpora.risk_unknown, release_stats)
            else:
                released_risk = self.release(self.corpora.risk_unknown, point, seeds["risk"], release_stats,
                                             stage=f"{stage}: releasing the unknown texts")
            # a keyed release has no utility task to serve: its utility texts are not encoded
            released_utility = (self.release(self.utility_test, point, seeds["utility"], release_stats,
                                             stage=f"{stage}: releasing the utility texts")
                                if self.has_utility_corpus and not (self.keyed and not self.runners)
                                else released_risk)
        clock.step(f"{stage}: released")
        measurement = _Measurement({}, {}, with_changed_fraction(release_stats), budget=released_risk.budget)
        unknown_labels = released_risk.labels if released_risk.labels is not None else self.corpora.risk_unknown.labels
        if key is not None:
            with clock.timed("frequency analysis", *books), clock.timed("frequency analysis", clock.task_seconds):
                measurement.frequency = frequency_analysis(released_risk, key, self.corpora.risk_known.texts,
                                                           self.plan.mechanism_options.get("part_size"))
            clock.step(f"{stage}: frequency analysis")

        if "clean" in self.trainings_at(point):
            with clock.timed("attacks", *books):
                measurement.attacks["clean"] = {
                    name: self.score(name, attack, released_risk.texts, unknown_labels, "clean", stage)
                    for name, attack in self.clean_attacks.items()
                }
        if "release" in self.trainings_at(point):
            known_stats = _empty_stats(point)
            with clock.timed("release known texts", *books):
                released_known = self.release(self.corpora.risk_known, point, seeds["known"], known_stats,
                                              self.attacker_mechanism, stage=f"{stage}: releasing the known texts")
            clock.step(f"{stage}: released known texts")
            measurement.known_release = with_changed_fraction(known_stats)
            with clock.timed("attacks (release-trained)", *books):
                measurement.attacks["release"] = {
                    name: self.score(name, self.fit_release_trained(name, released_known), released_risk.texts,
                                     unknown_labels, "release", stage)
                    for name in self.plan.attacks
                }
        if self.same_key_at(point):
            measurement.attacks[SAME_KEY], measurement.same_key_release = self.measure_same_key(
                point, seeds[SAME_KEY], stage, books)

        with clock.timed("utility", *books):
            for name, runner in self.runners.items():
                with clock.timed(f"measure {name}", clock.task_seconds):
                    measurement.utility[name] = runner.measure(
                        released_utility.texts, None if released_utility.aligned else released_utility.labels)
                clock.step(f"{stage}: {name}")
        return measurement

    def release(self, corpus: LabelledCorpus, point: SweepPoint, seed: int | None, stats: dict[str, Any],
                mechanism: Mechanism | None = None, stage: str = "releasing") -> CorpusRelease:
        """A corpus released at one point (the unmodified point is the text itself) by the sweep's
        mechanism (or ``mechanism``), its statistics added to ``stats`` whether it was released
        now or read from the cache; its texts told to the clock as ``stage`` goes."""
        if not point.released:
            return CorpusRelease(list(corpus.texts), list(corpus.labels), True, {})
        hits = self.cache.hits
        counted = self.clock.releasing(stage, len(corpus))
        released = release_corpus((mechanism or self.mechanism).with_params(**self.changes_at(point, seed)), corpus,
                                  self.cache, progress=counted)
        if counted is not None:
            counted.finish()
        for key, count in released.stats.items():
            stats[key] = stats.get(key, 0) + count
        # how many of the point's releases were read back: their seconds are not release speed
        stats["read_from_cache"] = stats.get("read_from_cache", 0) + self.cache.hits - hits
        return released

    def changes_at(self, point: SweepPoint, seed: int | None) -> dict[str, Any]:
        """The parameters a release at ``point`` changes: its seed, and the swept parameter's value."""
        changes: dict[str, Any] = {"seed": seed}
        if self.parameter is not None:
            changes[self.parameter] = point.value
        return changes

    def measure_same_key(self, point: SweepPoint, seed: int | None, stage: str, books: tuple[dict[str, float], ...]
                         ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        """The same-key training: the known and unknown texts encoded together under one key (one
        corpus release, :func:`~textveil.evaluation.code_words.joint_corpus`); each attack fitted on
        the known texts' code words and scored on the unknown texts' code words of that release.
        Returns the results and the release's stats."""
        known = self.corpora.risk_known
        order_seed, release_seed = point_seeds(seed, 2)
        joint, order = joint_corpus(known, self.corpora.risk_unknown, order_seed)
        stats = _empty_stats(point)
        with self.clock.timed("release known and unknown texts under one key", *books):
            released = self.release(joint, point, release_seed, stats)
        self.clock.step(f"{stage}: released known and unknown texts under one key")
        known_texts, known_labels, unknown_texts, unknown_labels = split_joint_release(released, joint, order,
                                                                                       len(known))
        results = {}
        with self.clock.timed("attacks (same-key)", *books):
            for name in self.plan.attacks:
                with self.clock.timed(f"fit {line_label(name, SAME_KEY)}", self.clock.task_seconds):
                    attack = self.fit_attack(name, known_texts, known_labels)
                results[name] = self.score(name, attack, unknown_texts, unknown_labels, SAME_KEY, stage)
        return results, with_changed_fraction(stats)

    def fit_release_trained(self, name: str, released_known: CorpusRelease) -> Any:
        with self.clock.timed(f"fit {line_label(name, 'release')}", self.clock.task_seconds):
            return self.fit_attack(name, released_known.texts, released_known.labels)

    def score(self, name: str, attack: Any, released_unknown: list[str], labels: list[str], training: str,
              stage: str) -> dict[str, Any]:
        """Top-k identification by a fitted attack of the released unknown texts' authors."""
        task = line_label(name, training) if training != "clean" else name
        plan = self.plan
        with self.clock.timed(f"attack {task}", self.clock.task_seconds):
            # fit=False: the attack is already fitted, so the known texts passed are not read
            result = evaluate_attack(
                attack, [], [], released_unknown, labels,
                top_k=plan.top_k, collapse_per_label=plan.collapse_per_label, fit=False,
            ).to_dict()
        self.clock.step(f"{stage}: {line_label(name, training)}")
        return result


def _empty_stats(point: SweepPoint) -> dict[str, Any]:
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


def describe_corpus(corpus: LabelledCorpus) -> dict[str, Any]:
    return {"name": corpus.name, "documents": len(corpus), "labels": len(corpus.label_set), "hash": corpus.content_hash()}
