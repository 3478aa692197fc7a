"""Batched token-by-token decoding with a key-value cache, the draw of each token left to the caller.

This is the loop the language-model mechanisms run instead of transformers' ``generate``: the
caller's ``choose`` sees every step's logits and returns the drawn tokens (the exponential
mechanism for ``paraphrase``, plain sampling for ``restyle``), so the privacy logic stays in the
mechanism. What makes it faster than ``generate`` on a CPU:

- the public template's opening, the same for every input, is run through the model once per
  process and its key-value cache copied into each batch (only each input's own tokens are read);
- inputs are bucketed by length, so a batch carries little padding;
- a row that drew an end token leaves the batch at once (its cache rows are dropped), instead of
  being computed to the longest reply as ``generate`` does;
- logits are computed for the last position only.

The rows of a batch are left-padded between the shared opening and each input's tokens; the
attention mask hides the padding and the position ids continue the opening's, so each row reads
exactly what it would read alone.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Chooser = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``choose(logits, rows)``: ``logits`` is (batch, V) float32 for the prompts ``rows`` (indices into
the prompts given to :func:`decode`); returns one token id per row."""


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices of ``lengths`` in batches of at most ``batch_size``, each batch of similar lengths
    (sorted, longest first: the largest batch meets the memory peak first).

    >>> length_buckets([5, 1, 9, 2], 2)
    [[2, 0], [3, 1]]
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def decode(
    model: Any,
    prompts: Sequence[Sequence[int]],
    prefix_length: int,
    max_new_tokens: int,
    choose: Chooser,
    *,
    batch_size: int = 16,
    progress: Callable[[int], None] | None = None,
) -> list[tuple[list[int], bool]]:
    """Draw up to ``max_new_tokens`` tokens after each prompt; returns, per prompt, the drawn
    tokens before the end token and whether an end token was drawn.

    ``model`` is a :class:`~textveil.models.language_model.LanguageModel`; every prompt starts
    with the same ``prefix_length`` tokens (the template's opening). ``progress(n)`` is told
    when n prompts are finished.
    """
    import torch

    results: list[tuple[list[int], bool]] = [([], False) for _ in prompts]
    if not prompts or max_new_tokens == 0:
        if progress is not None and prompts:
            progress(len(prompts))
        return results
    prefix = tuple(prompts[0][:prefix_length])
    if any(tuple(p[:prefix_length]) != prefix or len(p) <= prefix_length for p in prompts):
        raise ValueError("every prompt must start with the same opening and hold tokens after it")
    ends = torch.tensor(model.end_token_ids, dtype=torch.long)
    with torch.inference_mode():
        opening = model.prefix_cache(prefix) if prefix_length else None
        for bucket in length_buckets([len(p) for p in prompts], batch_size):
            _decode_batch(model, prompts, bucket, prefix_length, opening, max_new_tokens, choose, ends, results)
            if progress is not None:
                progress(len(bucket))
    return results


def _decode_batch(model: Any, prompts: Sequence[Sequence[int]], bucket: list[int], prefix_length: int,
                  opening: Any, max_new_tokens: int, choose: Chooser, ends: Any,
                  results: list[tuple[list[int], bool]]) -> None:
    import torch

    device = model.device
    tails = [list(prompts[i][prefix_length:]) for i in bucket]
    width = max(len(t) for t in tails)
    batch = len(bucket)
    ids = torch.zeros((batch, width), dtype=torch.long)
    mask = torch.zeros((batch, prefix_length + width), dtype=torch.long)
    mask[:, :prefix_length] = 1
    positions = torch.full((batch, width), prefix_length, dtype=torch.long)
    for row, tail in enumerate(tails):
        pad = width - len(tail)
        ids[row, pad:] = torch.tensor(tail)
        mask[row, prefix_length + pad:] = 1
        positions[row, pad:] = torch.arange(prefix_length, prefix_length + len(tail))
    cache = None
    if opening is not None:
        cache = copy.deepcopy(opening)
        cache.batch_repeat_interleave(batch)
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
    out = model.network(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                        use_cache=True, logits_to_keep=1)
    rows = np.array(bucket)
    drawn: list[list[int]] = [[] for _ in bucket]
    alive = np.arange(batch)  # positions in ``drawn`` of the rows still in the batch
    next_position = positions[:, -1:] + 1
    for step in range(max_new_tokens):
        logits = out.logits[:, -1, :].float().cpu().numpy()
        chosen = np.asarray(choose(logits, rows), dtype=np.int64)
        finished = np.isin(chosen, ends.numpy())
        for slot, token, done in zip(alive, chosen, finished):
            if done:
                results[bucket[slot]] = (drawn[slot], True)
            else:
                drawn[slot].append(int(token))
        keep = np.flatnonzero(~finished)
        if keep.size == 0 or step == max_new_tokens - 1:
            break
        cache = out.past_key_values
        if keep.size < len(alive):  # finished rows leave the batch: no more work on them
            index = torch.from_numpy(keep).to(device)
            cache.batch_select_indices(index)
            mask, next_position = mask[index], next_position[index]
            alive, rows, chosen = alive[keep], rows[keep], chosen[keep]
        mask = torch.cat([mask, torch.ones((len(alive), 1), dtype=mask.dtype, device=device)], dim=1)
        out = model.network(input_ids=torch.from_numpy(chosen).view(-1, 1).to(device), attention_mask=mask,
                            position_ids=next_position, past_key_values=cache, use_cache=True)
        next_position = next_position + 1
    for slot in alive:
        if not results[bucket[slot]][1]:
            results[bucket[slot]] = (drawn[slot], False)
