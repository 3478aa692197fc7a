"""A mechanism with the entity stage before it: what every face releases with.

:class:`StagedMechanism` offers the release operations of a mechanism (``fit``, ``with_params``,
``sanitize``, ``sanitize_many``, ``sanitize_records``, ``release_corpus``, ``fingerprint``) and
passes everything else to the mechanism it wraps. Each text goes through the stage first, then
through the mechanism; the Release's Guarantee gains the stage's statement and the Release lists
what was replaced. A mechanism that learns is fitted on texts after the stage too, so a model
never learns a name it could write back.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from typing import Any

from textveil.mechanisms.base import CorpusRelease, Mechanism, ProgressCallback, Release
from textveil.pii.stage import EntityOptions, EntityStage, Screening, stage_statement


class StagedMechanism:
    """``mechanism`` with ``stage`` before it.

    >>> from textveil.mechanisms.redaction import Redaction
    >>> staged = StagedMechanism(Redaction(), EntityStage(EntityOptions(operator="off")))
    >>> staged.name, staged.sanitize("mail a@b.org").text
    ('redact', 'mail [EMAIL]')
    """

    def __init__(self, mechanism: Mechanism, stage: EntityStage) -> None:
        self.mechanism = mechanism
        self.stage = stage
        self.mechanism_seconds = 0.0
        if writes_placeholders(stage.options) and hasattr(mechanism, "placeholders"):
            # A vocabulary holds the placeholders only where a stage before it may write them.
            mechanism.placeholders = True  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        if name in ("mechanism", "stage"):  # not set yet (copying): never recurse
            raise AttributeError(name)
        return getattr(self.mechanism, name)

    def __repr__(self) -> str:
        return f"StagedMechanism({self.mechanism!r}, entities={self.stage.options.operator})"

    @property
    def entity_options(self) -> EntityOptions:
        return self.stage.options

    def planned_spend(self, text: str) -> tuple[float, str] | None:
        """The mechanism's spend on ``text`` as the stage hands it over (a rewriter's units are cut
        from the text with its placeholders)."""
        return self.mechanism.planned_spend(self.stage.apply_many([text])[0].text)

    def fit(self, texts: Sequence[str], labels: Sequence[str] | None = None) -> StagedMechanism:
        """Fit the mechanism on ``texts`` after the stage, and note the stage on what it learned
        (saved with it, as ``textveil train`` notes it): a model fitted here and saved says what it
        never saw, whichever face trained it."""
        self.mechanism.fit(self.stage.texts(texts), labels)
        if self.mechanism.learns:
            record_training_stage(self.mechanism, self.stage)
        return self

    def with_params(self, **changes: Any) -> StagedMechanism:
        """The mechanism with some parameters changed; the same stage (and what it remembers)."""
        return StagedMechanism(self.mechanism.with_params(**changes), self.stage)

    def sanitize(self, text: str) -> Release:
        return self.sanitize_many([text])[0]

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        screenings = self.stage.apply_many(list(texts))
        releases = self._timed(lambda: self.mechanism.sanitize_many([s.text for s in screenings], progress=progress))
        return [self._noted(release, screening) for release, screening in zip(releases, screenings)]

    def sanitize_records(self, texts: Sequence[str], seeds: Sequence[int],
                         progress: ProgressCallback | None = None) -> list[Release]:
        screenings = self.stage.apply_many(list(texts))
        releases = self._timed(lambda: self.mechanism.sanitize_records([s.text for s in screenings], seeds,
                                                                       progress=progress))
        return [self._noted(release, screening) for release, screening in zip(releases, screenings)]

    def release_corpus(self, texts: Sequence[str], labels: Sequence[str] | None = None,
                       progress: ProgressCallback | None = None) -> CorpusRelease:
        screenings = self.stage.apply_many(list(texts))
        released = self._timed(lambda: self.mechanism.release_corpus([s.text for s in screenings], labels,
                                                                     progress=progress))
        stats = dict(released.stats)
        if self.stage.options.enabled:
            stats["entities_replaced"] = sum(len(s.entities) for s in screenings)
        return dataclasses.replace(released, stats=stats)

    def fingerprint(self) -> dict[str, Any]:
        """The mechanism's fingerprint with the stage's public options and what detects (the rules
        in use, Presidio's and the spaCy model's versions): a release with another stage is
        another release (cache keys)."""
        from textveil.pii.detector import detection_identity

        return {**self.mechanism.fingerprint(), "entities": self.stage.options.public(),
                "detection": detection_identity()}

    def speeds(self) -> dict[str, float | None]:
        """Words per second of the stage and of the mechanism, over what this object released."""
        words = self.stage.words
        return {"entity stage": self.stage.words_per_second(),
                self.mechanism.name: words / self.mechanism_seconds if self.mechanism_seconds and words else None}

    def _timed(self, work: Any) -> Any:
        started = time.perf_counter()
        try:
            return work()
        finally:
            self.mechanism_seconds += time.perf_counter() - started

    def _noted(self, release: Release, screening: Screening) -> Release:
        statement = stage_statement(self.stage.options, screening.entities,
                                    getattr(self.mechanism, "placeholder_rule", ""))
        if not statement:
            return release
        guarantee = dataclasses.replace(release.guarantee, entity_stage=statement,
                                        statement=f"{release.guarantee.statement} {statement}".strip())
        return dataclasses.replace(release, guarantee=guarantee, entities=screening.entities)


def writes_placeholders(options: EntityOptions) -> bool:
    """Whether a stage with ``options`` may write placeholders (``<PERSON>``): with placeholders,
    and with pseudonyms (a type with no fake value, and ``deny``'s ``CUSTOM``, get their
    placeholder); never when it drops entities or is off. Only then does a token-substitution
    mechanism after it hold the placeholders in its vocabulary (its ``placeholders`` flag).

    >>> [writes_placeholders(EntityOptions(operator=o)) for o in ("placeholder", "pseudonym", "drop", "off")]
    [True, True, False, False]
    """
    return options.operator in ("placeholder", "pseudonym")


def with_entity_stage(mechanism: Mechanism, entities: EntityOptions | EntityStage | None = None) -> Any:
    """``mechanism`` with the entity stage before it (placeholders, by default); the mechanism
    itself when the stage is off. The stage runs before every release the faces make.

    >>> from textveil.mechanisms.redaction import Redaction
    >>> with_entity_stage(Redaction(), EntityOptions(operator="off")).name
    'redact'
    """
    stage = entities if isinstance(entities, EntityStage) else EntityStage(entities or EntityOptions())
    if not stage.options.enabled:
        return mechanism
    return StagedMechanism(mechanism, stage)


def as_attacker(mechanism: Any, seed: int | None) -> Any:
    """The mechanism as a release-aware attacker runs it on their own texts: the same public
    pipeline, but pseudonyms under the attacker's own key (the release's key is secret). The
    attacker's key is derived from the run's seed, so a seeded evaluation is reproducible.

    >>> from textveil.mechanisms.redaction import Redaction
    >>> as_attacker(Redaction(), 3).name
    'redact'
    """
    from textveil.mechanisms.polish import PolishedMechanism
    from textveil.privacy.secrets import Secret

    if isinstance(mechanism, PolishedMechanism):  # the stage is inside the polish: the same polish around it
        return mechanism.around(as_attacker(mechanism.mechanism, seed))
    if not isinstance(mechanism, StagedMechanism) or mechanism.stage.options.operator != "pseudonym":
        return mechanism
    key = Secret.generate() if seed is None else Secret(f"textveil release-aware attacker {seed}")
    options = dataclasses.replace(mechanism.stage.options, key=key)
    return StagedMechanism(mechanism.mechanism, EntityStage(options))


def corpus_through_stage(stage: EntityStage, texts: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """``texts`` after the stage, and how many entities of each type it replaced: for what is
    released or learned from outside :class:`StagedMechanism` (a PIVOT encoding, a model's training).

    >>> corpus_through_stage(EntityStage(EntityOptions(operator="off")), ["Ann"])
    (['Ann'], {})
    """
    from collections import Counter

    screenings = stage.apply_many(texts)
    counts = Counter(entity.entity_type for screening in screenings for entity in screening.entities)
    return [screening.text for screening in screenings], dict(counts)


def record_training_stage(mechanism: Mechanism, stage: EntityStage) -> None:
    """Note on a mechanism that learns that its training texts went through ``stage``: saved
    with what it learned (its manifest's state), so a trained model says what it never saw."""
    mechanism.training_entities_ = stage.options.public()  # type: ignore[attr-defined]
