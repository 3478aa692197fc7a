"""Where a sweep's time goes and how far it has come: seconds per stage and per task, progress
in steps (releases, attacks, utility measurements) and, as a release goes, in texts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

@dataclass
class SweepClock:
    """Where a sweep's time goes, and how far it has come.

    ``timings`` is per stage. ``task_seconds`` is the same time by attack and utility task,
    summed over the grid: it says which task to drop or speed up when a sweep is too slow.

    >>> clock = SweepClock(progress=lambda stage, done, total: print(stage, done, total))
    >>> clock.total = 2
    >>> with clock.timed("release"), clock.timed("measure sim", clock.task_seconds):
    ...     clock.step("epsilon 10: released")
    epsilon 10: released 1 2
    >>> list(clock.timings), list(clock.task_seconds)
    (['release'], ['measure sim'])
    """

    progress: Callable[[str, int, int], None] | None = None
    texts: Callable[..., None] | None = None
    """``texts(stage, done, total)``: told as a release goes, in texts (a language model's release
    of a few hundred documents takes minutes: a log shows it moving); ``texts(stage, done, total,
    held=n)`` where n of the done texts were read back, not released (a resumed release's parts),
    so that a rate counts only the texts released."""
    timings: dict[str, float] = field(default_factory=dict)
    task_seconds: dict[str, float] = field(default_factory=dict)
    done: int = 0
    total: int = 0

    @contextmanager
    def timed(self, stage: str, *books: dict[str, float]) -> Iterator[None]:
        """Add the time of the ``with`` block to ``stage`` in each book (default: ``timings``)."""
        started = time.perf_counter()
        yield
        seconds = time.perf_counter() - started
        for book in books or (self.timings,):
            book[stage] = round(book.get(stage, 0.0) + seconds, 3)

    def step(self, stage: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(stage, self.done, self.total)

    def releasing(self, stage: str, total: int) -> TextCount | None:
        """A release's ``progress(n)``, passing the texts released so far on to ``texts``."""
        return None if self.texts is None else TextCount(self.texts, stage, total)


class TextCount:
    """One release's texts, told as they are released (``count(n)``), as they are read back from
    the parts a stopped run left (``count.held(n)``: done, but not released now, so not in a rate),
    and all of them at the end (``finish()``: a release read back whole tells nothing on the way).

    >>> told = []
    >>> count = TextCount(lambda stage, done, total, **held: told.append((done, held)), "releasing", 4)
    >>> count.held(2)
    >>> count(1)
    >>> count.finish()
    >>> told
    [(0.0, {}), (2.0, {'held': 2.0}), (3.0, {}), (4.0, {})]
    """

    def __init__(self, told: Callable[..., None], stage: str, total: int) -> None:
        self.told, self.stage, self.total, self.done, self.held_so_far = told, stage, total, 0.0, 0.0
        told(stage, 0.0, total)

    def __call__(self, count: float) -> None:
        self.done += count
        self.told(self.stage, self.done, self.total)

    def held(self, count: float) -> None:
        """``count`` more texts read back rather than released."""
        self.done += count
        self.held_so_far += count
        self.told(self.stage, self.done, self.total, held=self.held_so_far)

    def finish(self) -> None:
        if self.done < self.total:
            self.done = float(self.total)
            self.told(self.stage, self.done, self.total)
