"""Progress where stderr is not a terminal (a log, CI, a pipe): StageLines prints a plain line at a
steady pace, by count (each 5%) or by time (30 s), never a line per item (issue 48)."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from rich.console import Console
from rich.progress import Progress

from textveil.cli import progress as cli_progress
from textveil.cli.progress import StageLines

LINE = re.compile(r"^(?P<stage>[^:]+): (?P<done>[\d,.]+) of (?P<total>[\d,.]+) \((?P<percent>\d+)%\), "
                  r"(?P<rate>[\d,.]+)/s, (?P<left>.+) left$")


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def stage_lines(clock: FakeClock) -> tuple[StageLines, StringIO]:
    out = StringIO()
    return StageLines(Console(file=out, width=200), clock=clock), out


def thousand_steps(name: str, seconds_each: float) -> list[str]:
    """The lines a stage of 1,000 single steps prints, each step taking ``seconds_each``."""
    clock = FakeClock()
    bar, out = stage_lines(clock)
    with bar:
        task = bar.add_task(name, total=1000)
        for _ in range(1000):
            clock.now += seconds_each
            bar.advance(task)
    return out.getvalue().splitlines()


def test_a_thousand_single_steps_print_about_twenty_lines_not_a_thousand():
    *progress, end = thousand_steps("releasing", 0.1)
    assert 15 <= len(progress) <= 25, progress
    assert [int(LINE.match(line)["percent"]) for line in progress] == list(range(5, 100, 5))
    assert end == "releasing: done, 1,000 of 1,000 in 100.0 s"  # the end line as before


def test_a_quick_stage_prints_its_end_only():
    assert thousand_steps("sanitising", 0.001) == ["sanitising: done, 1,000 of 1,000 in 1.0 s"]


def test_a_slow_stage_prints_a_line_after_thirty_seconds_without_five_percent():
    clock = FakeClock()
    bar, out = stage_lines(clock)
    task = bar.add_task("paraphrasing", total=1000)
    for _ in range(2):  # 20 s, 2 of 1,000: nothing yet
        clock.now += 10
        bar.advance(task)
    assert out.getvalue() == ""
    clock.now += 10
    bar.advance(task)
    assert out.getvalue().splitlines() == ["paraphrasing: 3 of 1,000 (0%), 0.100/s, 2 h 46 min left"]
    for _ in range(3):
        clock.now += 10
        bar.advance(task)
    assert len(out.getvalue().splitlines()) == 2  # the next, 30 s later


def test_a_line_holds_the_count_the_rate_and_the_time_left():
    clock = FakeClock()
    bar, out = stage_lines(clock)
    task = bar.add_task("releasing", total=25_000)
    clock.now = 30
    bar.advance(task, 1_250)
    assert out.getvalue().strip() == "releasing: 1,250 of 25,000 (5%), 41.7/s, 9 min 30 s left"
    found = LINE.match(out.getvalue().strip())
    assert found and (found["done"], found["total"], found["rate"], found["left"]) == (
        "1,250", "25,000", "41.7", "9 min 30 s")


def test_lines_come_at_most_every_two_seconds():
    clock = FakeClock()
    bar, out = stage_lines(clock)
    shown = []
    task = bar.add_task("attacking", total=100)
    for _ in range(9):  # 10% a second: every call crosses two 5% steps
        clock.now += 1
        before = out.getvalue().count("\n")
        bar.advance(task, 10)
        if out.getvalue().count("\n") > before:
            shown.append(clock.now)
    assert shown == [2, 4, 6, 8]


@pytest.mark.parametrize(("name", "total", "seconds", "completed", "line"), [
    ("one document", 1, 40, 0.25, "one document: 0.25 of 1 (25%), 0.006/s, 2 min left"),  # a fraction of a text
    ("training", None, 40, 1234.5, "training: 1,234.5 done, 30.9/s"),  # no total known
    ("loading", 10, 31, 0, "loading: 0 of 10 (0%), none in 31 s, no estimate yet"),  # no progress yet
])
def test_the_line_after_a_while(name, total, seconds, completed, line):
    clock = FakeClock()
    bar, out = stage_lines(clock)
    task = bar.add_task(name, total=total)
    clock.now = seconds
    bar.update(task, completed=completed)
    assert out.getvalue().splitlines() == [line]


def test_a_new_stage_ends_the_last_and_restarts_the_pace():
    clock = FakeClock()
    bar, out = stage_lines(clock)
    with bar:
        task = bar.add_task("evaluating", total=200)
        clock.now = 10
        bar.update(task, completed=100, description="released")
        clock.now = 11
        bar.update(task, completed=110)  # 1 s after the stage line: too soon
        clock.now = 15
        bar.update(task, completed=150)
    assert out.getvalue().splitlines() == [
        "released: done, 100 of 200 in 10.0 s",
        "released: 150 of 200 (75%), 10.0/s, 5 s left",
    ]  # "released" already had its end line: the exit adds none (as before)


def test_a_terminal_still_gets_the_live_bar(monkeypatch):
    monkeypatch.setattr(cli_progress, "stderr", Console(file=StringIO(), force_terminal=True))
    assert isinstance(cli_progress.progress_bar(), Progress)
    monkeypatch.setattr(cli_progress, "stderr", Console(file=StringIO(), force_terminal=False))
    assert isinstance(cli_progress.progress_bar(), StageLines)


def test_the_harness_releases_show_as_tasks_of_their_own_each_ending_with_its_line():
    """``texts_progress``: each release of a comparison a task of its own, its end line when all its
    texts are released (or when the next release starts), never mixed with the stage counter."""
    from textveil.cli.progress import texts_progress

    clock = FakeClock()
    bar, out = stage_lines(clock)
    stages = bar.add_task("comparing", total=4)
    told = texts_progress(bar)
    with bar:
        for stage in ("epsilon 10: releasing the unknown texts", "epsilon 10: releasing the known texts"):
            for done in range(0, 11):
                clock.now += 1
                told(stage, float(done), 10)
        bar.update(stages, completed=1, description="epsilon 10: released")
    lines = out.getvalue().splitlines()
    ends = [line for line in lines if ": done, " in line]
    assert ends == ["epsilon 10: releasing the unknown texts: done, 10 of 10 in 10.0 s",
                    "epsilon 10: releasing the known texts: done, 10 of 10 in 10.0 s",
                    "epsilon 10: released: done, 1 of 4 in 22.0 s"]
    assert "epsilon 10: releasing the unknown texts: 4 of 10 (40%), 1.00/s, 6 s left" in lines  # paced: not every text
