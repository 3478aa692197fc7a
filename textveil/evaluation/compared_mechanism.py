"""One mechanism of a comparison as ``textveil compare --mechanism`` names it: its name, the grid
of its swept parameter, its other options, a trained model or language model, and what rewrites
its releases after it (``+polish``); parsed and labelled here, compared in
:mod:`textveil.evaluation.comparison`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from textveil.errors import InvalidParameterError
from textveil.mechanisms.registry import MECHANISMS
from textveil.privacy.secrets import Secret


@dataclass
class ComparedMechanism:
    """One mechanism of a comparison: its grid of the swept parameter (empty for a mechanism
    without one), its other options, and a trained mechanism's folder or a language model."""

    name: str
    grid: list[float] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    then: tuple[str, ...] = ()
    """What rewrites each release after the mechanism (``("polish",)``: :mod:`textveil.mechanisms.polish`)."""

    @property
    def label(self) -> str:
        """The mechanism's name with the options that set it apart (two emp layouts differ), and
        what rewrites its releases after it.

        >>> ComparedMechanism("emp", [10.0], {"layout": "keep"}).label
        'emp [layout=keep]'
        >>> ComparedMechanism("emp", [10.0], then=("polish",)).label
        'emp+polish'
        """
        shown = ", ".join(f"{k}={_shown(v)}" for k, v in sorted(self.options.items()))
        return (f"{self.name} [{shown}]" if shown else self.name) + "".join(f"+{step}" for step in self.then)


def parse_compared_mechanism(text: str) -> ComparedMechanism:
    """``NAME``, ``NAME:V1,V2,...`` or either with ``@MODEL`` (a trained mechanism's folder or a
    language model), as ``textveil compare --mechanism`` takes it; the grid values are checked
    by the mechanism's own parameter. ``NAME[PARAM=VALUE,...]`` sets other parameters of this
    entry alone, so one comparison can hold the same mechanism twice with other settings.
    ``+STEP`` after it (``emp:10+polish``) rewrites each release afterwards, parsed by
    :func:`textveil.mechanisms.polish.parse_then`.

    >>> parse_compared_mechanism("emp:10,15")
    ComparedMechanism(name='emp', grid=[10.0, 15.0], options={}, model=None, then=())
    >>> parse_compared_mechanism("emp:10+polish[temperature=0.7]").then
    ('polish[temperature=0.7]',)
    >>> parse_compared_mechanism("redact").grid
    []
    >>> parse_compared_mechanism("emp").grid
    [10.0, 15.0, 20.0, 25.0, 30.0]
    >>> parse_compared_mechanism("erae:10,20@models/erae").model
    'models/erae'
    >>> parse_compared_mechanism("paraphrase[vocabulary=8000,prompt=neutral]:25,30").options
    {'vocabulary': '8000', 'prompt': 'neutral'}
    >>> parse_compared_mechanism("redact:5")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: --mechanism 'redact:5': redact has no parameter to sweep; give its name alone
    """
    text, then = _then_suffix(text)
    body, _, model = text.strip().partition("@")
    name, separator, values = body.partition(":")
    name, bracket, settings = name.strip().partition("[")
    name = name.strip()
    entry = MECHANISMS.entry(name)  # an unknown name fails, naming where the valid ones are listed
    options: dict[str, Any] = {}
    if bracket:
        if not settings.endswith("]"):
            raise InvalidParameterError(f"--mechanism '{text}': close its settings with ']', e.g. "
                                        f"{name}[PARAM=VALUE]:V1,V2")
        for setting in filter(None, (part.strip() for part in settings[:-1].split(","))):
            key, equals, value = setting.partition("=")
            if not equals or not key.strip():
                raise InvalidParameterError(f"--mechanism '{text}': '{setting}' is not PARAM=VALUE")
            parameter = entry.parameter(key.strip().replace("-", "_"))
            if entry.swept is not None and parameter.name == entry.swept.name:
                raise InvalidParameterError(f"--mechanism '{text}': give {parameter.name} after ':', not in [...]")
            options[parameter.name] = parameter.parse(value.strip())
    swept = entry.swept
    if not separator:
        grid = list(entry.grid) if swept is not None else []
    elif swept is None:
        raise InvalidParameterError(f"--mechanism '{text}': {name} has no parameter to sweep; give its name alone")
    else:
        grid = [float(v) for v in swept.parse_values(values, f"--mechanism '{text}'")]
    if separator and swept is not None and len(set(grid)) < len(grid):
        raise InvalidParameterError(f"--mechanism '{text}' names a {swept.name} twice")
    return ComparedMechanism(name, grid, options, model.strip() or None, then)


def _then_suffix(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` without its ``+STEP`` suffix (outside brackets), and the steps' texts.

    >>> _then_suffix("emp[layout=keep]:10,20+polish")
    ('emp[layout=keep]:10,20', ('polish',))
    """
    from textveil.mechanisms.polish import parse_then

    depth = 0
    for at, character in enumerate(text):
        depth += {"[": 1, "]": -1}.get(character, 0)
        if character == "+" and depth == 0:
            steps = parse_then(text[at + 1:], f"--mechanism '{text}'")
            return text[:at], tuple(step.text for step in steps)
    return text, ()


def _shown(value: Any) -> Any:
    """An option as results and keys show it: a secret as its digest only."""
    return str(value) if isinstance(value, Secret) else value


def then_of_label(label: str) -> tuple[str, ...]:
    """The steps after the mechanism that a label or a release's ``mechanism`` names, in order.

    >>> then_of_label("emp+polish"), then_of_label("paraphrase [score=public-base]"), then_of_label("emp")
    (('polish',), (), ())
    """
    after = label.rsplit("]", 1)[-1] if "]" in label else label
    return tuple(step.strip() for step in after.split("+")[1:])


def mechanism_identity(release: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """What makes a release's mechanism the same as another's: its name, its options and the steps
    after it (``emp`` and ``emp+polish`` are two mechanisms: one writes with a language model).

    >>> mechanism_identity({"name": "emp", "mechanism": "emp+polish", "options": {}})
    ('emp', '{}', ('polish',))
    """
    return (str(release.get("name")), json.dumps(release.get("options") or {}, sort_keys=True),
            then_of_label(release.get("mechanism") or ""))
