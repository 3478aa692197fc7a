"""Earth Mover's privacy for text (paper 001, Algorithms 1 and 2).

Each word is mapped to its vector, moved by n-dimensional Laplace noise (radius
Gamma(n, 1/epsilon), direction uniform), and decoded to the vocabulary word nearest to the
noisy vector. Each word then enjoys epsilon*d privacy for d the Euclidean distance between
word vectors, and a document of N words enjoys epsilon*N*E privacy against any other
document of N words at Earth Mover's distance E (Theorem 4). Decoding is post-processing.
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
from textveil.text.casing import apply_casing
from textveil.text.stopwords import is_stop_word
from textveil.text.tokenize import Token, TokenKind, detokenize, tokenize, word_key

OOV_POLICIES = ("perturb", "keep", "drop")
OUTPUT_MODES = ("text", "bag")


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
    output:
        ``"text"`` keeps spacing, punctuation and casing; ``"bag"`` is the paper's
        bag-of-words: the input's stop words and punctuation removed, lower case, space
        separated (a substitute may itself be a stop word: the vocabulary is not filtered).
    seed:
        Integer for reproducible releases; ``None`` draws OS entropy.

    >>> from textveil.embeddings import WordEmbeddings
    >>> toy = WordEmbeddings(["good", "fine", "bad"], [[0.0, 0.0], [0.1, 0.0], [9.0, 9.0]])
    >>> emp = EarthMoversPrivacy(epsilon=50, embeddings=toy, seed=1)
    >>> release = emp.sanitize("Good!")
    >>> release.text in {"Good!", "Fine!"}, release.guarantee.words_protected
    (True, 1)
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
        seed: int | None = None,
        batch_words: int = 8192,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if oov not in OOV_POLICIES:
            raise InvalidParameterError(f"unknown OOV policy '{oov}'; use one of: {', '.join(OOV_POLICIES)}")
        if output not in OUTPUT_MODES:
            raise InvalidParameterError(f"unknown output mode '{output}'; use one of: {', '.join(OUTPUT_MODES)}")
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
        self.seed = seed
        self.batch_words = batch_words
        # Two streams (radii, directions) so releases do not depend on batching.
        self._radius_rng, self._direction_rng = make_rng(seed).spawn(2)

    @property
    def metric(self) -> str:
        return f"Euclidean distance between word vectors of '{self.embeddings.name}' ({self.embeddings.dim} dims)"

    @property
    def index(self) -> NeighbourIndex:
        """The neighbour index over the vocabulary (built on first use, shared per embeddings)."""
        return self.embeddings.neighbour_index(self.decode)

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
        """Algorithm 2 on a bag of words: each word's noisy vector decoded to the nearest word."""
        vectors = self.embeddings.embed(list(words))
        noise = sample_laplace_noise(len(words), self.embeddings.dim, self.epsilon, self._radius_rng, self._direction_rng)
        rows = self.index.nearest((vectors + noise).astype(np.float32))
        return [self.embeddings.words[row] for row in rows]

    def _plan(self, text: str) -> _Plan:
        if not isinstance(text, str):
            raise InvalidParameterError(f"sanitize expects text (str), got {type(text).__name__}")
        tokens = tokenize(text)
        if self.output == "bag":
            tokens = [
                Token(word_key(t.text), TokenKind.WORD) for t in tokens if t.is_word and not is_stop_word(t.text)
            ]
        perturb: list[int] = []
        dropped: set[int] = set()
        kept = 0
        for position, token in enumerate(tokens):
            if not token.is_word:
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
        for position, substitute in zip(plan.perturb, substitutes):
            original = tokens[position].text
            if word_key(substitute) == word_key(original):
                unchanged += 1
                continue
            released = substitute if self.output == "bag" else apply_casing(original, substitute)
            tokens[position] = Token(released, TokenKind.WORD)
            changes.append(Change(position, original, released))
        if self.output == "bag":
            text = " ".join(t.text for i, t in enumerate(tokens) if i not in plan.dropped)
        else:
            text = detokenize(_drop_tokens(tokens, plan.dropped))
        guarantee = Guarantee(
            mechanism=self.name,
            epsilon=self.epsilon,
            metric=self.metric,
            words_protected=len(plan.perturb),
            tokens_passed_through=plan.kept,
            tokens_dropped=len(plan.dropped),
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
