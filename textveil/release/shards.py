"""The worker's side of a release job: build the mechanism once, release a shard of records.

A task carries the records of one shard, the position of its first record and the job's
:class:`MechanismSpec` (a few names and numbers, never the embeddings or a model): each worker
builds the mechanism from the spec ONCE (a per-thread cache keyed by the spec's digest; the
default embeddings load memory-mapped, a ``--model`` through :meth:`Mechanism.load`) and reuses
it for every shard it is given. Record ``i``'s seed is
:func:`~textveil.release.seeds.record_seed` of the run seed and ``i``, so a shard's bytes depend
on its records and positions only: not on the worker, the number of workers or the order shards
finish in.

>>> from textveil.release.records import ShardFormat
>>> spec = MechanismSpec("redact", {}, entities={"operator": "off"})
>>> result = release_shard(spec, ShardFormat("jsonl"), 7, 3, 0, [{"id": 1, "text": "mail me at a@b.org"}])
>>> result.index, result.records, result.words, result.data
(3, 1, 6, b'{"id": 1, "text": "mail me at [EMAIL]"}\\n')
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from textveil.errors import InvalidParameterError
from textveil.mechanisms.base import Mechanism
from textveil.release.records import ShardFormat
from textveil.release.seeds import record_seeds
from textveil.release.summary import summarise
from textveil.text.tokenize import find_words

MECHANISMS_KEPT = 2
"""Mechanisms a worker keeps built (per thread): a long-lived cluster may serve a few jobs."""


@dataclass(frozen=True)
class MechanismSpec:
    """How to build a job's mechanism anywhere: its name, its options as the user gave them, the
    embeddings to load (``None``: it works without) and a trained ``model`` folder. Holds no
    seed and no data; it is shipped with every task, and workers build from it."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    embeddings: str | None = None
    vocab_size: int | None = None
    model: str | None = None
    entities: dict[str, Any] = field(default_factory=lambda: {"operator": "placeholder"})
    """The entity stage's options as plain data (:meth:`EntityOptions.from_spec`: a pseudonym
    key travels as its file's path, and is read by each worker)."""
    then: tuple[str, ...] = ()
    """What rewrites each release after the mechanism (``("polish",)``), as the steps' texts
    (:func:`textveil.mechanisms.polish.parse_then` reads them): every worker polishes too."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "then", tuple(self.then))  # a list read back from JSON: the same spec
        # A job's shards run on many workers, and a resumed run in another process: pseudonyms
        # drawn under a key each of them made up would differ from shard to shard.
        if self.entities.get("operator") == "pseudonym" and not self.entities.get("key_file"):
            raise InvalidParameterError(
                "a release job with --entities pseudonym needs --pseudonym-key FILE (the spec's entities.key_file): "
                "every worker, and a resumed run, must draw pseudonyms with the same key")

    def entity_options(self) -> Any:
        from textveil.pii.stage import EntityOptions

        return EntityOptions.from_spec(self.entities)

    def to_dict(self) -> dict[str, Any]:
        """The spec as the manifest shows it: the entity stage's options as shown data (no key,
        no allow or deny list: they may hold names)."""
        shown = {"mechanism": self.name, "options": self.options, "embeddings": self.embeddings,
                 "vocab_size": self.vocab_size, "model": self.model, "entities": self.entity_options().public()}
        # named only when given: a job without it keeps the fingerprint it had (it resumes)
        return {**shown, "then": list(self.then)} if self.then else shown

    def digest(self) -> str:
        """A digest of the spec: the key of the workers' cache.

        >>> MechanismSpec("emp", {"epsilon": 10.0}).digest() == MechanismSpec("emp", {"epsilon": 10.0}).digest()
        True
        """
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True, default=str).encode()).hexdigest()

    def build(self, log: Callable[[str], None] | None = None) -> Mechanism:
        """The mechanism, unseeded (each record brings its own seed)."""
        from textveil.building import build_mechanism
        from textveil.embeddings import load_embeddings

        table = None if self.embeddings is None else load_embeddings(self.embeddings, self.vocab_size, log=log)
        return build_mechanism(self.name, dict(self.options), table, entities=self.entity_options(), model=self.model,
                               then=self.then)


_built = threading.local()


def mechanism_for(spec: MechanismSpec, log: Callable[[str], None] | None = None) -> Mechanism:
    """The mechanism of ``spec``, built once per thread of each worker process and then reused."""
    cache: OrderedDict[str, Mechanism] | None = getattr(_built, "mechanisms", None)
    if cache is None:
        cache = _built.mechanisms = OrderedDict()
    key = spec.digest()
    if key not in cache:
        cache[key] = spec.build(log)
        while len(cache) > MECHANISMS_KEPT:
            cache.popitem(last=False)
    cache.move_to_end(key)
    return cache[key]


@dataclass(frozen=True)
class ShardResult:
    """A released shard: its bytes and checksum, how many records and (input) words it holds,
    and the summary of its releases (:meth:`~textveil.release.summary.ReleaseSummary.to_dict`),
    which the manifest combines over the shards."""

    index: int
    first: int
    records: int
    words: int
    data: bytes
    sha256: str
    stats: dict[str, Any]

    def entry(self, name: str) -> dict[str, Any]:
        """The shard as the manifest lists it."""
        return {"index": self.index, "file": name, "first": self.first, "records": self.records, "words": self.words,
                "bytes": len(self.data), "sha256": self.sha256, "stats": self.stats}


def release_shard(spec: MechanismSpec, shard_format: ShardFormat, run_seed: int, index: int, first: int,
                  records: Sequence[dict[str, Any]]) -> ShardResult:
    """Release shard ``index``, whose first record is at position ``first``: each record's text
    with the seed of its position, rendered in ``shard_format``. Runs on a worker (or in-process)."""
    mechanism = mechanism_for(spec)
    texts = [fields[shard_format.text_field] for fields in records]
    releases = mechanism.sanitize_records(texts, record_seeds(run_seed, first, len(texts)))
    data = shard_format.render(records, [release.text for release in releases])
    return ShardResult(index, first, len(records), sum(len(find_words(text)) for text in texts), data,
                       hashlib.sha256(data).hexdigest(), summarise(releases).to_dict())
