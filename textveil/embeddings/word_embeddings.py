"""``WordEmbeddings``: a decoding vocabulary, its float32 matrix, and a way to embed any word.

The vocabulary is what a release may contain (every substitute is one of its words); the
embedder gives a vector to *any* input word, also to words outside the vocabulary, so that by
default no word passes through a mechanism unperturbed (paper 001 saw unperturbed character
names keep identifying authors).
"""

from __future__ import annotations

import hashlib

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from textveil.errors import EmbeddingsError, InvalidParameterError
from textveil.text.tokenize import first_rows_by_key, word_key


class OutOfVocabularyEmbedder(Protocol):
    """Gives a vector to a word that is not in the decoding vocabulary."""

    def embed(self, word: str) -> np.ndarray:  # pragma: no cover - protocol
        ...

    def knows(self, word: str) -> bool:  # pragma: no cover - protocol
        """Whether ``word`` gets a vector of its own rather than a fallback for the unknown."""
        ...


class GreedyPieceEmbedder:
    """Embeds a word as the mean vector of the longest known pieces it is made of.

    For vectors read from a file with no subword model (GloVe, word2vec): the word is cut,
    left to right, into the longest pieces found in the file's full table (a word in the table
    is its own single piece, so words removed from the decoding vocabulary by a size limit keep
    their exact vector). A word with no known piece gets the table's mean vector.

    >>> table = GreedyPieceEmbedder(["fan", "fiction", "x"], np.eye(3, dtype=np.float32))
    >>> table.embed("fanfiction").tolist()
    [0.5, 0.5, 0.0]
    """

    def __init__(self, words: Sequence[str], vectors: np.ndarray, min_piece: int = 2) -> None:
        self._index = first_rows_by_key(list(words))
        self._vectors = vectors
        self._longest = max(map(len, self._index), default=1)
        self._min_piece = min_piece
        self._fallback = vectors.mean(axis=0).astype(np.float32) if len(vectors) else None

    def pieces(self, word: str) -> list[str]:
        """The pieces a word is cut into (possibly empty)."""
        key = word_key(word)
        found: list[str] = []
        start = 0
        while start < len(key):
            for end in range(min(len(key), start + self._longest), start, -1):
                piece = key[start:end]
                if (end - start >= self._min_piece or end - start == len(key)) and piece in self._index:
                    found.append(piece)
                    start = end
                    break
            else:
                start += 1  # no piece starts here: skip one character
        return found

    def knows(self, word: str) -> bool:
        return word_key(word) in self._index

    def embed(self, word: str) -> np.ndarray:
        pieces = self.pieces(word)
        if not pieces:
            if self._fallback is None:
                raise EmbeddingsError("cannot embed words with an empty embeddings table")
            return self._fallback
        rows = [self._index[p] for p in pieces]
        return self._vectors[rows].mean(axis=0).astype(np.float32)


class WordEmbeddings:
    """A vocabulary and its word vectors (one float32 row per word), plus an OOV embedder.

    Parameters
    ----------
    words:
        The vocabulary, most frequent first where known (restrictions keep the order).
    vectors:
        ``len(words) x dim`` array; converted to float32, never normalised (the mechanisms
        need raw vectors: their noise scale is measured in the same units).
    name:
        Where the vectors came from, shown in guarantees and reports.
    oov:
        Embedder for words not in ``words``; by default a :class:`GreedyPieceEmbedder` over
        the same table.

    >>> emb = WordEmbeddings(["cat", "dog"], [[0.0, 1.0], [1.0, 0.0]], name="toy")
    >>> len(emb), emb.dim, "Cat" in emb, emb.vector("dog").tolist()
    (2, 2, True, [1.0, 0.0])
    """

    def __init__(
        self,
        words: Sequence[str],
        vectors: np.ndarray | Sequence[Sequence[float]],
        *,
        name: str = "custom",
        oov: OutOfVocabularyEmbedder | None = None,
    ) -> None:
        matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        if matrix.ndim != 2:
            raise EmbeddingsError(f"embeddings '{name}': the vectors must form a 2-D matrix, got shape {matrix.shape}")
        if len(words) != matrix.shape[0]:
            raise EmbeddingsError(
                f"embeddings '{name}': {len(words)} words but {matrix.shape[0]} vectors; the file is corrupt"
            )
        if len(words) == 0:
            raise EmbeddingsError(f"embeddings '{name}': the vocabulary is empty")
        if not np.all(np.isfinite(matrix)):
            raise EmbeddingsError(f"embeddings '{name}': some vectors hold NaN or infinite values; the file is corrupt")
        self.words: list[str] = list(words)
        self.vectors: np.ndarray = matrix
        self.name = name
        # Exact spellings first, then look-up keys: in a cased vocabulary "apple" must find
        # "apple", not an earlier "Apple" whose lower-cased key would otherwise claim the slot.
        # (Built from reversed pairs so that the first row of a spelling wins: at C speed.)
        spellings = dict(zip(reversed(self.words), range(len(self.words) - 1, -1, -1)))
        self._index: dict[str, int] = {**first_rows_by_key(self.words), **spellings}
        self.oov: OutOfVocabularyEmbedder = oov if oov is not None else GreedyPieceEmbedder(self.words, matrix)
        self._embed_oov = lru_cache(maxsize=65536)(self.oov.embed)
        self._neighbour_indexes: dict[str, Any] = {}
        self._with_marks: dict[tuple[str, ...], WordEmbeddings] = {}
        self._with_placeholders: WordEmbeddings | None = None
        self._content_hash: str | None = None
        self._longest_norm: float | None = None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def content_hash(self) -> str:
        """A digest of the words and their vectors: a saved mechanism checks on load that it
        decodes into the very vocabulary it was saved with (computed once; ~0.1 s for 30,000).

        >>> WordEmbeddings(["a"], [[1.0]]).content_hash() == WordEmbeddings(["a"], [[1.0]], name="x").content_hash()
        True
        """
        if self._content_hash is None:
            digest = hashlib.sha256("\x00".join(self.words).encode("utf-8"))
            digest.update(self.vectors.tobytes())
            self._content_hash = digest.hexdigest()[:16]
        return self._content_hash

    def longest_norm(self) -> float:
        """The Euclidean length of the longest vector (computed once: a mechanism made again
        with another seed or epsilon, once per request in the service, does not pay for it).

        >>> WordEmbeddings(["a", "b"], [[3.0, 4.0], [1.0, 0.0]]).longest_norm()
        5.0
        """
        if self._longest_norm is None:
            self._longest_norm = float(np.sqrt(np.einsum("ij,ij->i", self.vectors, self.vectors, dtype=np.float64).max()))
        return self._longest_norm

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.index_of(word) is not None

    def __repr__(self) -> str:
        return f"WordEmbeddings(name={self.name!r}, words={len(self)}, dim={self.dim})"

    def index_of(self, word: str) -> int | None:
        """Row of ``word`` in the vocabulary: exact spelling first, then lower case."""
        row = self._index.get(word)
        return row if row is not None else self._index.get(word_key(word))

    def vector(self, word: str) -> np.ndarray:
        """The vector of any word: its row if in the vocabulary, else its OOV embedding."""
        row = self.index_of(word)
        return self.vectors[row] if row is not None else self._embed_oov(word)

    def embed(self, words: Sequence[str]) -> np.ndarray:
        """Vectors for many words at once, as an ``len(words) x dim`` float32 array."""
        out = np.empty((len(words), self.dim), dtype=np.float32)
        rows = [self.index_of(w) for w in words]
        known = [i for i, r in enumerate(rows) if r is not None]
        if known:
            out[known] = self.vectors[[rows[i] for i in known]]
        for i, r in enumerate(rows):
            if r is None:
                out[i] = self._embed_oov(words[i])
        return out

    def neighbour_index(self, decode: str = "exact") -> Any:
        """The nearest-word index over this vocabulary (built once per decoding mode, then reused
        by every mechanism that decodes into these embeddings)."""
        if decode not in self._neighbour_indexes:
            from textveil.embeddings.decoders import make_neighbour_index

            self._neighbour_indexes[decode] = make_neighbour_index(self.vectors, decode)
        return self._neighbour_indexes[decode]

    def with_marks(self, marks: Sequence[str]) -> WordEmbeddings:
        """This vocabulary plus the ``marks`` (punctuation, symbols) that the embeddings know,
        each at its own vector, so that one mechanism can release words and marks alike.

        A mark the embeddings cannot place (no vector of its own) or whose vector an entry
        already has is left out: it could never be released. Built once per set of marks and
        reused, so every mechanism over it shares one neighbour index.

        >>> emb = WordEmbeddings(["cat", "!"], [[0.0, 1.0], [1.0, 0.0]])
        >>> emb.with_marks(["!", "?"]).words  # "?" has no vector of its own
        ['cat', '!']
        """
        key = tuple(marks)
        if key not in self._with_marks:
            present = set(self.words)
            added = [m for m in key if m not in present and self.oov.knows(m)]
            if not added:
                self._with_marks[key] = self
            else:
                from textveil.embeddings.neighbours import first_occurrence_rows

                matrix = np.concatenate([self.vectors, np.stack([self._embed_oov(m) for m in added])])
                rows = first_occurrence_rows(matrix)
                rows = rows[rows >= len(self.words)]  # the vocabulary stays whole; only new marks may go
                extended = WordEmbeddings(
                    self.words + [added[r - len(self.words)] for r in rows],
                    np.concatenate([self.vectors, matrix[rows]]),
                    name=self.name,
                    oov=self.oov,
                )
                self._with_marks[key] = extended
        return self._with_marks[key]

    def with_placeholders(self) -> WordEmbeddings:
        """This vocabulary plus the entity stage's placeholders (``<PERSON>``, ...) that the space
        can place, each one entry at a point of its own (:mod:`textveil.text.placeholders`).
        A mechanism holds them only where an entity stage before it may write them (its
        ``placeholders`` flag, set by :class:`textveil.pii.StagedMechanism`). Built once and reused.

        The public rule: a placeholder sits at the mean vector of those of its describing words
        (:func:`~textveil.text.placeholders.describing_words`) that the embeddings *know* (a
        vector of their own: a vocabulary entry, or a word of the full table behind a cut
        vocabulary), never at a guess for an unknown word. It is left out where none of them
        is known (the space cannot place it) and where its point is one an entry already has (a
        word's or an earlier placeholder's: it would be no entry of its own), as a mark is in
        :meth:`with_marks`. So two placeholders never share a point, and a space that knows none
        of the describing words (a user's two-word file) gets none: its vocabulary is unchanged.

        >>> emb = WordEmbeddings(["person", "someone", "name", "cat"], [[1.0, 0.0], [0.8, 0.2], [0.6, 0.0], [0, 1.0]])
        >>> extended = emb.with_placeholders()
        >>> extended.words[4:], [round(float(v), 2) for v in extended.vector("<PERSON>")]
        (['<PERSON>'], [0.8, 0.07])
        >>> WordEmbeddings(["a", "b"], [[0.0], [1.0]]).with_placeholders().words  # it knows no describing word
        ['a', 'b']
        """
        if self._with_placeholders is None:
            from textveil.embeddings.neighbours import first_occurrence_rows
            from textveil.text.placeholders import PLACEHOLDER_TYPES, describing_words, placeholder

            added: list[str] = []
            points: list[np.ndarray] = []
            for entity_type in PLACEHOLDER_TYPES:
                token = placeholder(entity_type)
                known = [w for w in describing_words(entity_type) if w in self or self.oov.knows(w)]
                if token in self._index or not known:
                    continue
                added.append(token)
                points.append(self.embed(known).mean(axis=0))
            self._with_placeholders = self
            if added:
                matrix = np.concatenate([self.vectors, np.stack(points).astype(np.float32)])
                rows = first_occurrence_rows(matrix)
                rows = rows[rows >= len(self.words)]  # the vocabulary stays whole; only placeholders may go
                if len(rows):
                    self._with_placeholders = WordEmbeddings(
                        self.words + [added[r - len(self.words)] for r in rows],
                        np.concatenate([self.vectors, matrix[rows]]), name=self.name, oov=self.oov)
        return self._with_placeholders

    def restrict_to_top(self, k: int) -> WordEmbeddings:
        """The first ``k`` words (the most frequent, for frequency-ordered sources).

        Words cut from the vocabulary still embed as before (through ``oov``); they can no
        longer be produced as substitutes.
        """
        if k <= 0:
            raise InvalidParameterError(f"vocabulary size must be a positive integer, got {k}")
        if k >= len(self):
            return self
        return WordEmbeddings(self.words[:k], self.vectors[:k], name=f"{self.name}[top {k}]", oov=self.oov)

    def restrict_to_words(self, words: Iterable[str]) -> WordEmbeddings:
        """Only the vocabulary words that occur in ``words`` (any casing), in vocabulary order.

        Paper 001 suggests a vocabulary tailored to the domain. Build it from *public* or
        training text: a decoding vocabulary drawn from the very text being released depends
        on that text and is not covered by the guarantee.
        """
        wanted = {word_key(w) for w in words}
        rows = [i for i, w in enumerate(self.words) if word_key(w) in wanted]
        if not rows:
            raise InvalidParameterError(
                f"no word of the given corpus is in the vocabulary of embeddings '{self.name}'; use a larger vocabulary"
            )
        return WordEmbeddings(
            [self.words[i] for i in rows], self.vectors[rows], name=f"{self.name}[corpus {len(rows)}]", oov=self.oov
        )
