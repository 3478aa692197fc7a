"""Compare release mechanisms on one split: the same attacks, the same utility measures, one map.

A data steward's question is which mechanism, at which setting, gives readers the most while
the writers stay hidden. :func:`run_comparison` answers it on one labelled corpus: every
mechanism of the plan, at every setting of its grid, releases the same unknown texts (and, for
the release-trained attacks, the same known texts, with another seed); every release is
attacked by the same attacks under both trainings (the risk is the best of them) and measured
by the same utility tasks. Each (mechanism, setting) is one point of
:mod:`textveil.evaluation.frontier`'s risk-utility frontier.

A mechanism that encodes a corpus under one key (PIVOT) is measured as
:mod:`textveil.evaluation.experiment` measures it: a third, same-key training and frequency
analysis beside the attacks; no utility task applies to its code words, so it stands in the
table with its risk and is off every utility axis of the frontier (never given a utility number).

Work is shared and kept:

- the clean-trained attacks are fitted once for every mechanism, and the utility tasks
  prepared once (the originals encoded once, their perplexity computed once);
- releases go to the release cache (:mod:`textveil.evaluation.release_cache`), fitted attacks
  to the attack cache (:mod:`textveil.evaluation.attack_cache`), and every finished point to
  a point file: run the same comparison again after an interruption and it measures only the
  points it had not finished (nothing is released or fitted again);
- a mechanism whose points are all finished is not even built or fitted (unless a point was
  stored before the budget figures were kept: the mechanism is then built, a network never
  trained, to read its releases' budget back from the release cache, or to measure the point
  again where the cache cannot show it);
- a point is looked up again just before it is measured, so two processes may share the work
  of one comparison (each given some of its mechanisms, the same corpora, seed, attacks and
  utility tasks): the full comparison then reads every point back.

A point's file is keyed by what it depends on: the corpora, the mechanism and its settings
(a trained model by its manifest's digest), the seed, the attacks, trainings and utility
tasks, and the textveil version. A secret option is keyed by its digest only.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from textveil.errors import InvalidParameterError
from textveil.evaluation.attack_cache import AttackCache
from textveil.evaluation.code_words import releases_code_words
from textveil.evaluation.compared_mechanism import ComparedMechanism, _shown, parse_compared_mechanism  # noqa: F401
from textveil.evaluation.experiment import Sweep, SweepPoint, build_sweep, describe_corpus, release_points
from textveil.evaluation.experiment_plan import (
    UNMODIFIED,
    EvaluationCorpora,
    ExperimentPlan,
    not_applicable,
    validate,
)
from textveil.evaluation.comparison_state import PointStore, budget_readable, rebuildable, why_measured_again
from textveil.evaluation.release_cache import ReleaseCache
from textveil.evaluation.sweep_clock import SweepClock
from textveil.evaluation.time_estimate import RunEstimate, authors_within, estimate_run
from textveil.evaluation.time_pilot import Pilot, run_pilot
from textveil.evaluation.time_plan import Counts, PointPlan, PointTarget, SharedPlan, attack_cache_holds, plan_point
from textveil.evaluation.trainings import TRAININGS
from textveil.evaluation.utility_tasks import UTILITY_TASKS
from textveil.machine import describe_machine
from textveil.mechanisms.registry import MECHANISMS
from textveil.pii.stage import EntityOptions, EntityStage
from textveil.privacy.release_budget import figures_of_kind
from textveil.privacy.secrets import Secret
from textveil.version import __version__

# The attacks every release meets unless told otherwise: linear SVMs on character 3-grams and
# on word unigrams, the two feature sets the authorship literature finds strongest for short
# texts (and the best single attacks in textveil's earlier reports), and the length attack, the
# floor of any release that keeps each text's length. Both SVMs fit in about a minute on 10,000
# posts on 2 cores; the ensemble is stronger by a point or two and ten times slower. Beside them the
# content-only attack, topic-svm (content words only): what the subject alone gives away, so that
# every report shows the risk apart from what no release that keeps the meaning can remove.
DEFAULT_COMPARE_ATTACKS = ("char3-svm", "word1-svm", "length", "topic-svm")
# Meaning, fluency and the tasks a corpus has labels for; a task whose labels the corpora lack
# (attribute-f1 without --attribute-field, topic-fasttext without --utility-corpus) is skipped
# with a note.
DEFAULT_COMPARE_UTILITY = ("semantic-similarity", "fluency", "sentiment-cosine", "attribute-f1", "topic-fasttext")
# "At a risk of at most r, the most useful release is ...": the r the report answers for.
DEFAULT_THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.5)
# What a keyed release's point holds besides the attacks (its key's part): a point stored without
# it (before the same-key training and frequency analysis) is measured again.
KEYED_MEASURES = "same-key training, frequency analysis (exact, known, wordfreq)"




@dataclass
class ComparisonPlan:
    """What to compare and how: the mechanisms, and the attacks and utility tasks every release meets."""

    mechanisms: list[ComparedMechanism]
    attacks: list[str] = field(default_factory=lambda: list(DEFAULT_COMPARE_ATTACKS))
    utility: list[str] = field(default_factory=lambda: list(DEFAULT_COMPARE_UTILITY))
    trainings: list[str] = field(default_factory=lambda: list(TRAININGS))
    seed: int | None = None
    top_k: int = 10
    collapse_per_label: bool = False
    embeddings: str = "default"
    language_model: str | None = None
    thresholds: list[float] = field(default_factory=lambda: list(DEFAULT_THRESHOLDS))
    entities: EntityOptions = field(default_factory=EntityOptions)
    """The entity stage before every mechanism compared (one stage for all)."""
    same_key: bool = True
    """A keyed mechanism (pivot) is attacked too by attacks trained on known texts under the release's key."""
    reference: str | None = None
    """``LABEL:SETTING`` (``emp:10``): the release every other is tested against in pairs
    (McNemar); None: emp at 10 when the comparison holds it
    (:func:`textveil.evaluation.release_intervals.reference_release`)."""

    def sweep_plan(self, compared: ComparedMechanism) -> ExperimentPlan:
        """The sweep of one mechanism, with the comparison's shared settings."""
        return ExperimentPlan(
            mechanism=compared.name, grid=list(compared.grid), attacks=list(self.attacks), utility=list(self.utility),
            seed=self.seed, top_k=self.top_k, collapse_per_label=self.collapse_per_label,
            include_unmodified=False, embeddings=self.embeddings, mechanism_options=dict(compared.options),
            trainings=list(self.trainings), model=compared.model, language_model=self.language_model,
            entities=self.entities, same_key=self.same_key, then=tuple(compared.then))


def validate_comparison(plan: ComparisonPlan, corpora: EvaluationCorpora) -> None:
    """Every check that can fail, before any work: each mechanism's sweep, the thresholds, and
    no two mechanisms of the same name and options (their releases would be one and the same)."""
    if not plan.mechanisms:
        raise InvalidParameterError("no mechanism to compare; give at least one --mechanism, e.g. --mechanism emp:10,15")
    labels = [compared.label for compared in plan.mechanisms]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise InvalidParameterError(f"--mechanism {twice[0]} is given twice; give each mechanism once with all "
                                    "its values, e.g. emp:10,15,20")
    for compared in plan.mechanisms:
        validate(plan.sweep_plan(compared), corpora)
    if plan.reference is not None:
        label, _, setting = plan.reference.rpartition(":")
        if label not in labels or not setting:
            raise InvalidParameterError(f"--reference {plan.reference!r} names no release of the comparison; give "
                                        f"LABEL:SETTING with a compared mechanism, e.g. {labels[0]}:"
                                        f"{_shown(plan.mechanisms[0].grid[0]) if plan.mechanisms[0].grid else 'VALUE'}")
    for threshold in plan.thresholds:
        if not 0.0 < threshold <= 1.0:
            raise InvalidParameterError(f"risk threshold {threshold!r} is not in (0, 1]; give shares such as 0.1,0.2")


def _shown(value: Any) -> Any:
    """An option as results and keys show it: a secret as its digest only."""
    return str(value) if isinstance(value, Secret) else value


def _model_digest(model: str | None) -> str | None:
    """What a trained model or language model is keyed by: its manifest's digest, or the file's
    path, size and modification time (a model file is large; hashing it would cost more than
    the key is worth)."""
    if model is None:
        return None
    source = Path(model)
    manifest = source / "manifest.json"
    if manifest.is_file():
        return hashlib.sha256(manifest.read_bytes()).hexdigest()[:24]
    stat = source.stat() if source.exists() else None
    return f"{source.resolve()}:{stat.st_size}:{int(stat.st_mtime)}" if stat else str(source)


def point_key(plan: ComparisonPlan, corpora: EvaluationCorpora, compared: ComparedMechanism | None,
              value: float | None) -> str:
    """The digest a finished point is stored under: everything its measurement depends on."""
    payload = {
        "textveil": __version__, "seed": plan.seed, "attacks": plan.attacks, "utility": plan.utility,
        "trainings": plan.trainings, "top_k": plan.top_k, "collapse": plan.collapse_per_label,
        "embeddings": plan.embeddings, "language_model": _model_digest(plan.language_model),
        "corpora": [c.content_hash() if c is not None else None for c in (
            corpora.risk_known, corpora.risk_unknown, corpora.utility_train, corpora.utility_test)],
        "attributes": sorted((corpora.attributes or {}).items()),
        "entities": plan.entities.public(),
        "mechanism": None if compared is None else {
            "name": compared.name, "options": {k: _shown(v) for k, v in sorted(compared.options.items())},
            "model": _model_digest(compared.model), "value": value},
    }
    if compared is not None and compared.then:  # named only when given: earlier points keep their keys
        payload["mechanism"]["then"] = list(compared.then)
    if compared is not None and releases_code_words(compared.name):
        # what a keyed release is measured by besides the attacks (other mechanisms' keys stay as they were)
        payload["keyed"] = {"same_key": plan.same_key, "frequency": KEYED_MEASURES}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:24]


@dataclass
class _Planned:
    """One point of the comparison before it is measured: its mechanism, value and key."""

    compared: ComparedMechanism | None
    point: SweepPoint
    key: str
    corpus_level: bool = False


def run_comparison(
    corpora: EvaluationCorpora,
    plan: ComparisonPlan,
    *,
    state_folder: Path | None = None,
    release_cache_folder: Path | None = None,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    text_progress: Callable[[str, float, int], None] | None = None,
    estimate: bool = False,
    minutes: float | None = None,
    restrict: Callable[[int], EvaluationCorpora] | None = None,
) -> dict[str, Any]:
    """Release, attack and measure every (mechanism, setting) of ``plan`` on one split
    (``progress`` and ``text_progress`` as :func:`~textveil.evaluation.experiment.run_experiment`'s).

    ``state_folder`` keeps fitted attacks and finished points (a second run resumes from them);
    ``release_cache_folder`` keeps releases (shared with ``textveil evaluate``). Both are used
    only when the plan is seeded. Returns the results as plain data (the shape
    :mod:`textveil.evaluation.comparison_report` writes), the frontier included.

    ``estimate``: before the long work, time a pilot of every setting and tell (``log``) the
    expected seconds of each and of the whole run (:mod:`textveil.evaluation.time_estimate`); the
    results then hold them beside this run's measured ones (``"estimate"``). ``minutes`` (an
    estimate too): run on the most authors that fit, the corpora cut by ``restrict(K)`` to the first
    K (as ``--first-labels K`` loads them); without ``restrict`` it only advises. The pilot never
    changes a release: a seeded comparison gives the same results with and without it.
    """
    from textveil.evaluation.frontier import frontier_of
    from textveil.evaluation.release_intervals import with_intervals

    validate_comparison(plan, corpora)
    say = log or (lambda message: None)
    clock = SweepClock(progress, text_progress)
    started = time.perf_counter()
    seeded = plan.seed is not None
    store = PointStore(state_folder / "points" if state_folder else None, seeded)
    cache = ReleaseCache(release_cache_folder if seeded else None)
    attack_cache = AttackCache(state_folder / "attacks") if (state_folder and seeded) else None

    planned, finished = _planned_points(plan, corpora, store)
    if finished:
        say(f"resuming: {len(finished)} of {len(planned)} points already measured")

    shared: Sweep | None = None
    embeddings: Any = None
    stage: EntityStage | None = None  # one for every mechanism: each text goes through it once

    def loaded_embeddings() -> Any:
        """The embeddings every mechanism and attack shares, loaded when first needed."""
        nonlocal embeddings
        if embeddings is None:
            from textveil.embeddings.default_model import load_embeddings

            with clock.timed("load embeddings"):
                embeddings = load_embeddings(plan.embeddings, None, log=say)
        return embeddings

    def loaded() -> tuple[Any, EntityStage]:
        """The embeddings and the entity stage every mechanism shares, loaded when first needed."""
        nonlocal stage
        loaded_embeddings()
        if stage is None:
            with clock.timed("load entity stage"):
                stage = EntityStage(plan.entities)
        return embeddings, stage

    def shared_sweep() -> Sweep:
        """The clean-trained attacks and prepared utility tasks every mechanism shares: made
        when the first unfinished point needs them, never when every point is finished."""
        nonlocal shared
        if shared is None:
            loaded_embeddings()
            first = plan.mechanisms[0]
            sweep_plan = plan.sweep_plan(first)
            sweep_plan.include_unmodified = True
            shared = Sweep(sweep_plan, corpora, embeddings, _NoMechanism(), None, cache, clock, say)
            shared.attack_cache = attack_cache
            with clock.timed("fit attacks"):
                shared.fit_clean_attacks()
            with clock.timed("prepare utility tasks"):
                shared.prepare_utility(for_any_mechanism=True)
            clock.total = sum(_steps(shared, item) for item in planned if item.key not in finished)
        return shared

    prebuilt: dict[str, Sweep] = {}  # the mechanisms the estimate built: the run uses them
    estimated: RunEstimate | None = None

    def measured_again(item: _Planned) -> bool:
        """Whether the run will measure a stored point again (as its loop below decides):
        the estimate must not count it as read back."""
        compared = item.compared
        if compared is None or not rebuildable(compared, cache):
            return False
        if compared.label not in prebuilt:
            prebuilt[compared.label] = _built_sweep(plan, compared, corpora, cache, clock, say, *loaded())
        return why_measured_again(finished[item.key], prebuilt[compared.label], item.point,
                                  store.stored_at(item.key)) is not None

    def estimated_run(pilot: Pilot | None) -> tuple[RunEstimate, SharedPlan, list[PointPlan]]:
        """The run's estimate: each unfinished point's mechanism built (kept for the run) and,
        without a ``pilot``, piloted; finished points and cached releases cost nothing."""
        targets = []
        for item in planned[1:]:
            assert item.compared is not None
            done = item.key in finished and item.key not in again
            if not done and item.compared.label not in prebuilt:
                prebuilt[item.compared.label] = _built_sweep(plan, item.compared, corpora, cache, clock, say, *loaded())
            targets.append(PointTarget(_release_id(item.compared, item.point.value), item.compared.label,
                                       item.compared.name, item.corpus_level,
                                       None if done else prebuilt[item.compared.label], item.point, done))
        plans = [plan_point(target, cache, [name for name in plan.utility
                                            if not_applicable(name, target.name, target.corpus_level) is None])
                 for target in targets]
        pilot = pilot or run_pilot(targets, plans, corpora, plan.sweep_plan(plan.mechanisms[0]), loaded_embeddings(),
                                   log=say)
        known = corpora.risk_known
        fits = tuple(name for name in plan.attacks if attack_cache is None or not attack_cache_holds(
            attack_cache.folder, name, known.texts, known.labels, plan.seed, loaded_embeddings().name))
        shared_plan = SharedPlan(True, fits, tuple(pilot.tasks), planned[0].key not in finished, tuple(plan.attacks))
        return (estimate_run(pilot, shared_plan, plans, Counts.of(corpora, plan.collapse_per_label),
                             time.perf_counter() - started), shared_plan, plans)

    again: set[str] = set()  # stored points the run will measure again: not read back
    if estimate or minutes is not None:
        again = {item.key for item in planned[1:] if item.key in finished and measured_again(item)}
    if (estimate or minutes is not None) and len(finished) - len(again) < len(planned):
        estimated, shared_plan, point_plans = estimated_run(None)
        if minutes is not None:
            choice = authors_within(minutes, estimated, shared_plan, point_plans, corpora, plan.collapse_per_label,
                                    plan.attacks)
            if not choice.authors:
                raise InvalidParameterError(choice.message())
            say(choice.message(acting=restrict is not None))
            if choice.restricts and restrict is not None:
                corpora = restrict(choice.authors)
                validate_comparison(plan, corpora)
                planned, finished = _planned_points(plan, corpora, store)
                prebuilt.clear()  # built (and fitted) on the whole corpora
                estimated = estimated_run(estimated.pilot)[0]
            estimated.minutes = {**choice.to_dict(), "restricted": choice.restricts and restrict is not None}
        for line in estimated.lines():
            say(line)
    elif estimate or minutes is not None:
        say(f"estimate: all {len(planned)} points are read back; nothing to release or measure")

    measured: dict[str, dict[str, Any]] = {}
    read_back: set[str] = set()
    # the unmodified text first: the report's reference row and the length floor
    for compared, items in _by_mechanism(planned):
        # the mechanism built (and fitted) once, when first needed (or by the estimate)
        built: Sweep | None = prebuilt.get(compared.label) if compared is not None else None
        sweep: Sweep | None = None
        for item in items:
            # looked up again here, not only at the start: another process running a comparison
            # that shares this one's points may have finished it meanwhile
            done = finished.get(item.key) or store.get(item.key)
            if done is not None and compared is not None and rebuildable(compared, cache):
                built = built or _built_sweep(plan, compared, corpora, cache, clock, say, *loaded())
                why = why_measured_again(done, built, item.point, store.stored_at(item.key))
                if why is not None:
                    say(f"{compared.name} {item.point.label}: {why}")
                    done = None
                elif "release_digest" not in done:
                    done = {**done, "release_digest": built.release_digest(item.point)}
                    store.put(item.key, done)
            if done is not None and compared is not None and done.get("budget") is None and budget_readable(
                    compared, cache):
                built = built or _built_sweep(plan, compared, corpora, cache, clock, say, *loaded())
                budget = built.cached_budget(item.point)
                # a point whose releases cannot show their budget is measured again (its releases
                # too), so a report never reads "not recorded" where a fresh run would show figures
                done = None if budget is None else {**done, "budget": budget}
                if done is not None:
                    store.put(item.key, done)
            if done is not None:
                measured[item.key] = done
                read_back.add(item.key)
                continue
            if sweep is None:
                base = shared_sweep()
                if compared is None:
                    sweep = base
                else:
                    built = built or _built_sweep(plan, compared, corpora, cache, clock, say, *loaded())
                    sweep = _with_shared(built, base, compared, attack_cache)
            if item.key in finished:  # counted as read back when the total was set: measured again after all
                clock.total += _steps(shared_sweep(), item)
            point_started = time.perf_counter()
            point = sweep.measure_point(item.point)
            point["measure_seconds"] = round(time.perf_counter() - point_started, 3)
            store.put(item.key, point)
            measured[item.key] = point

    results = _assemble(plan, corpora, planned, measured, read_back)
    clock.timings["total"] = round(time.perf_counter() - started, 3)
    results["timings"] = clock.timings
    results["task_seconds"] = clock.task_seconds
    results["release_cache"] = {"hits": cache.hits, "misses": cache.misses}
    results["resume"] = {"points_read_back": len(read_back), "releases_read_back": cache.hits,
                         "attacks_read_back": attack_cache.hits if attack_cache else 0}
    results = with_intervals(results)
    results["frontier"] = frontier_of(results)
    if estimated is not None:
        # this run's own seconds beside the estimate (a point read back took none of them)
        spent = {_release_id(item.compared, item.point.value): 0.0 if item.key in read_back else float(
            measured[item.key].get("measure_seconds", 0.0)) for item in planned[1:] if item.compared is not None}
        unmodified = planned[0].key
        shared_spent = (clock.timings.get("fit attacks", 0.0) + clock.timings.get("prepare utility tasks", 0.0)
                        + (0.0 if unmodified in read_back else float(measured[unmodified].get("measure_seconds", 0.0))))
        results["estimate"] = estimated.to_dict(spent, shared_spent, clock.timings["total"])
        say(estimated.closing(clock.timings["total"]))
    return results


def _planned_points(plan: ComparisonPlan, corpora: EvaluationCorpora, store: PointStore
                    ) -> tuple[list[_Planned], dict[str, dict[str, Any]]]:
    """Every point of the comparison (the unmodified text first), and those the store holds."""
    planned = [_Planned(None, SweepPoint(UNMODIFIED, None, released=False), point_key(plan, corpora, None, None))]
    for compared in plan.mechanisms:
        corpus_level = bool(MECHANISMS.entry(compared.name).load().corpus_level)
        planned += [_Planned(compared, p, point_key(plan, corpora, compared, p.value), corpus_level)
                    for p in release_points(plan.sweep_plan(compared))]
    return planned, {item.key: point for item in planned if (point := store.get(item.key)) is not None}


def _release_id(compared: ComparedMechanism, value: float | None) -> str:
    """A release's id in the results: its label and setting, or the label alone without a parameter.

    >>> _release_id(ComparedMechanism("emp", [10.0]), 10.0), _release_id(ComparedMechanism("redact"), None)
    ('emp epsilon 10', 'redact')
    """
    entry = MECHANISMS.entry(compared.name)
    parameter = entry.swept.name if entry.swept is not None else None
    return f"{compared.label} {parameter} {value:g}" if (parameter and value is not None) else compared.label


class _NoMechanism:
    """Stands for a mechanism in the shared sweep, which releases nothing itself: its one point
    is the unmodified text."""

    corpus_level = False


def _by_mechanism(planned: list[_Planned]) -> list[tuple[ComparedMechanism | None, list[_Planned]]]:
    """The planned points grouped by mechanism, in plan order (the unmodified text first)."""
    groups: list[tuple[ComparedMechanism | None, list[_Planned]]] = []
    for item in planned:
        if groups and groups[-1][0] is item.compared:
            groups[-1][1].append(item)
        else:
            groups.append((item.compared, [item]))
    return groups


def _steps(shared: Sweep, item: _Planned) -> int:
    """Progress steps of one point: its releases, attacks and the utility tasks that apply."""
    name = item.compared.name if item.compared is not None else ""
    tasks = [task for task in shared.runners if not_applicable(task, name, item.corpus_level) is None]
    trainings = list(shared.plan.trainings) if item.point.released else ["clean"]
    steps = 1 + len(shared.plan.attacks) * len(trainings) + ("release" in trainings) + len(tasks)
    if item.point.released and releases_code_words(name):  # frequency analysis, the same-key release and attacks
        steps += 1 + (1 + len(shared.plan.attacks)) * shared.plan.same_key
    return steps


def _built_sweep(plan: ComparisonPlan, compared: ComparedMechanism, corpora: EvaluationCorpora, cache: ReleaseCache,
                 clock: SweepClock, say: Callable[[str], None], embeddings: Any, stage: EntityStage) -> Sweep:
    """One mechanism's sweep, built (and fitted, if it learns)."""
    return build_sweep(plan.sweep_plan(compared), corpora, embeddings, stage, cache, clock, say,
                       build_stage=f"build {compared.label}", fit_stage=f"fit {compared.label}")


def _with_shared(sweep: Sweep, base: Sweep, compared: ComparedMechanism, attack_cache: AttackCache | None) -> Sweep:
    """A mechanism's built sweep given the shared clean-trained attacks and the utility tasks
    that apply to it."""
    sweep.attack_cache = attack_cache
    sweep.clean_attacks = base.clean_attacks
    sweep.runners = {name: runner for name, runner in base.runners.items()
                     if not_applicable(name, compared.name, sweep.mechanism.corpus_level) is None}
    return sweep


def _release_entry(compared: ComparedMechanism, item: _Planned, point: dict[str, Any], read_back: bool,
                   prepared: list[str]) -> dict[str, Any]:
    """One release of the comparison as results hold it (see the report module for the shape)."""
    entry = MECHANISMS.entry(compared.name)
    parameter = entry.swept.name if entry.swept is not None else None
    value = item.point.value
    setting = f"{parameter} {value:g}" if (parameter and value is not None) else "default"
    skipped = {name: reason for name in prepared
               if (reason := not_applicable(name, compared.name, item.corpus_level)) is not None}
    return {
        "id": f"{compared.label} {setting}" if value is not None else compared.label,
        "mechanism": compared.label, "name": compared.name, "guarantee": entry.guarantee,
        "corpus_level": item.corpus_level, "parameter_name": parameter if value is not None else None,
        "parameter": value, "setting": setting, "options": {k: _shown(v) for k, v in compared.options.items()},
        "model": Path(compared.model).name if compared.model else None,
        "risk": point["risk"],
        # the epsilon its releases' Guarantees state, beside the risk; a kind without one says so
        "budget": point["budget"] if point.get("budget") is not None else figures_of_kind(entry.guarantee),
        "utility": point["utility"], "not_applicable": skipped,
        "seconds": point.get("measure_seconds"), "read_back": read_back, "point": point,
    }


def _assemble(plan: ComparisonPlan, corpora: EvaluationCorpora, planned: list[_Planned],
              measured: dict[str, dict[str, Any]], read_back: set[str]) -> dict[str, Any]:
    """The comparison's results from its measured points."""
    unmodified = measured[planned[0].key]
    measures: dict[str, dict[str, Any]] = {}
    for name, result in unmodified["utility"].items():
        measures[name] = {"metric": result.get("metric", name), "higher_is_better": result.get("higher_is_better", True),
                          "aligned_only": bool(UTILITY_TASKS.entry(name).needs_aligned_pairs),
                          "description": UTILITY_TASKS.entry(name).description}
    prepared = list(measures)
    releases = [_release_entry(item.compared, item, measured[item.key], item.key in read_back, prepared)
                for item in planned[1:] if item.compared is not None]
    length = unmodified.get("attacks", {}).get("length")
    by_stage: dict[str, float] = {}
    by_mechanism: dict[str, float] = {}
    for mechanism, point in [("unmodified text", unmodified)] + [(r["mechanism"], r["point"]) for r in releases]:
        for stage, seconds in point.get("seconds", {}).items():
            by_stage[stage] = round(by_stage.get(stage, 0.0) + seconds, 3)
        by_mechanism[mechanism] = round(by_mechanism.get(mechanism, 0.0) + point.get("measure_seconds", 0.0), 3)
    n_labels = len(corpora.risk_known.label_set)
    return {
        "kind": "comparison",
        "textveil_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": describe_machine(),
        "plan": {
            "attacks": plan.attacks, "utility": plan.utility, "trainings": plan.trainings, "seed": plan.seed,
            "top_k": plan.top_k, "collapse_per_label": plan.collapse_per_label, "embeddings": plan.embeddings,
            "language_model": Path(plan.language_model).name if plan.language_model else None,
            "thresholds": plan.thresholds, "entities": plan.entities.public(), "same_key": plan.same_key,
            "reference": plan.reference,
            "mechanisms": [{"name": s.name, "label": s.label, "grid": s.grid,
                            "options": {k: _shown(v) for k, v in s.options.items()},
                            "model": Path(s.model).name if s.model else None} for s in plan.mechanisms],
        },
        "corpora": {role: describe_corpus(corpus) for role, corpus in (
            ("risk_known", corpora.risk_known), ("risk_unknown", corpora.risk_unknown),
            ("utility_train", corpora.utility_train), ("utility_test", corpora.utility_test)) if corpus is not None},
        "chance": 1.0 / n_labels,
        "split": corpora.split,
        "floor": {"attack": "length", "top1": float(length["top1"])} if length else None,
        "utility_measures": measures,
        # what measuring every point cost, whichever run (or process) measured it: a resumed
        # run's own timings cover only what it did itself
        "measured_seconds": {"total": round(sum(by_mechanism.values()), 3), "by_stage": by_stage,
                             "by_mechanism": by_mechanism},
        "unmodified": unmodified,
        "releases": releases,
    }
