"""The public-base draw of ``paraphrase`` (``score="public-base"``, after InvisibleInk: Vinod,
Pillutla and Thakurta, NeurIPS 2025): each token is drawn from the language model *without* the
document, tilted toward what the model *with* the document would write by a clipped difference.

For one step, with p_doc the model's next-token distribution given the unit's prompt (which holds
the document) and the reply so far, and p_pub the same model's given a public prompt without the
document and the same reply so far, both over the output vocabulary,

    u(v) = clip(log p_doc(v) - log p_pub(v), -C, C),
    Pr[v] proportional to p_pub(v) * exp(epsilon * u(v) / (2 * 2C)).

This is the exponential mechanism with a public base measure p_pub (a function of public text and
of tokens already released, never of the document) and a score u whose range has width 2C
whatever the input, so its sensitivity is 2C and each draw is epsilon-DP (McSherry and Talwar
2007: the base measure cancels in the likelihood ratio of two inputs). Where the document says
little about the next token (u near 0) the draw is the public model's own; where it says much,
the token is favoured by at most e^(epsilon / 2) against the public model, whatever the document.
So even a small epsilon reads as text: the floor of ``relative`` (every token below w at one
weight) has no counterpart here; the public model writes, the document only tilts it.

The draw runs where the logits are (NumPy on the host, torch on an accelerator) with the same
inverse CDF in float64 and the same uniforms (one per pair of rows, from the unit's own
generator), so for a seed the tokens are the same on every path up to the last bit of a float64
cumulative sum.

>>> doc = np.array([[5.0, 0.0, 0.0]]); pub = np.array([[0.0, 0.0, 0.0]])
>>> probabilities = public_base_probabilities(doc, pub, epsilon=4.0, clip=1.0)
>>> [round(float(p), 3) for p in probabilities[0]]  # token 0 up by e^(4 * 1 / 4), the others down by as much
[0.787, 0.107, 0.107]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from textveil.errors import InvalidParameterError
from textveil.mechanisms.sampling import (
    candidates_on_device,
    checked_rows,
    host_array,
    inverse_cdf_rows,
    row_uniforms,
    torch_inverse_cdf_rows,
)
from textveil.models.device import on_accelerator
from textveil.privacy.parameters import check_epsilon

DEFAULT_CLIP = 1.0
"""C: the clipped difference lies in [-C, C] (sensitivity 2C). InvisibleInk's small-C regime; with
C = 1 a token the document favours weighs at most e^(epsilon / 2) against the public model."""


PUBLIC_BASE_PLACEHOLDER_RULE = ("each placeholder is kept whole in the prompt (no cut splits one), and its tokens "
                                "are in the output vocabulary: the model may copy it, each token drawn like any other "
                                "(covered by epsilon)")
"""The entity stage's placeholders on a public base: no note after the input (the document's row
would read it just before the instruction, and the draw favoured talk about the removed details)."""


def _check(epsilon: float, clip: float, sensitivity: float | None) -> tuple[float, float]:
    """(C, the draw's scale epsilon / (2 * sensitivity)), checked; the sensitivity is 2C unless a
    caller states another (the tests' broken draws)."""
    epsilon = check_epsilon(epsilon)
    if not isinstance(clip, (int, float)) or isinstance(clip, bool) or not np.isfinite(clip) or clip <= 0:
        raise InvalidParameterError(f"clip (C) must be a number > 0, got {clip!r}")
    width = 2.0 * float(clip) if sensitivity is None else check_epsilon(sensitivity, name="sensitivity")
    return float(clip), epsilon / (2.0 * width)


def public_base_log_weights(doc: Any, pub: Any, epsilon: float, clip: float = DEFAULT_CLIP,
                            sensitivity: float | None = None, top_k: int = 0,
                            banned: Sequence[Any] | None = None) -> np.ndarray:
    """log p_pub(v) + epsilon * clip(log p_doc(v) - log p_pub(v), -C, C) / (2 * 2C) for each
    entry of (batch, V) logits ``doc`` and ``pub`` (each row's log-softmax over its V entries), in
    float64: the unnormalised log-probabilities of the draw. ``banned[i]`` (column positions) are
    left out of row i (-inf): a public rule on the reply so far (:mod:`~textveil.mechanisms.task_phrases`).

    >>> public_base_log_weights(np.array([[9.0, 0.0]]), np.array([[0.0, 9.0]]), 4.0).round(2).tolist()
    [[-8.0, -1.0]]
    """
    clip, scale = _check(epsilon, clip, sensitivity)
    doc = np.asarray(doc, dtype=np.float64)
    pub = np.asarray(pub, dtype=np.float64)
    if doc.shape != pub.shape or doc.ndim != 2 or doc.shape[1] == 0:
        raise InvalidParameterError(f"doc and pub logits must have the same shape (batch, V), got {doc.shape} and "
                                    f"{pub.shape}")
    if not (np.isfinite(doc).all() and np.isfinite(pub).all()):
        raise InvalidParameterError("logits must all be finite; replace NaN or infinite logits before sampling")
    log_doc = doc - logsumexp(doc, axis=1, keepdims=True)
    log_pub = pub - logsumexp(pub, axis=1, keepdims=True)
    weights = log_pub + scale * np.clip(log_doc - log_pub, -clip, clip)
    if 0 < top_k < weights.shape[1]:
        # the public model's top k (ties kept): a support chosen from the public row alone
        kth = np.partition(pub, -top_k, axis=1)[:, -top_k:].min(axis=1, keepdims=True)
        weights = np.where(pub >= kth, weights, -np.inf)
    for row, columns in enumerate(banned or ()):
        weights[row, np.asarray(columns, dtype=np.int64)] = -np.inf
    return weights


def public_base_probabilities(doc: Any, pub: Any, epsilon: float, clip: float = DEFAULT_CLIP,
                              sensitivity: float | None = None, top_k: int = 0,
                              banned: Sequence[Any] | None = None) -> np.ndarray:
    """The draw's exact distribution over each row's V entries (float64, rows sum to 1): what the
    tests hold the sampler to."""
    weights = public_base_log_weights(doc, pub, epsilon, clip, sensitivity, top_k, banned)
    weights = np.exp(weights - weights.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def sample_public_base_rows(doc: Any, pub: Any, candidates: np.ndarray, epsilon: float,
                            rngs: Sequence[np.random.Generator], clip: float = DEFAULT_CLIP,
                            sensitivity: float | None = None, top_k: int = 0,
                            banned: Sequence[Any] | None = None) -> np.ndarray:
    """One draw per pair of rows, row i of (batch, V) logits ``doc`` against row i of ``pub``,
    over the columns ``candidates`` (the output vocabulary: both distributions are normalised over
    it), with one uniform from ``rngs[i]``, never a position in ``banned[i]``. Returns positions in
    ``candidates``.

    >>> doc = np.array([[0.0, 40.0, 0.0]]); pub = np.zeros((1, 3))
    >>> sample_public_base_rows(doc, pub, np.array([0, 1]), 1e6, [np.random.default_rng(0)]).tolist()
    [1]
    """
    candidates = _checked_candidates(candidates)
    if len(rngs) != np.shape(doc)[0]:
        raise InvalidParameterError(f"one generator per row: got {len(rngs)} for {np.shape(doc)[0]} row(s)")
    doc_rows = np.asarray(doc, dtype=np.float32)[:, candidates]
    pub_rows = np.asarray(pub, dtype=np.float32)[:, candidates]
    weights = public_base_log_weights(doc_rows, pub_rows, epsilon, clip, sensitivity, top_k, banned)
    return inverse_cdf_rows(weights - weights.max(axis=1, keepdims=True), row_uniforms(rngs))


def sample_public_base_rows_torch(doc: Any, pub: Any, candidates: Any, epsilon: float,
                                  rngs: Sequence[np.random.Generator], clip: float = DEFAULT_CLIP,
                                  sensitivity: float | None = None, top_k: int = 0,
                                  banned: Sequence[Any] | None = None) -> Any:
    """:func:`sample_public_base_rows` on (batch, V) torch tensors, on their device, in float64:
    returns a long tensor of positions in ``candidates`` there.

    >>> import torch
    >>> sample_public_base_rows_torch(torch.tensor([[0.0, 40.0, 0.0]]), torch.zeros((1, 3)), torch.tensor([0, 1]),
    ...                               1e6, [np.random.default_rng(0)]).tolist()
    [1]
    """
    import torch

    clip, scale = _check(epsilon, clip, sensitivity)
    doc_rows = checked_rows(doc, rngs)
    pub_rows = checked_rows(pub, rngs)
    if doc_rows.shape != pub_rows.shape:
        raise InvalidParameterError(f"doc and pub logits must have the same shape, got {tuple(doc_rows.shape)} and "
                                    f"{tuple(pub_rows.shape)}")
    candidates = torch.as_tensor(candidates, dtype=torch.long, device=doc_rows.device)
    if doc_rows.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long, device=doc_rows.device)
    chosen_pub = pub_rows.index_select(1, candidates)
    log_doc = torch.log_softmax(doc_rows.index_select(1, candidates), dim=1)
    log_pub = torch.log_softmax(chosen_pub, dim=1)
    weights = log_pub + scale * torch.clamp(log_doc - log_pub, min=-clip, max=clip)
    if 0 < top_k < weights.shape[1]:
        kth = torch.topk(chosen_pub, top_k, dim=1).values[:, -1:]
        weights = torch.where(chosen_pub >= kth, weights, torch.full_like(weights, -torch.inf))
    for row, columns in enumerate(banned or ()):
        weights[row, torch.as_tensor(np.asarray(columns, dtype=np.int64), device=weights.device)] = -torch.inf
    return torch_inverse_cdf_rows(torch.exp(weights - weights.max(dim=1, keepdim=True).values), row_uniforms(rngs))


def sample_public_base_logits(doc: Any, pub: Any, candidates: np.ndarray, epsilon: float,
                              rngs: Sequence[np.random.Generator], clip: float = DEFAULT_CLIP,
                              sensitivity: float | None = None, top_k: int = 0,
                              banned: Sequence[Any] | None = None) -> np.ndarray:
    """The public-base draw for a step's logits wherever the engine left them: tensors on an
    accelerator drawn there (:func:`sample_public_base_rows_torch`), anything else on the host.
    Returns positions in ``candidates`` as a NumPy array (a row's token is needed on the host).

    >>> import torch
    >>> sample_public_base_logits(torch.tensor([[0.0, 40.0]]), torch.zeros((1, 2)), np.arange(2), 1e6,
    ...                           [np.random.default_rng(0)]).tolist()
    [1]
    """
    if on_accelerator(doc):
        return sample_public_base_rows_torch(doc, pub, candidates_on_device(doc.device, candidates), epsilon, rngs,
                                             clip, sensitivity, top_k, banned).cpu().numpy()
    return sample_public_base_rows(host_array(doc), host_array(pub), candidates, epsilon, rngs, clip, sensitivity,
                                   top_k, banned)


def _checked_candidates(candidates: Any) -> np.ndarray:
    candidates = np.asarray(candidates, dtype=np.int64)
    if candidates.ndim != 1 or candidates.size == 0:
        raise InvalidParameterError(f"candidates must be a non-empty 1-D array, got shape {candidates.shape}")
    return candidates


def public_base_wording(mechanism: Any, drawn: int, units: int) -> tuple[str, tuple[str, ...]]:
    """How a ``paraphrase`` release (``mechanism``) drawn on a public base was made, and what that
    assumes, as its Guarantee words them (``how``, ``assumptions``): it drew ``drawn`` tokens over
    ``units`` units."""
    from textveil.mechanisms.prompting import PUBLIC_PROMPTS
    from textveil.mechanisms.task_phrases import TASK_PHRASES
    from textveil.mechanisms.unit_plan import stop_rule_words

    limit = mechanism.max_new_tokens
    draws = limit * units
    eps, clip, top_k = float(mechanism.epsilon), float(mechanism.clip), int(mechanism.top_k)
    words = PUBLIC_PROMPTS[mechanism.public_prompt]
    context = (" Each unit's prompt shows the unit before it and the reply released for it first, and the public "
               f"prompt shows that reply after '{words.first}' and asks '{words.following}': released output in "
               "both, so this costs nothing more." if mechanism.context == "previous" else "")
    support = (f", among the public model's {top_k} likeliest tokens at each step (a support chosen without the "
               "document)" if top_k > 0 else "")
    how = (
        f"paraphrase on a public base: each output token v was drawn with epsilon = {eps:g} as "
        f"Pr[v] proportional to p_pub(v) * exp(epsilon * clip(log p_doc(v) - log p_pub(v), -{clip:g}, {clip:g}) / "
        f"(4 * {clip:g})), over the output vocabulary ({mechanism._vocabulary_size()}){support}; p_pub is the "
        f"language model given the public prompt (system '{words.system}', then '{words.first}': no word of the "
        "document) and the reply so far, p_doc the same model given the same prompt with the unit's words put "
        "before the instruction, and the same reply so far, both normalised over the output vocabulary. A token "
        f"that would complete one of {len(TASK_PHRASES)} public phrases about the task ('Here is', 'rewritten', "
        "'the text'...) after the reply so far was not drawn (a rule on released output). This is the "
        "exponential mechanism with the public base measure p_pub and a score whose range has width "
        f"{2 * clip:g} whatever the input (its sensitivity), so each draw is {eps:g}-differentially private. The "
        f"input was cut into {units} unit(s) by a public rule, and each unit got its own reply of "
        f"{stop_rule_words(limit, int(mechanism.end_after))} ({draws} draws at most).{context} By adaptive "
        f"sequential composition the release is ({eps * draws:g})-differentially private against any other input "
        "text cut into as many units"
        + (f"; this release drew {drawn} token(s), so its own likelihood ratio is at most exp({eps * drawn:g})"
           if units else "") + "."
    )
    assumptions = (
        f"the language model ({mechanism.model}), the public prompt ('{mechanism.public_prompt}': system "
        f"'{words.system}', '{words.first}' / '{words.following}') and the list of phrases about the task are public",
        f"its logits were computed by {mechanism.engine_description()} (a public, fixed function of the input)",
        f"the output vocabulary, {mechanism._vocabulary_statement()}, is public and was fixed before any private "
        "text was read",
        "the model was not trained on the released texts (the score is a fixed function of the input)",
        f"C = {clip:g}, top k = {top_k}, the public prompt and the phrase list were fixed before any private text "
        "was seen",
    )
    return how, assumptions
