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
public choice), with one of two scores whose range has width w for every input:

- ``relative`` (the default): u(v) = clip(logit_v - max_u logit_u, -w, 0). Every token within w
  of the step's best is drawn as by plain sampling at temperature 2w / epsilon; every token
  further down ties at the floor, with weight exp(-epsilon / 2) against the best.
- ``clipped`` (DP-Prompt's): u(v) = clip(logit_v, b2 - w, b2), b2 = ``clip_high``. The tokens
  above b2 tie, and where a step's logits sit low most of the mass lies on the floor's 49k
  tokens: measured here, it writes gibberish where ``relative`` is readable (docs/results).

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
:func:`calibrate_width` on public text (the model's own paraphrases of public-domain openings)
finds 13.5 the smallest width whose floor holds at most 0.001 of the model's probability at the
median step; 15 keeps more of the model's distribution above the floor.

``restyle`` is the same model and template sampled at a temperature with no privacy
accounting: the style-normalisation baseline, its risk measured, not bounded.

>>> from textveil.mechanisms.paraphrase import relative_scores, clipped_scores
>>> relative_scores(np.array([[30.0, 25.0, 2.0]]), width=15.0).tolist()
[[0.0, -5.0, -15.0]]
>>> clipped_scores(np.array([[30.0, 25.0, 2.0]]), high=22.0, width=15.0).tolist()
[[22.0, 22.0, 7.0]]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.base import Mechanism, ProgressCallback, Release
from textveil.mechanisms.document_units import join_units
from textveil.mechanisms.redaction import no_guarantee
from textveil.mechanisms.sampling import (
    make_rng,
    sample_clipped_exponential_rows,
    sample_clipped_exponential_rows_torch,
    sample_exponential_mechanism_rows,
    sample_exponential_mechanism_rows_torch,
)
from textveil.models.device import check_device
from textveil.privacy.claims import ReleaseView
from textveil.privacy.guarantee import Guarantee
from textveil.text.placeholders import is_placeholder
from textveil.text.tokenize import find_words

SYSTEM_PROMPT = "You rewrite texts in plain, neutral English."
INSTRUCTION = "Paraphrase the following text in your own words:"
"""The default public template: the model reads SYSTEM_PROMPT, then INSTRUCTION, an empty line and the input."""
NEUTRAL_INSTRUCTION = ("Rewrite the following text in plain, neutral English, keeping what it says. Do not describe it "
                       "or comment on it: reply with the rewritten text only.")
EXAMPLE = ("honestly i cant believe how long the line was at the post office today!!! waited like an hour lol, "
           "never again",
           "The queue at the post office was very long today. I waited for about an hour and will not go back.")
"""A public example exchange for the one-shot prompt, written for it (no released text in it)."""


@dataclass(frozen=True)
class PromptTemplate:
    """A public prompt: the system prompt (None: the model's own default), the instruction put
    before the input, and an optional example exchange shown first."""

    system: str | None
    instruction: str
    example: tuple[str, str] | None = None


PROMPTS = {
    "paraphrase": PromptTemplate(SYSTEM_PROMPT, INSTRUCTION),
    "neutral": PromptTemplate(SYSTEM_PROMPT, NEUTRAL_INSTRUCTION),
    "one-shot": PromptTemplate(SYSTEM_PROMPT, NEUTRAL_INSTRUCTION, (f"{NEUTRAL_INSTRUCTION}\n\n{EXAMPLE[0]}",
                                                                    EXAMPLE[1])),
    "default-system": PromptTemplate(None, INSTRUCTION),
}
"""The public prompts a release may use (the ``prompt`` parameter), each fixed before any private text:
``paraphrase`` (the default), ``neutral`` (a plain rewrite, no comment), ``one-shot`` (``neutral`` after
a public example) and ``default-system`` (``paraphrase`` under the model's own system prompt)."""

DEFAULT_WIDTH = 15.0
"""w, fixed before any private text was read; public-text calibration (:func:`calibrate_width`) gives 13.5."""
DEFAULT_CLIP_HIGH = 24.0
"""b2 for the ``clipped`` score: the median of the steps' largest logits on the same public text (23.9)."""
SEED_BOUND = 2**63
"""A text's own generator is seeded from its parent's stream with an integer below this."""


def relative_scores(logits: np.ndarray, width: float) -> np.ndarray:
    """u(v) = clip(logit_v - max logit, -width, 0), row by row: in [-width, 0] for any logits."""
    logits = np.asarray(logits, dtype=np.float64)
    return np.clip(logits - logits.max(axis=-1, keepdims=True), -width, 0.0)


def clipped_scores(logits: np.ndarray, high: float, width: float) -> np.ndarray:
    """u(v) = clip(logit_v, high - width, high): DP-Prompt's score, in a fixed interval of width ``width``."""
    return np.clip(np.asarray(logits, dtype=np.float64), high - width, high)


def on_device(logits: Any) -> bool:
    """Whether a step's logits are a torch tensor on an accelerator (left where the engine computed
    them): drawn there. Logits on the host, a NumPy array or a CPU tensor, go to the NumPy draw,
    whose counted floor is the faster one on a CPU (the same distribution and tokens)."""
    return type(logits).__module__.startswith("torch") and logits.device.type != "cpu"


def on_host(logits: Any) -> Any:
    """The step's logits as NumPy where they are not :func:`on_device` (a CPU tensor viewed)."""
    return logits.float().numpy() if type(logits).__module__.startswith("torch") else logits


def positions_on_host(positions: Any) -> np.ndarray:
    """A device draw's positions as a NumPy array (a row's token is needed on the host to end
    or continue it)."""
    return positions.cpu().numpy()


def text_generator(parent: np.random.Generator) -> np.random.Generator:
    """A text's own stream, seeded from its parent's: drawn in text order, so a text's release
    depends on its place in the input, never on the batch it is decoded in."""
    return make_rng(int(parent.integers(0, SEED_BOUND)))


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
        and the reply released for it), that exchange is shown first, as an earlier turn."""
        lm = self._lm()
        if previous is None:
            return template_prompt(lm, with_placeholder_note(unit), self.prompt)
        return context_prompt(lm, with_placeholder_note(unit), self.prompt,
                              (with_placeholder_note(previous[0]), previous[1]))

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
        from textveil.mechanisms.document_units import document_units

        if not text.strip():
            return []
        lm = self._lm()
        return document_units(text, self.unit, int(self.max_input_tokens), lambda piece: len(lm.encode(piece)),
                              lambda piece, size: _token_windows(lm, piece, size))

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

    def _device_candidates(self, logits: Any) -> Any:
        """:meth:`_candidates` as a long tensor on the device of ``logits`` (moved there once)."""
        import torch

        ids = self._candidates()
        kept = self.__dict__.get("_candidates_on_device")
        if kept is None or kept[0] is not ids or kept[1].device != logits.device:
            kept = self._candidates_on_device = (ids, torch.as_tensor(ids, dtype=torch.long, device=logits.device))
        return kept[1]

    def fingerprint(self) -> dict[str, Any]:
        """As every mechanism's, with the engine that computes the logits (llama.cpp and its
        weights format, or transformers: two engines give different releases for one seed) and the
        output vocabulary's digest. One round (``rewrites=1``) leaves ``rewrites`` out: the release
        is the one made before the parameter existed, so releases cached then are still read."""
        shown = super().fingerprint()
        if int(self.rewrites) == 1:
            shown["parameters"] = {k: v for k, v in shown["parameters"].items() if k != "rewrites"}
        return {**shown, "engine": str(self._lm().engine.identity),
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
        return self._release(texts, [text_generator(self._rng) for _ in texts], progress)

    def sanitize_records(self, texts: Sequence[str], seeds: Sequence[int],
                         progress: ProgressCallback | None = None) -> list[Release]:
        """Each text with its own seed, all decoded together: text i's release is exactly
        ``self.with_params(seed=seeds[i]).sanitize(texts[i])``."""
        texts = list(texts)
        if len(seeds) != len(texts):
            raise InvalidParameterError(f"sanitize_records was given {len(seeds)} seeds for {len(texts)} texts: "
                                        "give one per text")
        return self._release(texts, [text_generator(make_rng(int(seed))) for seed in seeds], progress)

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
        plan = _UnitPlan()
        left_out: list[int] = []
        for i, text in enumerate(texts):
            every = self.all_units(text)
            kept = self._capped(every)
            left_out.append(len(every) - len(kept))
            plan.add(i, kept, [text_generator(rngs[i]) for _ in kept], SECTION_UNITS)
        replies: list[tuple[list[int], bool]] = []
        if plan.units:
            replies = self._decode_units(plan, _units_progress(progress, plan, len(texts)), decode)
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

    def _decode_units(self, plan: _UnitPlan, progress: ProgressCallback | None, decode: Any
                      ) -> list[tuple[list[int], bool]]:
        """Every unit of ``plan`` decoded through the engine's batches together: a section's first
        unit at once, each later one as soon as the unit before it is written (its prompt holds that
        reply when ``context`` is ``previous``)."""
        from textveil.models.lm_decoding import compact_prompt

        lm = self._lm()
        candidates = self._candidates()
        with_context = self.context == "previous"
        # Without context no unit waits for another; with it, a section's later units wait for the
        # reply before them (their prompts are made then, by ``successor``). Only the prompts ready
        # now are kept, as 32-bit ids: a document of thousands of units holds no list of them all.
        prompts: list[Sequence[int] | None] = []
        longest_alone = 0
        for row, unit in enumerate(plan.units):
            alone = self.prompt_ids(unit)  # the unit's prompt without context
            longest_alone = max(longest_alone, len(alone))
            prompts.append(compact_prompt(alone) if not with_context or plan.previous[row] is None else None)
        own = plan.streams
        longest = self._longest_prompt(longest_alone, with_context)
        if longest + self.max_new_tokens > lm.context_length:
            raise InvalidParameterError(
                f"max_new_tokens = {self.max_new_tokens} after a prompt of up to {longest} tokens passes the language "
                f"model's context of {lm.context_length} tokens: give a smaller max_new_tokens or max_input_tokens")

        def choose(logits: np.ndarray, chosen_rows: np.ndarray) -> np.ndarray:
            return candidates[self._draw(logits, candidates, [own[r] for r in chosen_rows])]

        def successor(row: int, tokens: list[int], ended: bool) -> tuple[int, list[int]] | None:
            follower = plan.following[row]
            if follower is None:
                return None
            return follower, self.prompt_ids(plan.units[follower], (plan.units[row], lm.decode(tokens).strip()))

        return decode(lm, prompts, len(template_opening(lm, self.prompt)), self.max_new_tokens, choose,
                      batch_size=self.batch_size or lm.engine.default_batch_rows, progress=progress,
                      successor=successor if with_context else None,
                      longest_prompt=longest, more_end_token_ids=line_break_tokens(lm), device_logits=True)

    def _longest_prompt(self, alone: int, with_context: bool) -> int:
        """A bound on every prompt, given ``alone``, the longest prompt of a unit without context:
        with context, the unit before it and its reply of at most L tokens come first (a reply's
        tokens may merge differently once decoded as text, hence the margin)."""
        if not with_context:
            return alone
        opening = len(template_opening(self._lm(), self.prompt))
        return 2 * alone - opening + 2 * int(self.max_new_tokens) + CONTEXT_MARGIN

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

    def _template_rules(self, left_out: int = 0) -> tuple[str, ...]:
        cap = (f"; at most the first {self.max_units} units are rewritten, the rest is not read"
               + (f" ({left_out} unit(s) of this input were left out)" if left_out else "")) if self.max_units else ""
        return (f"the number of units the input is cut into by a public rule: {self._unit_rule()} is a unit, and "
                f"one longer than {self.max_input_tokens} model tokens is cut into runs of whole sentences, then words, "
                f"then token windows; the release has one paragraph per unit{cap}",
                "an empty input is released empty")

    def _rounds_note(self) -> str:
        """The later rounds of a release (``rewrites``), in words; empty for one round."""
        extra = int(self.rewrites) - 1
        if not extra:
            return ""
        return (f" The release was then rewritten {extra} more time(s) by the same model, prompt and draw, each round "
                "reading only the text the round before it released: post-processing of the release, which costs no "
                "privacy.")

    def units_note(self, units: int, left_out: int) -> str:
        """What a release's units were, in words (the CLI's summary says it)."""
        return f"{units} unit(s) rewritten" + (f", {left_out} left out by max_units={self.max_units}" if left_out else "")


SECTION_UNITS = 8
"""How many consecutive units of a document form a section: a section's units are rewritten in
order, each prompt holding the unit before it and its reply; sections are rewritten side by side,
so a long document fills the engine's batches (a public constant: where sections start is a
function of the text alone, never of the batch)."""
CONTEXT_MARGIN = 16
"""Tokens added to the bound on a prompt with context (a reply's tokens may merge differently once
decoded to text and read again)."""


class _UnitPlan:
    """The units of a batch of texts as rows: each row's unit, stream, the row before it in its
    section (None: a section's first) and the row after it."""

    def __init__(self) -> None:
        self.units: list[str] = []
        self.streams: list[np.random.Generator] = []
        self.previous: list[int | None] = []
        self.following: list[int | None] = []
        self.rows_of_text: dict[int, list[int]] = {}

    def add(self, text: int, units: list[str], streams: list[np.random.Generator], section: int) -> None:
        rows = []
        for k, (unit, stream) in enumerate(zip(units, streams)):
            row = len(self.units)
            first_of_section = k % section == 0
            self.units.append(unit)
            self.streams.append(stream)
            self.previous.append(None if first_of_section else row - 1)
            self.following.append(None)
            if not first_of_section:
                self.following[row - 1] = row
            rows.append(row)
        if rows:
            self.rows_of_text[text] = rows


def _token_windows(language_model: Any, piece: str, size: int) -> list[str]:
    """``piece`` cut into windows of at most ``size`` model tokens (a run with no space in it)."""
    ids = language_model.encode(piece)
    return [language_model.decode(ids[start:start + size]) for start in range(0, len(ids), size)]


def line_break_tokens(language_model: Any) -> tuple[int, ...]:
    """The model's tokens that hold a line break: a public stop rule ends a unit's reply at its
    first line break (a unit is one paragraph of the release; what a small model writes after a
    break is most often a remark about the task). Computed once per model."""
    cache = language_model.__dict__
    if "_line_break_tokens" not in cache:
        vocabulary = language_model.tokenizer.get_vocab()
        special = set(language_model.special_token_ids)
        found = sorted(index for index in vocabulary.values()
                       if index not in special and "\n" in language_model.decode([index]))
        cache["_line_break_tokens"] = tuple(found)
    return tuple(cache["_line_break_tokens"])


PLACEHOLDER_NOTE = "(Keep {listed} exactly as written: each stands for a detail that was removed.)"
"""A public note put after an input that holds the entity stage's placeholders, so the model copies
them rather than guessing a name: the same words for every text, naming only the placeholders."""


def with_placeholder_note(text: str) -> str:
    """``text`` with :data:`PLACEHOLDER_NOTE` after it where it holds placeholders.

    >>> print(with_placeholder_note("Ask <PERSON> in <LOCATION>, <PERSON>."))
    Ask <PERSON> in <LOCATION>, <PERSON>.
    <BLANKLINE>
    (Keep <PERSON> and <LOCATION> exactly as written: each stands for a detail that was removed.)
    >>> with_placeholder_note("No names here.")
    'No names here.'
    """
    found = list(dict.fromkeys(word for word in find_words(text) if is_placeholder(word) and word.isupper()))
    if not found:
        return text
    listed = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
    return f"{text}\n\n{PLACEHOLDER_NOTE.format(listed=listed)}"


INPUT_MARK = "\ue000"
"""A private-use character standing for the input where the template is split in two."""


def _template_parts(language_model: Any, prompt: str = "paraphrase") -> tuple[list[int], str, str]:
    """The template ``prompt`` split where the input starts: the opening as token ids, the rest as
    text, and the opening as text (computed once per model and prompt)."""
    cache = language_model.__dict__.setdefault("_template_parts", {})
    if prompt not in cache:
        template = PROMPTS[prompt]
        rendered = language_model.chat_text(template.system, f"{template.instruction}\n\n{INPUT_MARK}",
                                            template.example)
        head, tail = rendered.split(INPUT_MARK, 1)
        cache[prompt] = (list(language_model.encode(head)), tail, head)
    return cache[prompt]


def template_opening(language_model: Any, prompt: str = "paraphrase") -> list[int]:
    """The template's opening as token ids: the system prompt and the instruction, up to where the
    input starts. It is tokenized on its own, so every prompt starts with exactly these tokens
    whatever its input: the opening is read once, and it is a function of the public template
    alone, never of which texts share a batch."""
    return list(_template_parts(language_model, prompt)[0])


def context_prompt(language_model: Any, text: str, prompt: str, previous: tuple[str, str]) -> list[int]:
    """The template holding ``text`` after an earlier exchange: ``previous`` (the unit before it
    and the reply released for it) as a user turn with the same instruction and the assistant's
    answer. It starts with the same opening tokens as :func:`template_prompt`'s (the earlier turn
    opens as every turn does), so both kinds of prompt share the opening read once."""
    opening, _, head = _template_parts(language_model, prompt)
    template = PROMPTS[prompt]
    rendered = language_model.chat_text(template.system, f"{template.instruction}\n\n{text}", template.example,
                                        history=((f"{template.instruction}\n\n{previous[0]}", previous[1]),))
    if not rendered.startswith(head):  # pragma: no cover - a chat template that writes turns otherwise
        raise InputError(f"the language model's chat template does not open an earlier turn as it opens the "
                         f"prompt's; rewrite it with context=none")
    return list(opening) + list(language_model.encode(rendered[len(head):]))


def template_prompt(language_model: Any, text: str, prompt: str = "paraphrase") -> list[int]:
    """The template holding ``text``: its opening's tokens, then the input and the rest of the
    template tokenized together."""
    opening, tail, _ = _template_parts(language_model, prompt)
    return opening + list(language_model.encode(text + tail))


class Paraphrase(LanguageModelRewriter):
    """The ``paraphrase`` mechanism (DP-Prompt): epsilon-DP per output token.

    >>> from textveil.models.language_model import language_model_unavailable
    >>> if language_model_unavailable() is None:  # doctest: +SKIP
    ...     release = Paraphrase(30.0, max_new_tokens=40, seed=7).sanitize("The market rallied on Friday.")
    ...     release.guarantee.document_epsilon
    1200.0
    """

    name = "paraphrase"

    def __init__(self, epsilon: float, *, score: str = "relative", width: float = DEFAULT_WIDTH,
                 clip_high: float = DEFAULT_CLIP_HIGH, max_new_tokens: int = 96, max_input_tokens: int = 64,
                 model: str = "smollm2-135m-instruct", engine: str = "auto", vocabulary: str = "all",
                 prompt: str = "paraphrase", unit: str = "paragraph", max_units: int = 0, context: str = "previous",
                 rewrites: int = 1, seed: int | None = None, language_model: Any = None,
                 batch_size: int | None = None, device: str = "auto") -> None:
        self._check_parameters(epsilon=epsilon, score=score, width=width, clip_high=clip_high,
                               max_new_tokens=max_new_tokens, max_input_tokens=max_input_tokens, model=model,
                               engine=engine, vocabulary=vocabulary, prompt=prompt, unit=unit,
                               max_units=max_units, context=context, rewrites=rewrites, seed=seed)
        self._init_model(language_model, batch_size, device)

    @property
    def sensitivity(self) -> float:
        """w: every score lies in an interval of this width whatever the input."""
        return float(self.width)

    def score_range(self) -> tuple[float, float, bool]:
        """The score as u(v) = clip(logit_v - s, low, high): (low, high, whether s is the step's
        largest logit; else s = 0)."""
        if self.score == "relative":
            return -float(self.width), 0.0, True
        return float(self.clip_high) - float(self.width), float(self.clip_high), False

    def scores(self, logits: np.ndarray) -> np.ndarray:
        """The step's scores u(v) over the output vocabulary (rows: texts)."""
        low, high, relative = self.score_range()
        values = np.asarray(logits, dtype=np.float64)
        shift = values.max(axis=-1, keepdims=True) if relative else 0.0
        return np.clip(values - shift, low, high)

    def _draw(self, logits: Any, candidates: np.ndarray, rngs: list[np.random.Generator]) -> np.ndarray:
        # The exponential mechanism on these scores over the candidates; the floor is counted, not
        # exponentiated (the same distribution, a fifth of the time). Logits left on a device by
        # the engine are drawn there, with the same uniforms.
        low, high, relative = self.score_range()
        if on_device(logits):
            return positions_on_host(sample_clipped_exponential_rows_torch(
                logits, self._device_candidates(logits), low, high, self.epsilon, rngs, relative=relative,
                sensitivity=self.sensitivity))
        return sample_clipped_exponential_rows(on_host(logits), candidates, low, high, self.epsilon, rngs, relative=relative,
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
        eps = float(self.epsilon)
        if self.score == "relative":
            rating = f"clip(logit - the step's largest logit, -{self.width:g}, 0)"
        else:
            rating = f"clip(logit, {self.clip_high - self.width:g}, {self.clip_high:g})"
        unprotected = ("nothing copied from the input: every output token, the end token included, was drawn by "
                       "the mechanism", *self._template_rules(left_out))
        assumptions = (
            f"the language model ({self.model}) and the prompt template ('{self.prompt}') are public",
            f"its logits were computed by {self.engine_description()} (a public, fixed function of the input)",
            f"the output vocabulary, {self._vocabulary_statement()}, is public and was fixed before any private "
            "text was read",
            "the model was not trained on the released texts (the score is a fixed function of the input)",
            f"w = {self.width:g}" + ("" if self.score == "relative" else f" and b2 = {self.clip_high:g}")
            + (" was" if self.score == "relative" else " were") + " fixed before any private text was seen",
        )
        context = (" Each unit's prompt shows the unit before it in its section (of at most "
                   f"{SECTION_UNITS} units) and the reply released for it as an earlier exchange: every token's "
                   "score still lies in an interval of width w whatever the input, so this costs nothing more."
                   if self.context == "previous" else "")
        statement = (
            f"paraphrase: each output token v was drawn by the exponential mechanism with epsilon = {eps:g}, "
            f"Pr[v] proportional to exp(epsilon * u(v) / (2 w)) with w = {self.width:g}, over the output vocabulary "
            f"({self._vocabulary_size()}), scored by u(v) = {rating}: the score lies in an interval of width "
            f"{self.width:g} whatever the input, so its sensitivity is {self.width:g} and each draw is "
            f"{eps:g}-differentially private. The input was cut into {units} unit(s) by a public rule, and each unit "
            f"got its own reply of at most L = {limit} tokens, ended by an end token or a line break, both drawn "
            f"like any other token ({draws} draws at most).{context}{self._rounds_note()} By adaptive sequential composition the "
            f"release is ({eps * draws:g})-differentially private against any other input text cut into as many "
            "units"
            + (f"; this release drew {drawn} token(s), so its own likelihood ratio is at most exp({eps * drawn:g})"
               if units else "")
            + ". Released unprotected: " + "; ".join(unprotected) + ". Assumes: " + "; ".join(assumptions) + "."
        )
        return Guarantee(mechanism=self.name, epsilon=eps, kind="dp", unit="token", composition="sequential",
                         words_protected=draws if units else 0, layout="public",
                         unprotected=unprotected, assumptions=assumptions, statement=statement)


class Restyle(LanguageModelRewriter):
    """The ``restyle`` mechanism: the same model and template, plain sampling at a temperature;
    no formal guarantee (the style-normalisation baseline)."""

    name = "restyle"

    def __init__(self, *, temperature: float = 0.7, max_new_tokens: int = 96, max_input_tokens: int = 64,
                 model: str = "smollm2-135m-instruct", engine: str = "auto", vocabulary: str = "all",
                 prompt: str = "paraphrase", unit: str = "paragraph", max_units: int = 0, context: str = "previous",
                 rewrites: int = 1, seed: int | None = None, language_model: Any = None,
                 batch_size: int | None = None, device: str = "auto") -> None:
        self._check_parameters(temperature=temperature, max_new_tokens=max_new_tokens,
                               max_input_tokens=max_input_tokens, model=model, engine=engine, vocabulary=vocabulary,
                               prompt=prompt, unit=unit, max_units=max_units, context=context, rewrites=rewrites,
                               seed=seed)
        self._init_model(language_model, batch_size, device)

    def _draw(self, logits: np.ndarray, candidates: np.ndarray, rngs: list[np.random.Generator]) -> np.ndarray:
        # Pr[v] proportional to exp(logit_v / T): the exponential mechanism's form with
        # epsilon / 2 = 1 / T on the raw logits, which are unbounded (no privacy is claimed).
        if on_device(logits):
            return positions_on_host(sample_exponential_mechanism_rows_torch(
                logits.index_select(1, self._device_candidates(logits)), 2.0 / self.temperature, rngs))
        return sample_exponential_mechanism_rows(on_host(logits)[:, candidates], 2.0 / self.temperature, rngs)

    def _guarantee(self, drawn: int, units: int, left_out: int = 0) -> Guarantee:
        return no_guarantee(
            self.name,
            f"The text was cut into {units} unit(s) by a public rule and each rewritten by the language model "
            f"{self.model} ({self.engine_description()}), sampled at temperature {self.temperature:g} (at most "
            f"{self.max_new_tokens} tokens a unit).{self._rounds_note()}",
            ("anything the model copies from the input: names, places, numbers, rare words and phrasing",
             "the input's content and much of its structure", *self._template_rules(left_out)),
            drawn)


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
    """
    from textveil.mechanisms.output_vocabulary import output_vocabulary
    from textveil.models.lm_decoding import decode

    steps: list[np.ndarray] = []
    rng = make_rng(seed)
    generators = [text_generator(rng) for _ in public_texts]
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


def _units_progress(progress: ProgressCallback | None, plan: _UnitPlan, texts: int) -> ProgressCallback | None:
    """``progress`` told in texts while the decoder counts finished units: after k of n units,
    k * texts / n texts are told (a fraction while one long document is written, so it shows
    progress; whole numbers where they are), all of them at the end."""
    if progress is None:
        return None
    total = len(plan.units)
    state = {"units": 0, "told": 0.0}

    def told(done: int) -> None:
        state["units"] += done
        due = float(texts) if state["units"] >= total else state["units"] * texts / total
        if due > state["told"]:
            step, state["told"] = due - state["told"], due
            progress(int(step) if float(step).is_integer() else step)

    return told
