"""Progress on the command line: a live bar on a terminal, plain lines in a log (:class:`StageLines`),
and the tasks that count a release's words or a harness's texts."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from textveil.cli.console import stderr


def progress_bar(*extra_columns: ProgressColumn) -> Progress | StageLines:
    """A live progress bar on a terminal; elsewhere (a log file, CI, a pipe) plain lines.

    A bar redrawn into a file is one endless line of carriage returns, so where stderr is not a
    terminal the same calls print one line per stage when it ends (nothing when it fails: the
    error is then the last line) and, while a long stage runs, a progress line at each 5% or 30 s
    (:class:`StageLines`).
    """
    if not stderr.is_terminal:
        return StageLines(stderr)
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        DoneOfTotalColumn(),
        *extra_columns,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    )


class DoneOfTotalColumn(ProgressColumn):
    """"done/total", with a tenth where the count is a fraction: one long document written unit by
    unit shows 0.4/1 rather than 0/1 until it ends.

    >>> from rich.progress import Progress
    >>> bar = Progress()
    >>> long, many = bar.add_task("one document", total=1, completed=0.4), bar.add_task("posts", total=1200)
    >>> bar.advance(many, 300)
    >>> [str(DoneOfTotalColumn().render(task)) for task in bar.tasks]
    ['0.4/1', '300/1,200']
    """

    def render(self, task: Task) -> Text:
        done = task.completed
        shown = f"{done:,.0f}" if float(done).is_integer() else f"{done:,.1f}"
        total = "?" if task.total is None else f"{task.total:,.0f}"
        return Text(f"{shown}/{total}", style="progress.download")


class StageLines:
    """What :func:`progress_bar` gives where stderr is not a terminal: the calls of a rich
    ``Progress`` (``add_task``, ``advance``, ``update``, ``console``), written as plain lines.

    A stage's line is printed when it ends. A long stage also prints a progress line as it goes,
    so that a log shows it moving: each time its count crosses another 5% of the total, or after
    30 s without a line, whichever comes first, and never within 2 s of its previous line (a quick
    stage prints its end only). A line holds the count, the rate since the stage began and the time
    left; a stage of unknown total prints its count and rate every 30 s. Lines are printed as the
    counts arrive (no thread): a stage that reports nothing prints nothing until it does.
    ``clock`` (seconds) is for tests.

    >>> from io import StringIO
    >>> out = StringIO()
    >>> with StageLines(Console(file=out, width=80)) as bar:
    ...     task = bar.add_task("sanitising", total=3)
    ...     bar.advance(task, 3)
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    sanitising: done, 3 of 3 in ... s
    >>> out = StringIO()
    >>> with StageLines(Console(file=out, width=80)) as bar:  # stages reported as they end
    ...     task = bar.add_task("evaluating", total=2)
    ...     bar.update(task, completed=1, description="released")
    ...     bar.update(task, completed=2, description="attacked")
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    released: done, 1 of 2 in ... s
    attacked: done, 2 of 2 in ... s
    >>> now, out = [0.0], StringIO()
    >>> with StageLines(Console(file=out, width=80), clock=lambda: now[0]) as bar:  # 0.1 s a text
    ...     task = bar.add_task("releasing", total=1000)
    ...     for _ in range(1000):
    ...         now[0] += 0.1
    ...         bar.advance(task)
    >>> lines = out.getvalue().splitlines()
    >>> for line in [f"{len(lines)} lines:", *lines[:2], "...", *lines[-2:]]:
    ...     print(line)
    20 lines:
    releasing: 50 of 1,000 (5%), 10.0/s, 1 min 35 s left
    releasing: 100 of 1,000 (10%), 10.0/s, 1 min 30 s left
    ...
    releasing: 950 of 1,000 (95%), 10.0/s, 5 s left
    releasing: done, 1,000 of 1,000 in 100.0 s
    """

    #: A progress line each time the count crosses another 1/STEPS of the total (5%) ...
    STEPS = 20
    #: ... or once this many seconds passed without a line ...
    AT_MOST_QUIET_S = 30.0
    #: ... but never sooner than this after the previous line.
    AT_LEAST_QUIET_S = 2.0

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self._tasks: dict[int, dict] = {}
        self._next_task = 0

    def __enter__(self) -> StageLines:
        return self

    def __exit__(self, *exc_info) -> None:
        if exc_info[0] is None:
            for task in self._tasks:
                self._end(task)

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **fields) -> int:
        task, self._next_task = self._next_task, self._next_task + 1
        self._tasks[task] = {"description": description, "total": total, "done": float(completed)}
        self._begin(self._tasks[task])
        return task

    def remove_task(self, task: int) -> None:
        """The task is over: its end line now (a task whose description names the running stage,
        as :func:`texts_progress`'s, ends this way rather than by a new description)."""
        self._end(task)
        del self._tasks[task]

    def advance(self, task: int, advance: float = 1) -> None:
        self._tasks[task]["done"] += advance
        self._progress(self._tasks[task])

    def reset(self, task: int, *, total: float | None = None, completed: float = 0, **fields) -> None:
        """The task counts on from ``completed`` as if it began now (rich's ``Progress.reset``):
        work found done (a resumed release's parts read back) moves the count, not the rate."""
        state = self._tasks[task]
        state["total"] = state["total"] if total is None else total
        state["done"] = float(completed)
        self._begin(state)

    def update(self, task: int, *, completed: float | None = None, total: float | None = None,
               description: str | None = None, advance: float | None = None, **fields) -> None:
        """A new ``description`` names the stage just completed (the harness reports a stage when
        it ends): its line is printed now, timed from the previous line."""
        state = self._tasks[task]
        if total is not None:
            state["total"] = total
        if completed is not None:
            state["done"] = completed
        if advance is not None:
            state["done"] += advance
        if description is not None and description != state["description"]:
            state["description"] = description
            self._end(task)
            self._begin(state)
        else:
            self._progress(state)

    def _begin(self, state: dict) -> None:
        """A stage starts: its clock, its count so far (for its rate) and its quiet time start now."""
        now = self.clock()
        state.update(started=now, base=state["done"], shown=now, step=self._step(state))

    def _step(self, state: dict) -> int:
        """How many 5% steps of the total the count has crossed (0 where the total is unknown)."""
        return int(state["done"] * self.STEPS // state["total"]) if state["total"] else 0

    def _progress(self, state: dict) -> None:
        """Print a progress line where one is due (see the class)."""
        now = self.clock()
        quiet = now - state["shown"]
        total = state["total"]
        if quiet < self.AT_LEAST_QUIET_S or (total and state["done"] >= total):  # at the total: its end line
            return
        step = self._step(state)
        if step <= state["step"] and quiet < self.AT_MOST_QUIET_S:
            return
        state["shown"], state["step"] = now, max(step, state["step"])
        self.console.print(self._progress_line(state, now), markup=False, highlight=False)

    def _progress_line(self, state: dict, now: float) -> str:
        """``releasing: 1,250 of 25,000 (5%), 41.7/s, 9 min 30 s left``."""
        done, total = state["done"], state["total"]
        elapsed = now - state["started"]
        rate = (done - state["base"]) / elapsed if elapsed > 0 else 0.0
        line = f"{state['description']}: {_count(done)}"
        line += f" of {_count(total)} ({int(100 * done // total)}%)" if total else " done"
        if rate <= 0:
            return f"{line}, none in {_duration(elapsed)}, no estimate yet"
        line += f", {_rate(rate)}/s"
        return f"{line}, {_duration((total - done) / rate)} left" if total else line

    def _end(self, task: int) -> None:
        state = self._tasks[task]
        if state.get("ended") == state["description"]:
            return
        state["ended"] = state["description"]
        counted = f", {_count(state['done'])} of {_count(state['total'])}" if state["total"] else ""
        seconds = self.clock() - state["started"]
        self.console.print(f"{state['description']}: done{counted} in {seconds:.1f} s", markup=False, highlight=False)


def _count(value: float) -> str:
    """A count as a line shows it: ``1,250``; a fraction (progress within texts) with a tenth,
    ``12.5``, or below one with hundredths, ``0.25``, ``0.4``."""
    if float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 1 else f"{value:,.1f}"


def _rate(per_second: float) -> str:
    """Items a second, three significant digits or so: ``1,204``, ``41.7``, ``2.35``, ``0.052``."""
    for floor, digits in ((100, 0), (10, 1), (1, 2)):
        if per_second >= floor:
            return f"{per_second:,.{digits}f}"
    return f"{per_second:.3f}"


def _duration(seconds: float) -> str:
    """``45 s``, ``9 min 30 s``, ``2 h 5 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(whole, 3600)
    return f"{hours} h {rest // 60} min" if rest // 60 else f"{hours} h"


def words_progress(bar: Progress | StageLines, stage: str, texts: Sequence[str]) -> Callable[[float], None]:
    """A task of ``bar`` that counts the input's words (split on white space), fed by a
    mechanism's ``progress(n)`` in finished texts (a fraction while a long one is written unit by
    unit): each text counts as the texts' mean length, so a 5 MB file moves by its words and the
    rate reads in words a second; exactly the total at the end. Texts without a word count as texts.

    >>> from io import StringIO
    >>> out = StringIO()
    >>> with StageLines(Console(file=out, width=80)) as bar:
    ...     told = words_progress(bar, "sanitising", ["one two three", "four"])
    ...     told(0.5); told(1.5)
    >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
    sanitising words: done, 4 of 4 in ... s
    """
    words = sum(len(text.split()) for text in texts)
    if not words:
        task = bar.add_task(stage, total=len(texts))
        return lambda done: bar.advance(task, done)
    task = bar.add_task(f"{stage} words", total=words)
    finished = 0.0

    def advance(done: float) -> None:
        nonlocal finished
        finished += done
        whole = finished >= len(texts) - 1e-9  # every text: the total exactly, not a float's sum
        bar.update(task, completed=words if whole else finished * words / len(texts))

    return advance


def texts_progress(bar: Progress | StageLines) -> Callable[..., None]:
    """The harness's ``text_progress(stage, done, total)`` shown as a task of ``bar`` of its own,
    added when a first release starts: each release's texts, on a terminal a second bar, in a log
    a line every few percent (:class:`StageLines`). Texts read back rather than released (``held``,
    a resumed release's parts) move the count and restart the rate, so the time left is the
    release's own.

    >>> from io import StringIO
    >>> now, out = [0.0], StringIO()
    >>> with StageLines(Console(file=out, width=80), clock=lambda: now[0]) as bar:
    ...     told = texts_progress(bar)
    ...     told("releasing", 0, 1000)
    ...     told("releasing", 900, 1000, held=900)  # read back at once
    ...     now[0] += 10.0
    ...     told("releasing", 950, 1000)  # 50 released in 10 s
    >>> print(out.getvalue().splitlines()[0])
    releasing: 950 of 1,000 (95%), 5.00/s, 10 s left
    """
    running: dict[str, Any] = {}  # the stage being released and its task

    def told(stage: str, done: float, total: int, held: float = 0.0) -> None:
        if running.get("stage") != stage:  # a new release: the last one's task ends (its line in a log)
            if "task" in running:
                bar.remove_task(running["task"])
            running.clear()
            running.update(stage=stage, task=bar.add_task(stage, total=total), held=0.0)
        if held > running["held"]:
            running["held"] = held
            bar.reset(running["task"], total=total, completed=done)
        else:
            bar.update(running["task"], completed=done, total=total)
        if done >= total:  # all released: its line now
            bar.remove_task(running.pop("task"))
            running.pop("stage")

    return told
