"""``restyle``: the language model rewrites the text by plain sampling at a temperature, with no
formal guarantee: the style-normalisation baseline of :mod:`textveil.mechanisms.paraphrase`, whose
model, templates, units and engines it shares; its risk is measured, not bounded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textveil.mechanisms.paraphrase import LanguageModelRewriter
from textveil.mechanisms.redaction import no_guarantee
from textveil.mechanisms.sampling import sample_exponential_mechanism_logits
from textveil.privacy.guarantee import Guarantee


class Restyle(LanguageModelRewriter):
    """The ``restyle`` mechanism: the same model and template, plain sampling at a temperature;
    no formal guarantee (the style-normalisation baseline)."""

    name = "restyle"

    def __init__(self, *, temperature: float = 0.7, max_new_tokens: int = 96, end_after: int = 0,
                 max_input_tokens: int = 64,
                 model: str = "smollm2-135m-instruct", engine: str = "auto", vocabulary: str = "all",
                 prompt: str = "paraphrase", unit: str = "paragraph", max_units: int = 0, context: str = "previous",
                 rewrites: int = 1, seed: int | None = None, language_model: Any = None,
                 batch_size: int | None = None, device: str = "auto") -> None:
        self._check_parameters(temperature=temperature, max_new_tokens=max_new_tokens, end_after=end_after,
                               max_input_tokens=max_input_tokens, model=model, engine=engine, vocabulary=vocabulary,
                               prompt=prompt, unit=unit, max_units=max_units, context=context, rewrites=rewrites,
                               seed=seed)
        self._init_model(language_model, batch_size, device)

    def _draw(self, logits: Any, candidates: np.ndarray, rngs: list[np.random.Generator]) -> np.ndarray:
        # Pr[v] proportional to exp(logit_v / T): the exponential mechanism's form with
        # epsilon / 2 = 1 / T on the raw logits, which are unbounded (no privacy is claimed).
        return sample_exponential_mechanism_logits(logits, candidates, 2.0 / self.temperature, rngs)

    def _guarantee(self, drawn: int, units: int, left_out: int = 0) -> Guarantee:
        return no_guarantee(
            self.name,
            f"The text was cut into {units} unit(s) by a public rule and each rewritten by the language model "
            f"{self.model} ({self.engine_description()}), sampled at temperature {self.temperature:g} (at most "
            f"{self.max_new_tokens} tokens a unit" + (f", a reply ended at its first sentence end after {self.end_after} "
                                                      "tokens" if self.end_after > 0 else "") + ").",
            ("anything the model copies from the input: names, places, numbers, rare words and phrasing",
             "the input's content and much of its structure", *self._template_rules()),
            drawn, post_processing=self._rounds_note(), tokens_per_unit=self.max_new_tokens, units_rewritten=units,
            units_left_out=left_out)
