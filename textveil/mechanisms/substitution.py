"""Token-substitution mechanisms: what emp, SynTF and Random-R share.

Each replaces every token of a text (in the public layout, words and marks alike) by a token
it draws from a vocabulary, and differs only in how it draws: n-dimensional Laplace noise and
nearest-neighbour decoding (emp), the exponential mechanism over a rating of the document
(SynTF), or uniformly (Random-R). The rest is here, once: which tokens the mechanism sees in
each layout, the policies that pass tokens through or drop them, and how the release is
written back (the public rules of :mod:`textveil.text.layout`, the input's own layout, or a
sorted bag of words).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.mechanisms.base import Change, Mechanism, ProgressCallback, Release
from textveil.mechanisms.sampling import make_rng
from textveil.privacy.claims import ReleaseView
from textveil.privacy.guarantee import Guarantee
from textveil.text.casing import apply_casing, public_casing_table
from textveil.text.layout import PUBLIC_MARKS, is_mark, release_units, render_public_layout
from textveil.text.placeholders import is_placeholder
from textveil.text.stopwords import is_stop_word
from textveil.text.tokenize import Token, TokenKind, detokenize, tokenize, word_key


@dataclass
class TokenPlan:
    """What to do with each token of one document, before any randomness is drawn."""

    tokens: list[Token]
    perturb: list[int]  # token positions that go through the mechanism
    kept: int  # word tokens passed through unchanged by policy
    dropped: set[int]

    @property
    def originals(self) -> list[str]:
        return [self.tokens[p].text for p in self.perturb]


class TokenSubstitution(Mechanism):
    """A mechanism that replaces each token by one drawn from ``vocabulary``.

    Subclasses implement :meth:`_substitute` (the draws for a batch of documents, from the
    mechanism's own streams or, for :meth:`sanitize_records`, from each document's) and
    :meth:`_guarantee`; they may set ``keep_stop_words``, ``oov`` and ``output`` (emp's
    policies); the others release every token.
    """

    resources: ClassVar[tuple[str, ...]] = ("embeddings",)
    keep_stop_words: bool = False
    oov: str = "perturb"
    output: str = "text"
    layout: str = "public"
    batch_words: int = 8192
    placeholders: bool = False
    """Whether the vocabulary holds the entity stage's placeholders as entries: only where a stage
    before the mechanism may write them (:class:`textveil.pii.StagedMechanism` sets it); a mechanism
    alone, or after ``--entities off`` or ``drop``, releases from the embeddings' words alone."""

    def _init_common(self, embeddings: WordEmbeddings | None, seed: int | None, batch_words: int,
                     placeholders: bool = False) -> None:
        if batch_words < 1:
            raise InvalidParameterError("batch_words must be at least 1")
        if embeddings is None:
            from textveil.embeddings.default_model import load_embeddings

            embeddings = load_embeddings()
        self.embeddings = embeddings
        self.batch_words = batch_words
        self.placeholders = bool(placeholders)
        self.seed = seed
        # Two independent streams: emp draws radii from one and directions from the other so
        # that a release does not depend on how documents are batched; the others use the first.
        self._rng, self._second_rng = make_rng(seed).spawn(2)

    def _resources(self) -> dict[str, Any]:
        return {**super()._resources(), "batch_words": self.batch_words, "placeholders": self.placeholders}

    @property
    def release_layout(self) -> str:
        """What the release is: ``"public"``, ``"keep"`` or ``"bag"`` (its Guarantee differs)."""
        return "bag" if self.output == "bag" else self.layout

    @property
    def policies(self) -> tuple[str, ...]:
        """The policies applied to the input's words, in words, as the Guarantee states them (a bag
        holds no stop words whatever ``keep_stop_words`` says)."""
        named = ("stop words kept unchanged",) if self.keep_stop_words and self.release_layout != "bag" else ()
        if self.oov != "perturb":
            named += (f"words outside the vocabulary {'kept unchanged' if self.oov == 'keep' else 'dropped'}",)
        return named

    @property
    def passes_through(self) -> bool:
        """Whether a policy releases some input words unchanged (then unprotected)."""
        return (self.keep_stop_words and self.release_layout != "bag") or self.oov == "keep"

    placeholder_rule: ClassVar[str] = (
        "each placeholder is one vocabulary entry, at the mean vector of the public words for its type that the "
        "embeddings know, perturbed like any word (covered by epsilon); one the embeddings cannot place at a point "
        "of its own is no entry and is perturbed from the vector they give any word outside the vocabulary")

    @property
    def vocabulary(self) -> WordEmbeddings:
        """What a release may contain: the words, the placeholders where an entity stage may write
        them (``placeholders``; one entry each where the space can place it,
        :meth:`WordEmbeddings.with_placeholders`), and the public marks in the public layout
        (after them, so the keep layout's vocabulary is the public one's prefix)."""
        vocabulary = self.embeddings.with_placeholders() if self.placeholders else self.embeddings
        if self.release_layout == "public":
            return vocabulary.with_marks(PUBLIC_MARKS)
        return vocabulary

    def vocabulary_hash(self) -> str:
        return self.vocabulary.content_hash()

    # -- the pipeline ------------------------------------------------------------------

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        """Release many texts, drawing their substitutes in large batches."""
        return self._release_in_batches(texts, None, progress)

    def sanitize_records(self, texts: Sequence[str], seeds: Sequence[int],
                         progress: ProgressCallback | None = None) -> list[Release]:
        """As :meth:`Mechanism.sanitize_records` (text ``i`` released as with ``seed=seeds[i]``),
        each text drawing from its own streams but the batch decoded at once."""
        if len(seeds) != len(texts):
            return super().sanitize_records(texts, seeds, progress)  # its one-line error
        return self._release_in_batches(texts, [make_rng(int(seed)).spawn(2) for seed in seeds], progress)

    def _release_in_batches(self, texts: Iterable[str], streams: list[list[np.random.Generator]] | None,
                            progress: ProgressCallback | None) -> list[Release]:
        releases: list[Release] = []
        batch: list[TokenPlan] = []
        words_in_batch = 0
        for text in texts:
            plan = self._plan(text)
            batch.append(plan)
            words_in_batch += len(plan.perturb)
            if words_in_batch >= self.batch_words:
                releases.extend(self._release_batch(batch, streams, len(releases), progress))
                batch, words_in_batch = [], 0
        if batch:
            releases.extend(self._release_batch(batch, streams, len(releases), progress))
        return releases

    def _substitute(self, batch: list[TokenPlan], streams: Sequence[Sequence[np.random.Generator]] | None) -> list[str]:
        """The released vocabulary entry for every perturbed token of the batch, in order; drawn
        from the mechanism's own streams (``streams`` None) or plan ``i``'s from ``streams[i]``."""
        raise NotImplementedError  # pragma: no cover - every substitution mechanism implements it

    def _draw(self, batch: list[TokenPlan], streams: Sequence[Sequence[np.random.Generator]] | None,
              draw: Callable[[int, np.random.Generator, np.random.Generator], np.ndarray]) -> np.ndarray:
        """``draw(count, rng, second_rng)`` for every perturbed token of the batch: at once from
        the mechanism's own streams, or plan by plan from each plan's streams."""
        if streams is None:
            return draw(sum(len(plan.perturb) for plan in batch), self._rng, self._second_rng)
        parts = [draw(len(plan.perturb), stream[0], stream[1]) for plan, stream in zip(batch, streams)]
        return np.concatenate(parts) if parts else draw(0, self._rng, self._second_rng)

    def _guarantee(self, plan: TokenPlan) -> Guarantee:
        raise NotImplementedError  # pragma: no cover

    def _tokens(self, text: str) -> list[Token]:
        """The tokens a release is made from: in the public layout words (lower case) and marks
        only, whitespace dropped; in the bag the input's content words; else every token."""
        if self.release_layout == "public":
            return [Token(u, TokenKind.OTHER if is_mark(u) else TokenKind.WORD) for u in release_units(text)]
        tokens = tokenize(text)
        if self.release_layout == "bag":
            return [Token(word_key(t.text), TokenKind.WORD) for t in tokens if t.is_word and not is_stop_word(t.text)]
        return tokens

    def release_view(self, text: str) -> ReleaseView:
        """``text`` as the Guarantee sees it: the units that go through the mechanism (the
        audit measures the claim over them) and what the release copies unprotected: the
        tokens a policy passes through or drops and, in the keep layout, the input's tokens
        between the units and each unit's casing pattern ("Ab", "AB")."""
        plan = self._plan(text)
        perturbed = set(plan.perturb)
        keep = self.release_layout == "keep"
        copied = tuple((_copied_spelling(token.text) if keep else "*") if position in perturbed else token.text
                       for position, token in enumerate(plan.tokens))
        return ReleaseView(tuple(word_key(unit) for unit in plan.originals), copied)

    def spend_per_release(self) -> tuple[float, str]:
        # The Guarantee's epsilon and unit: per token in the public layout, else per word (Random-R: 0).
        unit = "token" if self.release_layout == "public" else "word"
        return float(getattr(self, "epsilon", 0.0)), f"{self.spec().guarantee} epsilon per {unit}"

    def unit_vectors(self, units: list[str]) -> np.ndarray:
        """The vectors of ``units`` under the Guarantee's metric (the noise's space)."""
        return self.vocabulary.embed(list(units))

    def _plan(self, text: str) -> TokenPlan:
        if not isinstance(text, str):
            raise InvalidParameterError(f"sanitize expects text (str), got {type(text).__name__}")
        tokens = self._tokens(text)
        public = self.release_layout == "public"
        perturb: list[int] = []
        dropped: set[int] = set()
        kept = 0
        keep_stop_words, oov, word = self.keep_stop_words, self.oov, TokenKind.WORD  # locals: once per token
        for position, token in enumerate(tokens):
            if token.kind is not word:
                if public:  # marks carry style too: in the public layout they are released like words
                    perturb.append(position)
                continue
            if keep_stop_words and is_stop_word(token.text):
                kept += 1
            # A placeholder always goes through the mechanism, whatever oov says (never copied or
            # dropped): from its entry where the vocabulary holds it, else as a word outside it.
            elif oov != "perturb" and token.text not in self.embeddings and not is_placeholder(token.text):
                if oov == "keep":
                    kept += 1
                else:
                    dropped.add(position)
            else:
                perturb.append(position)
        return TokenPlan(tokens, perturb, kept, dropped)

    def _release_batch(self, batch: list[TokenPlan], streams: list[list[np.random.Generator]] | None, first: int,
                       progress: ProgressCallback | None) -> list[Release]:
        own = None if streams is None else streams[first : first + len(batch)]
        substitutes = iter(self._substitute(batch, own))
        releases = [self._assemble(plan, substitutes) for plan in batch]
        if progress is not None:
            progress(len(batch))
        return releases

    def _assemble(self, plan: TokenPlan, substitutes: Iterator[str]) -> Release:
        tokens = list(plan.tokens)
        changes: list[Change] = []
        unchanged = 0
        layout = self.release_layout
        keep = layout == "keep"
        for position in plan.perturb:
            substitute = next(substitutes)
            original = tokens[position].text
            key = word_key(substitute)
            same = key == word_key(original)
            if same:
                unchanged += 1
                if keep:  # the copied layout keeps the input's own spelling
                    continue
            # Elsewhere the release writes the vocabulary entry, even where it decoded to the
            # input's token: a curly apostrophe shares a look-up key with a straight one, and
            # copying the input's spelling would leak which one the writer typed.
            # A placeholder's capitals are the public rule's: never copied onto a word, nor a word's onto it.
            released = apply_casing(original, substitute) if keep and not _placeholder_in(original, key) else key
            tokens[position] = Token(released, TokenKind.WORD)
            if not same:
                changes.append(Change(position, original, released))
        if keep:
            text = detokenize(_drop_tokens(tokens, plan.dropped))
        else:
            kept_tokens = [t.text for i, t in enumerate(tokens) if i not in plan.dropped]
            if layout == "bag":
                text = " ".join(sorted(kept_tokens))  # a bag: the input's word order is not released
            else:
                text = render_public_layout(kept_tokens, public_casing_table())
        return Release(text=text, guarantee=self._guarantee(plan), changes=tuple(changes), words_unchanged=unchanged)


def _placeholder_in(original: str, released: str) -> bool:
    return is_placeholder(original) or is_placeholder(released)


def _copied_spelling(word: str) -> str:
    """What the keep layout copies of a perturbed word: its casing pattern ("Ab", "AB", "ab"),
    or, for a spelling the pattern does not give back from the word's key ("iPhone", a curly
    apostrophe), the word itself: a substitute that decodes to the word keeps its spelling.

    >>> _copied_spelling("Market"), _copied_spelling("iPhone")
    ('Ab', 'iPhone')
    """
    if apply_casing(word, word_key(word)) == word:
        return apply_casing(word, "ab")
    return word


def _drop_tokens(tokens: list[Token], dropped: set[int]) -> list[Token]:
    """Remove dropped words and one space beside each, so no double or trailing space is left.

    "a X b" -> "a b", "a X." -> "a.", "X b" -> "b".
    """
    if not dropped:
        return tokens
    kept: list[Token] = []
    skip_next_space = False
    for position, token in enumerate(tokens):
        if position in dropped:
            following = tokens[position + 1] if position + 1 < len(tokens) else None
            if following is not None and following.kind is TokenKind.SPACE:
                skip_next_space = True
            elif kept and kept[-1].kind is TokenKind.SPACE:
                kept.pop()
            continue
        if skip_next_space and token.kind is TokenKind.SPACE:
            skip_next_space = False
            continue
        skip_next_space = False
        kept.append(token)
    return kept
