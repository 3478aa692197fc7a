"""What a comparison keeps between runs, so that an interrupted one resumes: its finished points
(one JSON file each, under a key naming everything a point depends on), whether a stored point was
measured on the releases the mechanism makes now, and the seed a run drew.

>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> load_state_seed(out) is None
True
>>> save_state_seed(out, 7); load_state_seed(out)
7
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textveil.atomic_files import atomic_write_text
from textveil.errors import InputError
from textveil.evaluation.release_cache import ReleaseCache
from textveil.evaluation.trainings import attack_lines
from textveil.mechanisms.registry import MECHANISMS
from textveil.privacy.release_budget import figures_of_kind


class PointStore:
    """Finished points, one JSON file each; none without a folder or a seed (an unseeded
    comparison is meant to be drawn afresh)."""

    def __init__(self, folder: Path | None, seeded: bool) -> None:
        self.folder = folder if seeded else None

    def get(self, key: str) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        path = self.folder / f"{key}.json"
        try:
            point = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return point

    def stored_at(self, key: str) -> float | None:
        """When the point for ``key`` was stored (seconds since the epoch), None without one."""
        try:
            return (self.folder / f"{key}.json").stat().st_mtime if self.folder is not None else None
        except OSError:
            return None

    def put(self, key: str, point: dict[str, Any]) -> None:
        if self.folder is not None:
            atomic_write_text(self.folder / f"{key}.json", json.dumps(point, ensure_ascii=False))


def rebuildable(compared: Any, cache: ReleaseCache) -> bool:
    """Whether a stored point's mechanism may be built to check it (releases are kept, and
    building it trains no network: a trained model is loaded, not trained again)."""
    entry = MECHANISMS.entry(compared.name)
    return cache.folder is not None and (compared.model is not None or not entry.load().trains_network)


def stale(point: dict[str, Any], built: Any, at: Any, stored_at: float | None) -> bool:
    """Whether a stored point was measured on releases that the mechanism no longer makes: its
    release digest differs from the mechanism's now, or, for a point stored (at ``stored_at``)
    before digests, the cache does not hold its judged releases as the mechanism makes them now,
    or holds them written after the point (a later run released them and stopped before measuring:
    the point's figures are of the releases before). A point key names the entry, not the code: a
    release-changing fix under the same version must not read old figures back."""
    stored = point.get("release_digest")
    if stored is not None:
        return bool(stored != built.release_digest(at))
    written = built.releases_written(at)
    return written is None or stored_at is None or written > stored_at


def lacks_outcomes(point: dict[str, Any]) -> bool:
    """Whether a stored point was measured before each text's outcome was kept (an attack result
    of one release without ``hits``): a paired test cannot read it, so where its releases are all
    cached it is measured again from them (nothing is released again).

    >>> lacks_outcomes({"attacks": {"svm": {"top1": 0.5}}}), lacks_outcomes({"attacks": {"svm": {"hits": "10"}}})
    (True, False)
    """
    return any("hits" not in result and "top1_values" not in result
               for _, _, result in attack_lines(point))


def why_measured_again(point: dict[str, Any], built: Any, at: Any, stored_at: float | None) -> str | None:
    """Why a stored point must be measured again, in words for the log, or None to read it back:
    it was measured on releases this code no longer makes (:func:`stale`), or it lacks each text's
    outcome while its releases are all cached (:func:`lacks_outcomes`). The run and its time
    estimate both decide by this."""
    if stale(point, built, at, stored_at):
        return "the stored point was measured on releases this code no longer makes: measuring it again"
    if lacks_outcomes(point) and built.measurable_from_cache(at):
        return ("the stored point lacks each text's outcome (paired tests need it): measuring it again from the "
                "cached releases")
    return None


def budget_readable(compared: Any, cache: ReleaseCache) -> bool:
    """Whether a point stored without its budget figures may have them read back from the release
    cache: the releases are kept, the mechanism's kind of guarantee states an epsilon (the others'
    figures need no release, :func:`figures_of_kind`), and building it trains no network (a trained
    model is loaded, not trained again)."""
    entry = MECHANISMS.entry(compared.name)
    return (cache.folder is not None and figures_of_kind(entry.guarantee) is None
            and (compared.model is not None or not entry.load().trains_network))


def load_state_seed(out: Path) -> int | None:
    """The seed an earlier comparison into ``out`` drew, so that running it again without
    ``--seed`` resumes it; None when there is none."""
    path = out / "comparison-state.json"
    if not path.is_file():
        return None
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["seed"])
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"'{path}' is damaged; delete it to start the comparison afresh") from None


def save_state_seed(out: Path, seed: int) -> None:
    """Record the comparison's seed in ``out`` (see :func:`load_state_seed`)."""
    atomic_write_text(out / "comparison-state.json", json.dumps({"seed": seed}) + "\n")

