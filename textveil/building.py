"""Building a mechanism from a request or a spec: its name, its options, its swept value and
seed, a trained mechanism's folder or a language model, and the entity stage before it; and the
checks that let a face refuse a bad name, option or model path with one line before any work.

Every face and job builds its mechanisms here: :func:`textveil.mechanism`, ``textveil sanitize``,
``textveil release`` (the shards' workers), ``textveil serve`` (the engine), and the red-team harness in
:mod:`textveil.evaluation` (sweeps, comparisons, the audit, ``attack --release-known-with``), so
a face or a job never reaches into the harness to release text.

Why here, at the top of the package beside :mod:`textveil.registry`: building reads the
mechanism registry (:mod:`textveil.mechanisms.registry`) and loads trained mechanisms
(:mod:`textveil.mechanisms.base`), and puts the entity stage before the mechanism
(:func:`textveil.pii.staged.with_entity_stage`). Mechanisms never import :mod:`textveil.pii` (the
entity stage imports the mechanisms' face, and ``StagedMechanism`` joins them), so the builder cannot
live in ``mechanisms/``; nor in ``pii/``, which knows nothing of the registry or of models. It
sits above both and below ``evaluation/``, ``release/``, ``service/`` and ``cli/``, which all
import it; it imports none of them. :mod:`textveil.pii` is imported when a mechanism is built,
not with this module, so a face that only checks its options does not load the entity stage.

>>> from textveil.pii import EntityOptions
>>> options = {"features": "emails,numbers"}
>>> check_mechanism_options("redact", options)
>>> build_mechanism("redact", options, None, entities=EntityOptions(operator="off"), seed=1).sanitize(
...     "mail ann@example.org or call 5550199").text
'mail [EMAIL] or call [NUMBER]'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import MANIFEST, Mechanism, saved_mechanism_name
from textveil.mechanisms.registry import MECHANISMS

HARNESS_OPTIONS = ("vocab_size",)
"""Options the caller applies itself (the vocabulary size it loads the embeddings with) rather
than passing to the mechanism."""


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
                    model: str | Path | None = None, then: Any = None, then_language_model: Any = None,
                    **parameters: Any) -> Mechanism:
    """The named mechanism with ``options`` and ``parameters`` (its swept value, a seed), given
    the ``embeddings`` when it works with them; with ``model``, the trained mechanism saved in
    that folder (it must be the named one) with those parameters changed, or, for a mechanism
    that rewrites with a language model (``paraphrase``, ``restyle``), that language model (a
    ``.gguf`` file or a Hugging Face model folder) as its ``model`` parameter.

    ``entities`` (:class:`~textveil.pii.EntityOptions` or a built
    :class:`~textveil.pii.EntityStage`) puts the entity stage before it; every face passes the
    user's choice (placeholders unless told otherwise), so it is a required keyword.

    ``then`` names what rewrites each release afterwards (``"polish"``, parsed by
    :func:`textveil.mechanisms.polish.parse_then`): stage, then mechanism, then polish; the
    Guarantee stays the mechanism's. ``then_language_model``: the loaded model a polish runs
    (a face's own copy), else it loads its ``model`` on first use.
    """
    from textveil.pii.staged import with_entity_stage

    staged = with_entity_stage(_bare_mechanism(mechanism, options, embeddings, model=model, **parameters), entities)
    if not then:
        return staged
    from textveil.mechanisms.polish import with_then  # the language-model machinery, only when asked for

    return with_then(staged, then, language_model=then_language_model)


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
