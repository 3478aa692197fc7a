"""Release a labelled corpus with a mechanism, cached when seeded.

The sweep releases the unknown, utility and known texts through :func:`release_corpus`, and
``textveil attack --release-known-with`` releases a user's known texts through it too: both
key the cache by the mechanism's fingerprint (its public parameters and the digests of its
vocabulary and training data: a secret never reaches a key), the seed and the corpus, so they
share cache entries. A cache entry holds the release's statistics with its texts, so a release
read back reports what it protected as a fresh one does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InputError, InvalidParameterError
from textveil.evaluation.release_cache import ReleaseCache, release_key
from textveil.mechanisms.base import MANIFEST, CorpusRelease, Mechanism, saved_mechanism_name
from textveil.mechanisms.registry import MECHANISMS

# Options the harness applies itself rather than passing to the mechanism.
HARNESS_OPTIONS = ("vocab_size",)


def mechanism_options(**given: Any) -> dict[str, Any]:
    """The options a face passes to a mechanism: those the user gave (``None``: not given), with
    ``bag_of_words=True`` spelled as emp's ``output="bag"``.

    >>> mechanism_options(layout="keep", bag_of_words=True, decode=None)
    {'layout': 'keep', 'output': 'bag'}
    """
    bag = given.pop("bag_of_words", False)
    return {**{k: v for k, v in given.items() if v is not None}, **({"output": "bag"} if bag else {})}


def check_mechanism_options(mechanism: str, options: dict[str, Any]) -> None:
    """Options the mechanism does not take, or bad values, fail before any work.

    >>> check_mechanism_options("emp", {"layout": "keep", "vocab_size": 100})
    >>> check_mechanism_options("random", {"decode": "exact"})
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: random takes no parameter 'decode'; its parameters: layout, seed
    >>> check_mechanism_options("emp", {"layout": "tidy"})
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: unknown --layout 'tidy'; use one of: public, keep
    """
    entry = MECHANISMS.entry(mechanism)
    for name, value in options.items():
        if name not in HARNESS_OPTIONS:
            entry.parameter(name).check(value)


def takes_model(mechanism: str) -> bool:
    """Whether ``mechanism`` has a ``model`` parameter (a language model it rewrites text with).

    >>> takes_model("paraphrase"), takes_model("emp")
    (True, False)
    """
    return any(p.name == "model" for p in MECHANISMS.entry(mechanism).parameters)


def is_language_model(path: str | Path) -> bool:
    """Whether ``path`` names a language model rather than a trained mechanism's folder: a
    ``.gguf`` file, or a Hugging Face model folder (``config.json``) holding no textveil
    ``manifest.json``.

    >>> is_language_model("/no/such/model.gguf")
    False
    """
    source = Path(path)
    if source.is_file():
        return source.suffix == ".gguf"
    return source.is_dir() and (source / "config.json").is_file() and not (source / MANIFEST).is_file()


def model_users() -> list[str]:
    """The mechanisms that take a language model (``--model FILE`` or ``--set model=...``)."""
    return [entry.name for entry in MECHANISMS.entries() if takes_model(entry.name)]


def check_model_path(model: str | Path, mechanism: str | None) -> None:
    """A ``--model`` that is neither a trained mechanism's folder nor a language model fails
    with one line naming both (before any work)."""
    source = Path(model)
    if is_language_model(source) or (source / MANIFEST).is_file():
        return
    users = " or ".join(f"-m {name}" for name in model_users())
    raise InputError(
        f"--model '{model}' is neither a trained mechanism's folder (with {MANIFEST}, from 'textveil train') nor a "
        f"language model ({users}: a .gguf file, or a Hugging Face model folder with config.json and safetensors)")


def build_mechanism(mechanism: str, options: dict[str, Any], embeddings: Any, *, entities: Any,
                    model: str | Path | None = None, **parameters: Any) -> Mechanism:
    """The named mechanism with ``options`` and ``parameters`` (its swept value, a seed), given
    the ``embeddings`` when it works with them; with ``model``, the trained mechanism saved in
    that folder (it must be the named one) with those parameters changed, or, for a mechanism
    that rewrites with a language model (``paraphrase``, ``restyle``), that language model (a
    ``.gguf`` file or a Hugging Face model folder) as its ``model`` parameter.

    ``entities`` (:class:`~textveil.pii.EntityOptions` or a built
    :class:`~textveil.pii.EntityStage`) puts the entity stage before it; every face passes the
    user's choice (placeholders unless told otherwise), so it is a required keyword.
    """
    from textveil.pii.screened import screened

    return screened(_bare_mechanism(mechanism, options, embeddings, model=model, **parameters), entities)


def _bare_mechanism(mechanism: str, options: dict[str, Any], embeddings: Any, *, model: str | Path | None = None,
                    **parameters: Any) -> Mechanism:
    own = {k: v for k, v in options.items() if k not in HARNESS_OPTIONS}
    if model is not None and is_language_model(model):
        if not takes_model(mechanism):
            raise InvalidParameterError(f"'{model}' is a language model; {mechanism} takes none: use "
                                        + " or ".join(f"--mechanism {name}" for name in model_users()))
        if own.get("model", str(model)) != str(model):
            raise InvalidParameterError(f"--model '{model}' and the parameter model={own['model']} name two language "
                                        "models: give one")
        own["model"] = str(model)
        model = None
    if model is None:
        return MECHANISMS.make(mechanism, shared={"embeddings": embeddings}, **own, **parameters)
    saved = saved_mechanism_name(model)
    if saved != mechanism:
        raise InvalidParameterError(f"the model in '{model}' is a trained {saved}, not {mechanism}: "
                                    f"use --mechanism {saved} or another --model")
    return Mechanism.load(model, embeddings=embeddings).with_params(**own, **parameters)


def with_changed_fraction(stats: dict[str, Any]) -> dict[str, Any]:
    """Release statistics with the fraction of protected words that changed (when any were).

    >>> with_changed_fraction({"words_protected": 8, "words_changed": 2})
    {'words_protected': 8, 'words_changed': 2, 'words_changed_fraction': 0.25}
    """
    if stats.get("words_protected"):
        return {**stats, "words_changed_fraction": round(stats["words_changed"] / stats["words_protected"], 4)}
    return stats


def release_corpus(
    mechanism: Mechanism,
    corpus: LabelledCorpus,
    cache: ReleaseCache,
    *,
    progress: Callable[[int], None] | None = None,
) -> CorpusRelease:
    """``corpus`` released by ``mechanism`` (its parameters and seed set, fitted if it learns):
    read from ``cache`` when seeded and there, else released (and stored when seeded).
    ``progress(n)`` is told as each n texts are released.

    >>> from textveil.embeddings import WordEmbeddings
    >>> from textveil.mechanisms.earth_movers import EarthMoversPrivacy
    >>> toy = WordEmbeddings(["good", "fine", "bad"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0]])
    >>> import tempfile, pathlib
    >>> corpus, cache = LabelledCorpus(["good", "bad"], ["x", "y"]), ReleaseCache(pathlib.Path(tempfile.mkdtemp()))
    >>> first = release_corpus(EarthMoversPrivacy(50.0, toy, seed=1), corpus, cache)
    >>> again = release_corpus(EarthMoversPrivacy(50.0, toy, seed=1), corpus, cache)
    >>> first == again, again.stats["words_protected"], cache.hits
    (True, 2, 1)
    """
    seed = getattr(mechanism, "seed", None)
    key = None if seed is None else release_key(mechanism.fingerprint(), seed, corpus)
    return cache.get_or_release(
        key, lambda: mechanism.release_corpus(corpus.texts, corpus.labels, progress=progress), len(corpus)
    )


def encode_corpus(mechanism: Any, corpus: LabelledCorpus) -> tuple[CorpusRelease, Any]:
    """``corpus`` released by a mechanism that encodes a whole corpus under one secret key (PIVOT:
    its ``encode``), after its entity stage when it has one, and the key. For the owner's own
    measurements only (frequency analysis scored with the key): the key stays in memory, so this
    release is never cached (a cache holds texts, and a key must never reach one).

    >>> from textveil.mechanisms.pivot import Pivot
    >>> released, key = encode_corpus(Pivot(l=2, seed=1), LabelledCorpus(["the cat sat", "the dog sat"], ["a", "b"]))
    >>> [key.decode_text(text) for text in released.texts], released.labels, released.stats["words_protected"]
    (['the cat sat', 'the dog sat'], ['a', 'b'], 6)
    """
    from textveil.mechanisms.base import release_statistics
    from textveil.pii.screened import Screened, screen_corpus

    texts, stats = list(corpus.texts), {}
    encoder = mechanism
    if isinstance(mechanism, Screened):
        texts, replaced = screen_corpus(mechanism.stage, texts)
        if mechanism.stage.options.enabled:
            stats["entities_replaced"] = sum(replaced.values())
        encoder = mechanism.mechanism
    encoding = encoder.encode(texts)
    released = CorpusRelease([r.text for r in encoding.releases], list(corpus.labels), True,
                             {**release_statistics(encoding.releases), **stats})
    return released, encoding.key


def release_parameters(mechanism: str, epsilon: float | None, **options: Any) -> dict[str, Any]:
    """The parameters to release with ``mechanism``, as ``textveil attack --release-known-with``
    takes them: its ``epsilon`` (required when it has one) and its options, all checked, so a
    bad value fails with one line before any work.

    >>> release_parameters("emp", 10, layout="keep")
    {'epsilon': 10.0, 'layout': 'keep'}
    >>> release_parameters("emp", None)
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: --release-known-with emp needs --epsilon: the epsilon the unknown texts were released with
    """
    entry = MECHANISMS.entry(mechanism)
    has_epsilon = any(p.name == "epsilon" for p in entry.parameters)
    if has_epsilon and epsilon is None:
        raise InvalidParameterError(
            f"--release-known-with {mechanism} needs --epsilon: the epsilon the unknown texts were released with"
        )
    if not has_epsilon and epsilon is not None:
        raise InvalidParameterError(f"mechanism '{mechanism}' takes no epsilon; leave out --epsilon")
    check_mechanism_options(mechanism, options)
    if not has_epsilon:
        return dict(options)
    try:
        return {"epsilon": entry.parameter("epsilon").check(epsilon), **options}
    except InvalidParameterError as error:
        raise InvalidParameterError(f"--epsilon: {error}") from None
