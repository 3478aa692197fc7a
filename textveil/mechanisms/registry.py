"""Mechanisms by name, for the faces (CLI, service) and the evaluation harness."""

from __future__ import annotations

from typing import Any

from textveil.errors import InvalidParameterError
from textveil.mechanisms.earth_movers import EarthMoversPrivacy

MECHANISMS: dict[str, type] = {"emp": EarthMoversPrivacy}


def mechanism_class(name: str) -> type:
    """The mechanism class registered under ``name``; a clear error lists the valid names."""
    try:
        return MECHANISMS[name]
    except KeyError:
        raise InvalidParameterError(
            f"unknown mechanism '{name}'; valid mechanisms: {', '.join(sorted(MECHANISMS))}"
        ) from None


def make_mechanism(name: str, **parameters: Any) -> Any:
    """Construct a mechanism by name with its parameters."""
    return mechanism_class(name)(**parameters)
