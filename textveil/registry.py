"""Lazy registries: mechanisms, attacks and utility tasks by name.

An entry is data: a name, the import path of the class that implements it, a one-line
description and, for mechanisms, the kind of guarantee and the parameters. A face that lists
entries or parses a mechanism's parameters reads this data and imports nothing; the class is
imported when an object is made (a trained mechanism's torch is never loaded for ``--help``).

>>> demo = Registry("widget", "run 'textveil widgets' for the valid names")
>>> demo.add(Entry("fraction", "fractions:Fraction", "a rational number", defaults={"denominator": 3}))
>>> demo.make("fraction", numerator=2), demo.names()
(Fraction(2, 3), ['fraction'])
>>> demo.entry("nope")
Traceback (most recent call last):
...
textveil.errors.InvalidParameterError: unknown widget 'nope'; valid widgets: fraction; run 'textveil widgets' for the valid names
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from textveil.errors import InvalidParameterError

REQUIRED: Any = inspect.Parameter.empty
"""The default of a parameter that has none: the user must give it."""


@dataclass(frozen=True)
class Parameter:
    """One parameter of a mechanism: how faces parse it and how the mechanism checks it.

    ``swept`` marks the parameter a sweep varies by default (epsilon, a temperature);
    ``secret`` marks a value that must never reach results, logs or cache keys (a key).

    >>> epsilon = Parameter("epsilon", float, "privacy per token", minimum=0.0, swept=True)
    >>> epsilon.parse("2.5"), epsilon.check(3)
    (2.5, 3.0)
    >>> epsilon.check(0)
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: epsilon must be a finite number greater than 0, got 0
    >>> Parameter("layout", str, "layout", "public", choices=("public", "keep")).check("tidy")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: unknown --layout 'tidy'; use one of: public, keep
    """

    name: str
    type: type
    help: str
    default: Any = REQUIRED
    choices: tuple[Any, ...] = ()
    minimum: float | None = None
    """Values must be greater than this (exclusive), when given."""
    swept: bool = False
    secret: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> Any:
        """The value of ``text`` as given on a command line (``"true"`` for a bool)."""
        if self.type is bool:
            lowered = text.strip().lower()
            if lowered not in {"true", "false", "1", "0", "yes", "no"}:
                raise InvalidParameterError(f"{self.flag} takes true or false, got {text!r}")
            return lowered in {"true", "1", "yes"}
        try:
            return self.check(self.type(text))
        except (TypeError, ValueError) as error:
            if isinstance(error, InvalidParameterError):
                raise
            raise InvalidParameterError(f"{self.flag} takes a {self.type.__name__}, got {text!r}") from None

    def parse_values(self, text: str, option: str) -> list[Any]:
        """A comma-separated list of values (a grid), each parsed and checked; ``option`` names
        where it was given, for the error.

        >>> Parameter("epsilon", float, "privacy", minimum=0.0).parse_values("10, 20", "--grid")
        [10.0, 20.0]
        >>> Parameter("epsilon", float, "privacy", minimum=0.0).parse_values(",", "--grid")
        Traceback (most recent call last):
        ...
        textveil.errors.InvalidParameterError: --grid ',' holds no value; give a comma-separated list such as 10,20,30
        """
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise InvalidParameterError(f"{option} '{text}' holds no value; give a comma-separated list such as 10,20,30")
        parsed = []
        for item in items:
            try:
                parsed.append(self.parse(item))
            except InvalidParameterError as error:
                raise InvalidParameterError(f"{self.name} '{item}' in {option}: {error}") from None
        return parsed

    def check(self, value: Any) -> Any:
        """``value`` converted to this parameter's type, or a one-line error naming the fix."""
        if value is None and self.default is None:
            return None
        if self.choices:
            if value not in self.choices:
                raise InvalidParameterError(
                    f"unknown {self.flag} {value!r}; use one of: {', '.join(map(str, self.choices))}"
                )
            return value
        if self.type in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) and not _is_numpy_number(value):
                raise InvalidParameterError(f"{self.name} must be a number, got {value!r}")
            if self.type is int and not float(value).is_integer():  # nan, inf and 2.5 alike
                raise InvalidParameterError(f"{self.name} must be a whole number, got {value!r}")
            number = self.type(value)
            if not math.isfinite(number) or (self.minimum is not None and number <= self.minimum):
                bound = "" if self.minimum is None else f" greater than {self.minimum:g}"
                raise InvalidParameterError(f"{self.name} must be a finite number{bound}, got {value!r}")
            return number
        if self.type is bool and not isinstance(value, bool):
            raise InvalidParameterError(f"{self.name} must be true or false, got {value!r}")
        return value

    def describe(self) -> dict[str, Any]:
        """The parameter as plain data (for ``textveil mechanisms --format json``)."""
        return {
            "name": self.name, "type": self.type.__name__, "help": self.help,
            "default": None if self.required else self.default, "required": self.required,
            **({"choices": list(self.choices)} if self.choices else {}),
            **({"swept": True} if self.swept else {}), **({"secret": True} if self.secret else {}),
        }


def _is_numpy_number(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"


@dataclass(frozen=True)
class Entry:
    """One registered thing: ``target`` is ``"module:Class"``, imported only by :meth:`load`.

    ``defaults`` are keyword arguments the entry always passes (an attack family's feature
    set); ``guarantee`` is a mechanism's kind of guarantee; ``parameters`` its parameters.
    """

    name: str
    target: str
    description: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    guarantee: str = ""
    parameters: tuple[Parameter, ...] = ()
    needs_aligned_pairs: bool = True
    """For utility tasks: whether each released text must be the release of one original."""
    in_default: bool = True
    """For utility tasks: whether a sweep that names none runs it (a costly one runs when asked)."""
    grid: tuple[float, ...] = ()
    """For mechanisms: the values a sweep takes when the user gives none."""

    def load(self) -> type:
        module_name, class_name = self.target.split(":")
        return getattr(importlib.import_module(module_name), class_name)

    def parameter(self, name: str) -> Parameter:
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        valid = ", ".join(p.name for p in self.parameters) or "none"
        raise InvalidParameterError(f"{self.name} takes no parameter '{name}'; its parameters: {valid}")

    @property
    def swept(self) -> Parameter | None:
        """The parameter a sweep varies, or None for a mechanism that has none (Random-R)."""
        return next((p for p in self.parameters if p.swept), None)


class Registry:
    """Entries by name, in the order they were added; makes objects on demand."""

    def __init__(self, kind: str, hint: str) -> None:
        self.kind, self.hint = kind, hint
        self._entries: dict[str, Entry] = {}

    def add(self, entry: Entry) -> None:
        if entry.name in self._entries:
            raise ValueError(f"{self.kind} '{entry.name}' is registered twice")
        self._entries[entry.name] = entry

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            # a short list is named in the message itself; a long one (attacks) by the hint
            valid = f"valid {self.kind}s: {', '.join(self._entries)}; " if len(self._entries) <= 12 else ""
            raise InvalidParameterError(f"unknown {self.kind} '{name}'; {valid}{self.hint}") from None

    def load(self, name: str) -> type:
        return self.entry(name).load()

    def make(self, name: str, shared: Mapping[str, Any] | None = None, **overrides: Any) -> Any:
        """A new object by name. ``shared`` holds resources the caller already has (embeddings,
        a random state); each goes only to classes whose constructor takes it."""
        entry = self.entry(name)
        cls = entry.load()
        try:
            accepted = inspect.signature(cls).parameters
        except (TypeError, ValueError):  # a builtin without a signature takes nothing shared
            accepted = {}
        offered = {key: value for key, value in (shared or {}).items() if key in accepted}
        return cls(**{**offered, **entry.defaults, **overrides})

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
