"""What every mechanism returns, and the shape every mechanism has."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from textveil.privacy.guarantee import Guarantee

ProgressCallback = Callable[[int], None]
"""Called with the number of documents just finished."""


@dataclass(frozen=True)
class Change:
    """One word the mechanism replaced: its position among the document's tokens."""

    token_index: int
    original: str
    released: str


@dataclass(frozen=True)
class Release:
    """One released document: its text, what changed, and its guarantee.

    ``str(release)`` is the released text.
    """

    text: str
    guarantee: Guarantee
    changes: tuple[Change, ...] = field(default=())
    words_unchanged: int = 0
    """Perturbed words whose noisy vector decoded back to the same word."""

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "changed": [{"token": c.token_index, "from": c.original, "to": c.released} for c in self.changes],
            "words_unchanged_by_noise": self.words_unchanged,
            "guarantee": self.guarantee.to_dict(),
        }


class Mechanism(Protocol):
    """The face of every mechanism: parameters at construction, then ``sanitize``."""

    name: str

    def sanitize(self, text: str) -> Release:  # pragma: no cover - protocol
        ...

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        ...  # pragma: no cover - protocol
