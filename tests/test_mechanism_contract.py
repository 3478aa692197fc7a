"""The contract every registered mechanism keeps, in the spirit of scikit-learn's estimator
checks: run over ``MECHANISMS``, so a mechanism added to the registry is checked without a
line of test written for it.

Every face releases with the mechanism behind the entity stage (:func:`textveil.building.
build_mechanism` wraps it in :class:`~textveil.pii.staged.StagedMechanism`), so each check of a
release runs twice: on the mechanism alone, and on it so wrapped with the stage the faces use
unless told otherwise (placeholders; skipped, with the reason, where Presidio or spaCy's model is
missing). Every check holds with placeholders written into the texts, so none needs the stage off."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest

from conftest import skip_without_entity_stage
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import Mechanism, Release
from textveil.mechanisms.registry import MECHANISMS
from textveil.pii.stage import EntityOptions, EntityStage
from textveil.pii.staged import StagedMechanism
from textveil.privacy.guarantee import COMPOSITIONS, GUARANTEE_SCHEMA, KINDS
from textveil.registry import REQUIRED

TEXTS = [
    "The market rallied, and stocks rose!",
    "Oil prices fell in London; the bank said so.",
    "",
    "Привет, мир! 你好 — ça va?",
    "Growth, growth and more growth: the economy is good.",
    "   \n\n  ",
]
TRAINING = ["the market and the bank", "oil and gold prices", "the economy and inflation policy", "tax budget"]


def _with_marks(base: WordEmbeddings) -> WordEmbeddings:
    """The toy words plus a few marks with vectors of their own (as GloVe has)."""
    rng = np.random.default_rng(11)
    marks = [",", ".", "!", "?", ";", ":"]
    return WordEmbeddings(base.words + marks, np.vstack([base.vectors, rng.standard_normal((len(marks), base.dim))]),
                          name="toy-contract")


@pytest.fixture(scope="module")
def vocabulary(toy_word_embeddings) -> WordEmbeddings:
    return _with_marks(toy_word_embeddings)


def _parameters(name: str, **overrides) -> dict:
    """Valid parameters for a mechanism: required ones get a middling value."""
    values = {p.name: 5.0 for p in MECHANISMS.entry(name).parameters if p.required}
    return {**values, **overrides}


# Settings under which the mechanisms that train a network train in a second.
TINY = {
    "erae": {"hidden": 8, "layers": 1, "epochs": 2, "pretrain_epochs": 1, "batch_size": 2, "vocabulary_size": 200,
             "max_length": 8},
    "aedp": {"hidden": 8, "layers": 1, "epochs": 1, "batch_size": 2, "vocabulary_size": 200, "max_length": 8},
    "synth": {"hidden": 8, "epochs": 1, "batch_size": 2, "max_length": 40},
    # the language-model mechanisms run the tiny LM (conftest) and write short replies
    "paraphrase": {"max_new_tokens": 8},
    "restyle": {"max_new_tokens": 8},
}


def _needs_language_model(name: str) -> bool:
    return "language_model" in MECHANISMS.load(name).resources


FORMS = ["alone", "staged"]
"""How a check's mechanism is released: alone, or behind the entity stage as every face releases it."""


@pytest.fixture(scope="module")
def placeholder_stage() -> EntityStage:
    """The entity stage the faces put before a mechanism unless told otherwise (placeholders), built
    once: it remembers the texts it has read, so spaCy reads each text of the checks once."""
    skip_without_entity_stage()
    return EntityStage(EntityOptions())


@pytest.fixture
def shared(request, vocabulary) -> dict:
    """The resources a mechanism is made with: the vocabulary, and for a mechanism that rewrites
    with a language model, the tiny LM of conftest (never the bundled model: that is slow and may
    be absent); for a check on the staged form, the entity stage (``"entity_stage"``, which no
    mechanism takes: :func:`_make` puts it before the mechanism)."""
    resources = {"embeddings": vocabulary}
    params = request.node.callspec.params if hasattr(request.node, "callspec") else {}
    name = params.get("name")
    if name is not None and _needs_language_model(name):
        pytest.importorskip("torch", reason="the language-model mechanisms need torch")
        pytest.importorskip("transformers", reason="the language-model mechanisms need transformers")
        resources["language_model"] = request.getfixturevalue("tiny_language_model")
    if params.get("form") == "staged":
        resources["entity_stage"] = request.getfixturevalue("placeholder_stage")
    return resources


def _make(name: str, shared: dict, **overrides) -> Mechanism:
    """The mechanism with its parameters, behind ``shared["entity_stage"]`` where there is one (as
    :func:`textveil.building.build_mechanism` builds it)."""
    cls = MECHANISMS.load(name)
    # a mechanism given every resource it works with (the tiny LM) does not need what is missing here
    reason = None if set(cls.resources) <= set(shared) else cls.unavailable()
    if reason is not None:
        pytest.skip(reason)
    parameters = _parameters(name, **{**TINY.get(name, {}), **overrides})
    return _behind_stage(MECHANISMS.make(name, shared=shared, **parameters), shared)


def _behind_stage(mechanism: Mechanism, shared: dict) -> Mechanism:
    """``mechanism`` behind ``shared``'s entity stage, if it has one."""
    stage = shared.get("entity_stage")
    return mechanism if stage is None else StagedMechanism(mechanism, stage)


def _alone(mechanism: Mechanism) -> Mechanism:
    """The mechanism itself, out of the stage's wrapper."""
    return mechanism.mechanism if isinstance(mechanism, StagedMechanism) else mechanism


def _ready(name: str, shared: dict, **overrides) -> Mechanism:
    """A mechanism that can release: fitted on the training texts when it cannot release unfitted."""
    mechanism = _make(name, shared, **overrides)
    return mechanism.fit(TRAINING) if mechanism.needs_fit else mechanism


def _texts(releases: list[Release]) -> list[str]:
    return [r.text for r in releases]


NAMES = MECHANISMS.names()


@pytest.mark.parametrize("name", NAMES)
def test_declared_parameters_match_the_constructor(name):
    cls = MECHANISMS.load(name)
    signature = inspect.signature(cls).parameters
    assert issubclass(cls, Mechanism) and cls.name == name
    for parameter in MECHANISMS.entry(name).parameters:
        assert parameter.name in signature, f"{name} declares {parameter.name} but does not take it"
        default = signature[parameter.name].default
        assert (default is REQUIRED) == parameter.required and (parameter.required or default == parameter.default)


@pytest.mark.parametrize("name", NAMES)
def test_capability_flags_say_what_the_class_offers(name):
    # the faces read these flags instead of probing a class for a method (issue 59)
    cls = MECHANISMS.load(name)
    assert cls.trains_network == callable(getattr(cls, "train", None))
    assert cls.writes_synthetic_corpus == callable(getattr(cls, "synthesize", None))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_seeded_releases_are_reproducible_and_unseeded_ones_are_not(name, form, shared):
    first = _texts(_ready(name, shared, seed=3).sanitize_many(TEXTS))
    assert first == _texts(_ready(name, shared, seed=3).sanitize_many(TEXTS))
    fresh = [_texts(_ready(name, shared).sanitize_many(TEXTS * 3)) for _ in range(2)]
    if MECHANISMS.load(name).randomised:
        assert fresh[0] != fresh[1]  # OS entropy: two unseeded runs differ
    else:
        assert fresh[0] == fresh[1]  # deterministic: no randomness to draw


def _smallest_batches(name: str) -> dict:
    """Batches of one word (``batch_words``) or one text (``batch_size``, where it is how many texts
    are released at once, not a registered training parameter)."""
    accepted = inspect.signature(MECHANISMS.load(name)).parameters
    registered = {p.name for p in MECHANISMS.entry(name).parameters}
    return {knob: 1 for knob in ("batch_words", "batch_size") if knob in accepted and knob not in registered}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_releases_do_not_depend_on_batching(name, form, shared):
    if MECHANISMS.load(name).corpus_level:
        pytest.skip(f"{name} releases a corpus as a whole: a text released alone is another corpus")
    whole = _texts(_ready(name, shared, seed=5).sanitize_many(TEXTS))
    small = _texts(_ready(name, shared, **_smallest_batches(name), seed=5).sanitize_many(TEXTS))
    one = _ready(name, shared, seed=5)
    assert whole == small == [one.sanitize(text).text for text in TEXTS]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_every_release_carries_a_valid_guarantee(name, form, shared):
    entry = MECHANISMS.entry(name)
    releases = _ready(name, shared, seed=1).sanitize_many(TEXTS)
    for text, release in zip(TEXTS, releases):
        guarantee = release.guarantee
        assert isinstance(release.text, str) and guarantee.mechanism == name
        assert guarantee.kind == entry.guarantee and guarantee.kind in KINDS and guarantee.composition in COMPOSITIONS
        assert guarantee.unit in {"token", "word", "document", "corpus"}
        assert guarantee.unprotected and guarantee.statement and guarantee.assumptions
        assert guarantee.words_protected >= 0 and (guarantee.epsilon is None or guarantee.epsilon >= 0)
        data = json.loads(json.dumps(release.to_dict()))
        assert data["guarantee"]["schema"] == GUARANTEE_SCHEMA
        assert data["guarantee"]["unprotected"] == list(guarantee.unprotected)
        if not text.strip():
            assert release.text == "" and guarantee.words_protected == 0
        if release.entities:  # the stage's statement, and where it replaced what, never the words it replaced
            assert guarantee.entity_stage and guarantee.entity_stage in guarantee.statement
            assert all(text[e["start"]:e["end"]] not in json.dumps(e) for e in data["entities"])
    if form == "staged":  # "London": the stage ran before the mechanism, and its release says so
        assert any(release.entities for release in releases)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_non_latin_text_passes_through_the_mechanism_cleanly(name, form, shared):
    release = _ready(name, shared, seed=2).sanitize("Привет, мир! 你好")
    if MECHANISMS.entry(name).guarantee == "none":  # claims nothing: it may copy the text
        assert isinstance(release.text, str) and release.guarantee.statement
        return
    assert release.guarantee.words_protected > 0
    # the public layout is the default where a mechanism offers another; a generator has no other
    public = all(p.name != "layout" or p.default == "public" for p in MECHANISMS.entry(name).parameters)
    if public:  # every released token is a vocabulary entry: no input character survives as itself
        assert not any(ch in release.text for ch in "Привет你好")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_bad_parameters_raise_at_construction(name, form, shared):
    for parameter in MECHANISMS.entry(name).parameters:
        bad_values = []
        if parameter.choices:
            bad_values.append("no-such-choice")
        if parameter.minimum is not None:
            bad_values += [parameter.minimum, parameter.minimum - 1, float("nan"), float("inf"), "ten"]
        if parameter.type is bool:
            bad_values.append("yes")
        for value in bad_values:
            with pytest.raises(InvalidParameterError):
                _make(name, shared, **{parameter.name: value})
    with pytest.raises(TypeError):
        _make(name, shared, colour="red")
    with pytest.raises(InvalidParameterError, match="takes no parameter"):
        _make(name, shared).with_params(colour="red")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_with_params_keeps_what_was_fitted_and_equals_a_fresh_mechanism(name, form, shared):
    fitted = _make(name, shared, seed=4).fit(TRAINING)
    swept = MECHANISMS.entry(name).swept
    changes = {"seed": 9, **({swept.name: 7.5 if swept.type is float else 3} if swept else {})}
    copy = fitted.with_params(**changes)
    state, copied = fitted._fitted_state(), copy._fitted_state()
    assert state.keys() == copied.keys()
    for key in state:
        assert np.array_equal(np.asarray(state[key]), np.asarray(copied[key]))
    assert all(getattr(copy, name) is getattr(fitted, name) for name in fitted.resources)
    again = _make(name, shared, **changes)
    if again.fit_uses_seed:  # fitted with another seed it would be another model: give it the same one
        again._set_fitted_state(state)
    else:
        again.fit(TRAINING)
    assert _texts(copy.sanitize_many(TEXTS)) == _texts(again.sanitize_many(TEXTS))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_save_then_load_releases_the_same_for_the_same_seed(name, form, shared, toy_word_embeddings, tmp_path):
    mechanism = _make(name, shared, seed=6).fit(TRAINING)
    mechanism.save(tmp_path / "saved")
    manifest = json.loads((tmp_path / "saved" / "manifest.json").read_text())
    assert manifest["mechanism"] == name and manifest["vocabulary_hash"] == mechanism.vocabulary_hash()
    if form == "staged" and mechanism.learns:  # a trained model says what it never saw: the stage's work
        assert manifest["state"]["training_entities_"] == shared["entity_stage"].options.public()
    vocabulary = shared["embeddings"]
    lm = {"language_model": shared["language_model"]} if "language_model" in shared else {}
    # what is saved is the mechanism; a face that loads it puts the stage before it again
    loaded = _behind_stage(Mechanism.load(tmp_path / "saved", embeddings=vocabulary, **lm), shared)
    assert type(_alone(loaded)) is type(_alone(mechanism)) and loaded.get_params() == mechanism.get_params()
    assert _texts(loaded.sanitize_many(TEXTS)) == _texts(_make(name, shared, seed=6).fit(TRAINING).sanitize_many(TEXTS))
    if "embeddings" in mechanism.resources:  # a mechanism with no vocabulary (pivot) has none to mismatch
        with pytest.raises(InputError, match="another vocabulary"):
            Mechanism.load(tmp_path / "saved", embeddings=toy_word_embeddings, **lm)
    with pytest.raises(InputError, match="manifest"):
        Mechanism.load(tmp_path / "nothing-here", embeddings=vocabulary, **lm)
    manifest["textveil_version"] = "0.0.1"
    (tmp_path / "saved" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="0.0.1"):
        Mechanism.load(tmp_path / "saved", embeddings=vocabulary, **lm)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", NAMES)
def test_fingerprint_holds_what_a_release_depends_on(name, form, shared):
    mechanism = _make(name, shared, seed=1)
    fingerprint = mechanism.fingerprint()
    assert fingerprint["mechanism"] == name and "seed" not in fingerprint["parameters"]
    if "embeddings" in mechanism.resources:
        vocabulary = shared["embeddings"]
        assert fingerprint["vocabulary"] == vocabulary.with_marks(()).content_hash() or fingerprint["vocabulary"]
    json.dumps(fingerprint)  # plain data: it goes into cache keys and results.json
    if form == "staged":  # a release behind another stage is another release: its cache key differs
        assert fingerprint["entities"] == shared["entity_stage"].options.public() and fingerprint["detection"]
        assert fingerprint != _alone(mechanism).fingerprint()
    if mechanism.learns:
        assert mechanism.fit(TRAINING).fingerprint()["training_data"] is not None


def test_registry_lists_mechanisms_with_their_guarantee_kinds():
    kinds = {entry.name: entry.guarantee for entry in MECHANISMS.entries()}
    assert {"emp": "metric", "random": "dp", "syntf": "dp"}.items() <= kinds.items()
    assert all(entry.description and "\n" not in entry.description for entry in MECHANISMS.entries())
    assert not math.isnan(MECHANISMS.entry("emp").grid[0])
