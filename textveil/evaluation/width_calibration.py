"""Calibration of ``paraphrase``'s public score parameters on public text: an offline experiment,
run once, whose result is fixed in the mechanism's defaults before any private text is read
(:data:`textveil.mechanisms.scores.DEFAULT_WIDTH`, :data:`~textveil.mechanisms.scores.DEFAULT_CLIP_HIGH`).

The model paraphrases public texts (public-domain openings, never a corpus to be released) by plain
sampling at temperature 1, and at every step the gaps between the largest logit and the others are
recorded: w is the smallest width whose floor holds at most a given share of the model's own
probability at the median step; b2 is the median of the steps' largest logits.
``benchmarks/comparisons/calibrate_paraphrase.py`` runs it on the bundled model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from textveil.mechanisms.output_vocabulary import output_vocabulary
from textveil.mechanisms.prompting import template_opening, template_prompt
from textveil.mechanisms.sampling import child_generator, make_rng, sample_exponential_mechanism_rows
from textveil.mechanisms.scores import DEFAULT_WIDTH
from textveil.models.lm_decoding import decode


def calibrate_width(language_model: Any, public_texts: Sequence[str], mass: float = 1e-3,
                    max_new_tokens: int = 48, seed: int = 0, vocabulary: str = "all",
                    prompt: str = "paraphrase") -> dict[str, float]:
    """Pick w (and b2 for the clipped score) from public text only: the smallest w such that, on
    replies the model writes to ``public_texts`` (plain sampling at temperature 1 over the output
    ``vocabulary``, under ``prompt``), the model's own probability of the vocabulary's tokens more
    than w below a step's best is at most ``mass`` at the median step; b2 is the median of the
    steps' largest logits.

    Run once with texts that are not to be released (the default came from the model's own
    replies to public prompts); the result is then fixed for every release.

    >>> from textveil.models.toy_language_model import toy_language_model
    >>> flat = toy_language_model(["calm", "sea"])  # every logit 0: nothing lies below the best
    >>> result = calibrate_width(flat, ["calm sea"], max_new_tokens=2)
    >>> result["width"], result["floor_mass_at_width"], result["default_width"]
    (1.0, 0.0, 15.0)
    """
    steps: list[np.ndarray] = []
    rng = make_rng(seed)
    generators = [child_generator(rng) for _ in public_texts]
    candidates = output_vocabulary(language_model, vocabulary).ids

    def choose(logits: np.ndarray, rows: np.ndarray) -> np.ndarray:
        kept = logits[:, candidates]
        steps.append(np.sort(kept, axis=1)[:, ::-1].astype(np.float64))
        return candidates[sample_exponential_mechanism_rows(kept, 2.0, [generators[r] for r in rows])]

    prompts = [template_prompt(language_model, t, prompt) for t in public_texts]
    decode(language_model, prompts, len(template_opening(language_model, prompt)), max_new_tokens, choose)
    ordered = np.vstack(steps)
    gaps = ordered[:, :1] - ordered  # how far each logit lies below the step's largest
    weights = np.exp(-gaps) / np.exp(-gaps).sum(axis=1, keepdims=True)  # the model's own probabilities

    def floor_mass(width: float) -> float:
        """The median step's probability of the tokens more than ``width`` below its best."""
        return float(np.median(np.where(gaps > width, weights, 0.0).sum(axis=1)))

    widths = np.arange(1.0, 60.5, 0.5)
    chosen = next((float(w) for w in widths if floor_mass(w) <= mass), 60.0)
    return {"width": chosen, "clip_high": float(np.median(ordered[:, 0])), "steps": float(len(ordered)),
            "floor_mass_at_width": floor_mass(chosen), "floor_mass_at_default": floor_mass(DEFAULT_WIDTH),
            "default_width": DEFAULT_WIDTH}

