"""What a sweep measures, checked before any work: the plan, the corpora, and which utility
tasks apply to a mechanism's releases.

:func:`validate` makes every check that can fail (the mechanism and its options, the grid, the
attacks, utility tasks and trainings, the corpora's authors) so that a sweep, or each sweep of a
comparison, fails with one line before anything is released.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textveil.attacks.registry import ATTACKS, DEFAULT_ATTACKS
from textveil.building import check_mechanism_options
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.evaluation.code_words import releases_code_words
from textveil.evaluation.trainings import TRAININGS, check_trainings
from textveil.evaluation.utility_tasks import UTILITY_TASKS
from textveil.mechanisms.registry import MECHANISMS
from textveil.pii.stage import EntityOptions

DEFAULT_UTILITY = ("topic-fasttext", "topic-5nn", "semantic-similarity")
UNMODIFIED = "none"
"""The label of the point that measures the text itself, unreleased (the baseline of every risk)."""


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
    # What rewrites each release after the mechanism (("polish",): textveil.mechanisms.polish):
    # part of the release under test, so the release-aware attacker's releases are polished too.
    then: tuple[str, ...] = ()


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
    a mechanism that has none (its sweep is one release point).

    >>> swept_parameter(ExperimentPlan("emp")), swept_parameter(ExperimentPlan("random", grid=[]))
    ('epsilon', None)
    """
    entry = MECHANISMS.entry(plan.mechanism)
    if plan.parameter:
        return entry.parameter(plan.parameter).name
    return entry.swept.name if entry.swept is not None else None


def first_setting(plan: ExperimentPlan) -> dict[str, float]:
    """The swept parameter at the grid's first value, as the builder takes it (a sweep's
    mechanism is built once with it, then set to each point's value); empty for a mechanism
    that has no parameter to sweep.

    >>> first_setting(ExperimentPlan("emp", grid=[12, 20])), first_setting(ExperimentPlan("random", grid=[]))
    ({'epsilon': 12.0}, {})
    """
    parameter = swept_parameter(plan)
    return {parameter: float(plan.grid[0])} if parameter is not None else {}


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
