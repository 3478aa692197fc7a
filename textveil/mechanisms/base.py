"""What every mechanism returns, and the face every mechanism has.

The face, in the spirit of scikit-learn's estimators::

    Mechanism(params..., seed=None)      # validated here; InvalidParameterError on bad values
      .fit(texts) -> self                # a no-op for mechanisms that learn nothing
      .with_params(epsilon=...) -> copy  # keeps what was fitted: a sweep fits once
      .sanitize(text) / .sanitize_many(texts) -> Release(text, Guarantee, ...)
      .release_corpus(texts, labels)     # what the harness calls: aligned releases, or a new corpus
      .save(folder) / Mechanism.load(folder)

A mechanism's parameters are declared once, in its registry entry
(:mod:`textveil.mechanisms.registry`), and checked here; what it learns lives in attributes
whose names end with ``_`` (scikit-learn's convention), which :meth:`Mechanism.with_params`
keeps and :meth:`Mechanism.save` writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, TypeVar

import numpy as np

from textveil.errors import InputError, InvalidParameterError
from textveil.privacy.guarantee import Guarantee
from textveil.privacy.release_budget import ReleaseBudget
from textveil.privacy.secrets import Secret
from textveil.registry import Entry

ProgressCallback = Callable[[int], None]
"""Called with the number of documents just finished."""

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "textveil.mechanism/1"
CHECKPOINT = "checkpoint.pt"
"""A neural mechanism's training checkpoint inside its model folder (resumed, or trained on with
``train --continue-from``)."""

M = TypeVar("M", bound="Mechanism")


@dataclass(frozen=True)
class Change:
    """One token the mechanism replaced: its position among the document's tokens."""

    token_index: int
    original: str
    released: str


@dataclass(frozen=True)
class ReplacedEntity:
    """One entity the entity stage replaced before the mechanism: its type, where it was in the
    original text (characters), what replaced it, and the detector's score. The original
    characters are not kept: a release must not carry what it removed."""

    entity_type: str
    start: int
    end: int
    replacement: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.entity_type, "start": self.start, "end": self.end, "replacement": self.replacement,
                "score": self.score}


@dataclass(frozen=True)
class Release:
    """One released document: its text, what changed, and its guarantee.

    ``str(release)`` is the released text.
    """

    text: str
    guarantee: Guarantee
    changes: tuple[Change, ...] = field(default=())
    words_unchanged: int = 0
    """Perturbed tokens whose release is the input's own token."""
    entities: tuple[ReplacedEntity, ...] = ()
    """What the entity stage replaced before the mechanism (offsets in the original text);
    ``changes`` count tokens of the text after that stage."""
    units: int = 0
    """For a mechanism that rewrites a document unit by unit: how many units it rewrote."""
    units_left_out: int = 0
    """...and how many more it did not read (a public cap on the units, e.g. ``max_units``)."""

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "changed": [{"token": c.token_index, "from": c.original, "to": c.released} for c in self.changes],
            "words_unchanged_by_noise": self.words_unchanged,
            "entities": [entity.to_dict() for entity in self.entities],
            "guarantee": self.guarantee.to_dict(),
            **({"units": self.units, "units_left_out": self.units_left_out} if self.units else {}),
        }


@dataclass(frozen=True)
class CorpusRelease:
    """A released corpus, as the harness measures it.

    ``aligned``: each released text is the release of the input text at the same position (a
    document-level mechanism); otherwise the mechanism released a new corpus (synthetic texts,
    each labelled with the label it was conditioned on) and utility tasks that compare each
    text with its own release do not apply. ``stats`` counts what went through the mechanism.
    ``budget``: what the releases' Guarantees state (each document's epsilon, the epsilon per unit
    and its metric), for reading beside the risk; None where the releases have no Guarantee each
    (a new corpus) or were read back from a cache entry written before budgets were kept.
    """

    texts: list[str]
    labels: list[str] | None
    aligned: bool
    stats: dict[str, int]
    budget: ReleaseBudget | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"texts": self.texts, "labels": self.labels, "aligned": self.aligned, "stats": self.stats}
        return data if self.budget is None else {**data, "budget": self.budget.to_dict()}


def release_statistics(releases: Sequence[Release]) -> dict[str, int]:
    """Tokens protected and tokens changed over ``releases`` (what a sweep reports per point).

    >>> release_statistics([])
    {'words_protected': 0, 'words_changed': 0}
    """
    return {"words_protected": sum(r.guarantee.words_protected for r in releases),
            "words_changed": sum(len(r.changes) for r in releases)}


def texts_hash(texts: Iterable[str]) -> str:
    """A digest of a sequence of texts (a training corpus), for manifests and cache keys."""
    digest = hashlib.sha256()
    count = 0
    for text in texts:
        digest.update(text.encode("utf-8") + b"\x00")
        count += 1
    digest.update(str(count).encode())
    return digest.hexdigest()[:16]


class Mechanism:
    """The base of every mechanism. Subclasses set ``name``, take their parameters (declared in
    the registry) and ``seed`` in ``__init__``, call :meth:`_check_parameters`, and implement
    :meth:`sanitize_many`; mechanisms that learn override :meth:`_fit`.

    ``resources`` names constructor arguments that are not parameters but things the mechanism
    works with (the embeddings): they are passed along by :meth:`with_params`, described by a
    digest in the manifest, and given again to :meth:`load`.
    """

    name: ClassVar[str] = ""
    resources: ClassVar[tuple[str, ...]] = ()
    corpus_level: ClassVar[bool] = False
    """Whether the mechanism releases a new corpus rather than one text per input text."""
    needs_fit: ClassVar[bool] = False
    """Whether the mechanism must be fitted (or loaded trained) before it can release."""
    fit_uses_seed: ClassVar[bool] = False
    """Whether fitting draws at random (from ``seed``): a model trained with another seed differs."""
    fit_uses_labels: ClassVar[bool] = False
    """Whether fitting reads each text's label (the user a model writes for): ``fit(texts, labels)``;
    such a mechanism records its training data's digest itself."""
    randomised: ClassVar[bool] = True
    """Whether releases are drawn at random (False: the same text always gives the same release)."""
    release_command: ClassVar[str] = ""
    """The command that releases with this mechanism when ``textveil sanitize`` cannot (a key to keep)."""
    trains_network: ClassVar[bool] = False
    """Whether fitting trains a network in epochs (``train``, checkpoints a later run may continue)."""
    writes_synthetic_corpus: ClassVar[bool] = False
    """Whether a trained model writes a synthetic corpus for given users (``synthesize``)."""
    placeholder_rule: ClassVar[str] = "each placeholder is one word token, treated like any other word"
    """What the mechanism does with the entity stage's placeholders (``<PERSON>``, one token each,
    :mod:`textveil.text.placeholders`): a public rule, stated in the Guarantee of a release that
    held one."""

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this mechanism cannot run here (one line naming what to install), or None."""
        return None

    # -- parameters ------------------------------------------------------------------

    @classmethod
    def spec(cls) -> Entry:
        """The registry entry: this mechanism's description, guarantee kind and parameters."""
        from textveil.mechanisms.registry import MECHANISMS

        return MECHANISMS.entry(cls.name)

    def _check_parameters(self, **values: Any) -> None:
        """Check each value against its declared parameter and set it as an attribute."""
        spec = self.spec()
        for name, value in values.items():
            setattr(self, name, spec.parameter(name).check(value))

    def get_params(self) -> dict[str, Any]:
        """The parameters this mechanism was made with (secrets included: never log these)."""
        return {p.name: getattr(self, p.name) for p in self.spec().parameters}

    def public_params(self) -> dict[str, Any]:
        """The parameters as they may be shown and stored: a secret appears as its digest only.

        This, never :meth:`get_params`, goes into results, logs, manifests and cache keys.
        """
        shown: dict[str, Any] = {}
        for name, value in self.get_params().items():
            shown[name] = str(value) if isinstance(value, Secret) else value
        return shown

    def _resources(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.resources}

    def with_params(self: M, **changes: Any) -> M:
        """A copy with some parameters changed (another epsilon, temperature or seed) that keeps
        what was fitted. Randomness restarts from the (new or same) seed, exactly as in a
        mechanism made afresh with those parameters.
        """
        spec = self.spec()
        for name in changes:
            spec.parameter(name)  # an unknown name fails with the list of valid ones
        copy = type(self)(**{**self.get_params(), **changes}, **self._resources())
        copy._set_fitted_state(self._fitted_state())
        return copy

    # -- learning ----------------------------------------------------------------------

    def fit(self: M, texts: Sequence[str], labels: Sequence[str] | None = None) -> M:
        """Learn what the mechanism needs from ``texts`` (a training corpus: never the texts
        that will be released) and, for a mechanism that models its writers
        (``fit_uses_labels``), their ``labels``. Returns ``self``. A no-op for mechanisms that
        learn nothing."""
        texts = list(texts)
        if any(not isinstance(t, str) for t in texts):
            raise InvalidParameterError("fit expects a sequence of texts (str)")
        if labels is not None and len(labels) != len(texts):
            raise InvalidParameterError(f"fit was given {len(labels)} labels for {len(texts)} texts: give one per text")
        if self.fit_uses_labels:
            self._fit(texts, None if labels is None else [str(label) for label in labels])  # type: ignore[call-arg]
        else:
            self._fit(texts)
            if self._fitted_state():
                self.training_data_hash_ = texts_hash(texts)
        return self

    def _fit(self, texts: list[str]) -> None:
        """Subclasses that learn override this and store what they learn in ``name_`` attributes."""

    @property
    def learns(self) -> bool:
        return type(self)._fit is not Mechanism._fit

    def _fitted_state(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    def _set_fitted_state(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, value)

    # -- releasing ---------------------------------------------------------------------

    def sanitize(self, text: str) -> Release:
        """Release one text. See :meth:`sanitize_many` for many (faster: batched)."""
        return self.sanitize_many([text])[0]

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        raise NotImplementedError  # pragma: no cover - every mechanism implements it

    def sanitize_records(self, texts: Sequence[str], seeds: Sequence[int],
                         progress: ProgressCallback | None = None) -> list[Release]:
        """Release each text with its own seed: text ``i``'s release is exactly
        ``self.with_params(seed=seeds[i]).sanitize(texts[i])``.

        A release job derives each record's seed from its run seed and the record's position
        (:func:`textveil.release.seeds.record_seed`), so its output is the same whatever the
        sharding or the number of workers. This default makes that mechanism once per text;
        the substitution mechanisms override it to draw per text but decode all texts at once.
        A mechanism that is not randomised ignores the seeds; a corpus-level one cannot release
        one record at a time.

        >>> from textveil.embeddings import WordEmbeddings
        >>> from textveil.mechanisms.random_replacement import RandomReplacement
        >>> random = RandomReplacement(WordEmbeddings(["a", "b", "c"], [[0.0], [1.0], [2.0]]))
        >>> [r.text for r in random.sanitize_records(["a b a", "c"], [5, 6])] == [
        ...     random.with_params(seed=5).sanitize("a b a").text, random.with_params(seed=6).sanitize("c").text]
        True
        """
        texts = list(texts)
        if len(seeds) != len(texts):
            raise InvalidParameterError(f"sanitize_records was given {len(seeds)} seeds for {len(texts)} texts: "
                                        "give one per text")
        if self.corpus_level:
            raise InvalidParameterError(
                f"{self.name} releases a corpus as a whole, not one record at a time; "
                f"release it with '{self.release_command or 'textveil ' + self.name}'")
        if not self.randomised:
            return self.sanitize_many(texts, progress=progress)
        releases: list[Release] = []
        for text, seed in zip(texts, seeds):
            releases.append(self.with_params(seed=int(seed)).sanitize(text))
            if progress is not None:
                progress(1)
        return releases

    def release_corpus(self, texts: Sequence[str], labels: Sequence[str] | None = None,
                       progress: ProgressCallback | None = None) -> CorpusRelease:
        """Release a corpus as the harness measures it. A document-level mechanism releases
        each text (aligned with its input); a corpus-level one overrides this."""
        releases = self.sanitize_many(texts, progress=progress)
        return CorpusRelease([r.text for r in releases], None if labels is None else list(labels), True,
                             release_statistics(releases), ReleaseBudget.of(r.guarantee for r in releases))

    def planned_spend(self, text: str) -> tuple[float, str] | None:
        """What releasing ``text`` spends from a budget ledger: :meth:`spend_per_release` for every
        text, unless the mechanism's spend depends on a public function of the text (a rewriter's
        number of units). Computed before any randomness touches the text."""
        return self.spend_per_release()

    def spend_per_release(self) -> tuple[float, str] | None:
        """What one released text spends from a budget ledger (:mod:`textveil.privacy.ledger`):
        its Guarantee's epsilon and the unit it is stated in, e.g. ``(10.0, "metric epsilon per
        token")``; None for a mechanism whose Guarantee states no epsilon (it cannot be
        budgeted). Known before any randomness touches the text."""
        return None

    # -- identity, saving and loading --------------------------------------------------

    def vocabulary_hash(self) -> str | None:
        """A digest of what the release may contain (the decoding vocabulary), if it has one."""
        return None

    def fingerprint(self) -> dict[str, Any]:
        """Everything a release depends on besides its input and seed, as shown data: the
        mechanism, its public parameters, the vocabulary's and the training data's digests.
        Cache keys and results are built from this (a secret appears as a digest only)."""
        params = {k: v for k, v in self.public_params().items() if k != "seed"}
        return {"mechanism": self.name, "parameters": params, "vocabulary": self.vocabulary_hash(),
                "training_data": getattr(self, "training_data_hash_", None)}

    def save(self, folder: str | Path) -> Path:
        """Write the mechanism (parameters, what it learned, a manifest) to ``folder``; secrets
        go to ``secrets.json`` (readable by the owner only), never into the manifest."""
        from textveil.atomic_files import atomic_write_bytes, atomic_write_text
        from textveil.version import __version__

        target = Path(folder)
        if target.exists() and not target.is_dir():
            raise InputError(f"'{target}' is a file; give a folder to save the mechanism in")
        state = self._fitted_state()
        arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
        plain = {k: v for k, v in state.items() if k not in arrays}
        secrets = {k: v.reveal().hex() for k, v in self.get_params().items() if isinstance(v, Secret)}
        manifest = {
            "format": MANIFEST_FORMAT, "class": f"{type(self).__module__}:{type(self).__qualname__}",
            "mechanism": self.name, "parameters": self.public_params(),
            "vocabulary_hash": self.vocabulary_hash(), "training_data_hash": state.get("training_data_hash_"),
            "resources": {name: getattr(getattr(self, name), "name", None) for name in self.resources},
            "arrays": sorted(arrays), "state": plain, "textveil_version": __version__,
        }
        if arrays:
            import io

            buffer = io.BytesIO()
            np.savez(buffer, **arrays)
            atomic_write_bytes(target / "state.npz", buffer.getvalue())
        if secrets:
            atomic_write_bytes(target / "secrets.json", json.dumps(secrets).encode("utf-8"), mode=0o600)
        atomic_write_text(target / MANIFEST, json.dumps(manifest, indent=2, default=str))  # last: marks it whole
        return target

    @classmethod
    def load(cls, folder: str | Path, **resources: Any) -> Mechanism:
        """A mechanism saved by :meth:`save`. ``resources`` (e.g. ``embeddings=``) must be the
        ones it was saved with: their digest is checked, as are its class and textveil version.
        """
        from textveil.version import __version__
        from textveil.mechanisms.registry import MECHANISMS

        source = Path(folder)
        manifest = _read_manifest(source)
        if manifest.get("format") != MANIFEST_FORMAT or manifest.get("mechanism") not in MECHANISMS:
            raise InputError(f"'{source / MANIFEST}' is not a textveil mechanism manifest ({MANIFEST_FORMAT})")
        entry = MECHANISMS.entry(manifest["mechanism"])
        target = entry.load()
        if manifest["class"] != f"{target.__module__}:{target.__qualname__}" or not issubclass(target, cls):
            raise InputError(f"'{source}' holds a saved {manifest['class']}, not a {cls.__qualname__}")
        saved_version = str(manifest.get("textveil_version", "?"))
        if saved_version.split(".")[:2] != __version__.split(".")[:2]:
            raise InputError(f"'{source}' was saved by textveil {saved_version}; this is {__version__}, which may "
                             "release differently: fit and save it again with this version")
        parameters = dict(manifest["parameters"])
        secrets_path = source / "secrets.json"
        if secrets_path.is_file():
            for name, value in json.loads(secrets_path.read_text(encoding="utf-8")).items():
                parameters[name] = Secret(bytes.fromhex(value))
        missing = [p.name for p in entry.parameters if p.secret and isinstance(parameters.get(p.name), str)]
        if missing:
            raise InputError(f"'{source}' lacks secrets.json with its {', '.join(missing)}: copy it with the manifest")
        # Resources the mechanism does not work with (embeddings, for one that has no vocabulary) are not its own.
        mechanism = target(**parameters, **{k: v for k, v in resources.items() if k in target.resources})
        if mechanism.vocabulary_hash() != manifest.get("vocabulary_hash"):
            raise InputError(
                f"'{source}' was saved with another vocabulary (digest {manifest.get('vocabulary_hash')}, here "
                f"{mechanism.vocabulary_hash()}); pass the embeddings it was saved with "
                f"({manifest.get('resources')})"
            )
        state = dict(manifest.get("state", {}))
        if manifest.get("arrays"):
            state.update(_read_arrays(source / "state.npz", manifest["arrays"]))
        mechanism._set_fitted_state(state)
        return mechanism


def _read_arrays(path: Path, names: list[str]) -> dict[str, np.ndarray]:
    """The fitted arrays of a saved mechanism; a missing, truncated or corrupt file is one line."""
    import zipfile

    if not path.is_file():
        raise InputError(f"'{path}' is missing: copy it with the manifest, or fit and save the mechanism again")
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return {name: arrays[name] for name in names}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        raise InputError(f"'{path}' is truncated or corrupt: fit and save the mechanism again") from None


def _read_manifest(source: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict):
        raise InputError(f"'{source}' holds no readable {MANIFEST}: it is not a saved textveil mechanism")
    return manifest


def saved_mechanism_name(folder: str | Path) -> str:
    """The name of the mechanism saved in ``folder`` (read from its manifest)."""
    source = Path(folder)
    name = _read_manifest(source).get("mechanism")
    if not isinstance(name, str):
        raise InputError(f"'{source / MANIFEST}' names no mechanism: it is not a textveil mechanism manifest")
    return name
