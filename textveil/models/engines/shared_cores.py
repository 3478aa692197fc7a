"""How many of this process's cores other processes leave free: the CPU engine's thread policy.

llama.cpp's threads meet at a barrier many times per token. With one of two cores busy with
another job, two threads wait on each other at every barrier and a step takes several times as
long as on one thread (19 against 45-55 tokens/s on the machines here). So the native engine
decodes on as many threads as there are cores the rest of the machine leaves idle, re-read about
once a second from ``/proc/stat`` (the cores this process may run on) less this process's own
CPU time: a quiet machine gets every core, a shared one degrades gently instead of stalling.
"""

from __future__ import annotations

import os
import time

POLICY_VARIABLE = "TEXTVEIL_THREAD_POLICY"
"""``free-cores`` (the default) or ``fixed``: every usable core, whatever else runs (a machine of
one's own, where a reading of /proc/stat is a cost for nothing)."""
CHECK_INTERVAL_S = 1.0
"""How often the free cores are read again while decoding."""
BUSY_SHARE = 0.5
"""A core the other processes keep busy for at least this share of the interval counts as taken."""


class FreeCores:
    """Cores of this process's affinity set that other processes left idle over the last interval.

    >>> cores = FreeCores(usable=2, clock=lambda: 0.0)
    >>> cores.threads(2) in (1, 2)  # before a first interval: every usable core
    True
    """

    def __init__(self, usable: int, clock=time.monotonic, stat: str = "/proc/stat", own_seconds=None,
                 cpus: list[int] | None = None) -> None:
        # ``stat``, ``own_seconds`` and ``cpus`` are the system's by default (tests give their own)
        self.usable = max(1, usable)
        self.clock = clock
        self.stat = stat
        self.own_seconds = own_seconds or (lambda: sum(os.times()[:2]))
        if cpus is None:
            cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self._cpus = cpus
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._last = self._sample()
        self._free = self.usable

    def _sample(self) -> tuple[float, float, float] | None:
        """(wall clock, seconds the cores were busy, this process's CPU seconds), or None where
        ``/proc/stat`` cannot be read (another system: every usable core is taken as free)."""
        try:
            with open(self.stat, encoding="ascii") as stat:
                lines = stat.read().splitlines()
        except OSError:
            return None
        wanted = {f"cpu{i}" for i in self._cpus}
        busy = 0.0
        for line in lines:
            fields = line.split()
            if fields and fields[0] in wanted:
                values = [int(v) for v in fields[1:9]]
                busy += sum(values) - values[3] - values[4]  # all but idle and iowait
        return self.clock(), busy / self._tick, self.own_seconds()

    def free(self) -> int:
        """The cores left free, read again when the last reading is older than CHECK_INTERVAL_S."""
        now = self.clock()
        if self._last is None or now - self._last[0] < CHECK_INTERVAL_S:
            return self._free
        sample = self._sample()
        if sample is None:
            return self._free
        elapsed = sample[0] - self._last[0]
        others = max(0.0, (sample[1] - self._last[1]) - (sample[2] - self._last[2])) / elapsed
        self._last = sample
        self._free = max(1, min(self.usable, self.usable - int(others + 1.0 - BUSY_SHARE)))
        return self._free

    def threads(self, configured: int) -> int:
        """Threads to decode on now: the configured number, at most the free cores, at least one."""
        return max(1, min(configured, self.free()))


def thread_policy() -> str:
    """The CPU engine's thread policy: ``TEXTVEIL_THREAD_POLICY`` (``free-cores`` or ``fixed``).

    >>> import os
    >>> os.environ.pop("TEXTVEIL_THREAD_POLICY", None) and None
    >>> thread_policy()
    'free-cores'
    """
    from textveil.errors import InvalidParameterError

    policy = os.environ.get(POLICY_VARIABLE, "free-cores").strip() or "free-cores"
    if policy not in ("free-cores", "fixed"):
        raise InvalidParameterError(f"{POLICY_VARIABLE}={policy}: use free-cores or fixed")
    return policy
