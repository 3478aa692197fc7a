"""How long a comparison (or an evaluation) will take, said before its long work starts.

A comparison of one language-model setting on 150 authors runs for half an hour or more on two
cores, and its progress bar tells the time left only as it goes. Before the long work,
:func:`run_pilot` times a small pilot of every (mechanism, setting) the run will measure, on the
run's own corpus, and :func:`estimate_run` turns it, with the counts of what the run will release,
fit and measure, into the expected seconds of each setting and of the whole run.

What is timed, and how it is carried over to the whole run:

- **releases**, by a pilot of each setting: the same texts for every setting, drawn from the
  judged texts stratified by length (one from each of as many equal strata of the texts sorted by
  length, so that the pilot's words per text are the corpus's), released in chunks of
  :data:`PILOT_FIRST_TEXTS`, then twice as many each time while the pilot has spent less than
  :data:`PILOT_TIME_SHARE` of the setting's estimated releases and :data:`PILOT_MOST_SECONDS`
  (a language model: 16 texts, then 32; emp: a few hundred in a few seconds, which matters: spaCy
  and emp work in batches, and 32 texts cost twice as much a word as 300). The largest chunk's
  seconds are counted **per input word**: the work of every mechanism grows with the words (emp
  draws a word for each word; a language model reads a prompt holding the text and writes about as
  many tokens as it reads), and a rate per word carries over to texts of another length, which a
  rate per text does not: the known texts of a cross-topic split, a utility corpus, or the first K
  authors of ``--minutes``. A mechanism's first release (a language model loaded, a network
  warmed) is timed apart, once, and left out of the rate: the run pays it once, in the pilot.
- **utility**, by a pilot too: each task prepared on a few of the pilot texts
  (:data:`UTILITY_PILOT_TEXTS`) and measured on each setting's release of them; seconds per word
  the task reads (all its texts, or a task's fixed sample: fluency reads at most ``sample_size``
  texts whatever the corpus). Language models and encoders are loaded by the pilot, once per
  process: the run finds them loaded.
- **attacks**, by a simple model calibrated by a pilot: each attack fitted on the known texts of
  the first :data:`ATTACK_PILOT_SHARE` of the authors and scored on their judged texts, its
  seconds taken as linear in the words (a linear SVM on n-grams fits in time about linear in the
  texts: 600 posts of 30 authors and 3,000 of 150 differ by 4.5 times). A release-trained fit
  is counted as a clean fit of the same words.

Nothing already done costs anything: a point already measured (read back from the comparison's
point store) costs nothing; a release the release cache holds costs nothing to release (it is
still attacked and measured when its point is not finished); a clean attack the attack cache
holds costs nothing to fit.

The estimate holds while the machine's load does: it says how many cores other processes kept busy
during the pilot, and results.json keeps that beside the load during the run (a language model's
two threads wait on each other at every step when another process takes a core: a setting can take
several times as long when a job starts beside it).

The pilot never changes the run's releases: its texts are released with a seed of its own
(:func:`pilot_seed`, spawned from the run's seed under :data:`PILOT_TAG`, never one the run
releases with), through a copy of the mechanism (``with_params``: the run's mechanism and its
random stream are not touched), and not kept in the release cache; the attacks are fitted apart
from the attack cache. A seeded run gives the same results with and without the estimate
(``tests/test_time_estimate.py``). What the pilot leaves to the run, so that little of it is
wasted: the loaded models, the built mechanisms (a comparison reuses them) and the entity stage's
screening of the pilot texts. Its releases themselves cannot be reused: a mechanism draws its
texts from one random stream in order, so a pilot text's release is not the text the run releases.

``--minutes N`` (:func:`authors_within`): the number of authors, in file order, whose run the
estimate fits in N minutes (every cost but the loading and the pilot counted again on the first K
authors' texts), and the 95% interval of a risk measured on that many judged authors (or texts).
The command runs on them (as ``--first-labels K`` would); the library only advises unless it is
given a way to cut the corpora.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.evaluation.experiment_plan import EvaluationCorpora, ExperimentPlan, not_applicable
from textveil.evaluation.release_cache import ReleaseCache
from textveil.evaluation.time_plan import (
    Counts,
    INTERVAL_RISKS,
    PointPlan,
    PointTarget,
    RELEASE_ROLES,
    SharedPlan,
    duration,
    plan_point,
)
from textveil.evaluation.time_pilot import (
    AttackPilot,
    Pilot,
    SettingPilot,
    TaskPilot,
    cpu_reading,
    others_busy,
    run_pilot,
)


@dataclass
class RunEstimate:
    """The expected seconds of a run: what it spent before the estimate (loading, building, the
    pilot), its shared work, and each point's releases, attacks and utility."""

    spent: float
    shared: dict[str, float]
    points: list[tuple[PointPlan, dict[str, float]]]
    pilot: Pilot
    counts: Counts
    minutes: dict[str, Any] | None = None

    @property
    def remaining(self) -> float:
        """Seconds expected after the estimate."""
        return sum(self.shared.values()) + sum(sum(parts.values()) for _, parts in self.points)

    @property
    def total(self) -> float:
        return self.spent + self.remaining

    def others_busy_since(self) -> float | None:
        """Cores other processes (and the host) kept busy since the pilot, on average."""
        return others_busy(self.pilot.end_reading, cpu_reading())

    def closing(self, taken: float) -> str:
        """The line after the run: the estimate beside the time taken, and the load in each."""
        line = f"estimated {duration(self.total)}, took {duration(taken)}"
        if self.pilot.others_busy is not None:
            line += (f" (other processes kept {self.pilot.others_busy:.1f} cores busy during the pilot, "
                     f"{self.others_busy_since() or 0.0:.1f} since)")
        return line

    def by_release(self) -> dict[str, float]:
        return {plan.release_id: sum(parts.values()) for plan, parts in self.points}

    def lines(self) -> list[str]:
        """What the run says before its long work (one line each)."""
        pilot = self.pilot
        head = (f"estimate: about {duration(self.total)} in all, {duration(self.remaining)} from now "
                f"({duration(self.spent)} spent loading, building and on the pilot")
        head += ")"
        lines = [head]
        if pilot.others_busy is not None:
            import os

            lines.append(f"  timed while other processes kept {pilot.others_busy:.1f} of {os.cpu_count()} cores busy: "
                         "it holds while that stays so")
        if any(self.shared.values()):
            shown = ", ".join(f"{name} {duration(seconds)}" for name, seconds in self.shared.items() if seconds)
            lines.append(f"  shared work: {duration(sum(self.shared.values()))} ({shown})")
        for plan, parts in self.points:
            if plan.finished:
                lines.append(f"  {plan.release_id}: read back, nothing to do")
                continue
            cached = sum(plan.cached.values())
            note = f"; {cached:.3g} of {sum(plan.releases.values())} releases read from the cache" if cached else ""
            setting = pilot.settings.get(plan.release_id)
            timed = f" (timed on {max(setting.chunks, key=lambda c: c[1])[0]} texts)" if setting and setting.chunks else ""
            lines.append(f"  {plan.release_id}: {duration(sum(parts.values()))} (releases {duration(parts['release'])}"
                         f"{timed}, attacks {duration(parts['attacks'])}, utility {duration(parts['utility'])}{note})")
        if pilot.not_piloted:
            lines.append("  not timed (counted as nothing): " + "; ".join(
                f"{name}: {why}" for name, why in pilot.not_piloted.items()))
        return lines

    def to_dict(self, measured: dict[str, float] | None = None, measured_shared: float | None = None,
                measured_total: float | None = None) -> dict[str, Any]:
        """The estimate as results.json keeps it (``"estimate"``), beside what was measured when given:
        per release the seconds this run spent measuring it (a point read back: 0)."""
        expected = {plan.release_id: round(sum(parts.values()), 3) for plan, parts in self.points}
        found: dict[str, Any] = {
            "method": ("pilot: each setting releases the same pilot texts (stratified by length) with a seed of "
                       "its own, seconds per input word; utility tasks prepared and measured on a few of them, "
                       "seconds per word read; attacks fitted on a fifth of the authors, linear in words; "
                       "finished points and cached releases cost nothing"),
            "pilot": self.pilot.to_dict(),
            "spent_seconds": round(self.spent, 3),
            "expected_seconds": {"total": round(self.total, 3), "remaining": round(self.remaining, 3),
                                 "shared": round(sum(self.shared.values()), 3),
                                 "shared_parts": {k: round(v, 3) for k, v in self.shared.items()},
                                 "by_release": expected},
            "releases": [{"id": plan.release_id, "mechanism": plan.mechanism, "read_back": plan.finished,
                          "expected_seconds": expected[plan.release_id],
                          "parts": {k: round(v, 3) for k, v in parts.items()},
                          "releases": sum(plan.releases.values()), "releases_cached": round(sum(plan.cached.values()), 3)}
                         for plan, parts in self.points],
        }
        if measured is not None:
            found["others_busy_cores"] = {"pilot": self.pilot.others_busy, "run": self.others_busy_since()}
            for entry in found["releases"]:
                entry["measured_seconds"] = round(measured.get(entry["id"], 0.0), 3)
            total = measured_total if measured_total is not None else 0.0
            found["measured_seconds"] = {
                "total": round(total, 3), "remaining": round(total - self.spent, 3),
                "shared": None if measured_shared is None else round(measured_shared, 3),
                "by_release": {k: round(v, 3) for k, v in measured.items()}}
        if self.minutes is not None:
            found["minutes"] = self.minutes
        return found


def point_seconds(pilot: Pilot, plan: PointPlan, counts: Counts) -> dict[str, float]:
    """A point's expected seconds, by part: its releases (the setting's rate times the words it
    releases itself), its attacks (each attack's fits and scorings, linear in words) and its utility
    (each task's seconds on the pilot release, times the words it reads over the pilot's).

    >>> pilot = Pilot(2, 10, 2, settings={"emp 10": SettingPilot(2, 100, 1.0, {"sim": 0.5})},
    ...               tasks={"sim": TaskPilot(0.2, 100, None, 0.0)},
    ...               attacks={"svm": AttackPilot(0.1, 100, 0.01, 100)})
    >>> plan = PointPlan("emp 10", "emp", False, 1, {"unknown": 1, "known": 1}, {}, fits=1, scorings=2, tasks=("sim",))
    >>> parts = point_seconds(pilot, plan, Counts(20, 2000, 10, 1000, 10, 1000, 5, 5))
    >>> {k: round(v, 3) for k, v in parts.items()}  # 3000 words at 0.01 s; a fit on 2000, 2 scorings on 1000
    {'release': 30.0, 'attacks': 2.2, 'utility': 5.0}
    """
    if plan.finished:
        return {"release": 0.0, "attacks": 0.0, "utility": 0.0}
    rate = pilot.rate(plan.release_id, plan.mechanism)
    words = sum((plan.releases.get(role, 0) - plan.cached.get(role, 0)) * counts.words(role)
                for role in RELEASE_ROLES)
    attacks = sum(a.fit_per_word * counts.known_words * plan.fits + a.score_per_word * counts.unknown_words
                  * plan.scorings for a in pilot.attacks.values())
    setting = pilot.settings.get(plan.release_id)
    utility = 0.0
    for name in plan.tasks:
        task = pilot.tasks.get(name)
        seconds = None if setting is None else setting.utility_seconds.get(name)
        if task is not None and seconds is not None and task.words:
            utility += plan.repeats * seconds * counts.words_read(task.sample_size) / task.words
    return {"release": rate * words, "attacks": attacks, "utility": utility}


def shared_seconds(pilot: Pilot, shared: SharedPlan, counts: Counts) -> dict[str, float]:
    """The run's shared work: the clean attacks fitted (those the attack cache lacks), the utility
    tasks prepared, the unmodified text measured (its clean attacks scored, each task measured).

    >>> pilot = Pilot(2, 10, 2, tasks={"sim": TaskPilot(0.2, 100, None, 0.01)},
    ...               attacks={"svm": AttackPilot(0.1, 100, 0.01, 100)})
    >>> shared = SharedPlan(True, ("svm",), ("sim",), True, ("svm",))
    >>> {k: round(v, 3) for k, v in shared_seconds(pilot, shared, Counts(20, 2000, 10, 1000, 10, 1000, 5, 5)).items()}
    {'fit attacks': 2.0, 'prepare utility': 2.0, 'unmodified text': 0.2}
    """
    if not shared.needed:
        return {}
    fits = sum(pilot.attacks[name].fit_per_word * counts.known_words for name in shared.clean_fits
               if name in pilot.attacks)
    prepare = unmodified = 0.0
    for name in shared.tasks:
        task = pilot.tasks.get(name)
        if task is not None and task.words:
            scale = counts.words_read(task.sample_size) / task.words
            prepare += task.prepare_seconds * scale
            unmodified += task.unmodified_seconds * scale if shared.unmodified else 0.0
    if shared.unmodified:
        unmodified += sum(pilot.attacks[name].score_per_word * counts.unknown_words for name in shared.attacks
                          if name in pilot.attacks)
    return {"fit attacks": fits, "prepare utility": prepare, "unmodified text": unmodified}


def estimate_run(pilot: Pilot, shared: SharedPlan, plans: Sequence[PointPlan], counts: Counts,
                 spent: float) -> RunEstimate:
    """The run's expected seconds from its ``pilot`` and what it will do; ``spent``: the seconds it
    spent before (loading, building, the pilot)."""
    return RunEstimate(spent, shared_seconds(pilot, shared, counts),
                       [(plan, point_seconds(pilot, plan, counts)) for plan in plans], pilot, counts)


# -- fitting a time -----------------------------------------------------------------------------


def counts_of_first(corpora: EvaluationCorpora, authors: int, collapse_per_label: bool) -> Counts:
    """The counts of ``corpora`` cut to its first ``authors`` authors (in order of first appearance,
    as ``--first-labels`` reads a corpus).

    >>> known = LabelledCorpus(["a b", "c d e", "f"], ["x", "y", "z"])
    >>> unknown = LabelledCorpus(["g h", "i", "j k"], ["x", "y", "z"])
    >>> counts_of_first(EvaluationCorpora(known, unknown), 2, True)
    Counts(known_texts=2, known_words=5, unknown_texts=2, unknown_words=3, utility_texts=2, utility_words=3, labels=2, judged=2)
    """
    order = list(dict.fromkeys(list(corpora.risk_known.labels) + list(corpora.risk_unknown.labels)))
    kept = set(order[:authors])
    cut = lambda corpus: corpus.subset([i for i, label in enumerate(corpus.labels) if label in kept])  # noqa: E731
    return Counts.of(replace(corpora, risk_known=cut(corpora.risk_known), risk_unknown=cut(corpora.risk_unknown)),
                     collapse_per_label)


def interval_half_width(risk: float, judged: int) -> tuple[float, str]:
    """Half the width of the 95% interval of a risk measured on ``judged`` authors (or texts), at a
    true risk of ``risk`` (:func:`~textveil.evaluation.intervals.rate_interval`: Wilson's, exact at
    small counts), and the method.

    >>> interval_half_width(0.05, 150)
    (0.0372, 'wilson')
    """
    from textveil.evaluation.intervals import rate_interval

    found = rate_interval(int(round(risk * judged)), judged)
    return round((found.high - found.low) / 2, 4), found.method


@dataclass
class AuthorChoice:
    """How many authors fit in a time: ``authors`` of ``of`` (0: not even the fewest), the run's
    expected seconds at that many, and the interval of the risk that buys."""

    minutes: float
    authors: int
    of: int
    expected_seconds: float
    judged: int
    per_author: bool
    half_widths: dict[float, tuple[float, str]]
    smallest_seconds: float

    @property
    def restricts(self) -> bool:
        return 0 < self.authors < self.of

    def message(self, acting: bool = True) -> str:
        """One line: what fits, and what the run will do (``acting``: cut to the authors that fit;
        else only the advice)."""
        if not self.authors:
            return (f"--minutes {self.minutes:g}: even the first 2 authors take about "
                    f"{duration(self.smallest_seconds)} (loading, the pilot and each setting's fixed costs); give "
                    f"--minutes {math.ceil(self.smallest_seconds / 60)} or more")
        unit = "authors" if self.per_author else "judged texts"
        widths = ", ".join(f"±{width:.3f} at a risk of {risk:g}" for risk, (width, _) in self.half_widths.items())
        if not self.restricts:
            return (f"--minutes {self.minutes:g}: all {self.of} authors fit (about {duration(self.expected_seconds)}); "
                    f"the risk's 95% interval over {self.judged} {unit}: {widths}")
        then = (f"running on the first {self.authors} (as --first-labels {self.authors})" if acting else
                f"give --first-labels {self.authors} to run on them")
        return (f"--minutes {self.minutes:g}: at most {self.authors} of {self.of} authors fit (about "
                f"{duration(self.expected_seconds)}): {then}; the risk's 95% interval over {self.judged} {unit}: "
                f"{widths}")

    def to_dict(self) -> dict[str, Any]:
        return {"asked": self.minutes, "authors": self.authors, "of": self.of, "restricted": self.restricts,
                "first_labels": self.authors if self.restricts else None,
                "expected_seconds": round(self.expected_seconds, 3), "judged": self.judged,
                "judged_per": "author" if self.per_author else "text",
                "interval_half_width": [{"risk": risk, "half_width": width, "method": method}
                                        for risk, (width, method) in self.half_widths.items()]}


def authors_within(minutes: float, estimate: RunEstimate, shared: SharedPlan, plans: Sequence[PointPlan],
                   corpora: EvaluationCorpora, collapse_per_label: bool, attacks: Sequence[str]) -> AuthorChoice:
    """The most authors (the first ones, as ``--first-labels`` takes them) whose run the estimate
    fits in ``minutes``, from the run's own ``estimate`` on all of ``corpora``: every cost but what
    was spent (loading, the pilot) is counted again on the first K authors' texts, nothing of them
    measured or cached (other corpora, other keys). At least 2 authors (an attack tells authors
    apart); ``authors`` is 0 where not even 2 fit.

    >>> pilot = Pilot(2, 4, 2, settings={"emp 10": SettingPilot(2, 100, 1.0)})
    >>> plan = PointPlan("emp 10", "emp", False, 1, {"unknown": 1})
    >>> known = LabelledCorpus(["a"] * 4, ["w", "x", "y", "z"])
    >>> unknown = LabelledCorpus(["one two three four five"] * 4, ["w", "x", "y", "z"])
    >>> corpora = EvaluationCorpora(known, unknown)
    >>> whole = estimate_run(pilot, SharedPlan(False), [plan], Counts.of(corpora, True), spent=10.0)
    >>> choice = authors_within(0.5, whole, SharedPlan(False), [plan], corpora, True, [])
    >>> round(whole.total, 3), choice.authors, round(choice.expected_seconds, 3)  # 10 s spent, 0.05 s an author
    (10.2, 4, 10.2)
    >>> authors_within(10.12 / 60, whole, SharedPlan(False), [plan], corpora, True, []).authors
    2
    """
    if minutes <= 0:
        raise InvalidParameterError(f"--minutes must be more than 0, got {minutes:g}")
    allowed = minutes * 60.0
    everyone = estimate.counts.labels

    def total(authors: int) -> tuple[float, Counts]:
        if authors >= everyone:
            return estimate.total, estimate.counts
        counts = counts_of_first(corpora, authors, collapse_per_label)
        fresh = estimate_run(estimate.pilot, shared.fresh(attacks), [p.fresh() for p in plans], counts,
                             estimate.spent)
        return fresh.total, counts

    fewest = min(2, everyone)
    smallest, _ = total(fewest)
    chosen, seconds, counts = 0, smallest, estimate.counts
    low, high = fewest, everyone  # the total grows with the authors: the largest that fits, by bisection
    if smallest <= allowed:
        while low < high:
            middle = (low + high + 1) // 2
            if total(middle)[0] <= allowed:
                low = middle
            else:
                high = middle - 1
        chosen = low
        seconds, counts = total(chosen)
    judged = counts.judged
    widths = {risk: interval_half_width(risk, judged) for risk in INTERVAL_RISKS} if judged else {}
    return AuthorChoice(minutes, chosen, everyone, seconds, judged, collapse_per_label, widths, smallest)


# -- an evaluation's estimate ------------------------------------------------------------------


def estimate_experiment(corpora: EvaluationCorpora, plan: ExperimentPlan, *, cache_folder: Any = None,
                        log: Callable[[str], None] | None = None, minutes: float | None = None,
                        restrict: Callable[[int], EvaluationCorpora] | None = None
                        ) -> tuple[EvaluationCorpora, RunEstimate | None]:
    """``textveil evaluate``'s estimate, before :func:`~textveil.evaluation.experiment.run_experiment`:
    the sweep's mechanism built here (a language model is loaded once per process: the run finds it
    loaded) and piloted; with ``minutes``, the corpora cut by ``restrict(K)`` to the first K authors
    that fit. A mechanism that learns from the corpus is not piloted (the estimate would fit it a
    second time): None is returned for the estimate."""
    from textveil.embeddings.default_model import load_embeddings
    from textveil.evaluation.experiment import build_sweep, release_points
    from textveil.evaluation.sweep_clock import SweepClock
    from textveil.mechanisms.registry import MECHANISMS
    from textveil.pii.stage import EntityStage

    say = log or (lambda message: None)
    started = time.perf_counter()
    kind = MECHANISMS.entry(plan.mechanism).load()
    if plan.model is None and (kind.fit_uses_labels or kind.trains_network):
        say(f"no time estimate: {plan.mechanism} learns from the corpus first, and the pilot would fit it twice")
        return corpora, None
    embeddings = load_embeddings(plan.embeddings, plan.mechanism_options.get("vocab_size"), log=say)
    stage = EntityStage(plan.entities)
    cache = ReleaseCache(cache_folder if plan.seed is not None else None)

    def estimated(corpora: EvaluationCorpora, pilot: Pilot | None) -> tuple[RunEstimate, SharedPlan, list[PointPlan]]:
        sweep = build_sweep(plan, corpora, embeddings, stage, cache, SweepClock(), lambda message: None)
        tasks = [name for name in plan.utility
                 if not_applicable(name, plan.mechanism, sweep.mechanism.corpus_level) is None]
        targets = [PointTarget(point.label, plan.mechanism, plan.mechanism, bool(sweep.mechanism.corpus_level),
                               sweep, point) for point in release_points(plan)]
        plans = [plan_point(target, cache, tasks) for target in targets]
        pilot = pilot or run_pilot(targets, plans, corpora, plan, embeddings, log=say)
        clean = "clean" in plan.trainings or plan.include_unmodified
        # an evaluation prepares only the tasks that apply to its mechanism
        shared = SharedPlan(True, tuple(plan.attacks) if clean else (), tuple(t for t in pilot.tasks if t in tasks),
                            plan.include_unmodified, tuple(plan.attacks))
        counts = Counts.of(corpora, plan.collapse_per_label)
        return estimate_run(pilot, shared, plans, counts, time.perf_counter() - started), shared, plans

    estimate, shared, plans = estimated(corpora, None)
    if minutes is not None:
        choice = authors_within(minutes, estimate, shared, plans, corpora, plan.collapse_per_label, plan.attacks)
        if not choice.authors:
            raise InvalidParameterError(choice.message())
        say(choice.message(acting=restrict is not None))
        if choice.restricts and restrict is not None:
            corpora = restrict(choice.authors)
            estimate = estimated(corpora, estimate.pilot)[0]
        estimate.minutes = choice.to_dict()
    for line in estimate.lines():
        say(line)
    return corpora, estimate


def experiment_measured(estimate: RunEstimate, results: dict[str, Any]) -> dict[str, Any]:
    """``estimate`` as results.json keeps it, beside what ``run_experiment``'s ``results`` measured:
    each point's seconds (its stages' sum), the shared work's, and the whole (the estimate's own
    seconds before the run, and the run's)."""
    from textveil.evaluation.experiment_plan import UNMODIFIED

    by_label = {point["label"]: float(sum(point.get("seconds", {}).values())) for point in results["points"]}
    timings = results.get("timings", {})
    shared = (timings.get("fit attacks", 0.0) + timings.get("prepare utility tasks", 0.0)
              + by_label.pop(UNMODIFIED, 0.0))
    return estimate.to_dict({plan.release_id: by_label.get(plan.release_id, 0.0) for plan, _ in estimate.points},
                            shared, estimate.spent + float(timings.get("total", 0.0)))


def estimate_report_line(estimate: dict[str, Any] | None) -> str:
    """The report's line on the time estimate (results.json's ``"estimate"``): what the run expected
    before its long work, what it took, the load each was timed under, and what ``--minutes`` chose.

    >>> estimate_report_line(None)
    'time estimate: none (the run was not estimated, or its results predate the estimate)'
    >>> print(estimate_report_line({"pilot": {"of": 200, "others_busy_cores": 1.0,
    ...     "settings": {"emp epsilon 10": {"chunks": [{"texts": 16}, {"texts": 32}]}}},
    ...     "expected_seconds": {"total": 1275.4, "by_release": {"emp epsilon 10": 600.0}},
    ...     "measured_seconds": {"total": 1108.9, "by_release": {"emp epsilon 10": 500.0}},
    ...     "others_busy_cores": {"pilot": 1.0, "run": 0.9}}))
    time estimate: 21 min 15 s expected before the run (each setting timed on at most 32 of the 200 texts, while other processes kept 1.0 cores busy), 18 min 29 s taken (+15% off; 0.9 cores busy since); per setting, expected / taken: emp epsilon 10 10 min 0 s / 8 min 20 s
    """
    if not estimate:
        return "time estimate: none (the run was not estimated, or its results predate the estimate)"
    pilot = estimate.get("pilot") or {}
    expected = estimate["expected_seconds"]
    busy = pilot.get("others_busy_cores")
    # the chunk a setting's rate was taken from: its largest (the pilot's "texts" is the most it may use)
    timed = max((max((chunk["texts"] for chunk in setting.get("chunks") or []), default=0)
                 for setting in (pilot.get("settings") or {}).values()), default=0)
    line = (f"time estimate: {duration(expected['total'])} expected before the run (each setting timed on "
            f"at most {timed} of the {pilot.get('of', 0)} texts"
            + (f", while other processes kept {busy:.1f} cores busy)" if busy is not None else ")"))
    measured = estimate.get("measured_seconds")
    if measured and measured.get("total"):
        off = expected["total"] / measured["total"] - 1.0
        since = (estimate.get("others_busy_cores") or {}).get("run")
        line += (f", {duration(measured['total'])} taken ({off:+.0%} off"
                 + (f"; {since:.1f} cores busy since)" if since is not None else ")"))
        pairs = [f"{name} {duration(seconds)} / {duration(measured['by_release'].get(name, 0.0))}"
                 for name, seconds in expected.get("by_release", {}).items()]
        if pairs:
            line += "; per setting, expected / taken: " + ", ".join(pairs)
    minutes = estimate.get("minutes")
    if minutes:
        line += (f"; --minutes {minutes['asked']:g}: " + (
            f"the first {minutes['authors']} of {minutes['of']} authors" if minutes.get("restricted")
            else f"all {minutes['of']} authors fit"))
    return line
