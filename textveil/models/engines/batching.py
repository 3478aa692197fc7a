"""Decode jobs from any number of threads, decoded together: one queue and one worker per loaded
model, so that requests for the same model that arrive together share the engine's batches.

A caller (``paraphrase`` in a CLI run, or each request of the service in its own thread) hands a
:class:`DecodeJob` to the model's :class:`DecodeQueue` and waits. The queue's worker thread runs
the engine, which takes rows (one prompt each) from every job in the queue as it has room for
them: the native engine puts each into a free slot at once (continuous batching), transformers
at the next batch. Each step's logits go back to the job that owns the row, through that job's
own ``choose`` (the mechanism's draw, with the text's own random stream), so the mechanism never
knows which rows share its batch, and its privacy logic stays in the mechanism.

When the worker is idle, the first job waits ``join_window`` seconds (20 ms) before decoding
starts, so that jobs sent together start together; a job arriving while decoding runs joins at
the next step.

A job fails alone: its ``choose`` or ``progress`` raising (a request that timed out) drops its
rows and hands the exception to its caller; the other jobs go on.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

Chooser = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``choose(logits, rows)``: ``logits`` is (k, V) float32 for the job's prompts ``rows`` (indices into
the job's prompts); returns one token id per row."""


@dataclass(frozen=True)
class SentenceStop:
    """A caller's public rule that ends a reply at a sentence's end: once a reply holds ``after``
    tokens, a drawn token that opens a new sentence (one of ``opening``: it starts with a space)
    right after a token that closed one (one of ``closing``: it ends with '.', '!' or '?') ends the
    reply, and is not kept, as an end token is not. It reads only the tokens drawn, so it costs no
    privacy; the token after the stop keeps "3.5" or ".com" whole where a stop at the dot alone
    would not.

    >>> stop = SentenceStop(2, closing=frozenset({9}), opening=frozenset({5}))
    >>> stop.ends(2, 9, 5), stop.ends(1, 9, 5), stop.ends(2, 9, 7), stop.ends(2, 4, 5)
    (True, False, False, False)
    """

    after: int
    closing: frozenset[int]
    opening: frozenset[int]

    def ends(self, kept: int, last: int | None, token: int) -> bool:
        """Whether ``token``, drawn after a reply of ``kept`` tokens whose last is ``last`` (None:
        none yet), ends the reply."""
        return kept >= self.after and last in self.closing and token in self.opening


CPU_BATCH_ROWS = 16
"""Rows an engine decodes at once on the CPU when the caller names no batch size."""
JOIN_WINDOW_S = 0.02
"""How long an idle worker waits for more jobs before it starts decoding the first one."""
IDLE_EXIT_S = 5.0
"""A worker with no job for this long ends (the next job starts another): an engine no one uses
is not held alive by its thread."""


Successor = Callable[[int, list[int], bool], "tuple[int, Sequence[int]] | list[tuple[int, Sequence[int]]] | None"]
"""``successor(row, tokens, ended)``: called when prompt ``row`` is written; returns the next row
that its reply makes ready (its index and prompt), or None. A document rewritten unit by unit hands
each unit's prompt over only once the unit before it is written (its prompt holds that reply). In a
job of groups (``group_size`` > 1) it is called once a whole group is written, with the group's
first row, and returns the next group's rows (a list of (index, prompt)), or None."""


@dataclass(eq=False)
class DecodeJob:
    """One caller's prompts and how to draw their tokens: up to ``max_new_tokens`` tokens after
    each prompt, every prompt starting with the same ``prefix_length`` tokens (a public
    template's opening, computed once where the engine allows it). ``results[i]`` is, once done,
    prompt i's kept tokens and whether a drawn token ended it (an end token, or the token a
    :class:`SentenceStop` left out).

    A prompt given as None is not ready yet: ``successor`` makes it when the row it follows is
    written. ``longest_prompt`` bounds the length of every prompt, ready or not (an engine sizes
    its slots by it, so a later, longer prompt never waits for a larger context).

    A job holds each prompt as 32-bit token ids (:func:`compact_prompt`) only until its row is
    written, then lets it go: a document of thousands of units, each prompt made as the unit before
    it ends, holds the prompts of its rows in flight and waiting, never all of them.

    With ``group_size`` g > 1 the rows come in groups, rows g k .. g k + g - 1 one group, decoded
    side by side and extended by the same tokens: the public-base draw reads, at every step, the
    logits of a unit's prompt with the document and of a public prompt without it. An engine hands
    a group's rows out together (:meth:`take_rows`), draws their first token once all of them are
    read, and ``choose`` always gets every row of a group at once, in row order; a group is written
    when its rows are (they draw the same tokens, so they end together), and ``progress`` counts
    groups."""

    prompts: list[Sequence[int] | None]
    prefix_length: int
    max_new_tokens: int
    choose: Chooser
    end_token_ids: frozenset[int]
    batch_size: int = 16
    progress: Callable[[int], None] | None = None
    successor: Successor | None = None
    longest_prompt: int = 0
    device_logits: bool = False
    """Whether ``choose`` takes the step's logits as a torch tensor on the engine's device (the
    mechanisms' draws run there); else a NumPy array on the host."""
    group_size: int = 1
    sentence_stop: SentenceStop | None = None
    """A caller's public rule that also ends a reply at a sentence's end (:class:`SentenceStop`)."""
    results: list[tuple[list[int], bool]] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    _ready: deque[int] = field(default_factory=deque)
    _unfinished: int = 0
    _opening: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        self.prompts = [None if prompt is None else compact_prompt(prompt) for prompt in self.prompts]
        first = next((prompt for prompt in self.prompts if prompt is not None), None)
        self._opening = () if first is None else tuple(first[: self.prefix_length])
        if self.group_size < 1 or len(self.prompts) % self.group_size:
            raise ValueError(f"a job of groups of {self.group_size} rows must hold whole groups, got "
                             f"{len(self.prompts)} prompts")
        for start in range(0, len(self.prompts), self.group_size):
            if len({self.prompts[row] is None for row in range(start, start + self.group_size)}) > 1:
                raise ValueError("a group's prompts must be ready together (all given, or all made by successor)")
        self.batch_size = max(self.batch_size, self.group_size)  # a group is decoded whole
        self.results = [([], False) for _ in self.prompts]
        self._written = [False] * len(self.prompts)
        self._unfinished = len(self.prompts)
        self._ready = deque(row for row, prompt in enumerate(self.prompts) if prompt is not None)
        self.longest_prompt = max(self.longest_prompt, *(len(p) for p in self.prompts if p is not None), 0)
        if not self.prompts:
            self.done.set()

    @property
    def opening(self) -> tuple[int, ...]:
        """The tokens every prompt of the job starts with (kept apart: a written row's prompt is
        let go)."""
        return self._opening

    @property
    def failed(self) -> bool:
        return self.error is not None

    def has_rows_left(self) -> bool:
        """Whether some ready prompt has not been handed to the engine yet (and the job goes on)."""
        return not self.failed and bool(self._ready)

    def ready_rows(self) -> list[int]:
        """The ready prompts not handed out yet, in the order they will be."""
        return [] if self.failed else list(self._ready)

    def peek_rows(self) -> list[int]:
        """The next group of prompts to hand out (one prompt without groups; call
        :meth:`has_rows_left` first)."""
        return [self._ready[k] for k in range(self.group_size)]

    def take_rows(self) -> list[int]:
        """Hand the next group of prompts to the engine (one prompt without groups): their indices."""
        return [self._ready.popleft() for _ in range(self.group_size)]

    def draw(self, logits: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """The job's tokens for ``rows`` from their logits, or None once the job has failed (its
        ``choose`` raised: the exception is kept for the caller). In a job of groups, ``rows``
        must hold whole groups (an engine's duty); ``choose`` sees them in row order."""
        if self.failed:
            return None
        try:
            rows = np.asarray(rows, dtype=np.int64)
            if self.group_size == 1:
                return np.asarray(self.choose(logits, rows), dtype=np.int64)
            order = np.argsort(rows, kind="stable")
            ordered = rows[order]
            starts = ordered[:: self.group_size]
            if (ordered.size % self.group_size or np.any(starts % self.group_size)
                    or not np.array_equal(ordered, np.repeat(starts, self.group_size)
                                          + np.tile(np.arange(self.group_size), starts.size))):
                raise RuntimeError(f"the engine split a group of {self.group_size} rows: got rows {rows.tolist()}")
            tokens = np.asarray(self.choose(_rows_in_order(logits, order), ordered), dtype=np.int64)
            chosen = np.empty_like(tokens)
            chosen[order] = tokens
            return chosen
        except BaseException as error:  # noqa: BLE001 - handed to the job's own caller
            self.fail(error)
            return None


    def add_token(self, row: int, drawn: list[int], token: int) -> bool:
        """Prompt ``row`` drew ``token`` after ``drawn`` (its tokens so far, extended here): the one
        stop rule every engine applies, which the guarantee's L rests on. A reply ends at an end
        token (the model's, or a caller's public stop rule such as a line break: both are in
        ``end_token_ids``) or where the caller's :class:`SentenceStop` says a new sentence opens,
        either drawn but not kept, or once it holds ``max_new_tokens`` tokens; else the token is
        kept and the row goes on. Returns whether the row is written (:meth:`finish_row`
        was called: the engine frees its place).

        >>> job = DecodeJob([[1, 2]], 1, 2, lambda logits, rows: rows, frozenset({0}))
        >>> drawn = []
        >>> job.add_token(0, drawn, 5), job.add_token(0, drawn, 6), job.results
        (False, True, [([5, 6], False)])
        """
        if token in self.end_token_ids or self._opens_sentence(drawn, token):
            self.finish_row(row, drawn, True)
            return True
        drawn.append(token)
        if len(drawn) >= self.max_new_tokens:
            self.finish_row(row, drawn, False)
            return True
        return False

    def _opens_sentence(self, drawn: list[int], token: int) -> bool:
        """Whether the caller's :class:`SentenceStop` ends a reply of ``drawn`` tokens at ``token``."""
        stop = self.sentence_stop
        return stop is not None and stop.ends(len(drawn), drawn[-1] if drawn else None, token)

    def finish_row(self, row: int, tokens: list[int], ended: bool) -> None:
        """Prompt ``row`` is written: its tokens and whether a drawn token, not kept, ended it."""
        if self.failed:
            return
        self.prompts[row] = None  # written: its prompt is not read again
        self.results[row] = (tokens, ended)
        self._written[row] = True
        self._unfinished -= 1
        first = row - row % self.group_size
        if not all(self._written[first:first + self.group_size]):
            return  # the group's other rows end at this step too: the group is told once they have
        if self.successor is not None:
            try:
                follower = self.successor(first, tokens, ended)
            except BaseException as error:  # noqa: BLE001 - handed to the job's own caller
                self.fail(error)
                return
            followers = [] if follower is None else [follower] if isinstance(follower, tuple) else list(follower)
            if followers and len(followers) != self.group_size:
                self.fail(RuntimeError(f"a successor must make a whole group of {self.group_size} rows, "
                                       f"made {len(followers)}"))
                return
            for index, prompt in followers:
                self.prompts[index] = compact_prompt(prompt)
                self.longest_prompt = max(self.longest_prompt, len(prompt))
                self._ready.append(index)
        if self.progress is not None:
            try:
                self.progress(1)
            except BaseException as error:  # noqa: BLE001 - a request given up on: handed back
                self.fail(error)
                return
        if self._unfinished == 0:
            self.done.set()

    def fail(self, error: BaseException) -> None:
        """End the job with ``error`` (raised in its caller); its other rows are dropped."""
        if self.error is None:
            self.error = error
        self.done.set()


@runtime_checkable
class Engine(Protocol):
    """The face every engine offers (:class:`~textveil.models.engines.llama_cpp_engine.LlamaCppEngine`,
    :class:`~textveil.models.engines.transformers_engine.TransformersEngine`), and all that the
    queue, the language model, the mechanisms and the fluency measure rely on: prompt batches in,
    logits rows out. An engine stops a reply by :meth:`DecodeJob.add_token` alone."""

    name: str
    """``llama-cpp`` or ``transformers`` (what ``engine=`` names)."""
    device: str
    """Where it runs: ``cpu`` or ``cuda[:N]``."""

    @property
    def description(self) -> str:
        """The engine as a Guarantee names it."""

    @property
    def identity(self) -> str:
        """What decides its logits' bits (a release's fingerprint holds it)."""

    @property
    def vocabulary_size(self) -> int:
        """The number of logits a step gives per row."""

    @property
    def context_length(self) -> int:
        """The most positions the model reads."""

    @property
    def default_batch_rows(self) -> int:
        """Rows decoded at once when the caller names no batch size."""

    def run(self, queue: DecodeQueue) -> None:
        """Decode rows taken from ``queue`` until none waits and none is in flight, each step's
        logits handed to the job that owns the row (:meth:`DecodeJob.draw`), each drawn token to
        :meth:`DecodeJob.add_token`."""

    def token_log_likelihoods(self, sequences: Sequence[Sequence[int]], batch_size: int = 16) -> list[np.ndarray]:
        """For each sequence, log p(token t | the tokens before it) for t = 1 .. len - 1 (float64)."""

    def reset(self) -> None:
        """Forget the decoding state (after a failed run: it is unknown); the engine stays usable."""

    def close(self) -> None:
        """Free what the engine holds (at the interpreter's exit); it is unusable after."""


class DecodeQueue:
    """The jobs of one loaded model and the worker thread that decodes them (started on first use,
    again in a forked child)."""

    def __init__(self, engine: Engine, join_window: float = JOIN_WINDOW_S) -> None:
        self.engine = engine
        self.join_window = join_window
        self._jobs: deque[DecodeJob] = deque()
        self._condition = threading.Condition()
        self._worker: threading.Thread | None = None
        self._worker_pid = 0
        self._stopping = False
        _QUEUES.add(self)

    # -- the callers' side -------------------------------------------------------------------

    def decode(self, job: DecodeJob) -> list[tuple[list[int], bool]]:
        """Queue ``job``, wait until it is decoded and return its results; an exception its
        ``choose`` or ``progress`` raised, or an engine error, is raised here."""
        if job.done.is_set():
            return job.results
        with self._condition:
            self._start_worker()
            self._jobs.append(job)
            self._condition.notify_all()
        try:
            while not job.done.wait(0.1):  # a short wait: Ctrl-C reaches the caller at once
                pass
        except BaseException as error:
            job.fail(error)  # the worker drops its rows at the next step
            raise
        if job.error is not None:
            raise job.error
        return job.results

    # -- the engine's side -------------------------------------------------------------------

    def next_rows(self, fits: Callable[[DecodeJob, int], bool] | None = None, room: int = 1
                  ) -> tuple[DecodeJob, list[int]] | None:
        """The oldest job's next group of prompts (one prompt for a job without groups), taken
        (first come, first served), or None when none is waiting or it needs more than ``room``
        places; with ``fits``, only rows for which ``fits(job, row)`` holds (the others wait)."""
        with self._condition:
            self._drop_finished()
            for job in self._jobs:
                if not job.has_rows_left():
                    continue
                rows = job.peek_rows()
                if len(rows) <= room and (fits is None or all(fits(job, row) for row in rows)):
                    return job, job.take_rows()
                return None  # the oldest waiting row comes first: nothing overtakes it
            return None

    def take_waiting(self) -> list[tuple[DecodeJob, int]]:
        """Take every prompt not yet handed out, oldest job first (a group's rows side by side)."""
        with self._condition:
            self._drop_finished()
            return [(job, row) for job in self._jobs for _ in range(len(job.ready_rows()) // job.group_size)
                    for row in job.take_rows()]

    def waiting_rows(self) -> list[tuple[DecodeJob, int]]:
        """Every prompt not yet handed out, oldest job first, without taking them."""
        with self._condition:
            self._drop_finished()
            return [(job, row) for job in self._jobs for row in job.ready_rows()]

    def has_waiting_rows(self) -> bool:
        with self._condition:
            return any(job.has_rows_left() for job in self._jobs)

    def longest_prompt(self) -> int:
        """The longest prompt any unfinished job may still hand out (see :class:`DecodeJob`)."""
        with self._condition:
            return max((job.longest_prompt for job in self._jobs if not job.failed and not job.done.is_set()),
                       default=0)

    def batch_size(self) -> int:
        """The largest batch any queued job asked for (the rows decoded at once)."""
        with self._condition:
            return max((job.batch_size for job in self._jobs if not job.failed), default=1)

    def _drop_finished(self) -> None:
        while self._jobs and self._jobs[0].done.is_set() and not self._jobs[0].has_rows_left():
            self._jobs.popleft()
        for job in [job for job in self._jobs if job.failed]:
            self._jobs.remove(job)

    def _start_worker(self) -> None:
        # called under the lock; a worker that is ending has already cleared _worker under it
        if self._worker is not None and self._worker.is_alive() and self._worker_pid == os.getpid():
            return
        self._worker_pid = os.getpid()
        self._worker = threading.Thread(target=self._work, name="textveil-decode", daemon=True)
        self._worker.start()

    def stop(self) -> None:
        """End the worker once it is idle (at the interpreter's exit: native threads must not
        outlive it) and wait for it a little."""
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=5)

    def _work(self) -> None:
        while True:
            with self._condition:
                idle_since = time.monotonic()
                while not any(job.has_rows_left() for job in self._jobs):
                    self._drop_finished()
                    if self._stopping or time.monotonic() - idle_since > IDLE_EXIT_S:
                        self._worker = None  # under the lock: the next decode starts a new worker
                        return
                    self._condition.wait(IDLE_EXIT_S)
            time.sleep(self.join_window)  # jobs sent together start together
            try:
                self.engine.run(self)
            except BaseException as error:  # noqa: BLE001 - every job in flight gets it; the worker goes on
                with self._condition:
                    for job in self._jobs:
                        job.fail(error)
                    self._jobs.clear()
                self.engine.reset()


def compact_prompt(prompt: Sequence[int]) -> array:
    """``prompt``'s token ids as 32-bit integers (4 bytes a token, where a list of Python ints
    takes about 36): read like a list (``len``, slices, iteration give ints). A prompt already
    compact is returned as it is (a caller's compact prompts are not copied again by the job).

    >>> compact_prompt([1, 2, 49151])[1:]
    array('i', [2, 49151])
    >>> ids = compact_prompt([1, 2]); compact_prompt(ids) is ids
    True
    """
    if isinstance(prompt, array) and prompt.typecode == "i":
        return prompt
    return array("i", prompt)


def check_prompts(prompts: Sequence[Sequence[int] | None], prefix_length: int) -> None:
    """Every prompt must start with the same ``prefix_length`` tokens and hold tokens after them
    (a prompt not ready yet, None, is checked when it is made)."""
    ready = [p for p in prompts if p is not None]
    if not ready:
        return
    prefix = tuple(ready[0][:prefix_length])
    if any(tuple(p[:prefix_length]) != prefix or len(p) <= prefix_length for p in ready):
        raise ValueError("every prompt must start with the same opening and hold tokens after it")


def new_job(model: Any, prompts: Sequence[Sequence[int] | None], prefix_length: int, max_new_tokens: int,
            choose: Chooser, batch_size: int, progress: Callable[[int], None] | None,
            successor: Successor | None = None, longest_prompt: int = 0,
            more_end_token_ids: Sequence[int] = (), device_logits: bool = False, group_size: int = 1,
            sentence_stop: SentenceStop | None = None) -> DecodeJob:
    """A job for ``model`` (a :class:`~textveil.models.language_model.LanguageModel`): its end tokens
    end a reply, and so do ``more_end_token_ids`` and ``sentence_stop`` (a caller's public stop rules)."""
    check_prompts(prompts, prefix_length)
    if successor is not None:
        prefix = next((tuple(p[:prefix_length]) for p in prompts if p is not None), ())
        successor = _checked_successor(successor, prefix, prefix_length)
    return DecodeJob(list(prompts), prefix_length, max_new_tokens, choose,
                     frozenset(model.end_token_ids) | frozenset(int(t) for t in more_end_token_ids),
                     batch_size=batch_size, progress=progress, successor=successor, longest_prompt=longest_prompt,
                     device_logits=device_logits, group_size=group_size, sentence_stop=sentence_stop)


def _checked_successor(successor: Successor, prefix: tuple[int, ...], prefix_length: int) -> Successor:
    """``successor``, its prompts held to the job's opening (a prompt that does not start with it
    would be decoded after the wrong opening)."""

    def checked(row: int, tokens: list[int], ended: bool) -> Any:
        follower = successor(row, tokens, ended)
        followers = [] if follower is None else [follower] if isinstance(follower, tuple) else follower
        for _, prompt in followers:
            if tuple(prompt[:prefix_length]) != prefix or len(prompt) <= prefix_length:
                raise ValueError("a successor's prompt must start with the job's opening and hold tokens after it")
        return follower

    return checked


_QUEUES_LOCK = threading.Lock()
_QUEUES: weakref.WeakSet[DecodeQueue] = weakref.WeakSet()


@atexit.register
def _shut_down() -> None:
    """At the interpreter's exit: every worker ended, then every engine closed (a native engine's
    threads and contexts freed while Python still runs)."""
    queues = list(_QUEUES)
    for queue in queues:
        queue.stop()
    for queue in queues:
        queue.engine.close()


def queue_for(engine: Engine) -> DecodeQueue:
    """The one queue of ``engine`` (made on first use): every caller of the process shares it."""
    with _QUEUES_LOCK:
        queue = getattr(engine, "_decode_queue", None)
        if queue is None:
            queue = DecodeQueue(engine)
            engine._decode_queue = queue
        return queue


def _rows_in_order(logits: Any, order: np.ndarray) -> Any:
    """``logits``' rows in ``order`` (a NumPy array, or a torch tensor on its device); the rows
    themselves where the order is theirs already."""
    if np.array_equal(order, np.arange(order.size)):
        return logits
    if isinstance(logits, np.ndarray):
        return logits[order]
    import torch

    return logits.index_select(0, torch.from_numpy(order).to(logits.device))
