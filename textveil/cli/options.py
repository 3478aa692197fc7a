"""Reading a command's options as the user gave them: the choices of ``--format``, ``--layout``,
``--decode`` and ``--oov``, a mechanism's parameters (dedicated flags and ``--set``), ``--model``,
the embeddings, and the options that read a risk corpus in place. Each value is checked by the
library (the mechanism's spec, the builder); no privacy logic lives here."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from textveil.cli.console import stderr
from textveil.errors import InvalidParameterError


class OutputFormat(str, Enum):
    """``--format`` of the commands that print a table or JSON."""

    text = "text"
    json = "json"


class Layout(str, Enum):
    """``--layout`` of the token-substitution mechanisms."""

    public = "public"
    keep = "keep"


class Decoder(str, Enum):
    """emp's nearest-word decoding, as the commands offer it."""

    exact = "exact"
    screened = "screened"
    approx = "approx"


class OovPolicy(str, Enum):
    """What emp does with words outside its vocabulary."""

    perturb = "perturb"
    keep = "keep"
    drop = "drop"


def load_cli_embeddings(spec: str, vocab_size: Optional[int]):
    from textveil.embeddings import load_embeddings

    return load_embeddings(spec, vocab_size, log=lambda message: stderr.print(f"[dim]{message}[/dim]"))


def given_options(mechanism: str, settings: Optional[list[str]], **flags) -> dict:
    """A mechanism's options as the user gave them: dedicated flags (``None``: not given) and
    ``--set NAME=VALUE`` for any other parameter, each parsed and checked by the mechanism's spec."""
    from textveil.building import check_mechanism_options, mechanism_options
    from textveil.mechanisms.registry import MECHANISMS

    entry = MECHANISMS.entry(mechanism)
    options = mechanism_options(**flags)
    for setting in settings or []:
        name, separator, value = setting.partition("=")
        if not separator or not name.strip():
            raise InvalidParameterError(f"--set '{setting}' is not NAME=VALUE, e.g. --set rating=similarity")
        options[name.strip().replace("-", "_")] = entry.parameter(name.strip().replace("-", "_")).parse(value)
    check_mechanism_options(mechanism, options)
    return options


def mechanism_of(mechanism: Optional[str], model: Optional[Path]) -> str:
    """The mechanism to use: the one named, else the trained model's, else emp.

    ``--model`` is a trained mechanism's folder ('textveil train'), or, for the mechanisms that
    rewrite with a language model (paraphrase, restyle), a language model: a ``.gguf`` file or a
    Hugging Face model folder (see :func:`language_model_option`). Anything else is one line."""
    if model is None:
        return mechanism or "emp"
    from textveil.building import check_model_path, is_language_model, model_users, takes_model
    from textveil.mechanisms.base import saved_mechanism_name

    check_model_path(model, mechanism)
    if is_language_model(model):
        if mechanism is not None and takes_model(mechanism):
            return mechanism
        users = " or ".join(f"--mechanism {name}" for name in model_users())
        reason = f"{mechanism} takes none" if mechanism is not None else "name the mechanism that rewrites with it"
        raise InvalidParameterError(f"--model '{model}' is a language model, not a trained mechanism; {reason}: {users}")

    saved = saved_mechanism_name(model)
    if mechanism is not None and mechanism != saved:
        raise InvalidParameterError(f"--model '{model}' holds a trained {saved}, not {mechanism}: "
                                    f"use --mechanism {saved} or another --model")
    return saved


def language_model_option(mechanism: str, model: Optional[Path], options: dict, *,
                          resolve: bool = False) -> Optional[Path]:
    """``--model`` as the mechanism takes it: a language model (for paraphrase, restyle) becomes
    its ``model`` parameter in ``options`` (the path, made absolute with ``resolve``) and None is
    returned; a trained mechanism's folder is returned as it is (built with ``Mechanism.load``).
    A ``model=`` parameter given with ``--set`` must then name the same model."""
    from textveil.building import is_language_model, takes_model

    if model is None or not takes_model(mechanism) or not is_language_model(model):
        if resolve and model is None and isinstance(options.get("model"), str) and Path(options["model"]).exists():
            options["model"] = str(Path(options["model"]).resolve())  # workers may run elsewhere
        return model
    source = str(model.resolve()) if resolve else str(model)
    given = options.get("model")
    if given is not None and given not in (str(model), source) and Path(given).resolve() != model.resolve():
        raise InvalidParameterError(f"--model '{model}' and --set model={given} name two language models: give one")
    options["model"] = source
    return None


def require_parameters(mechanism: str, options: dict, *, besides: tuple[str, ...] = ()) -> None:
    """Every parameter the mechanism cannot do without is given: one line names the flag."""
    from textveil.mechanisms.registry import MECHANISMS

    for parameter in MECHANISMS.entry(mechanism).parameters:
        if parameter.required and parameter.name not in options and parameter.name not in besides:
            raise InvalidParameterError(f"mechanism '{mechanism}' needs {parameter.flag}: {parameter.help}")


THEN = typer.Option(
    None, "--then", help="What rewrites each release after the mechanism: polish (the language model writes the "
    "release as fluent sentences, reading only the release: no privacy cost; settings in brackets, e.g. "
    "'polish[temperature=0.7]'). Repeatable.")
"""``--then`` of the commands that release (sanitize, release)."""


def then_steps(given: Optional[list[str]]) -> tuple[str, ...]:
    """``--then`` parsed by the library's one parser (:func:`textveil.mechanisms.polish.parse_then`),
    as the steps' texts (what a release job's spec carries); an unknown name is one line.

    >>> then_steps(None), then_steps(["polish"])
    ((), ('polish',))
    """
    if not given:
        return ()
    from textveil.mechanisms.polish import parse_then

    return tuple(step.text for step in parse_then(given, "--then"))


def corpus_words(documents) -> list[str]:
    """The word tokens of documents, in order: what a vocabulary is restricted to."""
    from textveil.text.tokenize import tokenize

    return [t.text for d in documents for t in tokenize(d.text) if t.is_word]


# Subsets of a risk corpus read in place (evaluate, compare).
FIRST_LABELS = typer.Option(
    None, "--first-labels", help="Keep only the first N authors (in file order; of the known corpus when known and "
    "unknown are given apart), read in place.")
TEXTS_PER_LABEL = typer.Option(
    None, "--texts-per-label", help="Keep only each author's first T texts (of a single corpus before its "
    "known/unknown split; of each, given apart).")
# How a single risk corpus is split into known and judged texts (evaluate, compare; textveil.evaluation.splits).
ESTIMATE = typer.Option(
    True, "--estimate/--no-estimate", help="Before the long work, time a pilot of each setting (a few texts "
    "released with a seed of their own, never kept) and say the expected time of each and of the whole run; "
    "results.json keeps it ('estimate') beside the time taken. The releases are the same either way.")
MINUTES = typer.Option(
    None, help="Fit the run in about this many minutes: from the estimate, run on the most authors (the first "
    "ones, as --first-labels takes them) that fit, and say the 95% interval of the risk that buys; an error where "
    "not even 2 authors fit.")
KNOWN_PER_LABEL = typer.Option(
    None, help="Per author, the first K texts are known (single corpus; cross-topic: at most K, from the main "
    "topic or the fewest topics that hold K).")
SPLIT = typer.Option(
    "same-stream", "--split", help="same-stream: each author's first texts known, the next ones judged; cross-topic: "
    "known texts on the author's main topic, judged texts on other topics (an author on one topic is left out).")
TOPIC_FIELD = typer.Option(
    None, "--topic-field", help="A JSONL/CSV field naming each text's topic (e.g. fandom) for --split cross-topic; "
    "default: topics from an NMF topic model of the content words. With same-stream: how many judged texts share "
    "a topic with their author's known texts.")
TOPICS = typer.Option(
    None, "--topics", help="Topics of the NMF topic model (content words, seed 0) where no --topic-field names them: "
    "cross-topic's topics (default: 10); with same-stream, how many judged texts share a topic with their author's "
    "known texts.")
