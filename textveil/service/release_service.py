"""What the service keeps for the life of its process, and the work each request does.

The embeddings are loaded once; mechanisms are built once per (name, parameters) without a
seed and cached; each request releases with its own copy (:meth:`Mechanism.with_params` with
the request's seed, or ``seed=None``: fresh OS entropy), so no two requests share a random
state. The copy keeps its resources (the embeddings and their neighbour index), so making it
costs little.

A release goes through the library exactly as a user's code would: ``build_mechanism`` (with
the entity stage the request asks for: placeholders unless told otherwise), then
``sanitize_many`` or, with a budget ledger, ``release_with_budget``. No privacy logic lives here.

The entity stage (:mod:`textveil.pii`) is built once per distinct options and shared by every
request and mechanism that asks for them, so spaCy loads once per process and what the stage
has screened is remembered across requests. Pseudonyms are keyed by one key for the life of
the process (``textveil serve --pseudonym-key FILE``, else a fresh one): the same name gets
the same pseudonym in every request until the service stops. The key never leaves the
:class:`ReleaseService`: no response, log line or file holds it (a response shows only its
digest).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textveil.building import (
    HARNESS_OPTIONS,
    build_mechanism,
    check_mechanism_options,
    check_model_path,
    is_language_model,
    takes_model,
)
from textveil.embeddings.neighbours import decoding_threads
from textveil.errors import InputError, InvalidParameterError, TextveilError
from textveil.machine import usable_cpus
from textveil.mechanisms.base import Mechanism
from textveil.mechanisms.registry import MECHANISMS
from textveil.pii.stage import (
    EntityOptionNames,
    EntityOptions,
    EntityStage,
    parse_entity_options,
    read_key,
    stage_summary,
)
from textveil.privacy.guarantee import KINDS
from textveil.privacy.secrets import Secret
from textveil.privacy.ledger import DEFAULT_DATASET, BudgetLedger
from textveil.release.summary import summarise_records
from textveil.service.slots import Slots

log = logging.getLogger("textveil.service")

DEFAULT_CALIBRATION_GRID = (5.0, 7.5, 10.0, 12.5, 15.0, 20.0, 25.0, 30.0, 40.0)
"""The epsilons the page's slider spans for emp (``textveil calibrate``'s range, finer)."""

CALIBRATION_SAMPLE = {"samples": 200, "word_types": 20, "draws": 10, "seed": 0}
"""The page's curve: a small seeded sample (about 4,000 nearest-word searches over the grid,
a second or so on the default embeddings), computed once per process and cached."""
MECHANISM_CACHE_SIZE = 64
STAGE_CACHE_SIZE = 16
"""Distinct entity-stage options kept built (each remembers up to 20,000 screened texts)."""
STAGE_OFF = EntityOptions(operator="off")
REQUEST_NAMES = EntityOptionNames(operator="entities.operator", entity_types="entities.entity_types",
                                  key="the service's pseudonym key", stage_off="send entities.operator 'off'",
                                  comma_separated=False)
"""How a request names the entity stage's options (a JSON object's fields, whole words in its lists)."""
WARM_UP_TEXT = "Hi, I am Margaret Okafor from Portland; mail margaret@example.org."
"""What ``textveil serve`` screens before it listens, so that spaCy is loaded (never logged)."""


def calibration_grid(mechanism: str) -> list[float]:
    """The values the page's slider spans: emp's finer grid, or the registry's for the others."""
    return list(DEFAULT_CALIBRATION_GRID if mechanism == "emp" else MECHANISMS.entry(mechanism).grid)


class Abandoned(Exception):
    """Raised inside a release that its request gave up on (it timed out), before its spend is recorded."""


def text_digest(text: str) -> str:
    """What the logs say of a text: its SHA-256 prefix (never the text)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def describe_texts(texts: Sequence[str]) -> str:
    """Lengths and digests of ``texts``, for a log line that never holds a text."""
    shown = list(texts[:5])
    more = f" (+{len(texts) - len(shown)} more)" if len(texts) > len(shown) else ""
    return (f"{len(texts)} text(s), lengths {[len(t) for t in shown]}{more}, "
            f"sha256 {[text_digest(t) for t in shown]}{more}")


def finite_or_none(value: Any) -> Any:
    """JSON has no NaN: a float that is not finite becomes null (recursively)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_or_none(v) for v in value]
    return value


def release_refusal(name: str, trained: Sequence[str] = (), language_models: Sequence[str] | None = None) -> str | None:
    """Why the service cannot release text by text with mechanism ``name``, or None;
    ``trained``: the mechanisms whose trained models the service loaded (``serve --model``);
    ``language_models``: the language models it offers to the mechanisms that rewrite with one
    (None: the mechanism's own default, if installed)."""
    cls = MECHANISMS.load(name)
    if cls.corpus_level or cls.release_command:
        command = cls.release_command or "textveil evaluate"
        return f"{name} releases a whole corpus at once, not text by text; use '{command}' instead of the service"
    if cls.needs_fit and name not in trained:
        return (f"{name} must be trained first ('textveil train {name}') and the service started with its model "
                f"('textveil serve --model DIR')")
    if takes_model(name) and language_models is not None:
        if language_models:
            return None
        return (f"{name} needs a language model and this service offers none: install the default one or start the "
                "service with 'textveil serve --model FILE.gguf' (or a Hugging Face model folder)")
    return cls.unavailable()


CALIBRATION_TOO_COSTLY = (
    "No calibration curve for {name}: it would release hundreds of sample texts with the language model (minutes on "
    "a CPU). Measure its risk and utility with 'textveil evaluate'.")


def mechanism_listing(trained: Sequence[str] = (), language_models: Sequence[str] | None = None,
                      default_model: str | None = None) -> list[dict[str, Any]]:
    """The registry as data (name, guarantee, description, parameters) and whether the service releases with each.
    A mechanism that rewrites with a language model lists the service's language models as its
    ``model`` parameter's choices (``language_models``, the first the default)."""
    listed = []
    for entry in MECHANISMS.entries():
        refusal = release_refusal(entry.name, trained, language_models)
        swept = entry.swept
        parameters = [p.describe() for p in entry.parameters]
        note = None
        if takes_model(entry.name):
            if language_models:
                for parameter in parameters:
                    if parameter["name"] == "model":
                        parameter.update(choices=list(language_models), default=default_model or language_models[0])
            if swept is not None and "language_model" in MECHANISMS.load(entry.name).resources:
                note = CALIBRATION_TOO_COSTLY.format(name=entry.name)  # the page asks for a curve on every change
        listed.append({
            "name": entry.name,
            "guarantee": entry.guarantee,
            "guarantee_words": KINDS.get(entry.guarantee, entry.guarantee),
            "description": entry.description,
            "parameters": parameters,
            "swept": swept.name if swept else None,
            "grid": calibration_grid(entry.name),
            "calibration": swept is not None and refusal is None and note is None,
            "calibration_note": note,
            "service": {"releases": refusal is None, "reason": refusal},
        })
    return listed


@dataclass(frozen=True)
class ReleaseOrder:
    """One checked sanitise request."""

    texts: list[str]
    mechanism: str
    options: dict[str, Any]
    seed: int | None
    subjects: list[str] | None
    dataset: str
    request_id: str | None
    entities: EntityOptions = field(default_factory=EntityOptions)
    """The entity stage before the mechanism (placeholders unless the request says otherwise)."""
    then: tuple[str, ...] = ()
    """What rewrites each release after the mechanism (``("polish",)``: :mod:`textveil.mechanisms.polish`)."""


def check_options(mechanism: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A request's mechanism parameters, checked by the mechanism's own spec (one-line errors)."""
    entry = MECHANISMS.entry(mechanism)  # an unknown name fails with the valid ones
    if not isinstance(parameters, dict):
        raise InvalidParameterError("parameters must be a JSON object, e.g. {\"epsilon\": 20}")
    options = dict(parameters)
    if "seed" in options:
        raise InvalidParameterError("give the seed as the request's 'seed', not in 'parameters'")
    for name in HARNESS_OPTIONS:
        if name in options:
            raise InvalidParameterError(f"parameters.{name} is not taken by the service: its vocabulary is fixed "
                                        "when it starts (textveil serve --embeddings)")
    check_mechanism_options(mechanism, options)
    for name, value in options.items():  # the registry's check takes a text parameter as it comes
        parameter = entry.parameter(name)
        if parameter.type is str and not isinstance(value, str) and not (value is None and parameter.default is None):
            raise InvalidParameterError(f"parameters.{name} must be a string, got {type(value).__name__}")
    for parameter in entry.parameters:
        if parameter.required and parameter.name not in options:
            raise InvalidParameterError(f"mechanism '{mechanism}' needs parameters.{parameter.name}: {parameter.help}")
    return {name: entry.parameter(name).check(value) for name, value in options.items()}


class SharedStage(EntityStage):
    """An entity stage that requests share: one screens at a time (its memo and its pseudonyms'
    seeded Faker are not for two threads at once)."""

    def __init__(self, options: EntityOptions) -> None:
        super().__init__(options)
        self._lock = threading.Lock()

    def apply_many(self, texts: Sequence[str]) -> list[Any]:
        with self._lock:
            return super().apply_many(texts)


def read_pseudonym_key(given: Secret | str | Path | None) -> Secret:
    """The service's pseudonym key: ``given`` (a :class:`Secret`, or a file holding the key),
    else a fresh key from OS entropy for the life of the process."""
    if given is None:
        return Secret.generate()
    if isinstance(given, Secret):
        return given
    return read_key(str(given))


def entity_refusal() -> str | None:
    """Why this service cannot run the entity stage (one line, in the API's words), or None."""
    from textveil.pii.detector import unavailable

    reason = unavailable()
    if reason is None:
        return None
    return reason.replace("pass --entities off", 'send "entities": {"operator": "off"}')


WARM_UP_TOKENS = 4
"""Tokens of the text each language model writes at start-up (its first decode builds what later
ones reuse)."""


class ReleaseService:
    """The process's embeddings, ledger and mechanism cache, and the releases themselves.

    ``embeddings`` is a :class:`~textveil.embeddings.WordEmbeddings` or a spec for
    :func:`~textveil.embeddings.load_embeddings` (``"default"`` or a vectors file), loaded on
    first use (``textveil serve`` loads it before it listens).

    ``concurrency`` releases run at once, and the CPUs are shared out between them: each
    decodes on ``decode_threads`` threads (the usable CPUs over ``concurrency``, at least one).
    Measured with 8 clients on 2 cores: 4 releases at once each spreading over both cores gave
    a p99 latency of 1.27 s; 2 at once on one core each, 0.84 s, and 11% more words/s.
    """

    def __init__(self, embeddings: Any, ledger: str | Path | None, concurrency: int,
                 models: Sequence[str | Path] = (), pseudonym_key: Secret | str | Path | None = None,
                 mechanisms: Sequence[str] | None = None, batched_concurrency: int = 32) -> None:
        # ``models``: trained mechanisms' folders, and language models (a .gguf file or a Hugging
        # Face model folder) for the mechanisms that rewrite with one (paraphrase, restyle).
        self._model_folders: list[Path] = []
        self._served_language_models: dict[str, str] = {}  # name -> absolute path
        for given in models:
            folder = Path(given)
            check_model_path(folder, None)
            if not is_language_model(folder):
                self._model_folders.append(folder)
                continue
            from textveil.models.language_model import language_model_unavailable

            reason = language_model_unavailable(str(folder))
            if reason is not None:
                raise InputError(reason)
            if folder.name in self._served_language_models:
                raise InputError(f"two --model language models are named '{folder.name}'; rename one of them")
            self._served_language_models[folder.name] = str(folder.resolve())
        self._offered: dict[str, str] | None = None
        self._models: dict[str, Mechanism] | None = None
        self._language_models: dict[tuple[str, str], Any] = {}  # (path, engine) -> the loaded LanguageModel
        self._language_models_lock = threading.Lock()
        self.ready_language_models: list[str] = []  # loaded and warmed at start-up (load_language_models)
        self._embeddings_spec = embeddings
        self._embeddings = None if isinstance(embeddings, (str, Path)) else embeddings
        self._embeddings_lock = threading.Lock()
        self.ledger = BudgetLedger(ledger) if ledger is not None else None
        self.slots = Slots(concurrency)
        # Requests that rewrite with a language model share its engine's batches (the model's one
        # decode queue), so more of them run at once: each mostly waits for its rows' tokens.
        self.batched_slots = Slots(batched_concurrency)
        self.decode_threads = max(1, usable_cpus() // concurrency)
        self._mechanisms: OrderedDict[tuple[str, ...], Mechanism] = OrderedDict()
        self._mechanisms_lock = threading.Lock()
        self._pseudonym_key = read_pseudonym_key(pseudonym_key)  # never shown, logged or written
        self._stages: OrderedDict[str, EntityStage] = OrderedDict()
        self._stages_lock = threading.Lock()
        self._calibrations: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._entity_types: list[str] | None = None
        # ``mechanisms``: the only ones this service offers (None: every one it can release with)
        self.offered = None if mechanisms is None else [MECHANISMS.entry(name).name for name in mechanisms]

    # -- resources, loaded once ----------------------------------------------------------

    def embeddings(self) -> Any:
        if self._embeddings is None:
            with self._embeddings_lock:
                if self._embeddings is None:
                    from textveil.embeddings import load_embeddings

                    self._embeddings = load_embeddings(str(self._embeddings_spec), log=log.info)
        return self._embeddings

    def models(self) -> dict[str, Mechanism]:
        """The trained mechanisms of ``serve --model``, by name, loaded once (with the embeddings)."""
        if self._models is None:
            from textveil.mechanisms.base import saved_mechanism_name

            loaded: dict[str, Mechanism] = {}
            for folder in self._model_folders:
                name = saved_mechanism_name(folder)
                if name in loaded:
                    raise InputError(f"two --model folders hold a trained {name}; serve one model per mechanism")
                loaded[name] = Mechanism.load(folder, embeddings=self.embeddings())
            self._models = loaded
        return self._models

    @property
    def trained(self) -> list[str]:
        return sorted(self.models())

    def offered_language_models(self) -> dict[str, str]:
        """The language models requests may name, by name (their paths stay on the server): those
        of ``serve --model``, then the bundled default when it is installed; the first is the
        default of a request that names none."""
        if self._offered is None:
            from textveil.models.language_model import BUNDLED_MODEL, language_model_unavailable

            offered = dict(self._served_language_models)
            if BUNDLED_MODEL not in offered and language_model_unavailable() is None:
                offered[BUNDLED_MODEL] = BUNDLED_MODEL
            self._offered = offered
        return dict(self._offered)

    def language_model_source(self, mechanism: str, options: dict[str, Any]) -> str | None:
        """The language model a request for ``mechanism`` releases with (its source: a path or the
        bundled name), or None for a mechanism that takes none. A request may name only a model
        this service offers: a client never makes the server read a path of its choosing."""
        if not takes_model(mechanism):
            return None
        offered = self.offered_language_models()
        asked = options.get("model")
        if asked is None:
            if not offered:
                raise InvalidParameterError(release_refusal(mechanism, self.trained, []) or "no language model")
            return next(iter(offered.values()))
        for name, source in offered.items():
            if asked in (name, source):
                return source
        raise InvalidParameterError(
            f"model '{asked}' is not offered by this service; it offers {', '.join(offered) or 'none'} (start it with "
            "'textveil serve --model FILE.gguf' or a Hugging Face model folder to offer another)")

    def language_model(self, source: str, engine: str = "auto") -> Any:
        """The language model ``source`` on ``engine``, loaded once for the life of the process and
        shared by every mechanism and request that rewrites with it (their decoding shares its batches)."""
        with self._language_models_lock:  # two first requests at once load it once
            if (source, engine) not in self._language_models:
                from textveil.models.language_model import load_language_model

                log.info("loading the language model %s (engine %s)", Path(source).name, engine)
                loaded = load_language_model(source, engine=engine)
                log.info("the language model %s runs on %s", Path(source).name, loaded.engine.description)
                self._language_models[(source, engine)] = loaded
            return self._language_models[(source, engine)]

    def slots_for(self, mechanism: str, then: Sequence[str] = ()) -> Slots:
        """The concurrency gate of a release with ``mechanism``: the batched one for the mechanisms
        that rewrite with a language model and for a release polished after it, the CPU-shared one
        for the others."""
        return self.batched_slots if takes_model(mechanism) or then else self.slots

    # -- polish, after any mechanism ----------------------------------------------------------

    def polish_refusal(self) -> str | None:
        """Why this service cannot polish a release (None: it can): it runs a language model, so
        a service started to offer only mechanisms without one does not, nor one that has none."""
        if self.offered is not None and not any(takes_model(name) for name in self.offered):
            return ("this service does not polish: it was started to offer only " + ", ".join(self.offered)
                    + " (start it with paraphrase or restyle among its --mechanism, or without --mechanism)")
        if not self.offered_language_models():
            return ("polish needs a language model and this service offers none: install the default one or start "
                    "the service with 'textveil serve --model FILE.gguf' (or a Hugging Face model folder)")
        return None

    def then_steps(self, given: Sequence[str] | None) -> tuple[str, ...]:
        """A request's ``then``, parsed by the library's one parser (one line for an unknown name),
        as the steps' texts; refused where this service cannot polish. A step runs with its
        default settings on the service's default language model (a request cannot pick a model
        file, nor settings the page does not offer)."""
        from textveil.mechanisms.polish import Polish, parse_then

        steps = parse_then(given, "then")
        if not steps:
            return ()
        refusal = self.polish_refusal()
        if refusal is not None:
            raise InvalidParameterError(refusal)
        for step in steps:
            if step != Polish():
                raise InvalidParameterError(f"then: this service polishes with its own settings; send "
                                            f"\"{step.text.partition('[')[0]}\" alone, not \"{step.text}\"")
        return tuple(step.text for step in steps)

    def polish_steps(self, then: Sequence[str]) -> tuple[list[Any], Any]:
        """The steps of ``then`` with the service's default language model, named as offered (a
        folder's name, never the server's path), and that model loaded once for the process."""
        from textveil.mechanisms.polish import Polish

        if not then:
            return [], None
        shown, source = next(iter(self.offered_language_models().items()))
        return [Polish(model=shown) for _ in then], self.language_model(source)

    def load_language_models(self) -> list[str]:
        """Load every language model this service offers now (those of ``serve --model`` and the
        bundled one: a bad file fails before the service listens) and write one short text with
        each, so that a first request finds the engine, its weights format and context, the
        template's cache and the output vocabulary ready and is as fast as the second; their names.
        The page reads which are ready from ``/healthz``."""
        for name, source in self.offered_language_models().items():
            self.language_model(source)
            if self.refusal("paraphrase") is None:
                self.for_request("paraphrase", {"epsilon": 30.0, "model": name, "max_new_tokens": WARM_UP_TOKENS}, seed=0).sanitize_many(
                    ["A short text, written once at start-up."])
            self.ready_language_models.append(name)
        return list(self.ready_language_models)

    def refusal(self, mechanism: str) -> str | None:
        """Why this service cannot release with ``mechanism`` (None: it can)."""
        MECHANISMS.entry(mechanism)  # an unknown name fails with the valid ones
        if self.offered is not None and mechanism not in self.offered:
            return (f"this service does not offer {mechanism}; it offers {', '.join(self.offered) or 'none'} (textveil "
                    "serve --mechanism NAME)")
        offered = list(self.offered_language_models()) if takes_model(mechanism) else None
        return release_refusal(mechanism, self.trained, offered)

    def listing(self) -> list[dict[str, Any]]:
        """The mechanisms as the page and ``GET /v1/mechanisms`` show them."""
        offered = list(self.offered_language_models())
        listed = mechanism_listing(self.trained, offered)
        for entry in listed:
            if self.offered is not None and entry["name"] not in self.offered:
                entry["service"] = {"releases": False, "reason": self.refusal(entry["name"])}
                entry["calibration"] = False
        return listed

    def smallest_epsilon(self, mechanism: str) -> float | None:
        """The smallest epsilon ``mechanism`` releases with on this service's embeddings (emp's
        noise must not drown every vector: the mechanism's own bound), or None for no such bound."""
        if mechanism != "emp" or self.refusal(mechanism) is not None:
            return None
        from textveil.mechanisms.earth_movers import EarthMoversPrivacy

        return float(EarthMoversPrivacy(epsilon=1e300, embeddings=self.embeddings()).smallest_epsilon)

    def entity_types(self) -> list[str] | None:
        """The entity types the stage finds (loading it, once), or None where it cannot run."""
        if self._entity_types is None and entity_refusal() is None:
            from textveil.pii.detector import supported_types

            self._entity_types = supported_types()
        return self._entity_types

    # -- the entity stage ----------------------------------------------------------------

    def entity_options(self, asked: dict[str, Any] | None) -> EntityOptions:
        """A request's ``entities`` as the stage's options, parsed by the library's one parser
        (one-line errors naming the request's fields): ``operator`` (default placeholder),
        ``entity_types``, ``allow``, ``deny``, ``scope``; pseudonyms under the service's key.
        Checked before any work; the stage must be installed when the request wants it on."""
        asked = dict(asked or {})  # operator and scope were checked by the request's schema
        options = parse_entity_options(
            asked.get("operator"), asked.get("entity_types"), asked.get("allow"), asked.get("deny"), asked.get("scope"),
            default_key=self._pseudonym_key, names=REQUEST_NAMES,
            known_types=self.entity_types() if asked.get("entity_types") is not None else None)
        if options.enabled:
            refusal = entity_refusal()
            if refusal is not None:
                from textveil.pii.detector import EntityStageUnavailable

                raise EntityStageUnavailable(refusal)
        return options

    def entity_stage(self, options: EntityOptions) -> EntityStage:
        """The one stage of these options, built on first use (loading spaCy, once per process)
        and shared from then on; keyed by the options' public form (the key as its digest)."""
        key = json.dumps(options.public(), sort_keys=True, default=str)
        with self._stages_lock:  # two first requests at once build it (and load spaCy) once
            stage = self._stages.get(key)
            if stage is None:
                stage = SharedStage(options)  # unknown entity types: one line, from the stage
                if options.enabled:
                    log.info("entity stage built: %s", options.operator)
                self._stages[key] = stage
            self._stages.move_to_end(key)
            while len(self._stages) > STAGE_CACHE_SIZE:
                self._stages.popitem(last=False)
            return stage

    def warm_entity_stage(self) -> str | None:
        """Build the default stage and screen a sample text now (spaCy loads before the service
        listens); why it cannot run here, or None."""
        refusal = entity_refusal()
        if refusal is not None:
            log.warning("entity stage unavailable: requests that want it (the default) get 400 until it is "
                        "installed: %s", refusal)
            return refusal
        self.entity_stage(EntityOptions()).apply(WARM_UP_TEXT)
        return None

    def pseudonym_key_digest(self) -> str:
        """The pseudonym key as it may be shown: its digest."""
        return str(self._pseudonym_key)

    # -- mechanisms ------------------------------------------------------------------------

    def mechanism(self, name: str, options: dict[str, Any], entities: EntityOptions = STAGE_OFF,
                  then: Sequence[str] = ()) -> Mechanism:
        """The cached mechanism for ``(name, options)`` with the entity stage of ``entities``
        before it and the steps of ``then`` after it, built without a seed (never released with
        itself); a trained one is the loaded model with these parameters."""
        stage = self.entity_stage(entities)
        key = (name, json.dumps(options, sort_keys=True, default=str),
               json.dumps(entities.public(), sort_keys=True, default=str), *then)
        with self._mechanisms_lock:
            cached = self._mechanisms.get(key)
            if cached is not None:
                self._mechanisms.move_to_end(key)
                return cached
        steps, polishing = self.polish_steps(then)
        if name in self.models():
            from textveil.mechanisms.polish import with_then
            from textveil.pii.staged import with_entity_stage

            built = with_then(with_entity_stage(self.models()[name].with_params(**options, seed=None), stage), steps,
                              language_model=polishing)
        else:
            cls = MECHANISMS.load(name)
            embeddings = self.embeddings() if "embeddings" in cls.resources else None
            source = self.language_model_source(name, options)
            if source is None:
                built = build_mechanism(name, options, embeddings, entities=stage, seed=None, then=steps,
                                        then_language_model=polishing)
            else:  # the process's one copy of the model, never loaded again per (name, parameters)
                # named as offered (a folder's name, never the server's path to it)
                shown = next(n for n, s in self.offered_language_models().items() if s == source)
                built = build_mechanism(name, {**options, "model": shown}, embeddings, entities=stage, seed=None,
                                        language_model=self.language_model(source, options.get("engine", "auto")),
                                        then=steps, then_language_model=polishing)
        with self._mechanisms_lock:
            self._mechanisms[key] = built
            while len(self._mechanisms) > MECHANISM_CACHE_SIZE:
                self._mechanisms.popitem(last=False)
        return built

    def for_request(self, name: str, options: dict[str, Any], seed: int | None,
                    entities: EntityOptions = STAGE_OFF, then: Sequence[str] = ()) -> Mechanism:
        """A copy of the cached mechanism with this request's own random state (the entity stage
        is the shared one)."""
        return self.mechanism(name, options, entities, then).with_params(seed=seed)

    # -- the work of a request (in a worker thread) ----------------------------------------

    def release(self, order: ReleaseOrder, abandoned: threading.Event) -> dict[str, Any]:
        """Release ``order``'s texts; with a ledger, through ``release_with_budget`` (refused
        before any randomness when a subject's cap would be passed; spent once per request_id)."""
        refusal = self.refusal(order.mechanism)
        if refusal:
            raise InvalidParameterError(refusal)
        built = self.for_request(order.mechanism, order.options, order.seed, order.entities, order.then)

        def progress(_done: int) -> None:
            if abandoned.is_set():  # the request timed out: stop before anything is recorded
                raise Abandoned()

        spent: dict[str, float] = {}
        unit = None
        if order.subjects is not None:
            from textveil.release.budgeted import release_with_budget

            assert self.ledger is not None
            with decoding_threads(self.decode_threads):
                done = release_with_budget(built, order.texts, order.subjects, self.ledger, dataset=order.dataset,
                                           request_id=order.request_id, progress=progress)
            records, replayed = done.records, done.replayed
            for spend in done.spends:
                spent[spend.subject] = spent.get(spend.subject, 0.0) + float(spend.amount)
                unit = spend.unit
            budget = {subject: self.ledger.remaining(subject, order.dataset) for subject in dict.fromkeys(order.subjects)}
        else:
            with decoding_threads(self.decode_threads):
                releases = built.sanitize_many(order.texts, progress=progress)
            records, replayed, budget = [r.to_dict() for r in releases], False, None
        # records, not Release objects: a replayed request has only what the ledger stored
        shown = order.entities.public()
        summary = summarise_records(records, entity_stage=shown)
        kind = summary.kind or MECHANISMS.entry(order.mechanism).guarantee
        lines = summary.lines(f"released {summary.documents} text(s)", noun="text")
        response = {
            "mechanism": order.mechanism,
            "parameters": {k: v for k, v in built.public_params().items() if k != "seed" or order.seed is not None},
            "releases": records,
            "guarantees": [record["guarantee"].get("statement") or KINDS[record["guarantee"]["kind"]]
                           for record in records],
            "guarantee_kind": KINDS.get(kind, kind),
            "entity_stage": {"options": shown, "counts": summary.entities,
                             "summary": stage_summary(shown, summary.entities)},
            "then": list(order.then),
            "summary": summary.to_dict(),
            "summary_lines": [{"text": line.text, "warning": line.warning} for line in lines],
            "budget": budget,
            "spent": {"unit": unit, "subjects": spent} if order.subjects is not None else None,
            "dataset": order.dataset if order.subjects is not None else None,
            "replayed": replayed,
            "request_id": order.request_id,
        }
        return finite_or_none(response)

    def calibrate(self, mechanism: str, grid: Sequence[float] | None, options: dict[str, Any], text: str | None,
                  *, samples: int, word_types: int, draws: int, seed: int | None,
                  abandoned: threading.Event, threads: int | None = None) -> dict[str, Any]:
        """The curve beside ``mechanism``'s slider over ``grid`` (see :mod:`textveil.service.curves`):
        emp's word by word, any other's by releasing sample texts; on ``text`` or, without it,
        Zipf-weighted vocabulary words (cached when seeded)."""
        from textveil.service.curves import emp_curve, release_curve

        entry = MECHANISMS.entry(mechanism)  # an unknown name fails with the valid ones
        swept = entry.swept
        if swept is None:
            raise InvalidParameterError(f"{mechanism} has no parameter to calibrate; measure its risk and utility "
                                        "with 'textveil evaluate'")
        refusal = self.refusal(mechanism)
        if refusal:
            raise InvalidParameterError(refusal)
        if swept.name in options:
            raise InvalidParameterError(f"calibration sweeps {swept.name} over the grid; give its values in grid, "
                                        f"not in parameters")
        if mechanism == "emp" and set(options) - {"decode"}:
            raise InvalidParameterError("emp's calibration takes parameters.decode only, not "
                                        f"{', '.join(sorted(set(options) - {'decode'}))}")
        values = [swept.check(value) for value in (grid or calibration_grid(mechanism))]
        fixed = {name: value for name, value in check_options(mechanism, {**options, swept.name: values[0]}).items()
                 if name != swept.name}
        key = json.dumps([mechanism, values, fixed, samples, word_types, draws, seed], sort_keys=True, default=str)
        if text is None and seed is not None and key in self._calibrations:
            return self._calibrations[key]

        def progress(_done: int) -> None:
            if abandoned.is_set():
                raise Abandoned()

        table = self.embeddings()
        with decoding_threads(threads or self.decode_threads):
            if mechanism == "emp":
                result = emp_curve(table, values, fixed.get("decode", "exact"), text, samples=samples,
                                   word_types=word_types, draws=draws, seed=seed, progress=progress)
            else:
                result = release_curve(
                    mechanism, swept.name, lambda value, seed: self.for_request(mechanism, {**fixed, swept.name: value}, seed),
                    table, values, text, samples=samples, draws=draws, seed=seed, progress=progress)
        result = finite_or_none(result)
        if text is None and seed is not None:
            self._calibrations[key] = result
            while len(self._calibrations) > 16:
                self._calibrations.popitem(last=False)
        return result

    def warm_calibration(self) -> None:
        """Compute the page's default curve now, on every CPU; it builds the exact decoder's index
        too. ``textveil serve`` does it before it listens: done in the background, it held up the
        first requests (their latencies, the load test's slowest, were up to 2.4x the steady ones)."""
        try:
            self.calibrate("emp", None, {}, None, **CALIBRATION_SAMPLE, abandoned=threading.Event(),
                           threads=usable_cpus())
        except Exception as error:  # noqa: BLE001 - a warm-up that fails is done again on request
            log.warning("calibration warm-up failed (%s); it is computed on request", type(error).__name__)

    def budget(self, subject: str, dataset: str | None) -> dict[str, Any]:
        if self.ledger is None:
            raise LookupError("no ledger")
        where = dataset or DEFAULT_DATASET
        return {"subject": subject, "dataset": where, "spent": self.ledger.spent(subject, where),
                "cap": self.ledger.cap(subject, where), "remaining": self.ledger.remaining(subject, where)}


def run_logged(work: Callable[[], Any], what: str) -> Any:
    """Run ``work``; an unexpected error is logged by its type and traceback only (its message
    may quote a text) and raised again as :class:`InternalError`."""
    try:
        return work()
    except (TextveilError, Abandoned):
        raise
    except Exception as error:  # noqa: BLE001 - anything else is a bug, reported without its message
        import traceback

        frames = "".join(traceback.format_tb(error.__traceback__))
        log.error("%s failed with %s (message withheld: it may quote a text)\n%s", what, type(error).__name__, frames)
        raise InternalError(type(error).__name__) from None


class InternalError(Exception):
    """An unexpected failure; its message is the exception's type only."""
