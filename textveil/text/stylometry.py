"""Writeprints-style stylometric features: how a text is written rather than what it says.

The set follows Narayanan et al. (2012), Table 2, as paper 004 uses it (its Table 1):

* length: characters, words, sentences, mean word length, mean sentence length (in words);
* word length: the share of words 1, 2, ..., 19 and 20+ characters long;
* vocabulary richness: type/token ratio, hapax and dis legomena per token, Yule's K;
* word shape: the share of words in lower case, Capitalised, ALL CAPS, mIxEd and with no
  letters (numbers);
* characters: the rate of each letter a-z (case folded), digit 0-9, punctuation mark
  ``.?!,;:()"-'``, special character ``` `~@#$%^&*_+=[]{}\\|/<> ```, upper-case letter,
  whitespace and non-ASCII character, per character of text;
* function words: the share of words that are function words, and of each one of them
  (scikit-learn's English stop-word list, the same list as :mod:`textveil.text.stopwords`).

Narayanan's syntactic-category pairs are left out: they need a part-of-speech tagger.

Rates rather than raw counts make a tweet and a news story comparable, and a text and its
release, whose length may differ (paper 002 measures the L2 change of such a vector); the
absolute lengths stay as their own columns. Every column is defined for the empty text (zeros), and nothing is random.

>>> row = stylometric_features(["I said: WOW, it's 42!"])[0]
>>> named = dict(zip(STYLOMETRIC_FEATURE_NAMES, row.tolist()))
>>> named["words"], named["shape_upper"], named["shape_no_letters"], named["punct_!"] * 21
(5.0, 0.2, 0.2, 1.0)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from textveil.text.stopwords import english_stop_words
from textveil.text.tokenize import WORD_PATTERN, word_key

MAX_WORD_LENGTH = 20  # longer words share the last word-length column
LETTERS = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
PUNCTUATION = ".?!,;:()\"-'"  # Narayanan et al. 2012, Table 2
SPECIAL = "`~@#$%^&*_+=[]{}\\|/<>"  # Narayanan et al. 2012, Table 2
SHAPES = ("lower", "capitalised", "upper", "mixed", "no_letters")
# Words are the tokenizer's word tokens; findall with its pattern is several times faster
# than building Token objects, and this module must handle thousands of texts a second.
_WORDS = re.compile(WORD_PATTERN)
# A sentence ends at a run of terminal marks followed by whitespace or the end of the text,
# so "3.5" and "..." do not count twice (abbreviations such as "Mr. X" do count: no
# tokenizer of this size knows them all).
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|\Z)")

_SCALARS = (
    "chars", "words", "sentences", "mean_word_length", "mean_sentence_length",
    "type_token_ratio", "hapax_ratio", "dis_legomena_ratio", "yules_k",
    "uppercase_rate", "whitespace_rate", "non_ascii_rate", "function_word_rate",
)
_WORD_LENGTH_NAMES = (*(f"word_length_{n}" for n in range(1, MAX_WORD_LENGTH)), f"word_length_{MAX_WORD_LENGTH}+")
# Per-character rates read from a histogram of ASCII code points: column name -> code points.
_CHAR_COLUMNS: tuple[tuple[str, tuple[int, ...]], ...] = (
    *((f"letter_{c}", (ord(c), ord(c.upper()))) for c in LETTERS),
    *((f"digit_{c}", (ord(c),)) for c in DIGITS),
    *((f"punct_{c}", (ord(c),)) for c in PUNCTUATION),
    *((f"special_{c}", (ord(c),)) for c in SPECIAL),
)
# scikit-learn's list (importing this module imports scikit-learn), sorted so that the
# columns never move.
FUNCTION_WORDS: tuple[str, ...] = tuple(sorted(english_stop_words()))

STYLOMETRIC_FEATURE_NAMES: list[str] = [
    *_SCALARS,
    *_WORD_LENGTH_NAMES,
    *(f"shape_{s}" for s in SHAPES),
    *(name for name, _ in _CHAR_COLUMNS),
    *(f"function_word_{w}" for w in FUNCTION_WORDS),
]

# Column look-ups, computed once.
_COLUMN = {name: i for i, name in enumerate(STYLOMETRIC_FEATURE_NAMES)}
_LENGTH_COLUMN = [_COLUMN[name] for name in _WORD_LENGTH_NAMES]  # indexed by length - 1
_SHAPE_COLUMN = {shape: _COLUMN[f"shape_{shape}"] for shape in SHAPES}
_FUNCTION_WORD_COLUMN = {w: _COLUMN[f"function_word_{w}"] for w in FUNCTION_WORDS}
_FIRST_CHAR_COLUMN = _COLUMN[_CHAR_COLUMNS[0][0]]  # the character columns are contiguous


def _ascii_to_columns() -> np.ndarray:
    """``M[code point, j] = 1`` when the code point counts towards character column j: one
    matrix product turns a code-point histogram into every character column at once."""
    matrix = np.zeros((128, len(_CHAR_COLUMNS)))
    for j, (_, codes) in enumerate(_CHAR_COLUMNS):
        matrix[list(codes), j] = 1.0
    return matrix


_ASCII_TO_COLUMNS = _ascii_to_columns()


def word_shape(word: str) -> str:
    """One of :data:`SHAPES` for a word.

    >>> [word_shape(w) for w in ["cat", "Cat", "I", "CAT", "iPhone", "1990"]]
    ['lower', 'capitalised', 'capitalised', 'upper', 'mixed', 'no_letters']
    """
    if word.lower() == word.upper():
        return "no_letters"
    if word.islower():
        return "lower"
    rest = word[1:]
    if word[0].isupper() and rest == rest.lower():
        return "capitalised"
    if word.isupper():
        return "upper"
    return "mixed"


def yules_k(frequencies: Counter[str]) -> float:
    """Yule's K = 10^4 (sum_m m^2 V_m - N) / N^2, where V_m words occur m times in N tokens.

    >>> yules_k(Counter({"a": 2, "b": 1, "c": 1}))
    1250.0
    """
    tokens = sum(frequencies.values())
    if tokens == 0:
        return 0.0
    return 1e4 * (sum(m * m for m in frequencies.values()) - tokens) / tokens**2


def stylometric_features(texts: Sequence[str]) -> np.ndarray:
    """One row of writeprints-style features per text (``len(texts) x d``, float64); the
    columns are named by :data:`STYLOMETRIC_FEATURE_NAMES`.

    >>> stylometric_features(["Hello, world.", ""]).shape == (2, len(STYLOMETRIC_FEATURE_NAMES))
    True
    """
    rows = np.zeros((len(texts), len(STYLOMETRIC_FEATURE_NAMES)))
    for row, text in zip(rows, texts):
        _fill_row(row, text)
    return rows


def _fill_row(row: np.ndarray, text: str) -> None:
    """Write the features of one text into ``row`` (zeros stand for an empty text)."""
    n_chars = len(text)
    if n_chars == 0:
        return
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    ascii_histogram = np.bincount(codes[codes < 128], minlength=128).astype(np.float64)
    row[_FIRST_CHAR_COLUMN:_FIRST_CHAR_COLUMN + len(_CHAR_COLUMNS)] = ascii_histogram @ _ASCII_TO_COLUMNS / n_chars
    row[_COLUMN["uppercase_rate"]] = sum(map(str.isupper, text)) / n_chars
    row[_COLUMN["whitespace_rate"]] = sum(map(str.isspace, text)) / n_chars
    row[_COLUMN["non_ascii_rate"]] = (n_chars - ascii_histogram.sum()) / n_chars
    row[_COLUMN["chars"]] = n_chars

    words = _WORDS.findall(text)
    n_words = len(words)
    if n_words == 0:
        return
    sentences = max(1, len(_SENTENCE_END.findall(text)))
    row[_COLUMN["words"]] = n_words
    row[_COLUMN["sentences"]] = sentences
    row[_COLUMN["mean_word_length"]] = sum(map(len, words)) / n_words
    row[_COLUMN["mean_sentence_length"]] = n_words / sentences

    # Counted in Python first and written once per distinct value: numpy item updates in the
    # per-word loop would cost more than everything else here.
    keys = list(map(word_key, words))
    frequencies = Counter(keys)
    for length, count in Counter(min(len(word), MAX_WORD_LENGTH) for word in words).items():
        row[_LENGTH_COLUMN[length - 1]] = count / n_words
    for shape, count in Counter(map(word_shape, words)).items():
        row[_SHAPE_COLUMN[shape]] = count / n_words
    function_words = 0
    for key, count in frequencies.items():
        column = _FUNCTION_WORD_COLUMN.get(key)
        if column is not None:
            row[column] = count / n_words
            function_words += count
    row[_COLUMN["function_word_rate"]] = function_words / n_words

    spectrum = Counter(frequencies.values())  # m -> number of words occurring m times
    row[_COLUMN["type_token_ratio"]] = len(frequencies) / n_words
    row[_COLUMN["hapax_ratio"]] = spectrum[1] / n_words
    row[_COLUMN["dis_legomena_ratio"]] = spectrum[2] / n_words
    row[_COLUMN["yules_k"]] = yules_k(frequencies)
