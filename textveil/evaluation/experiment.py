"""Sweep a mechanism's privacy parameter over labelled corpora; attack and measure each release.

The flow, for every grid point (plus the unmodified text): release the unknown texts of the
risk corpus and the test texts of the utility corpus (cached), score every attack (fitted
once on the clean known texts) and every utility task (prepared once on clean text) on the
release. Attacks and mechanisms meet only here.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from textveil.attacks.base import evaluate_attack
from textveil.attacks.registry import ATTACKS, make_attack
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.evaluation.release_cache import ReleaseCache, release_key
from textveil.evaluation.utility_tasks import UTILITY_RUNNERS, UtilityRunner
from textveil.mechanisms.registry import make_mechanism, mechanism_class
from textveil.privacy.parameters import check_epsilon

DEFAULT_ATTACKS = ("impostors", "embedding-1nn", "char3-svm")
DEFAULT_UTILITY = ("topic-fasttext", "topic-5nn", "semantic-similarity")
UNMODIFIED = "none"


@dataclass
class ExperimentPlan:
    """What to sweep and what to measure."""

    mechanism: str = "emp"
    grid: list[float] = field(default_factory=lambda: [10.0, 15.0, 20.0, 25.0, 30.0])
    parameter: str = "epsilon"
    attacks: list[str] = field(default_factory=lambda: list(DEFAULT_ATTACKS))
    utility: list[str] = field(default_factory=lambda: list(DEFAULT_UTILITY))
    seed: int | None = None
    top_k: int = 10
    collapse_per_label: bool = False
    include_unmodified: bool = True
    repeats: int = 1
    embeddings: str = "default"
    mechanism_options: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvaluationCorpora:
    """Risk: known texts (the attacker's reference) and unknown texts (released, then attacked).
    Utility: training texts (clean) and test texts (released, then measured)."""

    risk_known: LabelledCorpus
    risk_unknown: LabelledCorpus
    utility_train: LabelledCorpus | None = None
    utility_test: LabelledCorpus | None = None


def validate(plan: ExperimentPlan, corpora: EvaluationCorpora) -> None:
    """Every check that can fail, before any work starts."""
    mechanism_class(plan.mechanism)
    if not plan.grid:
        raise InvalidParameterError("the grid is empty; give at least one parameter value, e.g. --grid 10,20,30")
    for value in plan.grid:
        check_epsilon(value, name=f"{plan.parameter} {value!r} in the grid")
    for name in plan.attacks:
        if name not in ATTACKS:
            raise InvalidParameterError(f"unknown attack '{name}'; run 'textveil attack --list' for the valid names")
    for name in plan.utility:
        if name not in UTILITY_RUNNERS:
            raise InvalidParameterError(
                f"unknown utility task '{name}'; valid tasks: {', '.join(sorted(UTILITY_RUNNERS))}"
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


def _point_seeds(seed: int | None, count: int) -> list[int | None]:
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
    combined = {key: sum(s.get(key, 0) for s in stats) for key in ("words_protected", "words_changed")}
    if combined["words_protected"]:
        combined["words_changed_fraction"] = round(combined["words_changed"] / combined["words_protected"], 4)
    return {**combined, "releases": len(stats)}


def run_experiment(
    corpora: EvaluationCorpora,
    plan: ExperimentPlan,
    *,
    cache_folder: Path | None = None,
    log: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the sweep; returns the results as plain data (what ``results.json`` holds).

    ``progress(stage, done, total)`` is called as each release, attack and utility
    measurement finishes; ``stage`` says which (e.g. ``"epsilon 12: char3-svm"``).
    """
    validate(plan, corpora)
    say = log or (lambda message: None)
    timings: dict[str, float] = {}
    # The same time broken down by attack and utility task, summed over the grid: it says
    # which task to drop or speed up when a sweep is too slow.
    task_seconds: dict[str, float] = {}
    started = time.perf_counter()

    def timed(stage: str, seconds: float, *books: dict[str, float]) -> None:
        for book in books or (timings,):
            book[stage] = round(book.get(stage, 0.0) + seconds, 3)

    clock = time.perf_counter()
    from textveil.embeddings.default_model import load_embeddings

    embeddings = load_embeddings(plan.embeddings, plan.mechanism_options.get("vocab_size"), log=say)
    options = {k: v for k, v in plan.mechanism_options.items() if k != "vocab_size"}
    timed("load embeddings", time.perf_counter() - clock)

    clock = time.perf_counter()
    attacks = {}
    for name in plan.attacks:
        say(f"fitting attack {name} on {len(corpora.risk_known)} known texts")
        task_clock = time.perf_counter()
        attack = make_attack(name, shared={"embeddings": embeddings, "random_state": plan.seed})
        attack.fit(corpora.risk_known.texts, corpora.risk_known.labels)
        attacks[name] = attack
        timed(f"fit {name}", time.perf_counter() - task_clock, task_seconds)
    timed("fit attacks", time.perf_counter() - clock)

    clock = time.perf_counter()
    has_utility_corpus = corpora.utility_train is not None and corpora.utility_test is not None
    utility_train = corpora.utility_train if has_utility_corpus else corpora.risk_known
    utility_test = corpora.utility_test if has_utility_corpus else corpora.risk_unknown
    runners: dict[str, UtilityRunner] = {}
    for name in plan.utility:
        runner = UTILITY_RUNNERS[name](embeddings=embeddings, seed=plan.seed)
        if runner.needs_topic_labels and not has_utility_corpus:
            say(f"utility task {name} skipped: it needs a utility corpus with topic labels (--utility-corpus)")
            continue
        say(f"preparing utility task {name}")
        task_clock = time.perf_counter()
        runner.prepare(utility_train, utility_test)
        runners[name] = runner
        timed(f"prepare {name}", time.perf_counter() - task_clock, task_seconds)
    timed("prepare utility tasks", time.perf_counter() - clock)

    points_spec: list[float | None] = ([None] if plan.include_unmodified else []) + [float(v) for v in plan.grid]
    cache = ReleaseCache(cache_folder)
    releases_planned = sum(1 if value is None else plan.repeats for value in points_spec)
    steps = {"done": 0, "total": releases_planned * (1 + len(attacks) + len(runners))}

    def step(stage: str) -> None:
        steps["done"] += 1
        if progress is not None:
            progress(stage, steps["done"], steps["total"])

    points = []
    for value in points_spec:
        label = UNMODIFIED if value is None else f"{value:g}"
        # The unmodified text has no randomness: one measurement says all there is.
        seeds = [point_seed(plan.seed, value, repeat) for repeat in range(1 if value is None else plan.repeats)]
        point: dict[str, Any] = {"label": label, "parameter": value, "seed": seeds[0], "seconds": {}}
        if len(seeds) > 1:
            point["seeds"] = seeds
        measured: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
        for seed in seeds:
            clock = time.perf_counter()
            released_risk, released_utility, release_stats = _release_point(
                plan, options, embeddings, value, seed, corpora.risk_unknown,
                utility_test if has_utility_corpus else None, cache,
            )
            timed("release", time.perf_counter() - clock, timings, point["seconds"])
            step(f"{plan.parameter} {label}: released")

            clock = time.perf_counter()
            attack_results = {}
            for name, attack in attacks.items():
                task_clock = time.perf_counter()
                attack_results[name] = evaluate_attack(
                    attack, corpora.risk_known.texts, corpora.risk_known.labels, released_risk,
                    corpora.risk_unknown.labels, top_k=plan.top_k, collapse_per_label=plan.collapse_per_label,
                    fit=False,
                ).to_dict()
                timed(f"attack {name}", time.perf_counter() - task_clock, task_seconds)
                step(f"{plan.parameter} {label}: {name}")
            timed("attacks", time.perf_counter() - clock, timings, point["seconds"])

            clock = time.perf_counter()
            released_for_utility = released_utility if has_utility_corpus else released_risk
            utility_results = {}
            for name, runner in runners.items():
                task_clock = time.perf_counter()
                utility_results[name] = runner.measure(released_for_utility)
                timed(f"measure {name}", time.perf_counter() - task_clock, task_seconds)
                step(f"{plan.parameter} {label}: {name}")
            timed("utility", time.perf_counter() - clock, timings, point["seconds"])
            measured.append((attack_results, utility_results, release_stats))

        point["release"] = combine_release_stats([m[2] for m in measured])
        point["attacks"] = {name: combine_attack_results([m[0][name] for m in measured]) for name in attacks}
        point["utility"] = {name: combine_utility_results([m[1][name] for m in measured]) for name in runners}
        points.append(point)
        spread = f" (mean of {len(seeds)} releases)" if len(seeds) > 1 else ""
        say(f"{plan.parameter} {label}{spread}: " + ", ".join(
            [f"{n} top-1 {r['top1']:.3f}" for n, r in point["attacks"].items()]
            + [f"{n} {u['value']:.3f}" for n, u in point["utility"].items()]
        ))

    timings["total"] = round(time.perf_counter() - started, 3)
    return {
        "textveil_version": _version(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": _machine(),
        "plan": asdict(plan),
        "corpora": {
            role: _describe(corpus)
            for role, corpus in (
                ("risk_known", corpora.risk_known), ("risk_unknown", corpora.risk_unknown),
                ("utility_train", corpora.utility_train if has_utility_corpus else None),
                ("utility_test", corpora.utility_test if has_utility_corpus else None),
            )
            if corpus is not None
        },
        "embeddings": {"name": embeddings.name, "words": len(embeddings), "dim": embeddings.dim},
        "topic_chance": (1 / len(utility_train.label_set)) if has_utility_corpus else None,
        "points": points,
        "timings": timings,
        "task_seconds": task_seconds,
        "release_cache": {"hits": cache.hits, "misses": cache.misses, "folder": str(cache_folder) if cache_folder else None},
    }


def _version() -> str:
    from textveil import __version__

    return __version__


def _describe(corpus: LabelledCorpus) -> dict[str, Any]:
    return {"name": corpus.name, "documents": len(corpus), "labels": len(corpus.label_set), "hash": corpus.content_hash()}


def _release_point(
    plan: ExperimentPlan,
    options: dict[str, Any],
    embeddings: Any,
    value: float | None,
    seed: int | None,
    risk_unknown: LabelledCorpus,
    utility_test: LabelledCorpus | None,
    cache: ReleaseCache,
) -> tuple[list[str], list[str] | None, dict[str, Any]]:
    """Release the risk and utility test texts at one grid point (the unmodified point is the text itself)."""
    if value is None:
        return list(risk_unknown.texts), (list(utility_test.texts) if utility_test else None), {"words_protected": 0}
    stats = {"words_protected": 0, "words_changed": 0}
    # One mechanism (and seed) per corpus, so a cached risk release never shifts the random
    # stream of the utility release.
    risk_seed, utility_seed = _point_seeds(seed, 2)

    def parameters(corpus_seed: int | None) -> dict[str, Any]:
        return {plan.parameter: value, "seed": corpus_seed, "embeddings": embeddings.name, **options}

    def release(corpus: LabelledCorpus, corpus_seed: int | None) -> Callable[[], list[str]]:
        def run() -> list[str]:
            mechanism = make_mechanism(
                plan.mechanism, **{plan.parameter: value}, embeddings=embeddings, seed=corpus_seed, **options
            )
            releases = mechanism.sanitize_many(corpus.texts)
            stats["words_protected"] += sum(r.guarantee.words_protected for r in releases)
            stats["words_changed"] += sum(len(r.changes) for r in releases)
            return [r.text for r in releases]

        return run

    def key(corpus: LabelledCorpus, corpus_seed: int | None) -> str | None:
        return None if corpus_seed is None else release_key(plan.mechanism, parameters(corpus_seed), corpus)

    risk = cache.get_or_release(key(risk_unknown, risk_seed), release(risk_unknown, risk_seed), len(risk_unknown))
    utility = None
    if utility_test is not None:
        utility = cache.get_or_release(
            key(utility_test, utility_seed), release(utility_test, utility_seed), len(utility_test)
        )
    if stats["words_protected"]:
        stats["words_changed_fraction"] = round(stats["words_changed"] / stats["words_protected"], 4)
    return risk, utility, stats
