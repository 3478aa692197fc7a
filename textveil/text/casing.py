"""Carry a word's capitalisation over to its substitute, so the release reads like the input."""

from __future__ import annotations


def apply_casing(original: str, substitute: str) -> str:
    """Give ``substitute`` the capitalisation pattern of ``original``.

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
