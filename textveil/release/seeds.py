"""Per-record seeds: a release job's randomness for record ``i`` depends only on the run's seed
and ``i``, so the release is the same whatever the sharding, the order in which shards finish
or the number of workers, and a resumed run redraws exactly what an interrupted one drew.

The derivation is numpy's ``SeedSequence`` with the record's position as its spawn key: the
streams of different records are independent (that is what spawn keys are for), and a record's
stream reveals nothing of another's.
"""

from __future__ import annotations

import secrets

import numpy as np

from textveil.errors import InvalidParameterError


def new_run_seed() -> int:
    """A fresh 128-bit run seed from OS entropy (for a run the user gave no seed).

    >>> new_run_seed() != new_run_seed()
    True
    """
    return secrets.randbits(128)


def record_seed(run_seed: int, position: int) -> int:
    """The seed of the record at 0-based ``position`` in a run seeded with ``run_seed``: a
    128-bit integer, for ``mechanism.sanitize_records``.

    >>> record_seed(7, 0) == record_seed(7, 0) != record_seed(7, 1)
    True
    >>> record_seed(7, 0) != record_seed(8, 0)
    True
    """
    if run_seed < 0 or position < 0:
        raise InvalidParameterError(f"seeds and record positions are non-negative integers, got {run_seed}, {position}")
    words = np.random.SeedSequence(run_seed, spawn_key=(position,)).generate_state(4, dtype=np.uint32)
    return int.from_bytes(words.astype("<u4").tobytes(), "little")


def record_seeds(run_seed: int, first: int, count: int) -> list[int]:
    """The seeds of records ``first`` .. ``first + count - 1``.

    >>> record_seeds(7, 3, 2) == [record_seed(7, 3), record_seed(7, 4)]
    True
    """
    return [record_seed(run_seed, position) for position in range(first, first + count)]
