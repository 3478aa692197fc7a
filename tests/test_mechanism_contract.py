"""The contract every registered mechanism keeps, in the spirit of scikit-learn's estimator
checks: run over ``MECHANISMS``, so a mechanism added to the registry is checked without a
line of test written for it."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest

from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import Mechanism, Release
from textveil.mechanisms.registry import MECHANISMS
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


@pytest.fixture
def shared(request, vocabulary) -> dict:
    """The resources a mechanism is made with: the vocabulary, and for a mechanism that rewrites
    with a language model, the tiny LM of conftest (never the bundled model: that is slow and may
    be absent)."""
    resources = {"embeddings": vocabulary}
    name = request.node.callspec.params.get("name") if hasattr(request.node, "callspec") else None
    if name is not None and _needs_language_model(name):
        pytest.importorskip("torch", reason="the language-model mechanisms need torch")
        pytest.importorskip("transformers", reason="the language-model mechanisms need transformers")
        resources["language_model"] = request.getfixturevalue("tiny_language_model")
    return resources


def _make(name: str, shared: dict, **overrides) -> Mechanism:
    cls = MECHANISMS.load(name)
    # a mechanism given every resource it works with (the tiny LM) does not need what is missing here
    reason = None if set(cls.resources) <= set(shared) else cls.unavailable()
    if reason is not None:
        pytest.skip(reason)
    return MECHANISMS.make(name, shared=shared, **_parameters(name, **{**TINY.get(name, {}), **overrides}))


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
def test_seeded_releases_are_reproducible_and_unseeded_ones_are_not(name, shared):
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


@pytest.mark.parametrize("name", NAMES)
def test_releases_do_not_depend_on_batching(name, shared):
    if MECHANISMS.load(name).corpus_level:
        pytest.skip(f"{name} releases a corpus as a whole: a text released alone is another corpus")
    whole = _texts(_ready(name, shared, seed=5).sanitize_many(TEXTS))
    small = _texts(_ready(name, shared, **_smallest_batches(name), seed=5).sanitize_many(TEXTS))
    one = _ready(name, shared, seed=5)
    assert whole == small == [one.sanitize(text).text for text in TEXTS]


@pytest.mark.parametrize("name", NAMES)
def test_every_release_carries_a_valid_guarantee(name, shared):
    entry = MECHANISMS.entry(name)
    for text, release in zip(TEXTS, _ready(name, shared, seed=1).sanitize_many(TEXTS)):
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


@pytest.mark.parametrize("name", NAMES)
def test_non_latin_text_passes_through_the_mechanism_cleanly(name, shared):
    release = _ready(name, shared, seed=2).sanitize("Привет, мир! 你好")
    if MECHANISMS.entry(name).guarantee == "none":  # claims nothing: it may copy the text
        assert isinstance(release.text, str) and release.guarantee.statement
        return
    assert release.guarantee.words_protected > 0
    # the public layout is the default where a mechanism offers another; a generator has no other
    public = all(p.name != "layout" or p.default == "public" for p in MECHANISMS.entry(name).parameters)
    if public:  # every released token is a vocabulary entry: no input character survives as itself
        assert not any(ch in release.text for ch in "Привет你好")


@pytest.mark.parametrize("name", NAMES)
def test_bad_parameters_raise_at_construction(name, shared):
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


@pytest.mark.parametrize("name", NAMES)
def test_with_params_keeps_what_was_fitted_and_equals_a_fresh_mechanism(name, shared):
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


@pytest.mark.parametrize("name", NAMES)
def test_save_then_load_releases_the_same_for_the_same_seed(name, shared, toy_word_embeddings, tmp_path):
    mechanism = _make(name, shared, seed=6).fit(TRAINING)
    mechanism.save(tmp_path / "saved")
    manifest = json.loads((tmp_path / "saved" / "manifest.json").read_text())
    assert manifest["mechanism"] == name and manifest["vocabulary_hash"] == mechanism.vocabulary_hash()
    vocabulary = shared["embeddings"]
    lm = {"language_model": shared["language_model"]} if "language_model" in shared else {}
    loaded = Mechanism.load(tmp_path / "saved", embeddings=vocabulary, **lm)
    assert type(loaded) is type(mechanism) and loaded.get_params() == mechanism.get_params()
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


@pytest.mark.parametrize("name", NAMES)
def test_fingerprint_holds_what_a_release_depends_on(name, shared):
    mechanism = _make(name, shared, seed=1)
    fingerprint = mechanism.fingerprint()
    assert fingerprint["mechanism"] == name and "seed" not in fingerprint["parameters"]
    if "embeddings" in mechanism.resources:
        vocabulary = shared["embeddings"]
        assert fingerprint["vocabulary"] == vocabulary.with_marks(()).content_hash() or fingerprint["vocabulary"]
    json.dumps(fingerprint)  # plain data: it goes into cache keys and results.json
    if mechanism.learns:
        assert mechanism.fit(TRAINING).fingerprint()["training_data"] is not None


def test_registry_lists_mechanisms_with_their_guarantee_kinds():
    kinds = {entry.name: entry.guarantee for entry in MECHANISMS.entries()}
    assert {"emp": "metric", "random": "dp", "syntf": "dp"}.items() <= kinds.items()
    assert all(entry.description and "\n" not in entry.description for entry in MECHANISMS.entries())
    assert not math.isnan(MECHANISMS.entry("emp").grid[0])
