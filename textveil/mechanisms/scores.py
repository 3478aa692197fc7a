"""The scores the language-model mechanisms rate a step's tokens by, one function per score: the
draws (:mod:`textveil.mechanisms.sampling`), the mechanisms, the tests and the audit all use it.

The exponential mechanism draws a token v with Pr[v] proportional to exp(epsilon * u(v) / (2 w)),
where every score u lies in an interval of width w whatever the input (its sensitivity). The
``paraphrase`` scores are one formula over a step's logits (:func:`clipped_logit_scores`),

    u(v) = clip(logit_v - s, low, high),   s = the step's largest logit (``relative``) or 0,

each with its own range (:func:`score_range`):

- ``relative`` (the default): clip(logit_v - max_u logit_u, -w, 0). Every token within w of the
  step's best is drawn as by plain sampling at temperature 2w / epsilon; every token further down
  ties at the floor, with weight exp(-epsilon / 2) against the best.
- ``clipped`` (DP-Prompt's): clip(logit_v, b2 - w, b2), b2 = ``clip_high``. The tokens above b2
  tie, and where a step's logits sit low most of the mass lies on the floor.

>>> logits = np.array([[30.0, 25.0, 2.0]])
>>> clipped_logit_scores(logits, *score_range("relative", width=15.0)).tolist()
[[0.0, -5.0, -15.0]]
>>> clipped_logit_scores(logits, *score_range("clipped", width=15.0, clip_high=22.0)).tolist()
[[22.0, 22.0, 7.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.models.device import is_torch_tensor

PUBLIC_BASE = "public-base"
"""The score that draws each token on a public base (:mod:`textveil.mechanisms.public_base`): it
reads two rows of logits a step, so it is not one of :func:`clipped_logit_scores`'."""
SCORES = ("relative", "clipped", PUBLIC_BASE)
"""The scores ``paraphrase`` draws by (its ``score`` parameter)."""
DEFAULT_WIDTH = 15.0
"""w, fixed before any private text was read; public-text calibration
(:func:`textveil.evaluation.width_calibration.calibrate_width`) gives 13.5."""
DEFAULT_CLIP_HIGH = 24.0
"""b2 for the ``clipped`` score: the median of the steps' largest logits on the same public text (23.9)."""


def score_range(score: str, width: float, clip_high: float = DEFAULT_CLIP_HIGH) -> tuple[float, float, bool]:
    """The score ``score`` as (low, high, relative) of :func:`clipped_logit_scores`: an interval of
    width ``width`` (the sensitivity), shifted by the step's largest logit where ``relative``.

    >>> score_range("relative", 15.0), score_range("clipped", 15.0, clip_high=24.0)
    ((-15.0, 0.0, True), (9.0, 24.0, False))
    """
    if score == "relative":
        return -float(width), 0.0, True
    if score == "clipped":
        return float(clip_high) - float(width), float(clip_high), False
    raise InvalidParameterError(f"unknown score {score!r}; use one of: {', '.join(SCORES)}")


def clipped_logit_scores(logits: Any, low: float, high: float, relative: bool, largest: Any = None) -> Any:
    """u(v) = clip(logits[v] - s, low, high) over the last axis: s is each row's largest logit
    where ``relative`` (or ``largest``, where the caller has it: a draw that reads a few entries of
    a row), else 0. ``logits`` is a NumPy array (scored in float64) or a torch tensor (scored in
    its own dtype, on its device); the result has its shape, each entry in [low, high] whatever
    the logits.

    >>> clipped_logit_scores(np.array([3.0, 1.0, -9.0]), -5.0, 0.0, True).tolist()
    [0.0, -2.0, -5.0]
    """
    if is_torch_tensor(logits):
        shift = (logits.max(dim=-1, keepdim=True).values if largest is None else largest) if relative else 0.0
        return (logits - shift).clamp(min=low, max=high)
    values = np.asarray(logits, dtype=np.float64)
    shift = (values.max(axis=-1, keepdims=True) if largest is None else largest) if relative else 0.0
    return np.clip(values - shift, low, high)
