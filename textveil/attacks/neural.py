"""A neural authorship classifier: fastText supervised on character n-grams.

Paper 002 attacks its releases with a trained neural authorship classifier, and paper 001
uses fastText (for topics) because its subword (character n-gram) vectors cope with words
never seen in training, which is what a mechanism's substitutes are. This attack is fastText's
linear classifier over the mean of word and character n-gram vectors.

Settings, measured on Reuters C50 (2,500 known and 2,500 unknown texts, 50 authors):

* training texts are cut into pieces of 30 words and shuffled. Whole texts as single examples
  give 2,500 updates an epoch and converge slowly (top-1 0.51 after 25 epochs, words only);
  fastText never shuffles its input, and a file grouped by author trains a model that
  predicts the last authors it read (top-1 at chance);
* character 3- and 4-grams, 50 dimensions, 15 epochs, learning rate 0.5: top-1 0.71, top-10
  0.98, in under a minute on two cores. 3- to 5-grams (25 epochs, 50-word pieces) reach
  0.70 in twice the time; 10 epochs of 20-word pieces 0.70; adding word bigrams 0.71; words
  alone 0.70. On C50 the n-grams add little; they are there for released text, whose
  substitutes a word-only model has never seen;
* one training thread: fastText's threads update the model without locks, so only one thread
  gives the same model for the same seed. ``threads`` trades that for speed.

fastText 0.9.2 (the version on PyPI) initialises only the first tenth of its input matrix
when it trains with fewer than ten threads; the rest is whatever memory it was given. In a
fresh process that memory is zero, and training is repeatable; in a process that has trained
before it holds old values, and two trainings with the same seed differ (or diverge to NaN).
So every training runs in a fresh Python process that imports only fastText and saves the
model to a file this process loads: about half a second each time, for repeatable models.

A learning rate that is too high for the data makes fastText stop with "Encountered NaN"
(small corpora and short pieces are prone to it); :meth:`FastTextAuthorship.fit` then retrains
with half the rate, a few times, before giving up with a clear error.
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.models.fasttext_training import train_supervised

_LABEL = "__label__"
_RETRIES = 4  # halvings of the learning rate tried after "Encountered NaN"


def one_line(text: str) -> str:
    """``text`` on one line, words separated by single spaces (fastText reads a line per text).

    >>> one_line("Two  lines\\nand\\ta tab ")
    'Two lines and a tab'
    """
    return " ".join(text.split())


def training_lines(texts: Sequence[str], label_ids: Sequence[int], piece_words: int, seed: int | None) -> list[str]:
    """fastText training lines: each text cut into pieces of ``piece_words`` words, each piece
    prefixed with its label's number, all pieces shuffled (seeded).

    >>> training_lines(["a b c", "d"], [0, 1], piece_words=2, seed=None)[0].startswith("__label__")
    True
    >>> sorted(training_lines(["a b c", "d"], [0, 1], piece_words=2, seed=0))
    ['__label__0 a b', '__label__0 c', '__label__1 d']
    """
    lines = []
    for text, label in zip(texts, label_ids):
        words = text.split()
        for start in range(0, len(words), piece_words):
            lines.append(f"{_LABEL}{label} {' '.join(words[start:start + piece_words])}")
    random.Random(seed).shuffle(lines)
    return lines


class FastTextAuthorship:
    """fastText supervised on words and their character n-grams; scores are label probabilities.

    Parameters
    ----------
    minn, maxn:
        Shortest and longest character n-grams of each word (fastText pads words with ``<`` and
        ``>``, so word starts and ends are n-grams of their own).
    word_ngrams:
        Word n-grams used as features besides words (1: single words only).
    dim:
        Size of the vectors.
    epochs, lr:
        Passes over the training pieces, and the starting learning rate.
    piece_words:
        Words per training example (see the module notes).
    bucket:
        Hash buckets for the n-grams (memory is ``bucket x dim`` floats).
    seed:
        Seed of fastText and of the shuffling of training pieces.
    threads:
        Training threads; only 1 gives the same model for the same seed.

    (The example trains a model, in well under a second.)

    >>> texts = ["colour honour flavour neighbour"] * 10 + ["color honor flavor neighbor"] * 10
    >>> attack = FastTextAuthorship(epochs=20).fit(texts, ["uk"] * 10 + ["us"] * 10)
    >>> attack.predict(["the colour of my neighbour", "the color of my neighbor"])
    ['uk', 'us']
    """

    name = "fasttext-char"

    def __init__(
        self,
        minn: int = 3,
        maxn: int = 4,
        word_ngrams: int = 1,
        dim: int = 50,
        epochs: int = 15,
        lr: float = 0.5,
        *,
        piece_words: int = 30,
        bucket: int = 200_000,
        seed: int = 0,
        threads: int = 1,
    ) -> None:
        if not 0 <= minn <= maxn:
            raise InvalidParameterError(f"character n-gram sizes need 0 <= minn <= maxn, got minn={minn}, maxn={maxn}")
        for what, value in (("word n-gram size", word_ngrams), ("dimension", dim), ("number of epochs", epochs),
                            ("words per training piece", piece_words), ("bucket count", bucket),
                            ("number of threads", threads)):
            if value < 1:
                raise InvalidParameterError(f"the {what} must be a positive integer, got {value}")
        if not lr > 0:
            raise InvalidParameterError(f"the learning rate must be positive, got {lr}")
        self.minn = minn
        self.maxn = maxn
        self.word_ngrams = word_ngrams
        self.dim = dim
        self.epochs = epochs
        self.lr = lr
        self.piece_words = piece_words
        self.bucket = bucket
        self.seed = seed
        self.threads = threads

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> FastTextAuthorship:
        """Train on the known texts (through a temporary folder, removed afterwards)."""
        known = LabelledCorpus(list(texts), [str(label) for label in labels], name="known texts")
        self.classes_: list[str] = known.label_set
        lines = training_lines(known.texts, np.searchsorted(self.classes_, known.labels).tolist(),
                               self.piece_words, self.seed)
        if not lines:
            raise InvalidParameterError("the known texts hold no words; fastText needs words to train on")
        with tempfile.TemporaryDirectory(prefix="textveil-fasttext-") as folder:
            data = os.path.join(folder, "train.txt")
            with open(data, "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
            self.model_ = self._train(data, os.path.join(folder, "model.bin"))
        return self

    def _train(self, data: str, model_path: str) -> Any:
        """Train on the file ``data`` in a fresh process (module notes), halving the learning
        rate after each NaN; returns the loaded model."""
        params = {
            "input": data, "lr": self.lr, "dim": self.dim, "epoch": self.epochs, "minn": self.minn,
            "maxn": self.maxn, "wordNgrams": self.word_ngrams, "bucket": self.bucket, "thread": self.threads,
            "seed": self.seed, "loss": "softmax", "minCount": 1, "verbose": 0,
        }
        model, self.lr_used_ = train_supervised(params, model_path, retries=_RETRIES, backoff=2.0)
        return model

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """``len(texts) x len(classes_)`` probabilities. A text with no word still gets some: fastText
        reads an end-of-line token on every line, and scores that alone (close to uniform)."""
        if not hasattr(self, "model_"):
            raise InvalidParameterError("the fastText attack is not fitted: call fit() first")
        out = np.zeros((len(texts), len(self.classes_)))
        if not texts:
            return out
        all_labels, all_probs = self.model_.predict([one_line(text) for text in texts], k=-1)
        for row, (labels, probs) in enumerate(zip(all_labels, all_probs)):
            columns = [int(label[len(_LABEL):]) for label in labels]
            out[row, columns] = probs
        return out

    def predict(self, texts: Sequence[str]) -> list[str]:
        """The most probable label of each text."""
        return [self.classes_[i] for i in np.argmax(self.scores(texts), axis=1)]
