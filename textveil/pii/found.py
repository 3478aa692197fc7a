"""What detection finds: one entity's type, where it stands in the text, and its score.

Its own module because both sides of detection make it: :mod:`textveil.pii.detector` (Presidio's
results, resolved and propagated) and :mod:`textveil.pii.recognisers` (names taken whole, the
names of a list), and the detector imports the recognisers: neither imports the other back.

>>> Found("PERSON", 0, 3, 0.85)
Found(entity_type='PERSON', start=0, end=3, score=0.85)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Found:
    """One detected entity: its type, where it is in the text (characters), and Presidio's score."""

    entity_type: str
    start: int
    end: int
    score: float
