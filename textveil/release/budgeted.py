"""A release that spends from a budget ledger: refused before any randomness touches the text
when it would exceed a cap, and recorded with its spend in one transaction.

The faces (``textveil sanitize --ledger``, the service) call :func:`release_with_budget`; the
ledger's bookkeeping is in :mod:`textveil.privacy.ledger`.

>>> import tempfile, pathlib
>>> from textveil.embeddings import WordEmbeddings
>>> from textveil.mechanisms.earth_movers import EarthMoversPrivacy
>>> from textveil.privacy.ledger import BudgetLedger
>>> ledger = BudgetLedger(pathlib.Path(tempfile.mkdtemp()) / "budget.sqlite")
>>> ledger.set_cap(25.0)
>>> emp = EarthMoversPrivacy(10, WordEmbeddings(["good", "bad"], [[0.0], [1.0]]), seed=1)
>>> done = release_with_budget(emp, ["good", "bad"], ["ann", "ann"], ledger)
>>> len(done.records), ledger.spent("ann"), ledger.remaining("ann")
(2, 20.0, 5.0)
>>> release_with_budget(emp, ["good"], ["ann"], ledger)
Traceback (most recent call last):
...
textveil.privacy.ledger.BudgetExceeded: subject 'ann' (dataset 'default') has spent 20 metric epsilon per token of its cap of 25; this release would spend 10 more: raise the cap with 'textveil budget set-cap' or release less
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import Mechanism, ProgressCallback, Release
from textveil.privacy.ledger import DEFAULT_DATASET, BudgetLedger, Spend


@dataclass
class BudgetedRelease:
    """Released texts (as :meth:`Release.to_dict` data), what they spent, and whether the request
    had been recorded before (then nothing was released or spent again)."""

    records: list[dict[str, Any]]
    spends: list[Spend]
    replayed: bool = False
    releases: list[Release] = field(default_factory=list)
    """The Release objects (empty for a replayed request: its stored data is in ``records``)."""


def record_subject(fields: dict[str, Any], subject_field: str, where: str) -> str:
    """The subject of a record that names it in ``subject_field`` (``where``: the record, for the
    one-line error when it is missing or not a plain value).

    >>> record_subject({"user": 7, "text": "hi"}, "user", "posts.jsonl record 1")
    '7'
    >>> record_subject({"text": "hi"}, "user", "posts.jsonl record 1")
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: posts.jsonl record 1 has no subject field 'user'; give each record that field, or use --subject ID
    """
    value = fields.get(subject_field)
    if value is None or isinstance(value, (dict, list)) or str(value).strip() == "":
        raise InputError(f"{where} has no subject field '{subject_field}'; give each record that field, or "
                         "use --subject ID")
    return str(value)


def planned_spends(mechanism: Mechanism, subjects: Sequence[str], dataset: str = DEFAULT_DATASET,
                   texts: Sequence[str] | None = None) -> list[Spend]:
    """One spend per text, from the mechanism's parameters and the public cut of each text (no
    randomness): :meth:`~textveil.mechanisms.base.Mechanism.planned_spend` of ``texts[i]`` where
    they are given, else the same spend for every subject."""
    if texts is not None and len(texts) != len(subjects):
        raise InvalidParameterError(f"{len(subjects)} subjects for {len(texts)} texts: give one subject per text")
    spends = [mechanism.planned_spend(text) for text in texts] if texts is not None else \
        [mechanism.spend_per_release()] * len(subjects)
    if any(spend is None for spend in spends):
        if texts is None and mechanism.planned_spend("") is not None:  # a caller's slip, not a user's
            raise InvalidParameterError(f"{mechanism.name} spends by the number of units of each text: give the texts")
        raise InvalidParameterError(
            f"{mechanism.name}'s Guarantee states no epsilon ({mechanism.spec().guarantee}), so a budget ledger cannot "
            "count what its releases spend; release it without --ledger")
    return [Spend(str(subject), spend[0], spend[1], mechanism.name, dataset)  # type: ignore[index]
            for subject, spend in zip(subjects, spends)]


def request_digest(mechanism: Mechanism, texts: Sequence[str], subjects: Sequence[str], dataset: str) -> str:
    """A digest of what a request asks (the mechanism's public fingerprint, the texts, their
    subjects, the dataset): a retry has the same, another request reusing the id does not."""
    import hashlib
    import json

    asked = json.dumps([mechanism.fingerprint(), list(texts), [str(s) for s in subjects], dataset], sort_keys=True,
                       default=str)
    return hashlib.sha256(asked.encode("utf-8")).hexdigest()


def release_with_budget(mechanism: Mechanism, texts: Sequence[str], subjects: Sequence[str], ledger: BudgetLedger,
                        *, dataset: str = DEFAULT_DATASET, request_id: str | None = None,
                        progress: ProgressCallback | None = None) -> BudgetedRelease:
    """Release ``texts`` (each of the subject at the same position) if every subject's budget
    allows it: checked before releasing, then the releases and their spends recorded in one
    transaction (all or nothing). A ``request_id`` seen before returns its stored release."""
    if len(subjects) != len(texts):
        raise InvalidParameterError(f"{len(subjects)} subjects for {len(texts)} texts: give one subject per text")
    digest = None
    if request_id is not None:
        digest = request_digest(mechanism, texts, subjects, dataset)
        stored = ledger.replay(request_id, digest)
        if stored is not None:
            return BudgetedRelease(stored.response, [], replayed=True)
    spends = planned_spends(mechanism, subjects, dataset, texts)
    ledger.check(spends)  # before any randomness touches the text
    releases = mechanism.sanitize_many(texts, progress=progress)
    records = [release.to_dict() for release in releases]
    # Checked again inside the transaction: a release that lost a race for the budget is
    # discarded here, never returned.
    recorded = ledger.record(spends, request_id=request_id, response=records, digest=digest)
    if recorded.replayed:  # another process recorded this request meanwhile: its release stands
        return BudgetedRelease(recorded.response, [], replayed=True)
    return BudgetedRelease(records, spends, releases=releases)
