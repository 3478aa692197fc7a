"""Readers for the common word-vector file formats, through gensim's well-tested loader.

Supported: word2vec binary (``.bin``), word2vec text and fastText ``.vec`` (a ``count dim``
header line), and GloVe text (no header). The format is detected from the extension and the
first line; pass ``fmt`` to force one.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from textveil.embeddings.word_embeddings import GreedyPieceEmbedder, WordEmbeddings
from textveil.errors import EmbeddingsError
from textveil.text.tokenize import is_word

FORMATS = ("auto", "word2vec-binary", "word2vec-text", "fasttext-vec", "glove")


def detect_format(path: Path) -> str:
    """Guess the format of a vectors file from its name and first line."""
    if path.suffix.lower() == ".bin":
        return "word2vec-binary"
    with path.open("rb") as handle:
        first = handle.readline(4096).split()
    if len(first) == 2 and all(part.isdigit() for part in first):
        return "fasttext-vec" if path.suffix.lower() == ".vec" else "word2vec-text"
    return "glove"


def read_embeddings(
    path: str | os.PathLike[str], fmt: str = "auto", limit: int | None = None, words_only: bool = True
) -> WordEmbeddings:
    """Read a vectors file into :class:`WordEmbeddings` (float32, unnormalised).

    ``limit`` keeps only the first ``limit`` rows, which for the usual frequency-ordered
    files are the most frequent words, and reads no further (fast on large files).
    With ``words_only`` (the default) the decoding vocabulary keeps only the entries that are
    single words of the text layer (GloVe also holds ",", "'s", "u.s.", "1,000"...), so a
    release never puts punctuation where a word was; every entry of the file still serves to
    embed input words.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "toy.txt"
    >>> _ = f.write_text("the 0.1 0.2\\ncat 0.3 0.4\\n")
    >>> read_embeddings(f)
    WordEmbeddings(name='toy.txt', words=2, dim=2)
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise EmbeddingsError(f"unknown embeddings format '{fmt}'; use one of: {', '.join(FORMATS)}")
    if not path.is_file():
        raise EmbeddingsError(f"embeddings file '{path}' does not exist; give an existing file or 'default'")
    if path.stat().st_size == 0:
        raise EmbeddingsError(f"embeddings file '{path}' is empty; give a word2vec, GloVe or fastText vectors file")
    if fmt == "auto":
        fmt = detect_format(path)
    from gensim.models import KeyedVectors  # imported lazily: gensim is slow to import

    try:
        keyed = KeyedVectors.load_word2vec_format(
            str(path),
            binary=fmt == "word2vec-binary",
            no_header=fmt == "glove",
            limit=limit,
            unicode_errors="replace",
        )
    except MemoryError:
        raise EmbeddingsError(
            f"embeddings file '{path}' could not be read as {fmt}: its header claims more vectors than fit in "
            "memory; the file is corrupt or not a vectors file"
        ) from None
    except (ValueError, EOFError, UnicodeDecodeError, IndexError, OSError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EmbeddingsError(
            f"embeddings file '{path}' could not be read as {fmt} ({detail}); "
            "check that it is complete and that every row has the same number of values"
        ) from None
    words = list(keyed.index_to_key)
    vectors = np.asarray(keyed.vectors, dtype=np.float32)
    if not words_only:
        return WordEmbeddings(words, vectors, name=path.name)
    rows = [i for i, word in enumerate(words) if is_word(word)]
    if not rows:
        raise EmbeddingsError(f"embeddings file '{path}' holds no entry that is a word; check the file")
    full_table = GreedyPieceEmbedder(words, vectors)
    return WordEmbeddings([words[i] for i in rows], vectors[rows], name=path.name, oov=full_table)
