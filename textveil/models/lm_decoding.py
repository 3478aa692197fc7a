"""Token-by-token decoding of prompts, the draw of each token left to the caller.

This is the loop the language-model mechanisms run instead of transformers' ``generate``: the
caller's ``choose`` sees every step's logits and returns the drawn tokens (the exponential
mechanism for ``paraphrase``, plain sampling for ``restyle``), so the privacy logic stays in the
mechanism. The model's engine does the rest (:mod:`textveil.models.engines`): llama.cpp with
continuous batching, or PyTorch with length buckets; either way the template's opening, the same
for every input, is read once, and a finished row leaves the batch at once.

Calls from several threads at once (the service's requests) go to the model's one queue and
share the engine's batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textveil.models.engines.batching import Chooser, SentenceStop, Successor, compact_prompt, new_job, queue_for
from textveil.models.engines.transformers_engine import length_buckets

__all__ = ["Chooser", "SentenceStop", "Successor", "compact_prompt", "decode", "length_buckets"]


def decode(
    model: Any,
    prompts: Sequence[Sequence[int] | None],
    prefix_length: int,
    max_new_tokens: int,
    choose: Chooser,
    *,
    batch_size: int = 16,
    progress: Callable[[int], None] | None = None,
    successor: Successor | None = None,
    longest_prompt: int = 0,
    more_end_token_ids: Sequence[int] = (),
    device_logits: bool = False,
    group_size: int = 1,
    sentence_stop: SentenceStop | None = None,
) -> list[tuple[list[int], bool]]:
    """Draw up to ``max_new_tokens`` tokens after each prompt; returns, per prompt, the tokens kept
    and whether a drawn token ended the reply (an end token, or the token a sentence stop left
    out): the reply drew one token more than it kept.

    ``model`` is a :class:`~textveil.models.language_model.LanguageModel`; every prompt starts
    with the same ``prefix_length`` tokens (the template's opening). ``choose(logits, rows)`` gets
    (k, V) float32 logits for the prompts ``rows`` (indices into ``prompts``) and returns one token
    id per row. ``batch_size`` rows are decoded at once; ``progress(n)`` is told when n more
    prompts are finished.

    A prompt may be None: ``successor(row, tokens, ended)`` makes it once the row it follows is
    written (the next unit of a document, whose prompt holds that reply); ``longest_prompt`` bounds
    every prompt's length, so the engine's slots fit the ones to come. ``more_end_token_ids`` end
    a reply as the model's end tokens do (a public stop rule), and so does ``sentence_stop`` (a
    new sentence opening once a reply holds enough tokens: :class:`SentenceStop`). With
    ``device_logits``, ``choose`` takes the logits as a torch tensor where the engine computed them
    (a GPU's), so the draw runs there; an engine without one (llama.cpp) hands NumPy arrays
    whatever it says. With ``group_size`` g > 1 the prompts come in groups of g decoded side by
    side, each group extended by the same tokens: ``choose`` gets a group's rows together and
    returns one token per row, the same for the group's rows (:class:`~textveil.models.engines.batching.DecodeJob`).
    """
    if not prompts or max_new_tokens == 0:
        if progress is not None and prompts:
            progress(len(prompts) // group_size)
        return [([], False) for _ in prompts]
    job = new_job(model, prompts, prefix_length, max_new_tokens, choose, batch_size, progress, successor,
                  longest_prompt, more_end_token_ids, device_logits, group_size, sentence_stop)
    return queue_for(model.engine).decode(job)
