"""Polish: any mechanism's release rewritten into fluent sentences by the language model, which
reads only the release.

``emp``, ``syntf`` and ``random`` release words in the input's order but not sentences a reader
enjoys. :class:`PolishedMechanism` wraps any mechanism: each text is released by it first, then
the release (and nothing else) is rewritten by ``restyle``'s machinery
(:class:`~textveil.mechanisms.restyle.Restyle`) under the public ``polish`` prompt
(:data:`~textveil.mechanisms.prompting.PROMPTS`), greedily or by plain sampling at a temperature.

What it costs: nothing. The polish is a function of the release and of randomness independent of
the input (post-processing), so the Guarantee stays the first mechanism's, epsilon, kind and
document epsilon alike, and names the polish in its ``post_processing``; a budget ledger charges
only the first mechanism (:meth:`PolishedMechanism.planned_spend` passes through). Its random
stream is seeded from the mechanism's seed by a spawn key of its own (:func:`polish_seed`), so the
same seed gives the same bytes, and the polish draws nothing from the mechanism's own stream.

The faces name it ``--then polish`` (``sanitize``, ``release``), ``emp:10+polish`` (``compare``)
and ``"then": ["polish"]`` (the service), all parsed here by :func:`parse_then`; settings go in
brackets, e.g. ``polish[temperature=0.7]`` (0, the default, decodes greedily).

>>> from textveil.mechanisms.redaction import Redaction
>>> from textveil.models.toy_language_model import toy_language_model
>>> toy = toy_language_model(["mail", "[EMAIL]", "soon"])
>>> polished = with_polish(Redaction(), language_model=toy, max_new_tokens=3)
>>> release = polished.sanitize("mail ann@example.org soon")
>>> release.guarantee.mechanism, release.guarantee.post_processing[0].startswith("polish: the release was rewritten")
('redact', True)
>>> [step.text for step in parse_then("polish[temperature=0.7]")]
['polish[temperature=0.7]']
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.mechanisms.base import CorpusRelease, ProgressCallback, Release
from textveil.mechanisms.restyle import Restyle
from textveil.mechanisms.prompting import PROMPTS
from textveil.mechanisms.registry import MECHANISMS
from textveil.models.device import is_torch_tensor
from textveil.privacy.guarantee import Guarantee
from textveil.registry import Parameter
from textveil.text.tokenize import find_words

POLISH = "polish"
POST_PROCESSING = {POLISH: "rewrite the release into fluent, plain sentences with the language model, which reads "
                           "only the release (no privacy cost)"}
"""The steps a release may go through after its mechanism (``--then NAME``), with what each does."""

DEFAULT_TEMPERATURE = 0.0
"""Greedy decoding: on ``emp``'s releases of real posts it keeps more of the words given and
invents less than sampling at 0.7 (docs/mechanisms/polish.md)."""

POLISH_SPAWN_KEY = 0x706F6C697368  # "polish" in ASCII: a spawn key no record position reaches
"""The spawn key of the polish's stream (:func:`polish_seed`): independent of the mechanism's."""


def _settings() -> dict[str, Parameter]:
    """The polish's settings: restyle's own for the model, engine and reply length, and a
    temperature that may be 0 (greedy)."""
    restyle = MECHANISMS.entry("restyle")
    return {
        "temperature": Parameter("temperature", float, "0 decodes greedily; above 0, plain sampling at this "
                                 "temperature", DEFAULT_TEMPERATURE),
        **{name: restyle.parameter(name) for name in ("model", "engine", "max_new_tokens")},
    }


@dataclasses.dataclass(frozen=True)
class Polish:
    """The polish's public settings, checked here (one line naming the fix).

    >>> Polish().text, Polish(temperature=0.7).decoding
    ('polish', 'plain sampling at temperature 0.7')
    >>> Polish(temperature=-1)
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: polish's temperature must be 0 (greedy) or more, got -1
    """

    temperature: float = DEFAULT_TEMPERATURE
    model: str = "smollm2-135m-instruct"
    engine: str = "auto"
    max_new_tokens: int = 96

    def __post_init__(self) -> None:
        settings = _settings()
        for name in ("model", "engine", "max_new_tokens"):
            object.__setattr__(self, name, settings[name].check(getattr(self, name)))
        temperature = settings["temperature"].check(self.temperature)
        if temperature < 0:
            raise InvalidParameterError(f"polish's temperature must be 0 (greedy) or more, got {self.temperature!r}")
        object.__setattr__(self, "temperature", float(temperature))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def decoding(self) -> str:
        """How a reply's tokens are chosen, in words."""
        return "greedy decoding" if self.greedy else f"plain sampling at temperature {self.temperature:g}"

    def public(self) -> dict[str, Any]:
        """The settings as shown data (fingerprints, manifests)."""
        return {"name": POLISH, **dataclasses.asdict(self), "prompt": POLISH}

    @property
    def text(self) -> str:
        """The step as the faces write it: ``polish``, with the settings that differ from the
        defaults in brackets (``polish[temperature=0.7]``); :func:`parse_then` reads it back."""
        shown = [f"{f.name}={getattr(self, f.name):g}" if isinstance(getattr(self, f.name), float)
                 else f"{f.name}={getattr(self, f.name)}"
                 for f in dataclasses.fields(self) if getattr(self, f.name) != f.default]
        return f"{POLISH}[{','.join(shown)}]" if shown else POLISH


def parse_then(given: str | Sequence[str | Polish] | None, option: str = "--then") -> tuple[Polish, ...]:
    """The steps after the mechanism, as every face takes them: ``None`` (none), a name, or a list
    of names; steps may be joined by ``+`` or ``,`` (``polish[temperature=0.7]``: settings in
    brackets). ``option`` names where they were given, for the one-line error.

    >>> parse_then(None), parse_then([])
    ((), ())
    >>> parse_then("polish")[0] == Polish()
    True
    >>> parse_then(["polish[temperature=0.5, max_new_tokens=64]"])[0].max_new_tokens
    64
    >>> parse_then("shine")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: unknown --then 'shine'; use one of: polish
    >>> parse_then("polish[width=3]")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: --then 'polish[width=3]': polish takes no setting 'width'; its settings: temperature, model, engine, max_new_tokens
    """
    if given is None:
        return ()
    items = [given] if isinstance(given, (str, Polish)) else list(given)
    steps: list[Polish] = []
    for item in items:
        if isinstance(item, Polish):
            steps.append(item)
            continue
        if not isinstance(item, str):
            raise InvalidParameterError(f"{option} takes names such as '{POLISH}', got {type(item).__name__}")
        steps += [_parse_step(part, option) for part in _split_steps(item)]
    return tuple(steps)


def _split_steps(text: str) -> list[str]:
    """``text`` cut at ``+`` and ``,`` outside brackets (a step's settings hold commas)."""
    parts, current, depth = [], [], 0
    for character in text:
        depth += {"[": 1, "]": -1}.get(character, 0)
        if character in "+," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(character)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _parse_step(text: str, option: str) -> Polish:
    name, bracket, settings = text.partition("[")
    name = name.strip().lower()
    if name not in POST_PROCESSING:
        raise InvalidParameterError(f"unknown {option} '{name or text}'; use one of: {', '.join(POST_PROCESSING)}")
    given: dict[str, Any] = {}
    if bracket:
        if not settings.endswith("]"):
            raise InvalidParameterError(f"{option} '{text}': close its settings with ']', e.g. {name}[temperature=0.7]")
        known = _settings()
        for setting in filter(None, (part.strip() for part in settings[:-1].split(","))):
            key, equals, value = setting.partition("=")
            key = key.strip().replace("-", "_")
            if not equals or not key:
                raise InvalidParameterError(f"{option} '{text}': '{setting}' is not NAME=VALUE")
            if key not in known:
                raise InvalidParameterError(f"{option} '{text}': {name} takes no setting '{key}'; its settings: "
                                            f"{', '.join(known)}")
            given[key] = known[key].parse(value.strip())
    return Polish(**given)


def polish_seed(seed: int | None) -> int | None:
    """The seed of the polish's stream for a mechanism seeded with ``seed`` (None: fresh OS
    entropy): a spawn of ``seed``'s own, so the polish draws nothing from the mechanism's stream.

    >>> polish_seed(None), polish_seed(7) == polish_seed(7) != polish_seed(8), polish_seed(7) != 7
    (None, True, True)
    """
    if seed is None:
        return None
    words = np.random.SeedSequence(int(seed), spawn_key=(POLISH_SPAWN_KEY,)).generate_state(4, dtype=np.uint32)
    return int.from_bytes(words.astype("<u4").tobytes(), "little")


class Polisher(Restyle):
    """``restyle`` under the ``polish`` prompt; at temperature 0 each token is the model's most
    likely one over the output vocabulary (greedy). Built by :class:`PolishedMechanism`, never
    from the registry (its Guarantee is not used: the release keeps its mechanism's)."""

    def __init__(self, polish: Polish, *, seed: int | None = None, language_model: Any = None,
                 batch_size: int | None = None, device: str = "auto") -> None:
        # restyle's temperature must be above 0; greedy decoding never reads it
        super().__init__(temperature=polish.temperature or 1.0, max_new_tokens=polish.max_new_tokens,
                         model=polish.model, engine=polish.engine, prompt=POLISH, seed=seed,
                         language_model=language_model, batch_size=batch_size, device=device)
        self.polish = polish
        self._device_candidates: tuple[np.ndarray, Any] | None = None

    def _draw(self, logits: Any, candidates: np.ndarray, rngs: list[np.random.Generator]) -> np.ndarray:
        if not self.polish.greedy:
            return super()._draw(logits, candidates, rngs)
        if is_torch_tensor(logits):  # wherever the engine left them: only the chosen positions move
            import torch

            if self._device_candidates is None or self._device_candidates[0] is not candidates:
                self._device_candidates = (candidates, torch.as_tensor(candidates, dtype=torch.long,
                                                                       device=logits.device))
            return logits.index_select(1, self._device_candidates[1]).argmax(dim=1).cpu().numpy()
        return np.asarray(logits)[:, candidates].argmax(axis=1)

    def note(self) -> str:
        """The polish as a Guarantee's post-processing names it."""
        template = PROMPTS[POLISH]
        return (f"polish: the release was rewritten into sentences by the language model {self.model} "
                f"({self.engine_description()}) with the public prompt '{template.instruction}', by "
                f"{self.polish.decoding}, at most {self.max_new_tokens} tokens a unit; it read only the release, "
                "never the input")


class PolishedMechanism:
    """``mechanism``'s releases, each polished by the language model reading only the release.

    It offers the release operations of a mechanism (``fit``, ``with_params``, ``sanitize``,
    ``sanitize_many``, ``sanitize_records``, ``release_corpus``, ``fingerprint``,
    ``planned_spend``, ``spend_per_release``) and passes everything else to the mechanism it
    wraps, as :class:`~textveil.pii.staged.StagedMechanism` does; the entity stage goes inside:
    stage, then mechanism, then polish.
    """

    def __init__(self, mechanism: Any, polish: Polish | None = None, *, language_model: Any = None) -> None:
        name = mechanism.name
        if name in MECHANISMS and MECHANISMS.entry(name).guarantee == "l-privacy":
            raise InvalidParameterError(f"{name} releases code words under a secret key, not text: polish has no "
                                        "sentence to write; leave out --then polish")
        self.mechanism = mechanism
        self.polish = polish or Polish()
        self.polisher = Polisher(self.polish, seed=polish_seed(getattr(mechanism, "seed", None)),
                                 language_model=language_model)
        self.polish_seconds = 0.0
        self.polished_words = 0

    def __getattr__(self, name: str) -> Any:
        if name in ("mechanism", "polish", "polisher"):  # not set yet (copying): never recurse
            raise AttributeError(name)
        return getattr(self.mechanism, name)

    def __repr__(self) -> str:
        return f"PolishedMechanism({self.mechanism!r}, {self.polish.text})"

    @property
    def then(self) -> tuple[Polish, ...]:
        """Every step after the first mechanism, in order (a polish of a polish lists two)."""
        return (*getattr(self.mechanism, "then", ()), self.polish)

    # -- what passes through ---------------------------------------------------------------

    def planned_spend(self, text: str) -> tuple[float, str] | None:
        """The mechanism's spend: the polish reads only the release, so it spends nothing."""
        return self.mechanism.planned_spend(text)

    def spend_per_release(self) -> tuple[float, str] | None:
        return self.mechanism.spend_per_release()

    def fit(self, texts: Sequence[str], labels: Sequence[str] | None = None) -> PolishedMechanism:
        """Fit the mechanism (the polish learns nothing)."""
        self.mechanism.fit(texts, labels)
        return self

    def with_params(self, **changes: Any) -> PolishedMechanism:
        """The mechanism with some parameters changed, polished alike; a new seed seeds the polish
        too (:func:`polish_seed`). The loaded language model is kept."""
        return self.around(self.mechanism.with_params(**changes))

    def around(self, mechanism: Any) -> PolishedMechanism:
        """This polish (its settings and loaded language model) after another ``mechanism``."""
        return PolishedMechanism(mechanism, self.polish, language_model=self.polisher.language_model)

    def fingerprint(self) -> dict[str, Any]:
        """The mechanism's fingerprint with the polish's settings and what runs its model: a
        polished release is another release (cache keys)."""
        shown = self.mechanism.fingerprint()
        polisher = self.polisher.fingerprint()
        step = {**self.polish.public(), "engine": polisher["engine"], "model_digest": polisher["vocabulary"],
                "output_vocabulary": polisher["output_vocabulary"], "instruction": PROMPTS[POLISH].instruction}
        return {**shown, "then": [*shown.get("then", []), step]}

    # -- releasing ---------------------------------------------------------------------------

    def sanitize(self, text: str) -> Release:
        return self.sanitize_many([text])[0]

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        first, second = _halves(progress)
        releases = self.mechanism.sanitize_many(list(texts), progress=first)
        return self._polished(releases, self._timed(lambda: self.polisher.sanitize_many(
            [r.text for r in releases], progress=second), releases))

    def sanitize_records(self, texts: Sequence[str], seeds: Sequence[int],
                         progress: ProgressCallback | None = None) -> list[Release]:
        """Each text with its own seed: the mechanism's release with it, polished from its
        :func:`polish_seed` (text i's release is ``self.with_params(seed=seeds[i]).sanitize(texts[i])``)."""
        first, second = _halves(progress)
        releases = self.mechanism.sanitize_records(texts, seeds, progress=first)
        rewritten = self._timed(lambda: self.polisher.sanitize_records(
            [r.text for r in releases], [polish_seed(s) for s in seeds], progress=second), releases)
        return self._polished(releases, rewritten)

    def release_corpus(self, texts: Sequence[str], labels: Sequence[str] | None = None,
                       progress: ProgressCallback | None = None) -> CorpusRelease:
        """The mechanism's corpus release with every text polished (labels, alignment and counts
        are the mechanism's)."""
        first, second = _halves(progress)
        released = self.mechanism.release_corpus(texts, labels, progress=first)
        rewritten = self.polisher.sanitize_many(released.texts, progress=second)
        return dataclasses.replace(released, texts=[r.text for r in rewritten])

    def speeds(self) -> dict[str, float | None]:
        """The wrapped mechanism's speeds (the entity stage's and its own), and the polish's."""
        inner = getattr(self.mechanism, "speeds", None)
        rate = self.polished_words / self.polish_seconds if self.polish_seconds and self.polished_words else None
        return {**(inner() if inner is not None else {}), POLISH: rate}

    def _timed(self, work: Any, releases: list[Release]) -> Any:
        """``work()``, its seconds and the words it polished (of ``releases``) counted."""
        started = time.perf_counter()
        try:
            return work()
        finally:
            self.polish_seconds += time.perf_counter() - started
            self.polished_words += sum(len(find_words(release.text)) for release in releases)

    def _polished(self, releases: list[Release], rewritten: list[Release]) -> list[Release]:
        note = self.polisher.note()  # once the model has run: what ran it
        return [dataclasses.replace(release, text=polished.text, guarantee=with_post_processing_note(
            release.guarantee, note)) for release, polished in zip(releases, rewritten)]


def _halves(progress: ProgressCallback | None) -> tuple[ProgressCallback | None, ProgressCallback | None]:
    """Progress in texts, the mechanism and the polish each told half of it."""
    if progress is None:
        return None, None
    half = lambda done: progress(done / 2)  # noqa: E731
    return half, half


def with_post_processing_note(guarantee: Guarantee, note: str) -> Guarantee:
    """``guarantee`` naming one more post-processing step: the statement is written again from the
    fields where the mechanism wrote a ``how`` (every one does), else the note is added to it.

    >>> g = Guarantee("emp", 10.0, "d", 3)
    >>> later = with_post_processing_note(g, "polish: rewritten")
    >>> later.post_processing, later.epsilon == g.epsilon, "polish: rewritten" in later.statement
    (('polish: rewritten',), True, True)
    """
    steps = (*guarantee.post_processing, note)
    if guarantee.how:
        return dataclasses.replace(guarantee, post_processing=steps)
    return dataclasses.replace(guarantee, post_processing=steps,
                               statement=f"{guarantee.statement} Post-processing: {note}.".strip())


def with_polish(mechanism: Any, *, language_model: Any = None, **settings: Any) -> PolishedMechanism:
    """``mechanism`` with its releases polished (``settings``: :class:`Polish`'s).

    >>> from textveil.mechanisms.redaction import Redaction
    >>> from textveil.models.toy_language_model import toy_language_model
    >>> with_polish(Redaction(), temperature=0.7, language_model=toy_language_model(["a"])).polish.decoding
    'plain sampling at temperature 0.7'
    """
    return PolishedMechanism(mechanism, Polish(**settings), language_model=language_model)


def with_then(mechanism: Any, then: str | Sequence[str | Polish] | None, *, language_model: Any = None) -> Any:
    """``mechanism`` followed by the steps ``then`` names (:func:`parse_then`); itself without any.
    ``language_model``, where given, is what every polish runs (a face's already loaded model).

    >>> from textveil.mechanisms.redaction import Redaction
    >>> with_then(Redaction(), None).name
    'redact'
    """
    for step in parse_then(then):
        mechanism = PolishedMechanism(mechanism, step, language_model=language_model)
    return mechanism
