"""The seeds of a sweep's releases: each derived from the run's seed and what the release is
(the parameter value, the repeat, its role at the point) alone, so that adding a value to a grid,
a repeat to a point or a measurement to a release leaves every earlier release (and its cache
entry) as it was.
"""

from __future__ import annotations

import numpy as np

# The releases of one grid point, each with a seed spawned from the point's seed, in this
# order. "known" (the release-trained attacks' training texts) came after the first two, and
# "same-key" (a keyed mechanism's known and unknown texts encoded together) last: spawning one
# more child leaves the earlier ones as they were, so the earlier releases (and their cache
# entries) did not move when each was added.
RELEASE_ROLES = ("risk", "utility", "known", "same-key")


def point_seeds(seed: int | None, count: int) -> list[int | None]:
    """``count`` independent seeds spawned from ``seed``; the first ones do not depend on ``count``.

    >>> point_seeds(7, 3)[:2] == point_seeds(7, 2) and len(set(point_seeds(7, 3))) == 3
    True
    >>> point_seeds(None, 3)
    [None, None, None]
    """
    if seed is None:
        return [None] * count
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(count)]


def role_seeds(seed: int | None) -> dict[str, int | None]:
    """The seed of each release of one point's measurement, by its role (:data:`RELEASE_ROLES`).

    >>> seeds = role_seeds(7)
    >>> list(seeds) == list(RELEASE_ROLES) and seeds["risk"] == point_seeds(7, 1)[0]
    True
    """
    return dict(zip(RELEASE_ROLES, point_seeds(seed, len(RELEASE_ROLES))))


def point_seed(seed: int | None, value: float | None, repeat: int = 0) -> int | None:
    """The seed of one release at one parameter value: derived from the run's seed, the value
    and the repeat number alone, so a point releases the same text whatever else the grid
    holds (adding epsilon 12 to a grid leaves the release at 15, and its cache entry, as they
    were), and asking for more repeats keeps the first ones.

    >>> point_seed(1, 15.0) == point_seed(1, 15.0) != point_seed(1, 12.0)
    True
    >>> point_seed(1, 15.0, 1) != point_seed(1, 15.0)
    True
    >>> point_seed(None, 15.0) is None and point_seed(1, None) is None
    True
    """
    if seed is None or value is None:
        return None
    bits = int(np.float64(value).view(np.uint64))  # the exact value, as 64 bits
    key = (bits >> 32, bits & 0xFFFFFFFF) + ((repeat,) if repeat else ())
    return int(np.random.SeedSequence(seed, spawn_key=key).generate_state(1)[0])
