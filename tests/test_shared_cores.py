"""The CPU engine's thread policy: decode on the cores other processes leave free."""

from __future__ import annotations

import pytest

from textveil.models.engines.shared_cores import FreeCores, thread_policy


class FakeMachine:
    """Two cores' /proc/stat lines and this process's CPU seconds, advanced by hand (100 ticks a second)."""

    def __init__(self, path) -> None:
        self.path, self.now, self.busy, self.own = path, 0.0, [0, 0], 0.0
        self.write()

    def write(self) -> None:
        lines = ["cpu  0 0 0 0 0 0 0 0"] + [f"cpu{i} {b} 0 0 {10_000 - b} 0 0 0 0" for i, b in enumerate(self.busy)]
        self.path.write_text("\n".join(lines) + "\n")

    def run(self, seconds: float, others: float, ours: float) -> None:
        """``seconds`` pass with other processes on ``others`` cores and this one on ``ours``."""
        self.now += seconds
        total = int(round((others + ours) * seconds * 100))
        self.busy = [self.busy[0] + total // 2, self.busy[1] + total - total // 2]
        self.own += ours * seconds
        self.write()


@pytest.fixture
def machine(tmp_path):
    return FakeMachine(tmp_path / "stat")


def cores_of(machine: FakeMachine) -> FreeCores:
    cores = FreeCores(2, clock=lambda: machine.now, stat=str(machine.path), own_seconds=lambda: machine.own,
                      cpus=[0, 1])
    cores._tick = 100
    return cores


def test_a_quiet_machine_gives_every_core_and_a_busy_core_is_left_to_its_process(machine):
    cores = cores_of(machine)
    machine.run(1.5, others=0.0, ours=2.0)  # we decode on both cores, nothing else runs
    assert cores.threads(2) == 2
    machine.run(1.5, others=1.0, ours=1.0)  # another job takes a core
    assert cores.threads(2) == 1
    machine.run(0.5, others=0.0, ours=2.0)  # read again only after a second
    assert cores.threads(2) == 1
    machine.run(1.0, others=0.0, ours=2.0)
    assert cores.threads(2) == 2
    machine.run(1.5, others=0.3, ours=1.7)  # a little background work keeps both cores
    assert cores.threads(2) == 2
    machine.run(1.5, others=2.0, ours=0.0)  # both cores taken: still one thread, never none
    assert cores.threads(2) == 1 and cores.threads(1) == 1


def test_an_unreadable_stat_leaves_every_core(tmp_path):
    cores = FreeCores(2, stat=str(tmp_path / "missing"), cpus=[0, 1])
    assert cores.threads(2) == 2


def test_the_policy_is_read_from_the_environment(monkeypatch):
    from textveil.errors import InvalidParameterError

    monkeypatch.setenv("TEXTVEIL_THREAD_POLICY", "fixed")
    assert thread_policy() == "fixed"
    monkeypatch.setenv("TEXTVEIL_THREAD_POLICY", "spin")
    with pytest.raises(InvalidParameterError, match="free-cores or fixed"):
        thread_policy()
