"""What this process runs on: the CPUs it may use, and the machine as results record it.

A module of its own at the bottom of the package (it imports nothing of textveil's), because
every layer asks it: the neighbour search and the entity stage spread their work over the CPUs,
the language-model engines give llama.cpp its threads, the release job starts one worker per
CPU, the service one release per CPU, and experiments record the machine they ran on.
"""

from __future__ import annotations

import os
import platform
from typing import Any


def usable_cpus(*, thread_cap: bool = True) -> int:
    """The CPUs this process may run on (its affinity, not the machine's count), capped by
    ``OMP_NUM_THREADS`` where it is set. A Dask worker has it at 1 (the cluster gives each worker
    one core): a worker's decoder spreading over every core would make more workers compete for
    the same cores instead of adding any.

    ``thread_cap=False`` leaves the cap out: for how many single-threaded worker *processes* to
    start (the cap says how many threads one process should use, not how many processes fit).

    >>> import os; os.environ["OMP_NUM_THREADS"], saved = "1", os.environ.get("OMP_NUM_THREADS")
    >>> usable_cpus()
    1
    >>> usable_cpus(thread_cap=False) == len(os.sched_getaffinity(0))
    True
    >>> _ = os.environ.pop("OMP_NUM_THREADS") if saved is None else os.environ.update(OMP_NUM_THREADS=saved)
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    cap = os.environ.get("OMP_NUM_THREADS", "").strip() if thread_cap else ""
    return max(1, min(cpus, int(cap))) if cap.isdigit() and int(cap) > 0 else cpus


def describe_machine() -> dict[str, Any]:
    """The machine as an experiment's results record it: platform, Python, the machine's CPUs.

    >>> sorted(describe_machine())
    ['cpus', 'platform', 'python']
    """
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()}
