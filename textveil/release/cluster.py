"""Where a release job's shards run: in this process, or on a Dask cluster (``dask.distributed``).

A runner takes the shard tasks one at a time from the coordinator's stream and hands each
result back to the coordinator as it arrives, in any order. The Dask runner keeps a bounded
window of shards in flight (:data:`SHARDS_IN_FLIGHT_PER_WORKER` per worker): the coordinator
reads the next shard only when one has come back, so its memory holds a few shards whatever the
corpus's size. Workers are single-threaded processes (the mechanisms' numpy work holds the GIL
often, and one BLAS thread per process is what a core gives).

>>> with open_runner(0) as runner:
...     runner.run(pow, (2,), iter([(3,), (4,)]), print)
8
16
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from textveil.errors import InputError, TextveilError
from textveil.machine import usable_cpus

SHARDS_IN_FLIGHT_PER_WORKER = 2
"""One shard computing and one waiting per worker: workers never idle, the coordinator holds few."""
SCHEDULER_TIMEOUT_S = 10.0
"""How long ``--scheduler ADDRESS`` waits to connect (and for a worker to join) before giving up."""


class Runner(Protocol):
    description: str

    def run(self, function: Callable[..., Any], fixed: tuple, tasks: Iterator[tuple],
            on_result: Callable[[Any], None]) -> None:
        """``on_result(function(*fixed, *task))`` for every task, results in any order."""


class InProcessRunner:
    """Every shard in this process, one after the other (``--workers 0``: tests, debugging)."""

    description = "in this process (no Dask)"

    def run(self, function: Callable[..., Any], fixed: tuple, tasks: Iterator[tuple],
            on_result: Callable[[Any], None]) -> None:
        for task in tasks:
            on_result(function(*fixed, *task))


class DaskRunner:
    """Shards on a Dask cluster through ``client``, at most ``window`` in flight."""

    def __init__(self, client: Any, window: int, description: str) -> None:
        self.client, self.window, self.description = client, max(1, window), description

    def run(self, function: Callable[..., Any], fixed: tuple, tasks: Iterator[tuple],
            on_result: Callable[[Any], None]) -> None:
        from distributed import as_completed

        in_flight = as_completed()
        pending = 0
        try:
            for task in tasks:
                if pending >= self.window:
                    _deliver(next(in_flight), on_result)
                    pending -= 1
                # One pickled blob per task: a scheduler keeps its recent messages under 1 MB as they
                # are (distributed.admin.low-level-log-length of them), and a shard's records are far
                # smaller as bytes than as Python objects. pure=False: computed once per submission.
                packed = pickle.dumps((function, fixed, task), protocol=pickle.HIGHEST_PROTOCOL)
                in_flight.add(self.client.submit(_run_packed, packed, pure=False))
                pending += 1
            for future in in_flight:
                _deliver(future, on_result)
        except BaseException:
            self.client.cancel(list(in_flight.futures))
            raise


def _run_packed(packed: bytes) -> Any:
    """On a worker: the task :meth:`DaskRunner.run` packed, run."""
    function, fixed, task = pickle.loads(packed)
    return function(*fixed, *task)


def _deliver(future: Any, on_result: Callable[[Any], None]) -> None:
    from distributed.scheduler import KilledWorker

    try:
        result = future.result()
    except KilledWorker:
        raise TextveilError("a Dask worker died while releasing a shard (out of memory, or killed); rerun the same "
                            "command to resume where the job stopped") from None
    future.release()  # the worker may drop the shard's bytes now
    on_result(result)


@contextmanager
def open_runner(workers: int | None = None, scheduler: str | None = None) -> Iterator[Runner]:
    """A runner: in this process (``workers=0``), a new ``LocalCluster`` of ``workers`` single-
    threaded worker processes (default: the CPUs available), or the existing cluster whose
    scheduler is at ``scheduler``. Closed (a local cluster stopped) on leaving."""
    if scheduler is None and workers == 0:
        yield InProcessRunner()
        return
    if workers is not None and workers < 0:
        raise InputError(f"--workers must be 0 (in this process) or more, got {workers}")
    import dask
    from distributed import Client, LocalCluster

    quiet = _quiet_dask_logs()
    # The job's shards are the only data: no spilling to disk, and no warning for tasks of a few MB.
    # The developers' logs of recent messages (1,000 by default, each holding a shard's records)
    # would grow the coordinator's memory with the corpus until they fill: keep a few.
    with dask.config.set({"distributed.worker.memory.spill": False,
                          "distributed.admin.large-graph-warning-threshold": "1GB",
                          "distributed.admin.low-level-log-length": 8}):
        cluster = None
        try:
            if scheduler is not None:
                client = _connect(scheduler)
                count = len(client.scheduler_info().get("workers", {}))
                description = f"on the Dask cluster at {scheduler} ({count} worker(s))"
            else:
                # one single-threaded worker process per CPU: OMP_NUM_THREADS caps threads, not processes
                count = workers or usable_cpus(thread_cap=False)
                cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
                client = Client(cluster)
                description = f"on a local Dask cluster of {count} worker process(es)"
            try:
                yield DaskRunner(client, SHARDS_IN_FLIGHT_PER_WORKER * max(1, count), description)
            finally:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()
            quiet()


def _connect(address: str) -> Any:
    from distributed import Client

    try:
        client = Client(address, timeout=SCHEDULER_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as error:
        reason = str(error).splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"cannot reach the Dask scheduler at '{address}' ({reason}); start one ('dask scheduler') "
                         "or leave out --scheduler for a local cluster") from None
    try:
        client.wait_for_workers(1, timeout=SCHEDULER_TIMEOUT_S)
    except (OSError, TimeoutError):
        client.close()
        raise InputError(f"the Dask scheduler at '{address}' has no worker; start some ('dask worker {address}')") \
            from None
    return client


def _quiet_dask_logs() -> Callable[[], None]:
    """Keep Dask's own INFO/WARNING chatter (workers starting, connections closing) off the user's
    terminal: the job reports what matters itself. Returns what restores the levels."""
    loggers = [logging.getLogger(name) for name in ("distributed", "tornado")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)

    def restore() -> None:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)

    return restore
