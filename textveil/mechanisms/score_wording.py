"""How a ``paraphrase`` release by the relative or the clipped score was made, as its Guarantee
words it (the public-base score's wording is :func:`~textveil.mechanisms.public_base.public_base_wording`).
"""

from __future__ import annotations

from typing import Any

from textveil.mechanisms.unit_plan import SECTION_UNITS, stop_rule_words


def score_wording(mechanism: Any, drawn: int, units: int) -> tuple[str, tuple[str, ...]]:
    """How a ``paraphrase`` release (``mechanism``) by the relative or the clipped score was made,
    and what that assumes, as its Guarantee words them (``how``, ``assumptions``): it drew
    ``drawn`` tokens over ``units`` units (:func:`~textveil.mechanisms.public_base.public_base_wording`
    words the public-base score)."""
    limit = mechanism.max_new_tokens
    draws = limit * units  # the most tokens this release could draw
    eps = float(mechanism.epsilon)
    if mechanism.score == "relative":
        rating = f"clip(logit - the step's largest logit, -{mechanism.width:g}, 0)"
    else:
        rating = f"clip(logit, {mechanism.clip_high - mechanism.width:g}, {mechanism.clip_high:g})"
    assumptions = (
        f"the language model ({mechanism.model}) and the prompt template ('{mechanism.prompt}') are public",
        f"its logits were computed by {mechanism.engine_description()} (a public, fixed function of the input)",
        f"the output vocabulary, {mechanism._vocabulary_statement()}, is public and was fixed before any private "
        "text was read",
        "the model was not trained on the released texts (the score is a fixed function of the input)",
        f"w = {mechanism.width:g}" + ("" if mechanism.score == "relative" else f" and b2 = {mechanism.clip_high:g}")
        + (" was" if mechanism.score == "relative" else " were") + " fixed before any private text was seen",
    )
    context = (" Each unit's prompt shows the unit before it in its section (of at most "
               f"{SECTION_UNITS} units) and the reply released for it as an earlier exchange: every token's "
               "score still lies in an interval of width w whatever the input, so this costs nothing more."
               if mechanism.context == "previous" else "")
    how = (
        f"paraphrase: each output token v was drawn by the exponential mechanism with epsilon = {eps:g}, "
        f"Pr[v] proportional to exp(epsilon * u(v) / (2 w)) with w = {mechanism.width:g}, over the output vocabulary "
        f"({mechanism._vocabulary_size()}), scored by u(v) = {rating}: the score lies in an interval of width "
        f"{mechanism.width:g} whatever the input, so its sensitivity is {mechanism.width:g} and each draw is "
        f"{eps:g}-differentially private. The input was cut into {units} unit(s) by a public rule, and each unit "
        f"got its own reply of {stop_rule_words(limit, int(mechanism.end_after))} ({draws} draws at most)."
        f"{context} By adaptive sequential composition the "
        f"release is ({eps * draws:g})-differentially private against any other input text cut into as many "
        "units"
        + (f"; this release drew {drawn} token(s), so its own likelihood ratio is at most exp({eps * drawn:g})"
           if units else "") + "."
    )
    return how, assumptions
