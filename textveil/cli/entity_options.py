"""The entity stage's options on the command line: declared once and added by
:func:`with_entity_options` to every command that releases or learns from text (sanitize,
release, evaluate, compare, attack, train, pivot), parsed by the library's one parser
(:func:`textveil.pii.stage.parse_entity_options`)."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Optional

import typer

_ENTITY_OPTIONS = (
    ("entities", str, typer.Option(
        "placeholder", "--entities",
        help="Entity stage before the mechanism (names, places, organisations, contacts; Presidio + spaCy): "
        "placeholder (<PERSON>, the default), pseudonym (keyed fake values), drop, or off.")),
    ("entity_types", Optional[str], typer.Option(
        None, "--entity-types", help="Comma-separated Presidio entity types to replace (default: PERSON, LOCATION, "
        "ORGANIZATION, NRP, EMAIL_ADDRESS, PHONE_NUMBER, URL, IP_ADDRESS, CREDIT_CARD, IBAN_CODE, US_SSN; add "
        "DATE_TIME for dates).")),
    ("allow_entity", Optional[list[str]], typer.Option(
        None, "--allow-entity", help="A word the entity stage never replaces (repeatable, or comma-separated).")),
    ("deny_entity", Optional[list[str]], typer.Option(
        None, "--deny-entity", help="A word the entity stage always replaces, as CUSTOM (repeatable, or "
        "comma-separated).")),
    ("pseudonym_key", Optional[Path], typer.Option(
        None, "--pseudonym-key", help="With --entities pseudonym: a file holding the key (the same key gives the "
        "same pseudonyms across runs; default: a fresh key, this run only). Never written anywhere.")),
    ("entity_scope", str, typer.Option(
        "corpus", "--entity-scope", help="With --entities pseudonym: one pseudonym per entity across the corpus, or "
        "per document.")),
)


def with_entity_options(command):
    """Give a command the entity stage's options; it receives them parsed, as one keyword
    argument ``entity_stage`` (an :class:`~textveil.pii.EntityOptions`), and declares no option itself.

    >>> @with_entity_options
    ... def command(entity_stage=None):
    ...     return entity_stage
    >>> command(entities="drop", entity_types="PERSON", allow_entity=None, deny_entity=None, pseudonym_key=None,
    ...         entity_scope="corpus").operator
    'drop'
    """
    signature = inspect.signature(command)
    own = [p for p in signature.parameters.values() if p.name != "entity_stage"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
             for name, kind, option in _ENTITY_OPTIONS]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from textveil.pii.stage import parse_entity_options

        given = {name: kwargs.pop(name) for name, _, _ in _ENTITY_OPTIONS}
        parsed = parse_entity_options(given["entities"], given["entity_types"], given["allow_entity"],
                                      given["deny_entity"], given["entity_scope"], key_file=given["pseudonym_key"])
        return command(*args, entity_stage=parsed, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=own + added)  # type: ignore[attr-defined]
    return wrapper
