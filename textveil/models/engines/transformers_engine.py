"""The transformers engine: a PyTorch causal LM (a Hugging Face model, on the CPU in float32 or on
CUDA in bfloat16) decoded token by token with a key-value cache, instead of ``generate``.

What makes it faster than ``generate``:

- the public template's opening, the same for every input, is run through the model once per
  process and its key-value cache copied into each batch (only each input's own tokens are read);
- continuous batching: a row that drew an end token leaves the batch at once (its cache rows are
  dropped), and once an eighth of the places are free the waiting rows join (the next units of a
  document, other requests), read in one prefill and padded to the batch's width, instead of
  every row being computed to the longest reply as ``generate`` does;
- on a GPU, a thousand rows at a time by default, and each step's logits stay on the device:
  the mechanism's draw runs there (:mod:`textveil.mechanisms.sampling`);
- logits are computed for the last position only.

The rows of a batch are left-padded between the shared opening and each input's tokens; the
attention mask hides the padding and the position ids continue the opening's, so each row reads
what it would read alone. Rows of every job in the queue share the batch: a job arriving meanwhile
joins at the next refill.

Any network with the Hugging Face call interface (``input_ids``, ``attention_mask``,
``position_ids``, ``past_key_values``, ``logits_to_keep``; a cache with ``batch_repeat_interleave``,
``batch_select_indices`` and either per-layer ``keys`` and ``values`` in ``layers``, as a Hugging
Face ``DynamicCache``, or a ``batch_join``) runs here: the toy models of the tests and audit
canaries too.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from textveil.models.engines.batching import CPU_BATCH_ROWS, DecodeJob, DecodeQueue


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices of ``lengths`` in batches of at most ``batch_size``, each batch of similar lengths
    (sorted, longest first: the largest batch meets the memory peak first).

    >>> length_buckets([5, 1, 9, 2], 2)
    [[2, 0], [3, 1]]
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


class TransformersEngine:
    """A PyTorch network behind the engine face: decode rows from a :class:`DecodeQueue`, score
    texts token by token."""

    name = "transformers"

    def __init__(self, network: Any, device: str = "cpu") -> None:
        self.network = network
        self.device = device
        self._prefix_caches: dict[tuple[int, ...], Any] = {}

    @property
    def dtype(self) -> str:
        """The network's number format (``float32`` on the CPU, ``bfloat16`` on CUDA)."""
        dtype = getattr(next(iter(getattr(self.network, "parameters", lambda: iter(()))()), None), "dtype", None)
        return str(dtype).replace("torch.", "") if dtype is not None else "float32"

    @property
    def description(self) -> str:
        """The engine as a Guarantee names it."""
        return f"transformers (PyTorch, {self.dtype}, {self.device})"

    @property
    def identity(self) -> str:
        """What decides its logits' bits (a release's fingerprint holds it)."""
        return f"transformers {self.dtype} {self.device.split(':')[0]}"

    @property
    def vocabulary_size(self) -> int:
        config = self.network.config
        size = getattr(config, "vocab_size", None) or getattr(config.get_text_config(), "vocab_size", None)
        return int(size if size else self.network.get_input_embeddings().weight.shape[0])

    @property
    def context_length(self) -> int:
        return int(getattr(self.network.config, "max_position_embeddings", 2048) or 2048)

    def prefix_cache(self, prefix: tuple[int, ...]) -> Any:
        """The key-value cache of ``prefix`` (a public template's opening, the same for every
        input), computed once and kept: every batch starts from a copy of it."""
        if prefix not in self._prefix_caches:
            import torch

            with torch.inference_mode():
                ids = torch.tensor([list(prefix)], dtype=torch.long, device=self.device)
                out = self.network(input_ids=ids, use_cache=True, logits_to_keep=1)
            self._prefix_caches = {prefix: out.past_key_values}  # one template at a time is the use
        return self._prefix_caches[prefix]

    # -- decoding ------------------------------------------------------------------------

    @property
    def default_batch_rows(self) -> int:
        """Rows decoded at once when the caller names no batch size: a GPU is fed a thousand (its
        step costs about the same for 128 rows as for 1,024), a CPU 16."""
        return DEVICE_BATCH_ROWS if self.device != "cpu" else CPU_BATCH_ROWS

    def run(self, queue: DecodeQueue) -> None:
        """Decode every waiting row until none waits: continuous batching, one opening at a time
        (rows of another template wait for the batch of their own)."""
        import torch

        pool: list[tuple[DecodeJob, int]] = []
        with torch.inference_mode():
            while True:
                pool = [(job, row) for job, row in pool + queue.take_waiting() if not job.failed]
                if not pool:
                    return
                pool = self._decode_continuously(queue, pool)

    def _decode_continuously(self, queue: DecodeQueue, pool: list[tuple[DecodeJob, int]]
                             ) -> list[tuple[DecodeJob, int]]:
        """Decode the rows of ``pool`` that share its oldest job's opening, and every such row that
        becomes ready meanwhile, in one batch whose finished rows' places are refilled; returns the
        rows of other openings, still waiting."""
        opening = pool[0][0].opening
        batch = _LiveBatch(self)
        while True:
            pool = [(job, row) for job, row in pool + queue.take_waiting() if not job.failed]
            capacity = queue.batch_size()
            room = capacity - batch.size
            same = [i for i, (job, _) in enumerate(pool) if job.opening == opening]
            # refill once a share of the places is free (a prefill of one row per step would cost
            # a forward pass each), or at once when the batch is empty
            chosen = (_groups_that_fit(pool, same, room)
                      if same and room > 0 and (batch.size == 0 or room >= max(1, capacity // REFILL_SHARE)) else [])
            if chosen:
                batch.join([pool[i] for i in chosen], len(opening))
                taken = set(chosen)
                pool = [entry for i, entry in enumerate(pool) if i not in taken]
            if batch.size == 0:
                return pool
            batch.step()


    def _prefill(self, rows: list[tuple[DecodeJob, int]], prefix_length: int) -> tuple[Any, Any, Any, Any]:
        """Read the prompts of ``rows`` after a copy of their opening's cache: the rows' key-value
        cache, attention mask, next positions and first logits (on the device)."""
        import torch

        device = self.device
        tails = [list(job.prompts[row][prefix_length:]) for job, row in rows]
        width = max(len(t) for t in tails)
        batch = len(rows)
        ids = torch.zeros((batch, width), dtype=torch.long)
        mask = torch.zeros((batch, prefix_length + width), dtype=torch.long)
        mask[:, :prefix_length] = 1
        positions = torch.full((batch, width), prefix_length, dtype=torch.long)
        for index, tail in enumerate(tails):
            pad = width - len(tail)
            ids[index, pad:] = torch.tensor(tail)
            mask[index, prefix_length + pad:] = 1
            positions[index, pad:] = torch.arange(prefix_length, prefix_length + len(tail))
        cache = None
        if prefix_length:
            cache = copy.deepcopy(self.prefix_cache(tuple(rows[0][0].prompts[rows[0][1]][:prefix_length])))
            cache.batch_repeat_interleave(batch)
        ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
        out = self.network(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                           use_cache=True, logits_to_keep=1)
        return out.past_key_values, mask, positions[:, -1:] + 1, out.logits[:, -1, :]

    # -- scoring -------------------------------------------------------------------------

    def token_log_likelihoods(self, sequences: Sequence[Sequence[int]], batch_size: int = 16) -> list[np.ndarray]:
        """For each sequence, log p(token t | the tokens before it) for t = 1 .. len - 1 (float64).

        Sequences are scored ``batch_size`` at a time, sorted by length; the padding sits after
        each row's tokens and is masked, so a sequence's scores do not depend on its batch."""
        import torch

        scores: list[np.ndarray] = [np.zeros(0) for _ in sequences]
        with torch.inference_mode():
            for bucket in length_buckets([len(s) for s in sequences], batch_size):
                width = max(len(sequences[i]) for i in bucket)
                ids = torch.zeros((len(bucket), width), dtype=torch.long)
                mask = torch.zeros((len(bucket), width), dtype=torch.long)
                for row, i in enumerate(bucket):
                    ids[row, :len(sequences[i])] = torch.tensor(list(sequences[i]))
                    mask[row, :len(sequences[i])] = 1
                logits = self.network(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                # float32 even where the model runs in bfloat16
                logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
                picked = logp.gather(2, ids[:, 1:].to(self.device).unsqueeze(-1)).squeeze(-1).double().cpu().numpy()
                for row, i in enumerate(bucket):
                    scores[i] = picked[row, : len(sequences[i]) - 1]
        return scores

    def reset(self) -> None:
        """Forget the cached openings (after a failed run)."""
        self._prefix_caches = {}

    def close(self) -> None:
        """Let go of the cached openings and the network (a GPU's memory is freed once nothing
        else holds it); the engine is unusable after."""
        self.reset()
        self.network = None


def _groups_that_fit(pool: list[tuple[DecodeJob, int]], same: list[int], room: int) -> list[int]:
    """The entries of ``pool`` (indices ``same``) that join the batch: whole groups of rows (a
    job's ``group_size`` rows side by side in the pool, each group decoded together), the longest
    prompts first, as many rows as ``room`` holds; sorted. Without groups, the first bucket of
    :func:`length_buckets`.

    >>> class Job: group_size, prompts = 2, [[1] * 5, [1] * 2, [1] * 9, [1] * 3]
    >>> job = Job()
    >>> _groups_that_fit([(job, 0), (job, 1), (job, 2), (job, 3)], [0, 1, 2, 3], 3)
    [2, 3]
    """
    groups: list[list[int]] = []
    for i in same:
        job, row = pool[i]
        if row % job.group_size == 0:
            groups.append([i])
        elif groups and pool[groups[-1][0]][0] is job:
            groups[-1].append(i)
    lengths = [max(len(pool[i][0].prompts[pool[i][1]]) for i in group) for group in groups]
    chosen: list[int] = []
    for k in sorted(range(len(groups)), key=lambda k: (-lengths[k], k)):
        if len(chosen) + len(groups[k]) <= room:
            chosen += groups[k]
    return sorted(chosen)


REFILL_SHARE = 8
"""A running batch takes waiting rows once 1 / REFILL_SHARE of its places are free."""
DEVICE_BATCH_ROWS = 1024
"""Rows decoded at once on a GPU when the caller names no batch size."""


class _LiveBatch:
    """The rows being decoded: their key-value cache, attention mask and next positions, the
    step's logits and each row's drawn tokens. Rows join it (their prompts read after a copy of
    the opening's cache) and leave it (their cache rows dropped) between steps.

    A row's cache columns are [padding | opening | padding | its tokens | its reply]: rows that
    join later are padded on the left to the batch's width, the mask hides every padding column and
    each row's positions are its own, so a row reads what it would read alone. Columns that no row
    reads any more are dropped when rows leave."""

    def __init__(self, engine: TransformersEngine) -> None:
        self.engine = engine
        self.rows: list[tuple[DecodeJob, int]] = []
        self.drawn: list[list[int]] = []
        self.cache: Any = None
        self.mask: Any = None
        self.next_position: Any = None
        self.logits: Any = None

    @property
    def size(self) -> int:
        return len(self.rows)

    def join(self, rows: list[tuple[DecodeJob, int]], prefix_length: int) -> None:
        """Read the prompts of ``rows`` and add them to the batch, their first logits ready."""
        import torch

        cache, mask, next_position, logits = self.engine._prefill(rows, prefix_length)
        self.rows += rows
        self.drawn += [[] for _ in rows]
        if self.cache is None:
            self.cache, self.mask, self.next_position, self.logits = cache, mask, next_position, logits
            return
        width = max(self.mask.shape[1], mask.shape[1])
        self.cache = _joined_caches(self.cache, cache, width)
        self.mask = torch.cat([_left_padded(self.mask, width, dim=1), _left_padded(mask, width, dim=1)])
        self.next_position = torch.cat([self.next_position, next_position])
        self.logits = torch.cat([self.logits, logits])

    def step(self) -> None:
        """Draw each row's token from the step's logits (through its job's ``choose``), end the
        rows that are written, and run the model one token further for the others."""
        import torch

        chosen = np.zeros(self.size, dtype=np.int64)
        finished = np.zeros(self.size, dtype=bool)
        on_host = None
        for job in dict.fromkeys(job for job, _ in self.rows):
            mine = np.flatnonzero([owner is job for owner, _ in self.rows])
            if job.device_logits:
                logits = self.logits.index_select(0, torch.from_numpy(mine).to(self.logits.device))
            else:
                on_host = self.logits.float().cpu().numpy() if on_host is None else on_host
                logits = on_host[mine]
            tokens = job.draw(logits, np.array([self.rows[k][1] for k in mine]))
            if tokens is None:  # the job failed: its rows leave the batch
                finished[mine] = True
                continue
            chosen[mine] = tokens
            for k, token in zip(mine, tokens):
                finished[k] = job.add_token(self.rows[k][1], self.drawn[k], int(token))  # the stop rule
        keep = np.flatnonzero(~finished)
        if keep.size < self.size:
            self._keep(keep)
            chosen = chosen[keep]
        if self.size == 0:
            return
        device = self.engine.device
        self.mask = torch.cat([self.mask, torch.ones((self.size, 1), dtype=self.mask.dtype, device=device)], dim=1)
        out = self.engine.network(input_ids=torch.from_numpy(chosen).view(-1, 1).to(device), attention_mask=self.mask,
                                  position_ids=self.next_position, past_key_values=self.cache, use_cache=True)
        self.cache, self.logits = out.past_key_values, out.logits[:, -1, :]
        self.next_position = self.next_position + 1

    def _keep(self, keep: np.ndarray) -> None:
        """Only the rows ``keep`` stay; columns no staying row reads are dropped."""
        import torch

        self.rows = [self.rows[k] for k in keep]
        self.drawn = [self.drawn[k] for k in keep]
        if not self.rows:
            self.cache = self.mask = self.next_position = self.logits = None
            return
        index = torch.from_numpy(keep).to(self.engine.device)
        self.cache.batch_select_indices(index)
        self.mask, self.next_position, self.logits = self.mask[index], self.next_position[index], self.logits[index]
        read = self.mask.any(dim=0)
        if hasattr(self.cache, "layers") and not bool(read.all()):
            columns = read.nonzero().flatten()
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, columns], layer.values[:, :, columns]
            self.mask = self.mask[:, columns]


def _left_padded(tensor: Any, width: int, dim: int) -> Any:
    """``tensor`` with zeros before its entries along ``dim`` up to ``width`` (a mask's hidden
    columns; a cache's unread ones)."""
    import torch

    missing = width - tensor.shape[dim]
    if missing == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([torch.zeros(shape, dtype=tensor.dtype, device=tensor.device), tensor], dim=dim)


def _joined_caches(first: Any, second: Any, width: int) -> Any:
    """The rows of two key-value caches as one, each padded on the left to ``width`` columns: a
    Hugging Face cache layer by layer; a cache without columns (the toy's running sums) by its
    own ``batch_join``."""
    import torch

    if not hasattr(first, "layers"):
        first.batch_join(second)
        return first
    for mine, theirs in zip(first.layers, second.layers):
        mine.keys = torch.cat([_left_padded(mine.keys, width, 2), _left_padded(theirs.keys, width, 2)])
        mine.values = torch.cat([_left_padded(mine.values, width, 2), _left_padded(theirs.values, width, 2)])
    return first
