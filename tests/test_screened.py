"""The screened decoder: the same rows as the exact search (the true nearest, lowest row on a
tie), however much of the arithmetic its bound lets it skip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import require_shared_data
from textveil.embeddings.decoders import make_neighbour_index
from textveil.embeddings.neighbours import ExactNeighbourIndex
from textveil.embeddings.screened import ScreenedNeighbourIndex
from textveil.mechanisms.sampling import sample_laplace_noise


def _true_nearest(vocabulary: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Brute force in float64 over the float32 inputs; np.argmin keeps the lowest row on a tie."""
    exact = vocabulary.astype(np.float64)
    scores = queries.astype(np.float64) @ exact.T - 0.5 * (exact**2).sum(axis=1)
    return scores.argmax(axis=1)


def _anisotropic(rng, count: int, dim: int) -> np.ndarray:
    """Vectors whose variance falls off over the axes, as real embeddings' does, then rotated."""
    scales = np.geomspace(3.0, 0.05, dim)
    rotation, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    return ((rng.standard_normal((count, dim)) * scales) @ rotation + 0.7).astype(np.float32)


@pytest.mark.parametrize("epsilon", [2.0, 10.0, 40.0, 200.0])
@pytest.mark.parametrize("dims", [None, 8, 40])
def test_same_rows_as_the_exact_search_at_every_noise_level(epsilon, dims):
    rng = np.random.default_rng(int(epsilon) + (dims or 0))
    vocabulary = _anisotropic(rng, 4000, 48)
    queries = (vocabulary[rng.integers(0, 4000, 700)] + sample_laplace_noise(700, 48, epsilon, rng)).astype(np.float32)
    index = ScreenedNeighbourIndex(vocabulary, dims=dims, vocabulary_tile=512, query_tile=128)
    rows = index.nearest(queries)
    assert np.array_equal(rows, _true_nearest(vocabulary, queries))
    assert np.array_equal(rows, ExactNeighbourIndex(vocabulary).nearest(queries))
    assert index.last_dims in {*index.grid, 48, dims}
    assert index.last_candidates >= 1


def test_a_tie_goes_to_the_lowest_row_and_duplicates_are_found():
    vocabulary = np.array([[0, 0], [2, 0], [1, 1], [2, 0], [1, -1]], dtype=np.float32)
    queries = np.array([[1, 0], [2, 0], [1.5, 0], [10, 10]], dtype=np.float32)  # [1, 0] is equidistant from four
    for dims in (1, 2):
        rows = ScreenedNeighbourIndex(vocabulary, dims=dims).nearest(queries)
        assert rows.tolist() == _true_nearest(vocabulary, queries).tolist() == [0, 1, 1, 2]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 300), dim=st.integers(1, 24),
       scale=st.floats(0.01, 100.0), dims=st.one_of(st.none(), st.integers(1, 24)))
def test_any_vocabulary_and_queries(seed, count, dim, scale, dims):
    rng = np.random.default_rng(seed)
    vocabulary = (_anisotropic(rng, count, dim) * scale).astype(np.float32)
    if count > 3:
        vocabulary[3] = vocabulary[1]  # a duplicate vector: the lower row must win
    queries = (vocabulary[rng.integers(0, count, 200)] + rng.laplace(size=(200, dim)) * scale).astype(np.float32)
    index = ScreenedNeighbourIndex(vocabulary, dims=None if dims is None else min(dims, dim))
    rows = index.nearest(queries)
    if index.last_dims < dim:  # screened: the true nearest (re-ranked in float64)
        assert np.array_equal(rows, _true_nearest(vocabulary, queries))
    else:  # the screen would not pay: the plain float32 search answered
        assert np.array_equal(rows, ExactNeighbourIndex(vocabulary).nearest(queries))


def test_bad_input_is_refused():
    from textveil.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="non-empty 2-D"):
        ScreenedNeighbourIndex(np.zeros((0, 3), dtype=np.float32))
    with pytest.raises(InvalidParameterError, match="dims must be between 1 and 3"):
        ScreenedNeighbourIndex(np.ones((5, 3), dtype=np.float32), dims=4)
    with pytest.raises(InvalidParameterError, match="n x 3"):
        ScreenedNeighbourIndex(np.ones((5, 3), dtype=np.float32)).nearest(np.ones((2, 4), dtype=np.float32))
    assert ScreenedNeighbourIndex(np.ones((5, 3), dtype=np.float32)).nearest(np.zeros((0, 3))).shape == (0,)
    assert isinstance(make_neighbour_index(np.ones((5, 3), dtype=np.float32), "screened"), ScreenedNeighbourIndex)


def test_emp_releases_the_same_words_screened_as_exact_on_reuters_text():
    """End to end through the public API, on real news text and the default 384-d embeddings:
    the same seed gives the same release with either exact decoder."""
    folder = require_shared_data("reuters_c50", "C50test")
    from textveil.embeddings import load_embeddings
    from textveil.mechanisms.earth_movers import EarthMoversPrivacy

    texts = [path.read_text(encoding="utf-8") for author in sorted(folder.iterdir())[:2]
             for path in sorted(author.glob("*.txt"))[:4]]
    embeddings = load_embeddings()
    for epsilon in (15.0, 40.0):
        exact = EarthMoversPrivacy(epsilon, embeddings, seed=9).sanitize_many(texts)
        screened = EarthMoversPrivacy(epsilon, embeddings, seed=9, decode="screened").sanitize_many(texts)
        assert [r.text for r in screened] == [r.text for r in exact]
        assert sum(r.guarantee.words_protected for r in exact) > 3000
