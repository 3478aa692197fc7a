"""A public output vocabulary for the language-model mechanisms: the tokens a release may be drawn from.

With the relative score clip(logit - max, -w, 0), every token at the floor weighs exp(-epsilon / 2)
against the model's best, so the floor's share of a step is about |V| exp(-epsilon / 2): with the
whole vocabulary of SmolLM2 (49,152 tokens) that is one step in six at epsilon 25, a random token
the model then follows. Every factor by which the candidate set shrinks buys 2 ln(factor) of
epsilon. The set may be restricted only by something public and fixed before any private text is
read; here, the ``size`` commonest tokens of English under the model's own tokenizer:

- the words of wordfreq's English frequency list (``top_n_list("en")``), commonest first, each as
  it opens a text and after a space, in lower case and capitalised, cut into the model's tokens;
  the tokens are taken in the order they first appear until there are ``size`` of them;
- then, whatever the size: the tokens of the digits, of the ASCII punctuation marks (alone and
  after a space), of a space, a newline and an empty line, of the entity stage's placeholders
  (``<PERSON>``, ... alone and after a space: a release can copy one whole), and the model's end
  tokens.

The model's control tokens other than the end tokens are never candidates. The set depends only
on the tokenizer, ``size`` and wordfreq's list (its version is in the digest), so it is built
once per model and size and kept in the cache folder. The Guarantee names its size and digest.

>>> parse_vocabulary("8000"), parse_vocabulary("all"), parse_vocabulary(4096)
('8000', 'all', '4096')
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import string
from dataclasses import dataclass
from typing import Any

import numpy as np

from textveil.errors import InvalidParameterError
from textveil.text.placeholders import placeholders

SMALLEST = 256
"""The smallest vocabulary a release may be drawn from (a size below reads as nothing)."""
WORDS_SCANNED = 200_000
"""How far down wordfreq's list the words are read for the largest sizes."""
_FORMAT = 2  # bump when the construction changes (2: the entity stage's placeholders)


def parse_vocabulary(value: Any) -> str:
    """``all`` or a whole number of at least :data:`SMALLEST` tokens, as the canonical string
    (a one-line error otherwise)."""
    text = str(value).strip().lower()
    if text == "all":
        return "all"
    if isinstance(value, bool) or not text.isdigit() or int(text) < SMALLEST:
        raise InvalidParameterError(f"vocabulary must be 'all' or a whole number of tokens of at least {SMALLEST}, "
                                    f"got {value!r}")
    return str(int(text))


@dataclass(frozen=True)
class OutputVocabulary:
    """The candidates of a language-model mechanism: sorted token ids, their digest, and a line
    that says what they are."""

    ids: np.ndarray
    digest: str
    description: str

    @property
    def size(self) -> int:
        return int(self.ids.size)


def whole_vocabulary(language_model: Any) -> OutputVocabulary:
    """Every token but the control tokens that do not end a reply."""
    excluded = set(language_model.special_token_ids) - set(language_model.end_token_ids)
    ids = np.array([i for i in range(language_model.vocabulary_size) if i not in excluded], dtype=np.int64)
    return OutputVocabulary(ids, _digest(ids), f"the model's whole output vocabulary ({ids.size:,} tokens, its "
                            "control tokens other than the end tokens left out)")


def output_vocabulary(language_model: Any, vocabulary: str) -> OutputVocabulary:
    """The output vocabulary ``vocabulary`` (``all`` or a size, see :func:`parse_vocabulary`) of
    ``language_model``: built once per model and size, kept in the cache folder."""
    vocabulary = parse_vocabulary(vocabulary)
    if vocabulary == "all":
        return whole_vocabulary(language_model)
    size = int(vocabulary)
    version = importlib.metadata.version("wordfreq")
    memo = _memo_path(language_model, size, version)
    try:
        ids = np.array(json.loads(memo.read_text())["ids"], dtype=np.int64)
    except (OSError, ValueError, KeyError):
        ids = _build(language_model, size)
        _remember(memo, ids)
    return OutputVocabulary(ids, _digest(ids), f"the {size:,} commonest tokens of English under the model's "
                            f"tokenizer (wordfreq {version}'s list), with the digits, punctuation, spaces, "
                            f"placeholders and end tokens: {ids.size:,} tokens")


def _build(language_model: Any, size: int) -> np.ndarray:
    from wordfreq import top_n_list

    excluded = set(language_model.special_token_ids) - set(language_model.end_token_ids)
    chosen: dict[int, None] = {}  # insertion-ordered: the order tokens first appear
    words = top_n_list("en", WORDS_SCANNED)
    batch = 2048
    for start in range(0, len(words), batch):
        forms = []
        for word in words[start:start + batch]:
            forms += [word, " " + word, word.capitalize(), " " + word.capitalize()]
        for ids in language_model.tokenizer(forms, add_special_tokens=False)["input_ids"]:
            for token in ids:
                if token not in excluded:
                    chosen.setdefault(int(token), None)
            if len(chosen) >= size:
                break
        if len(chosen) >= size:
            break
    kept = list(chosen)[:size]
    always = [*string.digits, *string.punctuation, *(" " + mark for mark in string.punctuation), " ", "\n", "\n\n",
              *placeholders(), *(" " + p for p in placeholders())]
    for ids in language_model.tokenizer(always, add_special_tokens=False)["input_ids"]:
        kept += [int(token) for token in ids if token not in excluded]
    kept += [int(token) for token in language_model.end_token_ids]
    return np.array(sorted(set(kept)), dtype=np.int64)


def _digest(ids: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).hexdigest()[:16]


def _memo_path(language_model: Any, size: int, version: str) -> Any:
    from textveil.paths import cache_root

    name = f"{language_model.content_hash}-{size}-wordfreq{version}-v{_FORMAT}.json"
    return cache_root() / "output-vocabularies" / name


def _remember(memo: Any, ids: np.ndarray) -> None:
    from textveil.atomic_files import atomic_write_text

    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(memo, json.dumps({"ids": [int(i) for i in ids]}))
    except OSError:  # a read-only cache only costs the next process the same build
        pass
