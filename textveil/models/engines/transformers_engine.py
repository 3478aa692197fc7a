"""The transformers engine: a PyTorch causal LM (a Hugging Face model, on the CPU in float32 or on
CUDA in bfloat16) decoded token by token with a key-value cache, instead of ``generate``.

What makes it faster than ``generate`` on a CPU:

- the public template's opening, the same for every input, is run through the model once per
  process and its key-value cache copied into each batch (only each input's own tokens are read);
- rows are bucketed by length, so a batch carries little padding;
- a row that drew an end token leaves the batch at once (its cache rows are dropped), instead of
  being computed to the longest reply as ``generate`` does;
- logits are computed for the last position only.

The rows of a batch are left-padded between the shared opening and each input's tokens; the
attention mask hides the padding and the position ids continue the opening's, so each row reads
what it would read alone. Rows of every job in the queue are bucketed together: jobs that arrive
together are decoded in the same batches; a job arriving meanwhile joins at the next batch.

Any network with the Hugging Face call interface (``input_ids``, ``attention_mask``,
``position_ids``, ``past_key_values``, ``logits_to_keep``; a cache with ``batch_repeat_interleave``
and ``batch_select_indices``) runs here: the toy models of the tests and audit canaries too.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from textveil.models.engines.batching import DecodeJob, DecodeQueue


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

    def run(self, queue: DecodeQueue) -> None:
        """Decode every waiting row, a batch at a time, until none waits; rows of jobs that arrive
        meanwhile join the pool before the next batch."""
        import torch

        pool: list[tuple[DecodeJob, int]] = []
        with torch.inference_mode():
            while True:
                pool = [(job, row) for job, row in pool + queue.take_waiting() if not job.failed]
                if not pool:
                    return
                # the oldest job's opening first; rows of other openings wait for their own batches
                opening = pool[0][0].opening
                same = [i for i, (job, _) in enumerate(pool) if job.opening == opening]
                lengths = [len(pool[i][0].prompts[pool[i][1]]) for i in same]
                chosen = {same[k] for k in length_buckets(lengths, queue.batch_size())[0]}
                bucket = [pool[i] for i in sorted(chosen, key=lambda i: (-lengths[same.index(i)], i))]
                pool = [entry for i, entry in enumerate(pool) if i not in chosen]
                self._decode_batch(bucket, len(opening))

    def _decode_batch(self, rows: list[tuple[DecodeJob, int]], prefix_length: int) -> None:
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
        drawn: list[list[int]] = [[] for _ in rows]
        alive = np.arange(batch)  # indices into ``rows`` of the rows still in the batch
        next_position = positions[:, -1:] + 1
        step = 0
        while True:
            logits = out.logits[:, -1, :].float().cpu().numpy()
            chosen = np.zeros(len(alive), dtype=np.int64)
            finished = np.zeros(len(alive), dtype=bool)
            for job in {rows[i][0] for i in alive}:
                mine = np.flatnonzero([rows[i][0] is job for i in alive])
                tokens = job.draw(logits[mine], np.array([rows[alive[k]][1] for k in mine]))
                if tokens is None:  # the job failed: its rows leave the batch
                    finished[mine] = True
                    continue
                chosen[mine] = tokens
                for k, token in zip(mine, tokens):
                    index = alive[k]
                    if int(token) in job.end_token_ids:
                        job.finish_row(rows[index][1], drawn[index], True)
                        finished[k] = True
                    else:
                        drawn[index].append(int(token))
                        if len(drawn[index]) >= job.max_new_tokens:
                            job.finish_row(rows[index][1], drawn[index], False)
                            finished[k] = True
            step += 1
            keep = np.flatnonzero(~finished)
            if keep.size == 0:
                return
            cache = out.past_key_values
            if keep.size < len(alive):  # finished rows leave the batch: no more work on them
                index = torch.from_numpy(keep).to(device)
                cache.batch_select_indices(index)
                mask, next_position = mask[index], next_position[index]
                alive, chosen = alive[keep], chosen[keep]
            mask = torch.cat([mask, torch.ones((len(alive), 1), dtype=mask.dtype, device=device)], dim=1)
            out = self.network(input_ids=torch.from_numpy(chosen).view(-1, 1).to(device), attention_mask=mask,
                               position_ids=next_position, past_key_values=cache, use_cache=True)
            next_position = next_position + 1

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
