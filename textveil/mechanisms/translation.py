"""Iterative translation (paper 004's second baseline): round trips through other languages with
Apertium, offline and rule-based (Debian's ``apertium`` with ``apertium-eng-spa``,
``apertium-eng-cat`` and ``apertium-spa-cat``).

English -> Spanish -> English (``via="spa"``), through Catalan (``"cat"``), or English ->
Spanish -> Catalan -> English (``"spa-cat"``), ``rounds`` times. Words Apertium does not know
pass through as themselves (``apertium -u`` drops only its marks), as do numbers and most
punctuation. No formal guarantee: the risk is measured (kind ``none``). Deterministic.

>>> IterativeTranslation().sanitize("The market rallied on Friday.").text
'The slice rallied the Friday.'
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from typing import ClassVar

from textveil.errors import InputError
from textveil.mechanisms.base import Mechanism, ProgressCallback, Release
from textveil.mechanisms.redaction import no_guarantee
from textveil.privacy.guarantee import Guarantee
from textveil.text.placeholders import PLACEHOLDER_PATTERN

PACKAGES = "apertium apertium-eng-spa apertium-eng-cat apertium-spa-cat"
CHAINS: dict[str, tuple[str, ...]] = {
    "spa": ("eng-spa", "spa-eng"),
    "cat": ("eng-cat", "cat-eng"),
    "spa-cat": ("eng-spa", "spa-cat", "cat-eng"),
}
"""The round trips, as the Apertium language pairs they run through."""


def translation_unavailable() -> str | None:
    """Why translation cannot run here (one line naming the packages), or None when it can."""
    if shutil.which("apertium") is None:
        return f"the translate mechanism needs Debian's Apertium: apt-get install {PACKAGES}"
    missing = sorted({pair for chain in CHAINS.values() for pair in chain} - _installed_pairs())
    if missing:
        return f"Apertium lacks the language pairs {', '.join(missing)}: apt-get install {PACKAGES}"
    return None


@functools.lru_cache(maxsize=1)
def _installed_pairs() -> frozenset[str]:
    """Apertium's language pairs, asked once per process (every construction checks them)."""
    try:
        listed = subprocess.run(["apertium", "-l"], capture_output=True, text=True, timeout=60).stdout.split()
    except (OSError, subprocess.SubprocessError):
        listed = []
    return frozenset(listed)


def apertium(pair: str, lines: Sequence[str]) -> list[str]:
    """Translate one line per text with one Apertium process (it keeps the line count; a text's
    own line breaks were joined beforehand)."""
    if not lines:
        return []
    result = subprocess.run(["apertium", "-u", pair], input="\n".join(lines) + "\n", capture_output=True,
                            text=True, timeout=3600)
    if result.returncode != 0:
        raise InputError(f"apertium {pair} failed ({result.stderr.strip().splitlines()[-1:] or 'no message'}); "
                         f"check the installation: apt-get install {PACKAGES}")
    output = result.stdout.split("\n")[: len(lines)]
    if len(output) != len(lines):  # never seen; translate one by one rather than misalign texts
        return [apertium(pair, [line])[0] for line in lines]
    return output


class IterativeTranslation(Mechanism):
    """The ``translate`` mechanism: Apertium round trips."""

    name = "translate"
    randomised: ClassVar[bool] = False
    placeholder_rule = ("each placeholder is kept whole and untranslated (Apertium would turn <LOCATION> into "
                        "<UBICACIÓN>)")

    def __init__(self, *, via: str = "spa", rounds: int = 1, seed: int | None = None) -> None:
        self._check_parameters(via=via, rounds=rounds, seed=seed)
        reason = translation_unavailable()
        if reason is not None:
            raise InputError(reason)

    @classmethod
    def unavailable(cls) -> str | None:
        return translation_unavailable()

    def sanitize_many(self, texts: Iterable[str], progress: ProgressCallback | None = None) -> list[Release]:
        texts = list(texts)
        # One line per text: Apertium translates line by line, and the layout is not kept anyway.
        lines = [" ".join(text.split()) for text in texts]
        lines, shielded = shield_placeholders(lines)
        for _ in range(self.rounds):
            for pair in CHAINS[self.via]:
                lines = apertium(pair, lines)
        releases = []
        for line, held in zip(lines, shielded):
            released = " ".join(unshield_placeholders(line, held).split())
            releases.append(Release(released, self._guarantee(len(released.split()))))
        if progress is not None:
            progress(len(texts))
        return releases

    def _guarantee(self, words: int) -> Guarantee:
        chain = " -> ".join(["eng", *(pair.split("-")[1] for pair in CHAINS[self.via])])
        return no_guarantee(
            self.name, f"The text went {self.rounds} time(s) through the round trip {chain} (Apertium).",
            ("words Apertium does not know (names, rare words, misspellings), numbers, most punctuation and casing, "
             "copied through the translation", "the sentence structure the rules keep", "the number of words"),
            words, unprotected_in_record=(("the number of words", words),))


_PLACEHOLDERS = re.compile(PLACEHOLDER_PATTERN)
_SHIELD = "Tvph"
"""How a placeholder travels through Apertium: an unknown word it copies, numbered within its line."""


def shield_placeholders(lines: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Each line with its placeholders (``<PERSON>``) as numbered words Apertium copies untranslated,
    and the placeholders each line held, for :func:`unshield_placeholders`.

    >>> lines, held = shield_placeholders(["Ask <PERSON> in <LOCATION>.", "No names."])
    >>> lines, held
    (['Ask Tvph0 in Tvph1.', 'No names.'], [['<PERSON>', '<LOCATION>'], []])
    >>> unshield_placeholders("Pregunta Tvph0 en Tvph1.", held[0])
    'Pregunta <PERSON> en <LOCATION>.'
    """
    shielded, held = [], []
    for line in lines:
        found: list[str] = []

        def number(match: re.Match[str]) -> str:
            found.append(match.group())
            return f"{_SHIELD}{len(found) - 1}"

        shielded.append(_PLACEHOLDERS.sub(number, line))
        held.append(found)
    return shielded, held


def unshield_placeholders(line: str, held: Sequence[str]) -> str:
    """``line`` with the numbered words of :func:`shield_placeholders` back as the placeholders."""
    if not held:
        return line
    return re.sub(rf"{_SHIELD}(\d+)", lambda m: held[int(m.group(1))] if int(m.group(1)) < len(held) else m.group(),
                  line)

