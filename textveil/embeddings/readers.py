"""Readers for the common word-vector file formats, through gensim's well-tested loader.

Supported: word2vec binary (``.bin``), word2vec text and fastText ``.vec`` (a ``count dim``
header line), and GloVe text (no header). The format is detected from the extension and the
first line; pass ``fmt`` to force one.

Parsing a large text file takes seconds (13 s for a 146 MB word2vec file), so a file is parsed
once into a cache folder named by a digest of its bytes and of the reading options (a file
changed in place gets a new entry; a renamed one reuses its entry), holding the words and a
float32 matrix that later runs memory-map: they start in well under a second, and several
processes reading the same vectors (a release's workers) share one copy in memory.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
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
    folder = _cache_folder(path, fmt, limit)
    if (folder / "meta.json").is_file():
        words, vectors = _read_cache(folder, path)
    else:
        words, vectors = _parse(path, fmt, limit)
        if _write_cache(folder, words, vectors):
            words, vectors = _read_cache(folder, path)  # memory-mapped, as every later run has it
    if not words_only:
        return WordEmbeddings(words, vectors, name=path.name)
    rows, vocabulary = _word_vocabulary(folder, words, vectors)
    if len(rows) == 0:
        raise EmbeddingsError(f"embeddings file '{path}' holds no entry that is a word; check the file")
    full_table = GreedyPieceEmbedder(words, vectors)
    return WordEmbeddings([words[i] for i in rows], vocabulary, name=path.name, oov=full_table)


_CACHE_VERSION = 1


def _cache_folder(path: Path, fmt: str, limit: int | None) -> Path:
    """The cache entry of a vectors file: a digest of its bytes and of how it is read.

    Hashing a large file costs half a second, so the digest is remembered under the file's
    path, size, modification time and inode (as git's index does): a file changed in place
    gets a new modification time, hence a new digest."""
    from textveil.paths import cache_root

    root = cache_root() / "vectors"
    stat = path.stat()
    identity = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ino}|{fmt}|{limit}|{_CACHE_VERSION}"
    remembered = root / "by-file" / hashlib.blake2b(identity.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    try:
        known = remembered.read_text(encoding="ascii").strip()
        if len(known) == 32 and all(c in "0123456789abcdef" for c in known):
            return root / known
    except (OSError, UnicodeDecodeError):
        pass
    digest = hashlib.blake2b(f"{_CACHE_VERSION}|{fmt}|{limit}|".encode(), digest_size=16)
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    try:
        from textveil.atomic_files import atomic_write_text

        atomic_write_text(remembered, digest.hexdigest())
    except OSError:  # a read-only cache: hashed again next time
        pass
    return root / digest.hexdigest()


def _parse(path: Path, fmt: str, limit: int | None) -> tuple[list[str], np.ndarray]:
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
    return list(keyed.index_to_key), np.asarray(keyed.vectors, dtype=np.float32)


def _write_cache(folder: Path, words: list[str], vectors: np.ndarray) -> bool:
    """The parsed file as a cache entry, which appears whole or not at all (a staging folder
    renamed into place); whether the entry is there now. A cache that cannot be written (a
    read-only disk) only costs the next run a parse."""
    if any("\n" in word for word in words):  # the words file is one word per line
        return False
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    except OSError:
        return False
    try:
        np.save(staging / "vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32))
        (staging / "words.txt").write_text("\n".join(words), encoding="utf-8")
        (staging / "meta.json").write_text(json.dumps({"version": _CACHE_VERSION, "words": len(words),
                                                       "dim": int(vectors.shape[1])}), encoding="utf-8")
        os.replace(staging, folder)
    except OSError:  # another process wrote the entry first (the folder exists), or the disk is full
        pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return (folder / "meta.json").is_file()


def _read_cache(folder: Path, path: Path) -> tuple[list[str], np.ndarray]:
    try:
        words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise EmbeddingsError(f"the cached copy of '{path}' in '{folder}' is corrupt ({exc}); delete that folder "
                              "and run again") from None
    if vectors.ndim != 2 or len(words) != len(vectors):
        raise EmbeddingsError(f"the cached copy of '{path}' in '{folder}' is corrupt; delete that folder and run again")
    return words, vectors


def _word_vocabulary(folder: Path, words: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose entry is a word of the text layer, and their matrix: computed once and
    kept in the cache entry, the matrix memory-mapped like the full table."""
    rows_file, matrix_file = folder / "word_rows.npy", folder / "word_vectors.npy"
    if rows_file.is_file() and matrix_file.is_file():
        return np.load(rows_file), np.load(matrix_file, mmap_mode="r")
    rows = np.array([i for i, word in enumerate(words) if is_word(word)], dtype=np.int64)
    matrix = vectors if len(rows) == len(words) else np.ascontiguousarray(vectors[rows])
    if folder.is_dir():
        from textveil.atomic_files import atomic_write_bytes

        try:
            for target, array in ((matrix_file, matrix), (rows_file, rows)):  # rows last: they mark it whole
                buffer = io.BytesIO()
                np.save(buffer, array)
                atomic_write_bytes(target, buffer.getvalue())
            return rows, np.load(matrix_file, mmap_mode="r")
        except OSError:  # a read-only cache: computed again next time
            pass
    return rows, matrix
