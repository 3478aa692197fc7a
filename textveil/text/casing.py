"""Casing: carried over from the input (``--layout keep``), or spelled by a public table.

The public table says how a word is usually written in English: for every lower-case form of
two or more characters, the spelling that is most probable in spaCy's lexeme probabilities
(``en_lexeme_prob`` of the PyPI package ``spacy-lookups-data``, estimated on a large web
corpus), kept only where it is at least twice as probable as the lower-case spelling
("london" -> "London", "nasa" -> "NASA", "iphone" -> "iPhone", but "may", "bill" and "apple"
stay lower case: a word that is often written both ways reads better in lower case, and a
single letter such as "w" is more often a capital in that corpus only as an initial). It is built from that package alone, never
from the text being released, so a release spelled by it is still a function of its tokens.
It is built once (about 8 s) and cached as a small JSON file.
"""

from __future__ import annotations

import gzip
import json
import math
from functools import cache

from textveil.atomic_files import atomic_write_text
from textveil.errors import TextveilError
from textveil.paths import cache_root
from textveil.text.tokenize import is_word

_CASING_FORMAT = 3
_MARGIN = math.log(2.0)  # the usual spelling must be at least twice as probable as lower case
CASING_SOURCE = "spaCy lexeme probabilities (PyPI spacy-lookups-data, en_lexeme_prob)"


def apply_casing(original: str, substitute: str) -> str:
    """Give ``substitute`` the capitalisation pattern of ``original`` (``--layout keep``).

    ALL CAPS stays all caps, a capitalised word gives a capitalised substitute, a lower-case
    word keeps the substitute as the vocabulary spells it (so a cased vocabulary's proper
    nouns keep their capitals).

    >>> apply_casing("GDP", "growth"), apply_casing("Market", "stocks"), apply_casing("bank", "lender")
    ('GROWTH', 'Stocks', 'lender')
    """
    if not original or not substitute:
        return substitute
    letters = [c for c in original if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return substitute.upper()
    if original[0].isupper():
        return substitute[0].upper() + substitute[1:]
    return substitute


def most_probable_spellings(log_probabilities: dict[str, float], margin: float = _MARGIN) -> dict[str, str]:
    """For each lower-case key of two or more characters, its most probable spelling, where
    that is not the key itself and beats the lower-case spelling by ``margin`` (natural log).

    >>> most_probable_spellings({"London": -10.9, "london": -13.6, "may": -7.7, "May": -10.4, "NASA": -11.9,
    ...                          "Apple": -10.2, "apple": -10.8, "W": -9.0, "w": -10.0})
    {'london': 'London', 'nasa': 'NASA'}
    """
    best: dict[str, tuple[str, float]] = {}
    for spelling, log_probability in log_probabilities.items():
        if len(spelling) < 2 or not is_word(spelling) or "\u2019" in spelling:
            continue  # a curly apostrophe is typography, not casing
        key = spelling.lower()
        if key not in best or log_probability > best[key][1]:
            best[key] = (spelling, log_probability)
    return {
        key: spelling for key, (spelling, log_probability) in best.items()
        if spelling != key and log_probability - log_probabilities.get(key, -math.inf) >= margin
    }


@cache
def public_casing_table() -> dict[str, str]:
    """The public casing table (lower-case word -> usual spelling), built once and cached.

    >>> table = public_casing_table()
    >>> table["london"], table.get("bank", "bank")
    ('London', 'bank')
    """
    path = cache_root() / "casing" / f"public-casing-v{_CASING_FORMAT}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass  # a damaged cache is simply built again
    try:
        from importlib.resources import files

        data = (files("spacy_lookups_data") / "data" / "en_lexeme_prob.json.gz").read_bytes()
    except (ImportError, FileNotFoundError, ModuleNotFoundError):
        raise TextveilError(
            "the public casing table needs the package spacy-lookups-data; run 'make demo' or "
            "pip install spacy-lookups-data"
        ) from None
    table = most_probable_spellings(json.loads(gzip.decompress(data)))
    atomic_write_text(path, json.dumps(table, ensure_ascii=False, sort_keys=True))
    return table
