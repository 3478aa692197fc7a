"""Word vectors: file readers, the WordEmbeddings table, restrictions, OOV embedding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import require_shared_data
from textveil.embeddings.readers import detect_format, read_embeddings
from textveil.embeddings.word_embeddings import GreedyPieceEmbedder, WordEmbeddings
from textveil.text.tokenize import is_word
from textveil.errors import EmbeddingsError, InvalidParameterError

WORDS = ["the", "market", "café", "日本", "rallied", "Reuters", "o'neil"]


@pytest.fixture(scope="module")
def table() -> np.ndarray:
    # float32 values, written with their full float64 repr, read back exactly
    return np.random.default_rng(0).standard_normal((len(WORDS), 6)).astype(np.float32)


def _text_rows(words: list[str], vectors: np.ndarray) -> str:
    return "".join(f"{w} {' '.join(repr(float(v)) for v in row)}\n" for w, row in zip(words, vectors))


def _write_glove(path: Path, words, vectors) -> Path:
    path.write_text(_text_rows(words, vectors), encoding="utf-8")
    return path


def _write_word2vec_text(path: Path, words, vectors) -> Path:
    path.write_text(f"{len(words)} {vectors.shape[1]}\n" + _text_rows(words, vectors), encoding="utf-8")
    return path


def _write_word2vec_binary(path: Path, words, vectors) -> Path:
    from gensim.models import KeyedVectors

    keyed = KeyedVectors(vector_size=vectors.shape[1])
    keyed.add_vectors(list(words), vectors)
    keyed.save_word2vec_format(str(path), binary=True)
    return path


FORMATS = [
    ("vectors.txt", _write_glove, "glove"),
    ("vectors.w2v.txt", _write_word2vec_text, "word2vec-text"),
    ("vectors.vec", _write_word2vec_text, "fasttext-vec"),
    ("vectors.bin", _write_word2vec_binary, "word2vec-binary"),
]


@pytest.mark.parametrize(("name", "writer", "fmt"), FORMATS, ids=[f[2] for f in FORMATS])
def test_read_each_format(tmp_path: Path, table: np.ndarray, name, writer, fmt: str) -> None:
    path = writer(tmp_path / name, WORDS, table)
    assert detect_format(path) == fmt
    for given in ("auto", fmt):
        embeddings = read_embeddings(path, fmt=given)
        assert embeddings.words == WORDS
        assert embeddings.vectors.dtype == np.float32
        assert embeddings.dim == table.shape[1] and len(embeddings) == len(WORDS)
        np.testing.assert_array_equal(embeddings.vectors, table)
        assert embeddings.name == name
        for word, row in zip(WORDS, table):
            np.testing.assert_array_equal(embeddings.vector(word), row)


@pytest.mark.parametrize(("name", "writer", "fmt"), FORMATS, ids=[f[2] for f in FORMATS])
def test_limit_reads_the_first_rows(tmp_path: Path, table: np.ndarray, name, writer, fmt: str) -> None:
    embeddings = read_embeddings(writer(tmp_path / name, WORDS, table), limit=3)
    assert embeddings.words == WORDS[:3]
    np.testing.assert_array_equal(embeddings.vectors, table[:3])


def _assert_names_file(error: pytest.ExceptionInfo, path: Path) -> None:
    assert str(path) in str(error.value) or path.name in str(error.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.txt"
    with pytest.raises(EmbeddingsError, match="does not exist") as error:
        read_embeddings(path)
    _assert_names_file(error, path)
    with pytest.raises(EmbeddingsError):
        read_embeddings(tmp_path)  # a folder is not a vectors file


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.vec"
    path.write_bytes(b"")
    with pytest.raises(EmbeddingsError, match="empty") as error:
        read_embeddings(path)
    _assert_names_file(error, path)


def test_unknown_format_name(tmp_path: Path, table: np.ndarray) -> None:
    path = _write_glove(tmp_path / "v.txt", WORDS, table)
    with pytest.raises(EmbeddingsError, match="unknown embeddings format"):
        read_embeddings(path, fmt="parquet")


@pytest.mark.parametrize("writer", [_write_glove, _write_word2vec_text])
@pytest.mark.parametrize("change", ["short row", "long row"])
def test_row_of_the_wrong_dimension(tmp_path: Path, table: np.ndarray, writer, change: str) -> None:
    path = writer(tmp_path / "bad.txt", WORDS, table)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = len(lines) - 3
    lines[row] = lines[row].rstrip("\n") + (" 0.5\n" if change == "long row" else "")
    if change == "short row":
        lines[row] = lines[row].rsplit(" ", 1)[0] + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(EmbeddingsError) as error:
        read_embeddings(path)
    _assert_names_file(error, path)


def test_non_numeric_value(tmp_path: Path, table: np.ndarray) -> None:
    path = _write_glove(tmp_path / "bad.txt", WORDS, table)
    path.write_text(path.read_text(encoding="utf-8").replace(" ", " x", 1), encoding="utf-8")
    with pytest.raises(EmbeddingsError) as error:
        read_embeddings(path)
    _assert_names_file(error, path)


def test_nan_values(tmp_path: Path, table: np.ndarray) -> None:
    bad = table.copy()
    bad[2, 3] = np.nan
    path = _write_glove(tmp_path / "nan.txt", WORDS, bad)
    with pytest.raises(EmbeddingsError, match="NaN") as error:
        read_embeddings(path)
    _assert_names_file(error, path)


def test_header_promises_more_rows_than_the_file_has(tmp_path: Path, table: np.ndarray) -> None:
    path = tmp_path / "short.vec"
    path.write_text(f"{len(WORDS) + 5} {table.shape[1]}\n" + _text_rows(WORDS, table), encoding="utf-8")
    with pytest.raises(EmbeddingsError) as error:
        read_embeddings(path)
    _assert_names_file(error, path)


def test_garbage_binary(tmp_path: Path) -> None:
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + np.random.default_rng(0).bytes(4096))
    with pytest.raises(EmbeddingsError) as error:
        read_embeddings(path)
    _assert_names_file(error, path)


def test_truncated_binary(tmp_path: Path, table: np.ndarray) -> None:
    path = _write_word2vec_binary(tmp_path / "cut.bin", WORDS, table)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(EmbeddingsError) as error:
        read_embeddings(path)
    _assert_names_file(error, path)


@pytest.mark.parametrize(("name", "content"), [("huge.bin", b"99999999999 300\nabc"), ("huge.vec", b"99999999999 3\nthe 1 2 3\n")])
def test_absurd_header_counts_are_an_embeddings_error(tmp_path: Path, name: str, content: bytes) -> None:
    """Regression test for a fixed bug: a corrupt header whose word count cannot fit in memory makes gensim
    allocate count x dim floats up front; the reader lets the bare MemoryError (empty
    message) escape instead of an EmbeddingsError naming the file. (Checking the header
    against the file size, or catching MemoryError, would fix it.)"""
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(EmbeddingsError) as error:
        read_embeddings(path)
    _assert_names_file(error, path)


@pytest.mark.data
def test_real_glove_file_loads() -> None:
    path = require_shared_data("glove_6B_50d_10k", "glove.6B.50d.10k.txt")
    everything = read_embeddings(path, words_only=False)
    assert len(everything) == 10_000 and everything.dim == 50
    assert everything.vectors.dtype == np.float32
    assert everything.words[0] == "the" and everything.index_of("the") == 0
    with open(path, encoding="utf-8") as handle:
        first = handle.readline().split(" ")
    np.testing.assert_array_equal(everything.vector("the"), np.array(first[1:], dtype=np.float32))
    assert len(set(everything.words)) == 10_000
    small = read_embeddings(path, limit=100, words_only=False)
    assert small.words == everything.words[:100]
    # the decoding vocabulary keeps the word entries, in file order; the others still embed exactly
    words = read_embeddings(path)
    assert words.words == [w for w in everything.words if is_word(w)] and 9_000 < len(words) < 10_000
    np.testing.assert_array_equal(words.vector(","), everything.vector(","))


# --------------------------------------------------------------------------------------
# WordEmbeddings
# --------------------------------------------------------------------------------------


@pytest.fixture
def compound_embeddings() -> WordEmbeddings:
    words = ["the", "sun", "flower", "rise", "fan", "fiction", "market", "a", "b"]
    vectors = np.random.default_rng(1).standard_normal((len(words), 5))
    return WordEmbeddings(words, vectors, name="compounds")


def test_lookup_is_case_insensitive_and_handles_curly_apostrophes() -> None:
    embeddings = WordEmbeddings(["don't", "market"], [[1.0, 0.0], [0.0, 1.0]])
    assert "Market" in embeddings and "MARKET" in embeddings and "DON\u2019T" in embeddings
    np.testing.assert_array_equal(embeddings.vector("Don\u2019t"), [1.0, 0.0])
    assert 3 not in embeddings and "markets" not in embeddings


def test_exact_spelling_wins_over_a_case_variant() -> None:
    """Regression test for a fixed bug: index_of documents "exact spelling first, then lower case", but the
    index is built in one pass, so the lower-cased key of an earlier "Apple" claims the
    slot "apple" before the later exact entry "apple" is seen. In a cased vocabulary
    (word2vec GoogleNews, fastText) the word "apple" then gets the vector of "Apple"."""
    embeddings = WordEmbeddings(["Apple", "apple"], [[1.0, 0.0], [0.0, 1.0]])
    assert embeddings.index_of("Apple") == 0
    assert embeddings.index_of("apple") == 1
    np.testing.assert_array_equal(embeddings.vector("apple"), [0.0, 1.0])
    assert embeddings.index_of("APPLE") in (0, 1)


def test_embed_many_equals_vector_one_by_one(compound_embeddings: WordEmbeddings) -> None:
    words = ["Sun", "sunflower", "qqq", "market", "sunrise"]
    many = compound_embeddings.embed(words)
    assert many.dtype == np.float32 and many.shape == (5, 5)
    for row, word in zip(many, words):
        np.testing.assert_array_equal(row, compound_embeddings.vector(word))
    assert compound_embeddings.embed([]).shape == (0, 5)


def test_greedy_pieces_embed_unknown_compounds(compound_embeddings: WordEmbeddings) -> None:
    e = compound_embeddings
    np.testing.assert_allclose(e.vector("sunflower"), (e.vector("sun") + e.vector("flower")) / 2, rtol=1e-6)
    np.testing.assert_allclose(e.vector("Sunrise"), (e.vector("sun") + e.vector("rise")) / 2, rtol=1e-6)
    np.testing.assert_allclose(e.vector("fanfiction"), (e.vector("fan") + e.vector("fiction")) / 2, rtol=1e-6)
    # unknown characters between pieces are skipped; one-letter pieces are not used
    np.testing.assert_allclose(e.vector("sunxflower"), (e.vector("sun") + e.vector("flower")) / 2, rtol=1e-6)
    assert e.oov.pieces("sunab") == ["sun"]
    assert e.oov.pieces("a") == ["a"]  # a whole one-letter word is its own piece


def test_word_without_known_pieces_gets_the_mean_vector(compound_embeddings: WordEmbeddings) -> None:
    mean = compound_embeddings.vectors.mean(axis=0)
    for word in ("zzz", "qxj", "42"):
        np.testing.assert_allclose(compound_embeddings.vector(word), mean, rtol=1e-6)


def test_greedy_piece_embedder_directly() -> None:
    table = GreedyPieceEmbedder(["fan", "fiction", "x"], np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(table.embed("FanFiction"), [0.5, 0.5, 0.0])
    assert table.pieces("fiction") == ["fiction"]
    assert table.embed("fiction").dtype == np.float32


def test_restrict_to_top_keeps_order_and_exact_vectors(compound_embeddings: WordEmbeddings) -> None:
    full = compound_embeddings
    top = full.restrict_to_top(4)
    assert top.words == full.words[:4]
    np.testing.assert_array_equal(top.vectors, full.vectors[:4])
    for word in full.words[4:]:
        assert word not in top  # can no longer be a substitute ...
        np.testing.assert_array_equal(top.vector(word), full.vector(word))  # ... but embeds as before
    np.testing.assert_array_equal(top.embed(full.words), full.vectors)
    assert full.restrict_to_top(len(full)) is full
    assert full.restrict_to_top(10**6) is full
    with pytest.raises(InvalidParameterError):
        full.restrict_to_top(0)


def test_restrict_to_words_keeps_vocabulary_order(compound_embeddings: WordEmbeddings) -> None:
    full = compound_embeddings
    chosen = full.restrict_to_words(["MARKET", "unknown", "Sun", "fan", "sun"])
    assert chosen.words == ["sun", "fan", "market"]  # vocabulary order, not the given order
    np.testing.assert_array_equal(chosen.vectors, full.vectors[[1, 4, 6]])
    np.testing.assert_array_equal(chosen.vector("fiction"), full.vector("fiction"))
    with pytest.raises(InvalidParameterError):
        full.restrict_to_words(["nothing", "known"])


@pytest.mark.data
def test_cut_glove_words_keep_their_exact_vectors() -> None:
    full = read_embeddings(require_shared_data("glove_6B_50d_10k", "glove.6B.50d.10k.txt"))
    top = full.restrict_to_top(1_000)
    cut = full.words[1_000:10_000:97]
    assert all(w not in top for w in cut)
    np.testing.assert_array_equal(top.embed(cut), full.embed(cut))


@pytest.mark.parametrize(
    ("words", "vectors", "message"),
    [
        (["a", "b"], [[1.0, 2.0]], "2 words but 1 vectors"),
        ([], np.empty((0, 3)), "empty"),
        (["a"], [1.0, 2.0], "2-D"),
        (["a", "b"], [[1.0, np.inf], [0.0, 0.0]], "NaN or infinite"),
    ],
)
def test_bad_tables_are_refused(words, vectors, message: str) -> None:
    with pytest.raises(EmbeddingsError, match=message):
        WordEmbeddings(words, vectors, name="broken")


def test_cuda_exact_index_agrees_with_the_cpu_one() -> None:
    """Where a CUDA GPU is present (the lent device machine), GPU decoding gives the CPU's words."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU here: the GPU decoder (TEXTVEIL_DECODE_DEVICE=cuda) is tested on machines that have one")
    from textveil.embeddings.neighbours import CudaExactNeighbourIndex, ExactNeighbourIndex

    rng = np.random.default_rng(5)
    vocabulary = rng.standard_normal((30_000, 384)).astype(np.float32)
    queries = vocabulary[rng.integers(0, 30_000, 20_000)] + rng.standard_normal((20_000, 384)).astype(np.float32) * 3
    cpu, gpu = ExactNeighbourIndex(vocabulary).nearest(queries), CudaExactNeighbourIndex(vocabulary).nearest(queries)
    assert (cpu == gpu).mean() > 0.9999


# -- the parse cache: a vectors file is parsed once, later runs memory-map it ---------------------


@pytest.fixture
def parses(monkeypatch, tmp_path):
    """Counts the parses of vectors files, with the cache in a fresh folder."""
    from textveil.embeddings import readers

    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    real = readers._parse

    def counting(*args):
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(readers, "_parse", counting)
    return calls


def test_a_file_is_parsed_once_then_memory_mapped(tmp_path, table, parses):
    path = _write_glove(tmp_path / "vectors.txt", WORDS + [","], np.vstack([table, table[:1]]))
    first = read_embeddings(path)
    again = read_embeddings(path)
    assert len(parses) == 1
    assert isinstance(again.vectors.base, np.memmap) or isinstance(again.vectors, np.memmap)
    assert again.words == first.words and np.array_equal(again.vectors, first.vectors)
    assert "," not in again.words and np.array_equal(again.vector(","), first.vector(","))  # the full table embeds
    renamed = path.rename(tmp_path / "renamed.txt")
    read_embeddings(renamed)
    assert len(parses) == 1, "the cache is keyed by content, not by name"
    read_embeddings(renamed, limit=3)
    assert len(parses) == 2, "another way of reading it is another entry"


def test_a_file_changed_in_place_is_parsed_again(tmp_path, table, parses):
    path = _write_glove(tmp_path / "vectors.txt", WORDS, table)
    read_embeddings(path)
    _write_glove(path, WORDS, table * 2)
    changed = read_embeddings(path)
    assert len(parses) == 2
    assert np.allclose(changed.vector(WORDS[0]), table[0] * 2)


def test_an_unwritable_cache_still_reads(tmp_path, table, parses, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(blocked))
    path = _write_glove(tmp_path / "vectors.txt", WORDS, table)
    assert read_embeddings(path).words == WORDS
    assert read_embeddings(path).words == WORDS
    assert len(parses) == 2  # parsed each time, no error


def test_a_corrupt_cache_entry_names_the_fix(tmp_path, table, parses):
    from textveil.embeddings.readers import _cache_folder

    path = _write_glove(tmp_path / "vectors.txt", WORDS, table)
    read_embeddings(path)
    folder = _cache_folder(path, "glove", None)
    (folder / "vectors.npy").write_bytes(b"not an array")
    with pytest.raises(EmbeddingsError, match="corrupt.*delete that folder"):
        read_embeddings(path)


def test_decoding_threads_caps_the_threads_a_search_spreads_over():
    """The service gives each release a share of the cores: under ``decoding_threads(1)`` a
    search runs in its caller's thread only, under ``decoding_threads(2)`` over two threads
    (BLAS single-threaded in each), and elsewhere in the caller's thread with BLAS's own
    threads; every way finds the same rows."""
    import threading
    import time

    from textveil.embeddings import neighbours
    from textveil.embeddings.neighbours import ExactNeighbourIndex, decoding_threads

    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((500, 8)).astype(np.float32)
    queries = rng.standard_normal((1000, 8)).astype(np.float32)
    index = ExactNeighbourIndex(vectors)
    seen: set[int] = set()
    original = neighbours._run_parallel

    def spying(work, items, threads):
        def slowly(item):  # long enough that a pool of two runs two items side by side
            seen.add(threading.get_ident())
            time.sleep(0.05)
            work(item)

        return original(slowly, items, threads)

    neighbours._run_parallel = spying
    try:
        with decoding_threads(2):
            spread = index.nearest(queries)
        assert len(seen) == 2
        seen.clear()
        with decoding_threads(1):
            capped = index.nearest(queries)
        assert seen == {threading.get_ident()}
        seen.clear()
        plain = index.nearest(queries)
        assert seen == {threading.get_ident()}
    finally:
        neighbours._run_parallel = original
    assert (spread == plain).all()
    assert (spread == capped).all()
    with pytest.raises(InvalidParameterError):
        with decoding_threads(0):
            pass
