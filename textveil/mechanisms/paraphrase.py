"""Rewriting with a pretrained language model: ``paraphrase`` (epsilon-DP, DP-Prompt) and
``restyle`` (plain sampling, no guarantee).

A document is cut into units by a public rule (:mod:`textveil.mechanisms.document_units`:
paragraphs by default, each at most ``max_input_tokens`` model tokens), and a public template
asks the model to paraphrase each unit, after the unit before it and its released reply::

    system:    You rewrite texts in plain, neutral English.
    user:      Paraphrase the following text in your own words:

               <the unit before this one, in its section>
    assistant: <the reply released for it>
    user:      Paraphrase the following text in your own words:

               <this unit>

Each reply is written token by token (:func:`textveil.models.lm_decoding.decode`) and ends at an
end token or a line break; the release is the replies, one paragraph per unit.

``paraphrase`` (Utpala, Hooker and Chen, DP-Prompt, Findings of EMNLP 2023; paper 002's
Algorithm 1 with a generator pretrained on public text) draws every output token v, the end
token included, by the exponential mechanism

    Pr[v] proportional to exp(epsilon * u(v) / (2 w))

over the model's output vocabulary (its control tokens other than the end tokens left out, a
public choice), with one of two scores whose range has width w for every input
(:mod:`textveil.mechanisms.scores`):

- ``relative`` (the default): u(v) = clip(logit_v - max_u logit_u, -w, 0). Every token within w
  of the step's best is drawn as by plain sampling at temperature 2w / epsilon; every token
  further down ties at the floor, with weight exp(-epsilon / 2) against the best.
- ``clipped`` (DP-Prompt's): u(v) = clip(logit_v, b2 - w, b2), b2 = ``clip_high``. The tokens
  above b2 tie, and where a step's logits sit low most of the mass lies on the floor's 49k
  tokens: measured here, it writes gibberish where ``relative`` is readable (docs/results).

The template is :mod:`textveil.mechanisms.prompting`'s; how a batch of documents becomes decode
rows (sections, streams, the line-break stop rule) is :mod:`textveil.mechanisms.unit_plan`'s; the
draw, wherever the engine left the logits, is :mod:`textveil.mechanisms.sampling`'s.

Sensitivity: u(x, v) lies in an interval of width w whatever the input x (and whatever the
tokens drawn before), so |u(x, v) - u(x', v)| <= w for any two inputs; the exponential mechanism
with the factor 2 w is then epsilon-DP for each token (McSherry and Talwar 2007). A reply of at
most L = ``max_new_tokens`` tokens is (epsilon * L)-DP by adaptive sequential composition: step
i's scores depend on the input and on tokens already drawn, which are public output, and a
document of n units is (epsilon * L * n)-DP against any other cut into as many units (whatever
part of the document or earlier replies a prompt holds). The length is drawn (an end token or a
line break is a token like any other), so it is covered; a reply that reaches L tokens is cut
there, a public rule. Nothing is copied from the input but the number of units (named
unprotected). w is public and fixed
before any private text is seen: the default 15 was set before any private text was read, and
:func:`textveil.evaluation.width_calibration.calibrate_width` on public text (the model's own
paraphrases of public-domain openings)
finds 13.5 the smallest width whose floor holds at most 0.001 of the model's probability at the
median step; 15 keeps more of the model's distribution above the floor.

``restyle`` is the same model and template sampled at a temperature with no privacy
accounting: the style-normalisation baseline, its risk measured, not bounded.

>>> from textveil.models.toy_language_model import toy_language_model
>>> toy = toy_language_model(["calm", "sea"])
>>> mechanism = Paraphrase(30.0, language_model=toy, max_new_tokens=4, seed=1)
>>> mechanism.planned_spend("calm sea")  # one unit of at most L = 4 draws, each epsilon = 30
(120.0, 'dp epsilon per document')
>>> release = mechanism.sanitize("calm sea")
>>> release.units, set(release.text.split()) <= {"calm", "sea", "system", "user", "assistant"}
(1, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import dataclasses
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import Mechanism, ProgressCallback, Release
from textveil.mechanisms.document_units import join_units
from textveil.mechanisms.prompting import (
    PUBLIC_PROMPTS,
    context_prompt,
    document_prompt,
    public_opening,
    public_prompt,
    template_opening,
    template_prompt,
    with_placeholder_note,
)
from textveil.mechanisms.task_phrases import PhraseBan, ReplyTails, phrases_digest
from textveil.mechanisms.sampling import (
    child_generator,
    make_rng,
    sample_clipped_exponential_logits,
)
from textveil.mechanisms.public_base import (
    DEFAULT_CLIP,
    PUBLIC_BASE_PLACEHOLDER_RULE,
    public_base_wording,
    sample_public_base_logits,
)
from textveil.mechanisms.scores import (
    DEFAULT_CLIP_HIGH,
    DEFAULT_WIDTH,
    PUBLIC_BASE,
    clipped_logit_scores,
    score_range,
)
from textveil.mechanisms.score_wording import score_wording
from textveil.mechanisms.unit_plan import (
    CONTEXT_MARGIN,
    SECTION_UNITS,
    UnitPlan,
    line_break_tokens,
    model_units,
    sentence_stop,
    units_progress,
)
from textveil.models.device import check_device
from textveil.privacy.claims import ReleaseView
from textveil.privacy.guarantee import Guarantee


class LanguageModelRewriter(Mechanism):
    """What ``paraphrase`` and ``restyle`` share: the model, the template, batching and the
    per-text random streams. Subclasses say how a step's logits become a drawn token."""

    resources: ClassVar[tuple[str, ...]] = ("language_model",)

    def _init_model(self, language_model: Any, batch_size: int | None, device: str) -> None:
        from textveil.mechanisms.output_vocabulary import parse_vocabulary

        self.vocabulary = parse_vocabulary(self.vocabulary)
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise InvalidParameterError(f"batch_size must be an integer >= 1 (or None: the engine's choice), got "
                                        f"{batch_size!r}")
        check_device(device)
        self.batch_size = batch_size
        self.device = device
        self._rng = make_rng(self.seed)
        if language_model is None:
            from textveil.models.language_model import language_model_unavailable

            reason = language_model_unavailable(self.model)
            if reason is not None:
                raise InputError(reason)
        else:
            if self.model == self.spec().parameter("model").default:
                # A model handed over loaded names itself, unless the caller named it (a path stays a path).
                self.model = language_model.name
            running = language_model.engine.name
            if self.engine not in ("auto", running):
                raise InvalidParameterError(f"engine={self.engine} was asked for, but the language model handed over "
                                            f"runs on {running}; load it with engine='{self.engine}' or ask for "
                                            f"engine={running}")
        self.language_model = language_model  # loaded on first use when None: construction stays cheap

    @classmethod
    def unavailable(cls) -> str | None:
        from textveil.models.language_model import language_model_unavailable

        return language_model_unavailable()

    def _resources(self) -> dict[str, Any]:
        return {"language_model": self.language_model, "batch_size": self.batch_size, "device": self.device}

    def _lm(self) -> Any:
        if self.language_model is None:
            from textveil.models.language_model import load_language_model

            self.language_model = load_language_model(self.model, self.device, self.engine)
        return self.language_model

    def vocabulary_hash(self) -> str:
        """The model's weights and tokenizer: what every release is drawn from."""
        return str(self._lm().content_hash)

    def engine_description(self) -> str:
        """What runs the model, as the Guarantee names it."""
        lm = self.language_model
        if lm is None:  # nothing was rewritten (every input empty): the model was not loaded
            return f"engine {self.engine} (not run: nothing was rewritten)"
        return f"{lm.engine.description}, model digest {lm.content_hash}"

    # -- the template ------------------------------------------------------------------

    placeholder_rule = ("each placeholder is kept whole in the prompt (no cut splits one, and a public note after "
                        "the input asks to keep it as written), and its tokens are in the output vocabulary: the "
                        "model may copy it, each token drawn like any other (covered by epsilon)")

    def prompt_ids(self, unit: str, previous: tuple[str, str] | None = None) -> list[int]:
        """The template holding ``unit`` (one unit of a document, :meth:`units`), with the public
        placeholder note where it holds any; with ``previous`` (the unit before it in its section
        and the reply released for it), that exchange is shown first, as an earlier turn. On a
        public base, the public prompt with the unit (no note) before its instruction."""
        lm = self._lm()
        if self.public_base:
            return document_prompt(lm, self.public_prompt, unit, previous)
        before = None if previous is None else (with_placeholder_note(previous[0]), previous[1])
        if before is None:
            return template_prompt(lm, with_placeholder_note(unit), self.prompt)
        return context_prompt(lm, with_placeholder_note(unit), self.prompt, before)

    def _opening_length(self) -> int:
        """How many tokens every prompt of a release starts with (read once by the engine): the
        template's opening, or on a public base the public prompt's system turn, which both rows share."""
        lm = self._lm()
        return len(public_opening(lm, self.public_prompt) if self.public_base else template_opening(lm, self.prompt))

    def units(self, text: str) -> list[str]:
        """The units of ``text`` a release rewrites, in order, by the public rule of
        :mod:`textveil.mechanisms.document_units` (``unit``, at most ``max_input_tokens`` model
        tokens each), the first ``max_units`` of them when that is set; none for an empty text."""
        return self._capped(self.all_units(text))

    def _capped(self, units: list[str]) -> list[str]:
        """``units`` up to the ``max_units`` cap (all of them without one)."""
        return units if not self.max_units else units[: self.max_units]

    def all_units(self, text: str) -> list[str]:
        """Every unit of ``text`` (:meth:`units` before the ``max_units`` cap)."""
        if not text.strip():  # nothing to cut: the model is not loaded for it
            return []
        return model_units(self._lm(), text, self.unit, int(self.max_input_tokens))

    def release_view(self, text: str) -> ReleaseView:
        """``text`` as the Guarantee sees it: its units (each read by the model with the unit before
        it and that unit's reply) go through at most L draws each, and the release copies nothing
        else but their number. An empty input is released empty without being read (named
        unprotected), so a pair holding one is not covered; two texts cut into the same units are
        read alike and released alike."""
        units = self.units(text)
        if not units:
            return ReleaseView((), (), draws=0)
        # The number of units is copied (named unprotected): two inputs with as many units are
        # covered, over every draw of the text.
        return ReleaseView(tuple(units), ("*",) * len(units), draws=int(self.max_new_tokens) * len(units))

    def output_vocabulary(self) -> Any:
        """The tokens a release is drawn from (:mod:`textveil.mechanisms.output_vocabulary`): every
        token but the control tokens that do not end a reply, or the ``vocabulary`` commonest of
        English; public, fixed before any text is read."""
        from textveil.mechanisms.output_vocabulary import output_vocabulary

        lm = self._lm()
        cached = getattr(self, "_vocabulary_cache", None)
        if cached is None or cached[0] is not lm:
            cached = self._vocabulary_cache = (lm, output_vocabulary(lm, self.vocabulary))
        return cached[1]

    def _candidates(self) -> np.ndarray:
        """The output vocabulary's token ids, sorted."""
        return self.output_vocabulary().ids

    def fingerprint(self) -> dict[str, Any]:
        """As every mechanism's, with the engine that computes the logits (llama.cpp and its
        weights format, or transformers: two engines give different releases for one seed) and the
        output vocabulary's digest. One round (``rewrites=1``) leaves ``rewrites`` out, and
        ``end_after=0`` (no sentence stop) leaves ``end_after`` out: the release is the one made
        before the parameter existed, so releases cached then are still read."""
        shown = super().fingerprint()
        # Parameters that leave the release as it was before they existed are left out, so that
        # releases cached then are still read: one round, no sentence stop, and the public-base
        # draw's C and public prompt under another score.
        unused = {"rewrites"} if int(self.rewrites) == 1 else set()
        unused |= {"end_after"} if int(self.end_after) <= 0 else set()
        # On a public base the prompt is the public prompt's kind (whose words and phrase list are
        # shown: other words, other releases); elsewhere the public-base parameters do nothing.
        unused |= {"prompt"} if self.public_base else {"clip", "public_prompt", "top_k"}
        shown["parameters"] = {k: v for k, v in shown["parameters"].items() if k not in unused}
        public = ({"public_prompt_words": dataclasses.asdict(PUBLIC_PROMPTS[self.public_prompt]),
                   "task_phrases": phrases_digest()} if self.public_base else {})
        return {**shown, **public, "engine": str(self._lm().engine.identity),
                "output_vocabulary": self.output_vocabulary().digest}

    def _vocabulary_size(self) -> str:
        """The output vocabulary's size in words (without loading the model when nothing was rewritten)."""
        return f"'{self.vocabulary}'" if self.language_model is None else f"{self.output_vocabulary().size:,} tokens"

    def _vocabulary_statement(self) -> str:
        """The output vocabulary as a Guarantee names it (without loading the model when nothing
        was rewritten)."""
        if self.language_model is None:
            return f"the output vocabulary '{self.vocabulary}'"
        vocabulary = self.output_vocabulary()
        return f"{vocabulary.description} (digest {vocabulary.digest})"

    # -- releasing -----------------------------------------------------------------------

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        """Release many texts, decoded ``batch_size`` rows at a time (the engine's choice when None:
        16 on a CPU, 1,024 on a GPU), each text with its own random stream."""
        texts = list(texts)
        return self._release(texts, [child_generator(self._rng) for _ in texts], progress)

    def sanitize_records(self, texts: Sequence[str], seeds: Sequence[int],
                         progress: ProgressCallback | None = None) -> list[Release]:
        """Each text with its own seed, all decoded together: text i's release is exactly
        ``self.with_params(seed=seeds[i]).sanitize(texts[i])``."""
        texts = list(texts)
        if len(seeds) != len(texts):
            raise InvalidParameterError(f"sanitize_records was given {len(seeds)} seeds for {len(texts)} texts: "
                                        "give one per text")
        return self._release(texts, [child_generator(make_rng(int(seed))) for seed in seeds], progress)

    def _release(self, texts: list[str], rngs: list[np.random.Generator],
                 progress: ProgressCallback | None) -> list[Release]:
        for text in texts:
            if not isinstance(text, str):
                raise InvalidParameterError(f"sanitize expects text (str), got {type(text).__name__}")
        rounds = int(self.rewrites)
        # Progress in texts, each round a share of it (the decoder tells finished units).
        told = None if progress is None else (lambda step: progress(step / rounds))
        releases = self._rewrite_once(texts, rngs, told)
        for _ in range(rounds - 1):
            # A later round reads the release alone (post-processing: no privacy cost), drawing on
            # from each text's own stream, so the seed still fixes every byte. What the Guarantee
            # says about the input (its units, the draws) stays the first round's.
            again = self._rewrite_once([release.text for release in releases], rngs, told)
            releases = [replace(release, text=later.text) for release, later in zip(releases, again)]
        return releases

    def _rewrite_once(self, texts: list[str], rngs: list[np.random.Generator],
                      progress: ProgressCallback | None) -> list[Release]:
        """One rewrite of every text, unit by unit (one round of :meth:`_release`)."""
        from textveil.models.lm_decoding import decode

        # One row per unit, each drawing from its own stream, drawn in order from its text's stream
        # (so a release depends on the text and its seed, never on the batch or the schedule). An
        # empty text has no unit: it is released empty (named in every Guarantee).
        plan = UnitPlan()
        left_out: list[int] = []
        for i, text in enumerate(texts):
            every = self.all_units(text)
            kept = self._capped(every)
            left_out.append(len(every) - len(kept))
            plan.add(i, kept, rngs[i], SECTION_UNITS)
        replies: list[tuple[list[int], bool]] = []
        if plan.units:
            replies = self._decode_units(plan, units_progress(progress, plan, len(texts)), decode)
        elif progress is not None and texts:
            progress(len(texts))
        releases = []
        lm = self.language_model
        for i in range(len(texts)):
            rows = plan.rows_of_text.get(i, [])
            drawn = sum(len(replies[r][0]) + int(replies[r][1]) for r in rows)
            text = join_units([lm.decode(replies[r][0]) for r in rows]) if rows else ""
            releases.append(Release(text, self._guarantee(drawn, len(rows), left_out[i]), units=len(rows),
                                    units_left_out=left_out[i]))
        return releases

    def _decode_units(self, plan: UnitPlan, progress: ProgressCallback | None, decode: Any
                      ) -> list[tuple[list[int], bool]]:
        """Every unit of ``plan`` decoded through the engine's batches together: a section's first
        unit at once, each later one as soon as the unit before it is written (its prompt holds that
        reply when ``context`` is ``previous``)."""
        from textveil.models.lm_decoding import compact_prompt

        lm = self._lm()
        candidates = self._candidates()
        with_context = self.context == "previous"
        # Each unit is one row, or, for a draw on a public base, a pair of rows side by side: the
        # unit's prompt (rows 2u) and the public prompt without the document (2u + 1), both
        # extended by the same drawn tokens. Without context no unit waits for another; with it, a
        # section's later units wait for the reply before them (their prompts are made then, by
        # ``successor``). Only the prompts ready now are kept, as 32-bit ids: a document of
        # thousands of units holds no list of them all.
        group = 2 if self.public_base else 1
        prompts: list[Sequence[int] | None] = []
        longest_alone = 0
        public = compact_prompt(self.public_prompt_ids()) if group == 2 else None  # the same for every unit
        for row, unit in enumerate(plan.units):
            alone = self.prompt_ids(unit)  # the unit's prompt without context
            longest_alone = max(longest_alone, len(alone))
            ready = not with_context or plan.previous[row] is None
            prompts.append(compact_prompt(alone) if ready else None)
            if group == 2:
                prompts.append(public if ready else None)
        own = plan.streams
        longest = self._longest_prompt(longest_alone, with_context)
        if longest + self.max_new_tokens > lm.context_length:
            raise InvalidParameterError(
                f"max_new_tokens = {self.max_new_tokens} after a prompt of up to {longest} tokens passes the language "
                f"model's context of {lm.context_length} tokens: give a smaller max_new_tokens or max_input_tokens")

        # On a public base, a token that would complete a public phrase about the task after the
        # reply so far is not drawn (task_phrases: a rule on released output); the tails of the
        # replies in flight are kept here, from the tokens this draw returns.
        stop = sentence_stop(lm, int(self.end_after))
        tails = (ReplyTails(PhraseBan.for_model(lm), candidates, (*lm.end_token_ids, *line_break_tokens(lm)),
                            int(self.max_new_tokens), stop) if self.bans_task_phrases else None)

        def choose(logits: np.ndarray, chosen_rows: np.ndarray) -> np.ndarray:
            # a pair's rows come together, in row order: one draw, its token for both rows
            units = chosen_rows[::group] // group
            rngs = [own[u] for u in units]
            if tails is None:
                return np.repeat(candidates[self._draw(logits, candidates, rngs)], group)
            drawn = candidates[self._draw(logits, candidates, rngs, banned=tails.banned(units))]
            tails.drawn(units, drawn)
            return np.repeat(drawn, group)

        def successor(row: int, tokens: list[int], ended: bool) -> Any:
            follower = plan.following[row // group]
            if follower is None:
                return None
            reply = lm.decode(tokens).strip()
            unit = (group * follower, self.prompt_ids(plan.units[follower], (plan.units[row // group], reply)))
            return unit if group == 1 else [unit, (group * follower + 1, self.public_prompt_ids(reply))]

        replies = decode(lm, prompts, self._opening_length(), self.max_new_tokens, choose,
                         batch_size=self.batch_size or lm.engine.default_batch_rows, progress=progress,
                         successor=successor if with_context else None, longest_prompt=longest,
                         more_end_token_ids=line_break_tokens(lm), device_logits=True, group_size=group,
                         sentence_stop=stop)
        return replies[::group]  # a pair's rows drew the same tokens

    def _longest_prompt(self, alone: int, with_context: bool) -> int:
        """A bound on every prompt, given ``alone``, the longest prompt of a unit without context:
        with context, the unit before it and its reply of at most L tokens come first (a reply's
        tokens may merge differently once decoded as text, hence the margin); a public prompt with
        context holds a reply of at most L tokens and two public instructions."""
        if not with_context:
            return max(alone, len(self.public_prompt_ids())) if self.public_base else alone
        longest = 2 * alone - self._opening_length() + 2 * int(self.max_new_tokens) + CONTEXT_MARGIN
        if self.public_base:
            public = len(self.public_prompt_ids(""))
            longest = max(longest, public + 2 * int(self.max_new_tokens) + CONTEXT_MARGIN)
        return longest

    public_base = False
    """Whether each token is drawn on a public base (a pair of rows per unit: the unit's prompt and
    a public prompt without the document); ``paraphrase``'s ``score="public-base"``."""

    @property
    def bans_task_phrases(self) -> bool:
        """Whether a token that would complete a public phrase about the task is left out of each
        draw (:mod:`~textveil.mechanisms.task_phrases`; ``_draw`` then takes ``banned``)."""
        return self.public_base

    def public_prompt_ids(self, previous_reply: str | None = None) -> list[int]:
        """The public prompt (:func:`~textveil.mechanisms.prompting.public_prompt`, kind
        ``public_prompt``): no word of the document; with ``previous_reply``, after it."""
        return public_prompt(self._lm(), getattr(self, "public_prompt", "post"), previous_reply)

    def _draw(self, logits: np.ndarray, candidates: np.ndarray, rngs: list[np.random.Generator]) -> np.ndarray:
        """One token per row of the step's ``logits`` (batch, V), as a position in ``candidates``
        (the output vocabulary), row i with its text's own generator ``rngs[i]``."""
        raise NotImplementedError  # pragma: no cover - each mechanism draws its own way

    def _guarantee(self, drawn: int, units: int, left_out: int = 0) -> Guarantee:
        """The Guarantee of a release that drew ``drawn`` tokens (end tokens included) over
        ``units`` rewritten units (0: an empty input, nothing read), ``left_out`` more units not
        read (the ``max_units`` cap)."""
        raise NotImplementedError  # pragma: no cover

    def _unit_rule(self) -> str:
        """The public cut, in words."""
        return {"paragraph": "each paragraph (ended by an empty line, or by a line break after a sentence's end)",
                "sentence": "each sentence (cut after '.', '!', '?' or '…' and at paragraph ends)",
                "text": "the text as few units as fit (whole paragraphs packed together)"}[self.unit]

    def _template_rules(self) -> tuple[str, ...]:
        """The public rules a release follows, as what every release leaves unprotected (the units a
        cap left out are the Guarantee's ``units_left_out``)."""
        cap = (f"; at most the first {self.max_units} units are rewritten, the rest is not read"
               if self.max_units else "")
        return (f"the number of units the input is cut into by a public rule: {self._unit_rule()} is a unit, and "
                f"one longer than {self.max_input_tokens} model tokens is cut into runs of whole sentences, then words, "
                f"then token windows; the release has one paragraph per unit{cap}",
                "an empty input is released empty")

    def _rounds_note(self) -> tuple[str, ...]:
        """The later rounds of a release (``rewrites``), in words, as the Guarantee's post-processing;
        none for one round."""
        extra = int(self.rewrites) - 1
        if not extra:
            return ()
        return (f"the release was rewritten {extra} more time(s) by the same model, prompt and draw, each round "
                "reading only the text the round before it released",)


class Paraphrase(LanguageModelRewriter):
    """The ``paraphrase`` mechanism (DP-Prompt): epsilon-DP per output token.

    >>> from textveil.models.toy_language_model import toy_language_model
    >>> toy = toy_language_model(["calm", "sea"])
    >>> Paraphrase(30.0, max_new_tokens=40, language_model=toy).planned_spend("calm sea\\n\\ncalm")  # 2 units
    (2400.0, 'dp epsilon per document')
    """

    name = "paraphrase"

    def __init__(self, epsilon: float, *, score: str = "relative", width: float = DEFAULT_WIDTH,
                 clip_high: float = DEFAULT_CLIP_HIGH, clip: float = DEFAULT_CLIP, public_prompt: str = "post",
                 top_k: int = 0, max_new_tokens: int = 96, end_after: int = 0, max_input_tokens: int = 64,
                 model: str = "smollm2-135m-instruct", engine: str = "auto", vocabulary: str = "all",
                 prompt: str = "paraphrase", unit: str = "paragraph", max_units: int = 0, context: str = "previous",
                 rewrites: int = 1, seed: int | None = None, language_model: Any = None,
                 batch_size: int | None = None, device: str = "auto") -> None:
        self._check_parameters(epsilon=epsilon, score=score, width=width, clip_high=clip_high, clip=clip,
                               public_prompt=public_prompt, top_k=top_k, max_new_tokens=max_new_tokens,
                               end_after=end_after, max_input_tokens=max_input_tokens, model=model,
                               engine=engine, vocabulary=vocabulary, prompt=prompt, unit=unit,
                               max_units=max_units, context=context, rewrites=rewrites, seed=seed)
        self._init_model(language_model, batch_size, device)
        if self.public_base:
            # No note is added on a public base: the document's row would read it between the document
            # and the instruction, and the draw then favours talk about "a detail that was removed".
            self.placeholder_rule = PUBLIC_BASE_PLACEHOLDER_RULE

    @property
    def public_base(self) -> bool:  # type: ignore[override]
        """Whether each token is drawn on a public base (``score="public-base"``)."""
        return self.score == PUBLIC_BASE

    @property
    def sensitivity(self) -> float:
        """The width of the score's range whatever the input: w, or 2C on a public base."""
        return 2.0 * float(self.clip) if self.public_base else float(self.width)

    def score_range(self) -> tuple[float, float, bool]:
        """The score as u(v) = clip(logit_v - s, low, high): (low, high, whether s is the step's
        largest logit; else s = 0), by :func:`~textveil.mechanisms.scores.score_range` (not the
        public-base score's: it reads two rows of logits, :mod:`~textveil.mechanisms.public_base`)."""
        if self.public_base:
            raise InvalidParameterError("the public-base score reads two rows of logits a step: see "
                                        "textveil.mechanisms.public_base.public_base_log_weights")
        return score_range(self.score, self.width, self.clip_high)

    def scores(self, logits: np.ndarray) -> np.ndarray:
        """The step's scores u(v) over the output vocabulary (rows: texts), the draw's own
        (:func:`~textveil.mechanisms.scores.clipped_logit_scores`)."""
        return clipped_logit_scores(logits, *self.score_range())

    def _draw(self, logits: Any, candidates: np.ndarray, rngs: list[np.random.Generator],
              banned: list[np.ndarray] | None = None) -> np.ndarray:
        if self.public_base:  # rows in pairs: the unit's prompt's logits, then the public prompt's
            return sample_public_base_logits(logits[0::2], logits[1::2], candidates, self.epsilon, rngs, self.clip,
                                             sensitivity=self.sensitivity, top_k=int(self.top_k), banned=banned)
        # The exponential mechanism on these scores over the candidates; the floor is counted, not
        # exponentiated (the same distribution, a fifth of the time), wherever the logits are.
        low, high, relative = self.score_range()
        return sample_clipped_exponential_logits(logits, candidates, low, high, self.epsilon, rngs, relative=relative,
                                                 sensitivity=self.sensitivity)

    def spend_per_release(self) -> tuple[float, str] | None:
        """epsilon * L * max_units per text where ``max_units`` caps the units (known before any text
        is read); None without a cap: the spend then depends on the number of units, a public
        function of the text (:meth:`planned_spend`)."""
        if not self.max_units:
            return None
        return float(self.epsilon) * self.max_new_tokens * self.max_units, "dp epsilon per document"

    def planned_spend(self, text: str) -> tuple[float, str]:
        """What releasing ``text`` spends: epsilon * L * (its number of units), computed by the public
        cut before the model reads it (no randomness), whatever the replies' lengths."""
        return float(self.epsilon) * self.max_new_tokens * len(self.units(text)), "dp epsilon per document"

    def _guarantee(self, drawn: int, units: int, left_out: int = 0) -> Guarantee:
        limit = self.max_new_tokens
        draws = limit * units  # the most tokens this release could draw
        how, assumptions = (public_base_wording(self, drawn, units) if self.public_base
                            else score_wording(self, drawn, units))
        unprotected = ("nothing copied from the input: every output token, the end token included, was drawn by "
                       "the mechanism", *self._template_rules())
        return Guarantee(mechanism=self.name, epsilon=float(self.epsilon), kind="dp", unit="token",
                         composition="sequential", words_protected=draws if units else 0, layout="public",
                         protected="every output token, the end token included, drawn anew (none is copied)",
                         unprotected_in_general=unprotected, assumptions=assumptions, how=how,
                         post_processing=self._rounds_note(), tokens_per_unit=limit, units_rewritten=units,
                         units_left_out=left_out)
