"""Memorisation of training texts by a synthetic corpus: exact copies and copied 8-grams."""

from __future__ import annotations

import numpy as np
import pytest

from textveil.errors import InputError, InvalidParameterError
from textveil.utility.memorisation import memorisation

rng = np.random.default_rng(0)
VOCABULARY = [f"w{i}" for i in range(500)]
TRAINING = [" ".join(rng.choice(VOCABULARY, size=30)) for _ in range(50)]


def test_copies_are_counted_and_fresh_texts_are_not():
    fresh = [" ".join(rng.choice(VOCABULARY, size=30)) for _ in range(50)]
    assert memorisation(fresh, TRAINING).texts_with_copied_ngram == 0.0  # 8 random words never repeat by chance
    copied = memorisation([TRAINING[3].upper() + "  ", TRAINING[7]], TRAINING)
    assert copied.exact_copies == 1.0 and copied.texts_with_copied_ngram == 1.0 and copied.copied_ngrams == 1.0
    spliced = " ".join(TRAINING[5].split()[4:12]) + " " + fresh[0]  # one copied 8-gram inside new text
    score = memorisation([spliced, fresh[1]], TRAINING)
    assert score.exact_copies == 0.0 and score.texts_with_copied_ngram == 0.5 and 0 < score.copied_ngrams < 0.1


def test_shorter_ngrams_find_more_and_texts_shorter_than_n_count_as_not_copied():
    half = " ".join(TRAINING[0].split()[:5])
    assert memorisation([half], TRAINING, n=8).texts_with_copied_ngram == 0.0
    assert memorisation([half], TRAINING, n=4).texts_with_copied_ngram == 1.0


@pytest.mark.parametrize(("synthetic", "training", "n", "error"), [
    ([], TRAINING, 8, InputError), (["a"], [], 8, InputError), (["a"], TRAINING, 0, InvalidParameterError),
    (["a"], TRAINING, 2.5, InvalidParameterError)])
def test_bad_input_gets_a_clear_error(synthetic, training, n, error):
    with pytest.raises(error):
        memorisation(synthetic, training, n)
