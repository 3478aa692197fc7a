"""Earth Mover's privacy for text (paper 001, Algorithms 1 and 2).

Each token is mapped to its vector, moved by n-dimensional Laplace noise (radius
Gamma(n, 1/epsilon), direction uniform), and decoded to the vocabulary entry nearest to the
noisy vector. Each token then enjoys epsilon*d privacy for d the Euclidean distance between
vectors; decoding is post-processing. What the document-level guarantee says depends on
what the release is:

* ``layout="public"`` (default): every word *and* every punctuation mark or symbol goes
  through the mechanism, in one space (the vocabulary holds the public marks of
  :data:`~textveil.text.layout.PUBLIC_MARKS` beside the words), and the text is written from
  the released tokens by the public rules of :mod:`textveil.text.layout`. Two texts of L
  tokens give release distributions within a factor exp(epsilon * sum_i d(t_i, t'_i))
  (composition over positions); only L is released unprotected.
* ``layout="keep"``: only words are perturbed; casing, punctuation, symbols, spacing and
  line breaks are copied from the input and are NOT protected (the Guarantee names them).
* ``output="bag"``: paper 001's bag of words, written in sorted order so that the release is a
  function of the bag alone; then Theorem 4 holds as stated: epsilon*N*E against any bag of N
  words at Earth Mover's distance E.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from textveil.embeddings.neighbours import DECODERS, NeighbourIndex
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import InvalidParameterError
from textveil.mechanisms.base import Change, ProgressCallback, Release
from textveil.mechanisms.sampling import make_rng, sample_laplace_noise
from textveil.privacy.parameters import check_epsilon
from textveil.privacy.guarantee import Guarantee
from textveil.text.casing import apply_casing, public_casing_table
from textveil.text.layout import PUBLIC_MARKS, is_mark, release_units, render_public_layout
from textveil.text.stopwords import is_stop_word
from textveil.text.tokenize import Token, TokenKind, detokenize, tokenize, word_key

OOV_POLICIES = ("perturb", "keep", "drop")
OUTPUT_MODES = ("text", "bag")
LAYOUTS = ("public", "keep")


@dataclass
class _Plan:
    """What to do with each token of one document, before any randomness is drawn."""

    tokens: list[Token]
    perturb: list[int]  # token positions to perturb
    kept: int  # word tokens passed through unchanged by policy
    dropped: set[int]


class EarthMoversPrivacy:
    """The ``emp`` mechanism: word-level n-dimensional Laplace noise, nearest-word decoding.

    Parameters
    ----------
    epsilon:
        Privacy per word, in inverse units of the embedding space (paper 001 used 10 to 30 on
        300-d word2vec; calibrate with ``textveil calibrate``).
    embeddings:
        Vocabulary and vectors; default: the bundled embeddings (built on first use).
    decode:
        ``"exact"`` nearest word, or ``"approx"`` (k-means inverted lists). Either keeps the guarantee.
    keep_stop_words:
        Leave stop words unchanged (they are then counted as passed through, unprotected).
    oov:
        Words outside the vocabulary: ``"perturb"`` (default; embedded through their
        subword pieces), ``"keep"`` (passed through, unprotected) or ``"drop"``.
    layout:
        For ``output="text"``: ``"public"`` (default) privatises words and marks alike and
        writes casing, spacing and breaks by a public rule; ``"keep"`` copies the input's
        casing, punctuation and spacing (unprotected, and the Guarantee says so).
    output:
        ``"text"``, or ``"bag"``: the paper's bag of words (the input's stop words and
        punctuation removed, lower case, sorted, space separated; a substitute may itself be
        a stop word: the vocabulary is not filtered).
    seed:
        Integer for reproducible releases; ``None`` draws OS entropy.

    >>> from textveil.embeddings import WordEmbeddings
    >>> toy = WordEmbeddings(["good", "fine", "bad", "!"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0], [0.0, 9.0]])
    >>> emp = EarthMoversPrivacy(epsilon=50, embeddings=toy, seed=1)
    >>> release = emp.sanitize("  GOOD  !")
    >>> release.text in {"Good!", "Fine!"}, release.guarantee.words_protected, release.guarantee.unprotected
    (True, 2, ('the number of tokens (2)',))
    >>> EarthMoversPrivacy(epsilon=50, embeddings=toy, seed=1, layout="keep").sanitize("GOOD!").text in {"GOOD!", "FINE!"}
    True
    """

    name = "emp"

    def __init__(
        self,
        epsilon: float,
        embeddings: WordEmbeddings | None = None,
        *,
        decode: str = "exact",
        keep_stop_words: bool = False,
        oov: str = "perturb",
        output: str = "text",
        layout: str = "public",
        seed: int | None = None,
        batch_words: int = 8192,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if oov not in OOV_POLICIES:
            raise InvalidParameterError(f"unknown OOV policy '{oov}'; use one of: {', '.join(OOV_POLICIES)}")
        if output not in OUTPUT_MODES:
            raise InvalidParameterError(f"unknown output mode '{output}'; use one of: {', '.join(OUTPUT_MODES)}")
        if layout not in LAYOUTS:
            raise InvalidParameterError(f"unknown layout '{layout}'; use one of: {', '.join(LAYOUTS)}")
        if decode not in DECODERS:
            raise InvalidParameterError(f"unknown decoder '{decode}'; use one of: {', '.join(DECODERS)}")
        if batch_words < 1:
            raise InvalidParameterError("batch_words must be at least 1")
        if embeddings is None:
            from textveil.embeddings.default_model import load_embeddings

            embeddings = load_embeddings()
        self.embeddings = embeddings
        self.decode = decode
        self.keep_stop_words = keep_stop_words
        self.oov = oov
        self.output = output
        self.layout = layout
        self.seed = seed
        self.batch_words = batch_words
        # Two streams (radii, directions) so releases do not depend on batching.
        self._radius_rng, self._direction_rng = make_rng(seed).spawn(2)

    @property
    def release_layout(self) -> str:
        """What the release is: ``"public"``, ``"keep"`` or ``"bag"`` (its Guarantee differs)."""
        return "bag" if self.output == "bag" else self.layout

    @property
    def vocabulary(self) -> WordEmbeddings:
        """What a release may contain: the words, plus the public marks in the public layout."""
        if self.release_layout == "public":
            return self.embeddings.with_marks(PUBLIC_MARKS)
        return self.embeddings

    @property
    def metric(self) -> str:
        what = "token" if self.release_layout == "public" else "word"
        return f"Euclidean distance between {what} vectors of '{self.embeddings.name}' ({self.embeddings.dim} dims)"

    @property
    def index(self) -> NeighbourIndex:
        """The neighbour index over the vocabulary (built on first use, shared per embeddings)."""
        return self.vocabulary.neighbour_index(self.decode)

    def sanitize(self, text: str) -> Release:
        """Release one text. See :meth:`sanitize_many` for many (faster: batched decoding)."""
        return self.sanitize_many([text])[0]

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        """Release many texts, decoding their noisy vectors in large batches."""
        releases: list[Release] = []
        batch: list[_Plan] = []
        words_in_batch = 0
        for text in texts:
            plan = self._plan(text)
            batch.append(plan)
            words_in_batch += len(plan.perturb)
            if words_in_batch >= self.batch_words:
                releases.extend(self._release_batch(batch, progress))
                batch, words_in_batch = [], 0
        if batch:
            releases.extend(self._release_batch(batch, progress))
        return releases

    def perturb_words(self, words: Sequence[str]) -> list[str]:
        """Algorithm 2 on a bag of tokens: each token's noisy vector decoded to the nearest
        vocabulary entry (a word, or in the public layout also a mark)."""
        vocabulary = self.vocabulary
        vectors = vocabulary.embed(list(words))
        noise = sample_laplace_noise(len(words), vocabulary.dim, self.epsilon, self._radius_rng, self._direction_rng)
        rows = self.index.nearest((vectors + noise).astype(np.float32))
        return [vocabulary.words[row] for row in rows]

    def _tokens(self, text: str) -> list[Token]:
        """The tokens a release is made from: in the public layout words (lower case) and marks
        only, whitespace dropped; in the bag the input's content words; else every token."""
        if self.release_layout == "public":
            return [Token(u, TokenKind.OTHER if is_mark(u) else TokenKind.WORD) for u in release_units(text)]
        tokens = tokenize(text)
        if self.release_layout == "bag":
            return [Token(word_key(t.text), TokenKind.WORD) for t in tokens if t.is_word and not is_stop_word(t.text)]
        return tokens

    def _plan(self, text: str) -> _Plan:
        if not isinstance(text, str):
            raise InvalidParameterError(f"sanitize expects text (str), got {type(text).__name__}")
        tokens = self._tokens(text)
        public = self.release_layout == "public"
        perturb: list[int] = []
        dropped: set[int] = set()
        kept = 0
        for position, token in enumerate(tokens):
            if not token.is_word:
                if public:  # marks carry style too: in the public layout they are released like words
                    perturb.append(position)
                continue
            if self.keep_stop_words and is_stop_word(token.text):
                kept += 1
            elif self.oov != "perturb" and token.text not in self.embeddings:
                if self.oov == "keep":
                    kept += 1
                else:
                    dropped.add(position)
            else:
                perturb.append(position)
        return _Plan(tokens, perturb, kept, dropped)

    def _release_batch(self, batch: list[_Plan], progress: ProgressCallback | None) -> list[Release]:
        originals = [plan.tokens[p].text for plan in batch for p in plan.perturb]
        substitutes = iter(self.perturb_words(originals))
        releases = [self._assemble(plan, substitutes) for plan in batch]
        if progress is not None:
            progress(len(batch))
        return releases

    def _assemble(self, plan: _Plan, substitutes: Iterable[str]) -> Release:
        tokens = list(plan.tokens)
        changes: list[Change] = []
        unchanged = 0
        layout = self.release_layout
        for position, substitute in zip(plan.perturb, substitutes):
            original = tokens[position].text
            if word_key(substitute) == word_key(original):
                unchanged += 1
                if layout == "keep":  # the copied layout keeps the input's own spelling
                    continue
            # Elsewhere the release writes the vocabulary entry, even where it decoded to the
            # input's token: a curly apostrophe shares a look-up key with a straight one, and
            # copying the input's spelling would leak which one the writer typed.
            released = apply_casing(original, substitute) if layout == "keep" else word_key(substitute)
            tokens[position] = Token(released, TokenKind.WORD)
            if word_key(substitute) != word_key(original):
                changes.append(Change(position, original, released))
        kept_tokens = [t.text for i, t in enumerate(tokens) if i not in plan.dropped]
        if layout == "bag":
            text = " ".join(sorted(kept_tokens))  # a bag: the input's word order is not released
        elif layout == "public":
            text = render_public_layout(kept_tokens, public_casing_table())
        else:
            text = detokenize(_drop_tokens(tokens, plan.dropped))
        guarantee = Guarantee(
            mechanism=self.name,
            epsilon=self.epsilon,
            metric=self.metric,
            words_protected=len(plan.perturb),
            tokens_passed_through=plan.kept,
            tokens_dropped=len(plan.dropped),
            layout=layout,
        )
        return Release(text=text, guarantee=guarantee, changes=tuple(changes), words_unchanged=unchanged)


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
