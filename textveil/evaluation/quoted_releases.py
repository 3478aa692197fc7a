"""The releases a committed ``results.json`` holds, found by the label a documentation placeholder
gives them (:mod:`textveil.evaluation.quoted_figures` reads their figures; ``quoted_tables`` lists
them): a comparison's releases, or a sweep's grid points seen as releases, and the error a
placeholder that names none of them raises.

>>> results = {"releases": [{"name": "emp", "parameter": 10.0, "options": {}, "risk": {"top1": 0.05}}]}
>>> release_label(find_release(results, "emp", "10"))
'emp at 10'
"""

from __future__ import annotations

import math
import re
from typing import Any

from textveil.evaluation.compared_mechanism import then_of_label
from textveil.evaluation.trainings import attack_lines

class FigureError(ValueError):
    """A placeholder that cannot be filled: its message says, on one line, what is missing."""


# ---------------------------------------------------------------------------------------------
# Releases: a comparison's, or a sweep's points seen as releases


def releases_of(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The releases of a results.json: a comparison's ``releases``, or a sweep's grid points
    (``textveil evaluate``: one mechanism, ``points``) in the same shape, each with its ``point``.
    A sweep's releases carry ``"sweep": True`` (their options are matched as a subset).

    >>> sweep = {"plan": {"mechanism": "syntf", "mechanism_options": {}},
    ...          "points": [{"label": "none", "parameter": None}, {"label": "20", "parameter": 20.0,
    ...                     "risk": {"top1": 0.1}, "utility": {}}]}
    >>> [(r["name"], r["parameter"]) for r in releases_of(sweep)]
    [('syntf', 20.0)]
    """
    if isinstance(results.get("releases"), list):
        return [release if "point" in release else {**release, "point": {}} for release in results["releases"]]
    plan = results.get("plan") or {}
    name = plan.get("mechanism") or (results.get("mechanism") or {}).get("mechanism")
    releases = []
    for point in results.get("points") or []:
        if isinstance(point, dict) and isinstance(point.get("risk"), (int, float)):
            if point.get("mechanism") not in (None, "original"):
                releases.append(_summary_release(point))
            continue
        if not isinstance(point, dict) or point.get("label") == "none" or not _has_attacks(point):
            continue
        parameter = point.get("parameter")
        releases.append({"name": name, "mechanism": name, "options": plan.get("mechanism_options") or {},
                         "parameter": parameter, "setting": _setting(name, parameter, plan.get("parameter")),
                         "risk": _risk_of_point(point), "utility": point.get("utility") or {},
                         "not_applicable": {m: "" for m in results.get("utility_not_applicable") or []},
                         "seconds": None, "guarantee": None, "corpus_level": False, "point": point, "sweep": True})
    return releases


def _setting(name: str | None, parameter: Any, parameter_name: str | None = None) -> str:
    """A release's setting as a comparison states it (``epsilon 10``, ``temperature 0.7``,
    ``default``), the parameter named by the mechanism's registry entry where results do not say."""
    if parameter is None:
        return "default"
    if not parameter_name and name:
        try:
            from textveil.mechanisms.registry import MECHANISMS

            swept = MECHANISMS.entry(name).swept
            parameter_name = swept.name if swept is not None else None
        except Exception:  # a mechanism this version no longer has: the bare value
            parameter_name = None
    return f"{parameter_name} {parameter:g}" if parameter_name else f"{parameter:g}"


def _has_attacks(point: dict[str, Any]) -> bool:
    return isinstance(point.get("risk"), dict) or bool(point.get("attacks"))


def _risk_of_point(point: dict[str, Any]) -> dict[str, Any] | None:
    """A point's risk as results.json states it; for results written before it was stated, the
    best top-1 over its attacks and trainings (the same rule)."""
    if isinstance(point.get("risk"), dict):
        return point["risk"]
    lines = [(attack, training, result) for attack, training, result in attack_lines(point)
             if isinstance(result, dict) and result.get("top1") is not None]
    if not lines:
        return None
    attack, training, result = max(lines, key=lambda line: float(line[2]["top1"]))
    return {"attack": attack, "training": training, "top1": float(result["top1"])}


def _summary_release(point: dict[str, Any]) -> dict[str, Any]:
    """A point of a summary (``{"mechanism", "parameter", "risk": 0.13, "risk_by": "word1-svm
    (clean)", "similarity", "attacks": {"word1-svm (clean)": 0.13}}``) as a release."""
    attack, _, training = str(point.get("risk_by") or "").partition(" (")
    attacks: dict[str, dict[str, Any]] = {"attacks": {}, "attacks_release": {}}
    for line, top1 in (point.get("attacks") or {}).items():
        name, _, kind = line.partition(" (")
        attacks["attacks_release" if kind.startswith("release") else "attacks"][name] = {"top1": top1}
    utility = {"semantic-similarity": {"value": point["similarity"]}} if point.get("similarity") is not None else {}
    if point.get("stylometric_l2") is not None:
        utility["stylometric-l2"] = {"value": point["stylometric_l2"]}
    parameter = point.get("parameter")
    return {"name": point.get("mechanism"), "mechanism": point.get("mechanism"), "options": point.get("options") or {},
            "parameter": parameter, "setting": _setting(point.get("mechanism"), parameter),
            "risk": {"attack": attack or None, "training": training.rstrip(")") or "clean", "top1": point["risk"]},
            "utility": utility, "point": attacks, "sweep": False}


def unmodified_of(results: dict[str, Any]) -> dict[str, Any] | None:
    """The unmodified text's point (a comparison's ``unmodified``, a sweep's point ``none``), as a
    release of name ``unmodified``; None where the results hold none."""
    point = results.get("unmodified")
    if point is None:
        point = next((p for p in results.get("points") or [] if isinstance(p, dict) and p.get("label") == "none"),
                     None)
    if point is None:
        original = next((p for p in results.get("points") or [] if isinstance(p, dict)
                         and p.get("mechanism") == "original" and isinstance(p.get("risk"), (int, float))), None)
        return None if original is None else {**_summary_release(original), "name": "unmodified", "setting": ""}
    return {"name": "unmodified", "options": {}, "parameter": None, "setting": "", "risk": _risk_of_point(point),
            "utility": point.get("utility") or {}, "point": point, "not_applicable": {}}


def parse_label(label: str) -> tuple[str, dict[str, str]]:
    """A release label's mechanism name and options (a step after it, ``+polish``, is read by
    :func:`then_of_label`).

    >>> parse_label("paraphrase[vocabulary=8000, width=12]")
    ('paraphrase', {'vocabulary': '8000', 'width': '12'})
    >>> parse_label("emp"), parse_label("emp+polish")
    (('emp', {}), ('emp', {}))
    """
    found = re.fullmatch(r"\s*([\w.-]+)\s*(?:\[(.*)\])?\s*(?:\+[\w.\[\]=, -]+)?", label)
    if not found:
        raise FigureError(f'"{label}" is not a release label (NAME, NAME[OPTION=VALUE, ...], then +STEP)')
    options = {}
    for part in filter(None, (part.strip() for part in (found.group(2) or "").split(","))):
        key, equals, value = part.partition("=")
        if not equals:
            raise FigureError(f'option "{part}" of "{label}" is not OPTION=VALUE')
        options[key.strip()] = value.strip()
    return found.group(1), options


def _same_value(a: Any, b: Any) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        return str(a).strip().lower() == str(b).strip().lower()


def _options_match(wanted: dict[str, str], options: dict[str, Any], subset: bool) -> bool:
    if not subset and set(wanted) != set(options):
        return False
    return all(key in options and _same_value(value, options[key]) for key, value in wanted.items())


def _setting_matches(setting: str, release: dict[str, Any]) -> bool:
    if setting.lower() == "default":
        return release.get("parameter") is None
    return release.get("parameter") is not None and _same_value(setting, release["parameter"])


def release_label(release: dict[str, Any]) -> str:
    """How a placeholder names a release: ``emp at 10``, ``paraphrase[score=public-base] at 8``."""
    options = release.get("options") or {}
    name = release.get("name") or release.get("mechanism") or "?"
    if options and not release.get("sweep"):
        name += "[" + ", ".join(f"{key}={plain_value(value)}" for key, value in options.items()) + "]"
    name += "".join(f"+{step}" for step in then_of_label(release.get("mechanism") or ""))
    parameter = release.get("parameter")
    return f"{name} at {'default' if parameter is None else plain_value(parameter)}"


def plain_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def find_release(results: dict[str, Any], label: str, setting: str | None = None) -> dict[str, Any]:
    """The one release of ``results`` that ``label`` (name and options) and ``setting`` name;
    ``unmodified`` is the unmodified text. A :class:`FigureError` names what is missing.

    >>> results = {"releases": [{"name": "emp", "parameter": 10.0, "options": {}},
    ...                         {"name": "paraphrase", "parameter": 8.0, "options": {"score": "public-base"}}]}
    >>> find_release(results, "paraphrase[score=public-base]", "8")["parameter"]
    8.0
    >>> find_release(results, "paraphrase", "8")
    Traceback (most recent call last):
    ...
    textveil.evaluation.quoted_releases.FigureError: no release "paraphrase" at 8 (it has: emp at 10, paraphrase[score=public-base] at 8)
    """
    if label == "unmodified":
        found = unmodified_of(results)
        if found is None:
            raise FigureError("no unmodified text in these results")
        return found
    name, wanted = parse_label(label)
    releases = releases_of(results)
    if not releases:
        raise FigureError("these results hold no releases (neither a comparison's nor a sweep's points)")
    then = then_of_label(label)
    matches = [release for release in releases
               if name in (release.get("name"), release.get("mechanism"))
               and then == then_of_label(release.get("mechanism") or "")
               and _options_match(wanted, release.get("options") or {}, subset=bool(release.get("sweep")))
               and (setting is None or _setting_matches(setting, release))]
    if len(matches) == 1:
        return matches[0]
    where = f'"{label}"' + ("" if setting is None else f" at {setting}")
    if not matches:
        raise FigureError(f"no release {where} (it has: {', '.join(release_label(r) for r in releases)})")
    raise FigureError(f"{len(matches)} releases match {where}: name the options or the setting")
