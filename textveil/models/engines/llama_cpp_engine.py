"""The native engine: a GGUF model run by llama.cpp (through ``llama-cpp-python``'s low-level
API), with continuous batching, and a text's logits independent of the texts beside it.

**Continuous batching.** The context holds ``slots`` sequences, each in its own key-value stream.
A row (one prompt) takes a free slot as soon as one frees: the template's opening, computed once
into a stream of its own, is copied into the slot, the row's own tokens are read in chunks of at
most ``PROMPT_CHUNK`` tokens, and from then on the row gets one token per decode step until it
draws an end token or reaches its L; its slot is then cleared and the next waiting row (of any
job in the queue) takes it at once. Per step, at most ``PROMPT_BUDGET`` prompt tokens are read
before the decode step, so the rows already writing never wait long behind a burst of new prompts.

**A text's logits do not depend on its neighbours.** llama.cpp's CPU kernels differ with the shape
of the work: a matrix product of one row takes a vector path and of several rows a tiled one
(llamafile's sgemm), and flash attention has tiled and split paths chosen by the number of
queries and streams. Their results differ in the last bits, and a draw near a boundary then
differs. So the batches are built so that every token of a text takes the same path whatever
else is decoded:

- the template's opening is a function of the public template alone (tokenized on its own), so
  what a row reads in its own slot is the same in any batch;
- each slot has its own key-value stream (not a unified buffer), so a row attends over its own
  cells only, in position order;
- a prompt is read alone in its own decode call, in chunks whose bounds depend on the prompt
  only, so its shapes are a function of the text;
- in a decode step every row is one token of one stream; the tokens go in stream order, so that
  llama.cpp's batch splitter (which puts runs of consecutive streams into one micro-batch) forms
  the same runs whatever their order; a run of one row would take the one-row paths (of the
  matrix products, of the output layer, of flash attention), so such a row gets a twin: a
  throwaway token, with logits, in the neighbouring stream, removed after the step. Every
  micro-batch of a step then holds two streams or more, one query each: flash attention takes its
  one-query path, which skips the masked cells of other lengths outright.

``tests/test_engines.py`` checks it: a text's logits and release are bit for bit the same decoded
alone, among 15 others, in another slot, with other neighbours, and with one thread or two.
Different weights formats or builds (another CPU's instructions) give other bits, as different
engines do: the Guarantee names the engine and its weights.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from textveil.models.engines.batching import CPU_BATCH_ROWS, DecodeJob, DecodeQueue
from textveil.models.engines.shared_cores import FreeCores, thread_policy

PROMPT_CHUNK = 256
"""The most prompt tokens read in one decode call (a prompt's chunks depend on the prompt only)."""
PROMPT_BUDGET = 512
"""About how many prompt tokens are read between two decode steps (at least one chunk)."""
CONTEXT_QUANTUM = 256
"""A slot's context is a multiple of this many positions."""
MAX_SLOTS = 254
"""llama.cpp holds at most 256 sequences; two are the twin's spare and the opening's."""
KV_BUDGET_BYTES = 2 << 30
"""The most memory the decode context's key-value cache takes: fewer slots for long contexts."""

_LOCK = threading.Lock()
_INITIALISED = False
_QUIET = None


def _llama() -> Any:
    """``llama_cpp``'s bindings, with the backend initialised once and its log silenced."""
    global _INITIALISED, _QUIET
    import llama_cpp

    with _LOCK:
        if not _INITIALISED:
            _QUIET = llama_cpp.llama_log_callback(lambda level, text, data: None)
            llama_cpp.llama_log_set(_QUIET, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _INITIALISED = True
    return llama_cpp


class _Batch:
    """A ``llama_batch`` whose arrays numpy owns (filled as arrays, never freed by llama.cpp)."""

    def __init__(self, capacity: int) -> None:
        llama_cpp = _llama()
        self.capacity = capacity
        self.token = np.zeros(capacity, dtype=np.int32)
        self.pos = np.zeros(capacity, dtype=np.int32)
        self.n_seq_id = np.ones(capacity, dtype=np.int32)
        self.seq = np.zeros(capacity, dtype=np.int32)
        self.logits = np.zeros(capacity, dtype=np.int8)
        pointer = ctypes.POINTER(ctypes.c_int32)
        base = self.seq.ctypes.data
        self._seq_pointers = (pointer * capacity)(*[ctypes.cast(base + 4 * i, pointer) for i in range(capacity)])
        self.struct = llama_cpp.llama_batch()
        self.struct.token = self.token.ctypes.data_as(pointer)
        self.struct.embd = None
        self.struct.pos = self.pos.ctypes.data_as(pointer)
        self.struct.n_seq_id = self.n_seq_id.ctypes.data_as(pointer)
        self.struct.seq_id = self._seq_pointers
        self.struct.logits = self.logits.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))

    def fill(self, tokens: Sequence[int], positions: Sequence[int], sequences: Sequence[int],
             wanted: Sequence[bool]) -> None:
        count = len(tokens)
        self.token[:count] = tokens
        self.pos[:count] = positions
        self.seq[:count] = sequences
        self.logits[:count] = wanted
        self.struct.n_tokens = count


@dataclass(eq=False)
class _Row:
    """A prompt in a slot: the tokens still to read, then the tokens drawn."""

    job: DecodeJob
    index: int
    slot: int
    to_read: list[int]
    position: int  # the next position to write in the slot's stream
    drawn: list[int] = field(default_factory=list)
    pending: int | None = None  # the last drawn token, not yet read
    first_logits: np.ndarray | None = None  # a group's row read before its partners: its first logits, kept

    @property
    def reading(self) -> bool:
        return bool(self.to_read)


class LlamaCppEngine:
    """A GGUF file run by llama.cpp on the CPU: decode rows from a :class:`DecodeQueue`, score texts.

    ``weights`` names the file llama.cpp reads (the model's own GGUF, or a conversion of it to
    another weights format, see :mod:`textveil.models.engines.native`); ``weights_type`` says
    which format it holds; ``threads`` is how many CPU threads decode."""

    name = "llama-cpp"

    def __init__(self, weights: Path, weights_type: str, threads: int, version: str = "") -> None:
        llama_cpp = _llama()
        self.weights = Path(weights)
        self.weights_type = weights_type
        self.threads = max(1, int(threads))
        self._free_cores = FreeCores(self.threads) if thread_policy() == "free-cores" else None
        self._threads_now = self.threads
        self.version = version
        self.device = "cpu"
        params = llama_cpp.llama_model_default_params()
        self._model = llama_cpp.llama_model_load_from_file(str(self.weights).encode(), params)
        if not self._model:
            raise ValueError(f"llama.cpp could not load '{self.weights}'")
        described = ctypes.create_string_buffer(256)
        llama_cpp.llama_model_desc(self._model, described, 256)
        self.file_type = described.value.decode(errors="replace").split()[-1] if described.value else "?"
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self.vocabulary_size = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self.context_length = int(llama_cpp.llama_model_n_ctx_train(self._model))
        heads = max(1, int(llama_cpp.llama_model_n_head(self._model)))
        kv_heads = int(llama_cpp.llama_model_n_head_kv(self._model))
        kv_width = int(llama_cpp.llama_model_n_embd(self._model)) * kv_heads // heads
        # keys and values, float16, every layer: the bytes one position of one slot takes
        self.kv_bytes_per_position = 2 * 2 * kv_width * int(llama_cpp.llama_model_n_layer(self._model))
        self._context: Any = None
        self._slots = 0
        self._slot_length = 0
        self._opening: tuple[int, ...] | None = None
        self._scoring: Any = None
        self._scoring_length = 0
        self._scoring_threads = self.threads
        self._batch = _Batch(max(PROMPT_CHUNK, MAX_SLOTS + 2))
        self._lock = threading.Lock()  # one decode call at a time per engine

    @property
    def description(self) -> str:
        """The engine as a Guarantee names it."""
        version = f" {self.version}" if self.version else ""
        weights = (f"the GGUF file's own {self.file_type} weights" if self.weights_type in ("file", self.file_type)
                   else f"the GGUF file's weights converted to {self.weights_type.upper()}")
        return f"llama.cpp{version} (llama-cpp-python) on the CPU, {weights}"

    @property
    def identity(self) -> str:
        """What decides its logits' bits (a release's fingerprint holds it)."""
        return f"llama-cpp {self.version or '?'} {self.weights_type}"

    # -- contexts ------------------------------------------------------------------------

    def _new_context(self, sequences: int, length: int, batch: int) -> Any:
        llama_cpp = _llama()
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = sequences * length
        params.n_batch = batch
        params.n_ubatch = batch
        params.n_seq_max = sequences
        params.n_threads = self.threads
        params.n_threads_batch = self.threads
        params.kv_unified = False  # a stream per sequence: a row attends over its own cells only
        # flash attention on: in a decode step each stream has one query and a micro-batch holds two
        # streams or more, so every step takes its one-query path, which skips another text's
        # (masked) cells outright; prompts are read alone, in shapes that depend on the prompt
        params.flash_attn_type = 1
        params.no_perf = True
        context = llama_cpp.llama_init_from_model(self._model, params)
        if not context:
            raise MemoryError(f"llama.cpp could not make a context of {sequences} x {length} positions")
        return context

    def _ensure_context(self, slots: int, length: int) -> None:
        """A decode context of ``slots`` slots of ``length`` positions (made anew, for what the
        queue needs now, only when the one in hand is too small; never with a row in flight); fewer
        slots where their key-value cache would pass KV_BUDGET_BYTES (a row's release does not
        depend on how many slots there are)."""
        slots = max(1, min(slots, KV_BUDGET_BYTES // max(1, length * self.kv_bytes_per_position) - 2))
        if self._context is not None and slots <= self._slots and length <= self._slot_length:
            return
        llama_cpp = _llama()
        if self._context is not None:
            llama_cpp.llama_free(self._context)
            self._context = None
        self._context = self._new_context(slots + 2, length, max(PROMPT_CHUNK, slots + 2))
        self._threads_now = self.threads
        self._slots, self._slot_length, self._opening = slots, length, None

    def reset(self) -> None:
        """Drop the decode context (after a failed run: its state is unknown)."""
        if self._context is not None:
            _llama().llama_free(self._context)
        self._context, self._slots, self._slot_length, self._opening = None, 0, 0, None

    def _memory(self) -> Any:
        return _llama().llama_get_memory(self._context)

    def _clear(self, sequence: int, start: int = -1) -> None:
        _llama().llama_memory_seq_rm(self._memory(), sequence, start, -1)

    def _call(self, context: Any, tokens: Sequence[int], positions: Sequence[int], sequences: Sequence[int],
              wanted: Sequence[bool]) -> np.ndarray:
        """One ``llama_decode``: the logits of the flagged tokens, in batch order (a view of
        llama.cpp's buffer, valid until the next call: the draw reads it before then)."""
        llama_cpp = _llama()
        self._batch.fill(tokens, positions, sequences, wanted)
        code = llama_cpp.llama_decode(context, self._batch.struct)
        if code != 0:
            raise RuntimeError(f"llama.cpp failed to decode a batch of {len(tokens)} tokens (code {code})")
        outputs = int(np.count_nonzero(np.asarray(wanted)))
        if outputs == 0:
            return np.zeros((0, self.vocabulary_size), dtype=np.float32)
        pointer = llama_cpp.llama_get_logits(context)
        return np.ctypeslib.as_array(pointer, shape=(outputs, self.vocabulary_size))

    # -- decoding ------------------------------------------------------------------------

    def _length_needed(self, job: DecodeJob, row: int) -> int:
        return len(job.prompts[row]) + job.max_new_tokens + 1

    def _slot_length_for(self, queue: DecodeQueue) -> int:
        needed = max((self._length_needed(job, row) for job, row in queue.waiting_rows()), default=1)
        # a prompt not ready yet (the next unit of a document) is sized by its job's bound, so that it
        # finds room when it comes
        needed = max(needed, queue.longest_prompt() + max((job.max_new_tokens for job, _ in queue.waiting_rows()),
                                                          default=0) + 1)
        return -(-needed // CONTEXT_QUANTUM) * CONTEXT_QUANTUM

    def _set_opening(self, opening: tuple[int, ...]) -> None:
        """Read ``opening`` into the opening's own stream (once per opening)."""
        if opening == self._opening:
            return
        holder = self._slots + 1
        self._clear(holder)
        for start in range(0, len(opening), PROMPT_CHUNK):
            part = opening[start:start + PROMPT_CHUNK]
            self._call(self._context, part, range(start, start + len(part)), [holder] * len(part),
                       [False] * len(part))
        self._opening = opening

    def run(self, queue: DecodeQueue) -> None:
        """Decode rows from ``queue`` until none waits and none is in flight."""
        with self._lock:
            slots = min(MAX_SLOTS, max(1, queue.batch_size()))
            self._ensure_context(slots, self._slot_length_for(queue))
            rows: dict[int, _Row] = {}
            while True:
                self._fill_slots(queue, rows)
                if not rows:
                    if not queue.has_waiting_rows():
                        return
                    # the oldest waiting row needs a larger context: every slot is free now
                    self._ensure_context(min(MAX_SLOTS, max(1, queue.batch_size())), self._slot_length_for(queue))
                    continue
                self._threads_now = self._follow_free_cores(self._context, self._threads_now)
                self._read_prompts(rows)
                self._decode_step(rows)

    def _follow_free_cores(self, context: Any, now: int) -> int:
        """Run ``context`` (decoding or scoring) on as many threads as the other processes leave
        cores free (at most ``threads``; :mod:`~textveil.models.engines.shared_cores`), set on it
        when that differs from the ``now`` it runs on; returns the threads it runs on. Why scoring
        too: fluency scores hundreds of texts, and a context on every thread while another process
        holds a core waits on it at each step (a run's time then swings by half or more)."""
        if self._free_cores is None:
            return now
        threads = self._free_cores.threads(self.threads)
        if threads != now:
            _llama().llama_set_n_threads(context, threads, threads)
        return threads

    def _fill_slots(self, queue: DecodeQueue, rows: dict[int, _Row]) -> None:
        """Give the free slots the next waiting rows that fit (first come, first served), a group's
        rows all at once."""
        free = [slot for slot in range(self._slots) if slot not in rows]
        while free:
            taken = queue.next_rows(lambda job, row: self._length_needed(job, row) <= self._slot_length, len(free))
            if taken is None:
                return
            job, indices = taken
            for index in indices:
                slot = free.pop(0)
                prompt = job.prompts[index]
                opening = tuple(prompt[: job.prefix_length])
                self._clear(slot)
                start = 0
                if opening:
                    self._set_opening(opening)
                    # the stream of the opening, copied whole (a cross-stream copy is a full one)
                    _llama().llama_memory_seq_cp(self._memory(), self._slots + 1, slot, -1, -1)
                    start = len(opening)
                rows[slot] = _Row(job, index, slot, list(prompt[start:]), start)

    def _read_prompts(self, rows: dict[int, _Row]) -> None:
        """Read prompt chunks, each alone in its own call, up to about PROMPT_BUDGET tokens; a
        prompt's last chunk gives the logits of its first draw."""
        budget = PROMPT_BUDGET
        for slot in sorted(rows):
            row = rows[slot]
            while row.reading and budget > 0 and not row.job.failed:
                # a chunk ends at a multiple of PROMPT_CHUNK past the start of the row's own tokens
                # or at the prompt's end: its bounds depend on the prompt alone
                own = row.position - row.job.prefix_length
                size = min(len(row.to_read), PROMPT_CHUNK - own % PROMPT_CHUNK)
                part, row.to_read = row.to_read[:size], row.to_read[size:]
                last = not row.to_read
                logits = self._call(self._context, part, range(row.position, row.position + size), [slot] * size,
                                    [False] * (size - 1) + [last])
                row.position += size
                budget -= size
                if last:
                    self._first_draw(row, logits, rows)
            if budget <= 0:
                return

    def _first_draw(self, row: _Row, logits: np.ndarray, rows: dict[int, _Row]) -> None:
        """``row``'s prompt is read (``logits``: its first step's): draw its first token, or, for a
        row of a group, keep the logits until every row of the group is read, then draw the group's
        first token from all of them at once (the job's ``choose`` sees a group whole)."""
        size = row.job.group_size
        if size == 1:
            self._choose({row.slot: row}, logits, [row.slot], rows)
            return
        row.first_logits = logits.copy()  # the next call reuses llama.cpp's buffer
        first = row.index - row.index % size
        group = sorted((other for other in rows.values() if other.job is row.job and first <= other.index < first + size),
                       key=lambda other: other.index)
        if len(group) < size or any(other.first_logits is None for other in group):
            return
        stacked = np.vstack([other.first_logits for other in group])
        for other in group:
            other.first_logits = None
        self._choose({other.slot: other for other in group}, stacked, [other.slot for other in group], rows)

    def _decode_step(self, rows: dict[int, _Row]) -> None:
        """One token for every row that has drawn one not yet read: one call, streams in order,
        a lone row with its twin."""
        ready = sorted(slot for slot, row in rows.items() if row.pending is not None and not row.job.failed)
        for slot in [slot for slot, row in rows.items() if row.job.failed]:
            self._release(slot, rows)
        if not ready:
            return
        active = set(ready)
        tokens, positions, sequences, wanted = [], [], [], []
        twins = []
        for slot in ready:
            row = rows[slot]
            tokens.append(row.pending)
            positions.append(row.position)
            sequences.append(slot)
            wanted.append(True)
            if slot - 1 not in active and slot + 1 not in active:
                # a run of one stream would take the one-row path: add a throwaway token in the next
                # stream (a free slot, a slot still reading its prompt, or the spare) and remove it after
                twin = slot + 1
                twins.append((twin, rows[twin].position if twin in rows else 0))
                active.add(twin)
        for twin, position in twins:
            tokens.append(tokens[0])
            positions.append(position)
            sequences.append(twin)
            wanted.append(True)  # nor one output row alone in a micro-batch (the output layer's product)
        order = np.argsort(np.asarray(sequences), kind="stable")
        logits = self._call(self._context, [tokens[i] for i in order], [positions[i] for i in order],
                            [sequences[i] for i in order], [wanted[i] for i in order])
        for twin, position in twins:
            self._clear(twin, position)
        real = len(ready)  # the twins come after the rows in ``tokens``
        flagged = [i for i in order if wanted[i]]
        keep = [k for k, i in enumerate(flagged) if i < real]
        for slot in ready:
            rows[slot].position += 1
            rows[slot].pending = None
        self._choose(rows, logits[keep], [sequences[flagged[k]] for k in keep], rows)

    def _choose(self, chosen_from: dict[int, _Row], logits: np.ndarray, output_slots: list[int],
                rows: dict[int, _Row]) -> None:
        """Each job draws its rows' tokens from their logits; finished rows free their slots."""
        by_job: dict[int, list[int]] = {}
        for k, slot in enumerate(output_slots):
            if slot in chosen_from:
                by_job.setdefault(id(chosen_from[slot].job), []).append(k)
        for ks in by_job.values():
            job = chosen_from[output_slots[ks[0]]].job
            slots = [output_slots[k] for k in ks]
            tokens = job.draw(logits[ks], np.array([rows[s].index for s in slots]))
            if tokens is None:
                for slot in slots:
                    self._release(slot, rows)
                continue
            for slot, token in zip(slots, tokens):
                row = rows[slot]
                if job.add_token(row.index, row.drawn, int(token)):  # the stop rule: written
                    self._release(slot, rows)
                else:
                    row.pending = int(token)

    def _release(self, slot: int, rows: dict[int, _Row]) -> None:
        rows.pop(slot, None)
        self._clear(slot)

    # -- scoring -------------------------------------------------------------------------

    @property
    def default_batch_rows(self) -> int:
        """Slots decoded at once when the caller names no batch size (two CPU cores are busy with 16)."""
        return CPU_BATCH_ROWS

    def token_log_likelihoods(self, sequences: Sequence[Sequence[int]], batch_size: int = 16) -> list[np.ndarray]:
        """For each sequence, log p(token t | the tokens before it) for t = 1 .. len - 1 (float64);
        each sequence is read alone (``batch_size`` is the transformers engine's, unused here)."""
        llama_cpp = _llama()
        scores = []
        with self._lock:
            longest = max((len(s) for s in sequences), default=1)
            if self._scoring is None or longest > self._scoring_length:
                if self._scoring is not None:
                    llama_cpp.llama_free(self._scoring)
                self._scoring_length = -(-longest // CONTEXT_QUANTUM) * CONTEXT_QUANTUM
                self._scoring = self._new_context(1, self._scoring_length, PROMPT_CHUNK)
                self._scoring_threads = self.threads
            for sequence in sequences:
                self._scoring_threads = self._follow_free_cores(self._scoring, self._scoring_threads)
                _llama().llama_memory_seq_rm(llama_cpp.llama_get_memory(self._scoring), 0, -1, -1)
                parts = []
                for start in range(0, len(sequence), PROMPT_CHUNK):
                    part = list(sequence[start:start + PROMPT_CHUNK])
                    parts.append(self._call(self._scoring, part, range(start, start + len(part)), [0] * len(part),
                                            [True] * len(part)).copy())  # the next call reuses the buffer
                logits = np.vstack(parts)[:-1].astype(np.float64)
                top = logits.max(axis=1, keepdims=True)
                log_norm = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
                targets = np.asarray(sequence[1:], dtype=np.int64)
                scores.append(logits[np.arange(len(targets)), targets] - log_norm)
        return scores

    def close(self) -> None:
        """Free the contexts and the model (the engine is unusable after). Waits for a run in
        progress: a job is done as its last row is drawn, before the run has cleared that row's slot."""
        llama_cpp = _llama()
        with self._lock:
            self.reset()
            if self._scoring is not None:
                llama_cpp.llama_free(self._scoring)
                self._scoring = None
            if self._model:
                llama_cpp.llama_model_free(self._model)
                self._model = None

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
