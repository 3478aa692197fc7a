"""Pseudonyms: the same entity gets the same fake value, chosen by a keyed hash.

The value's HMAC-SHA256 under the user's key (a :class:`~textveil.privacy.secrets.Secret`)
seeds Faker, which writes a fake value of the entity's kind: without the key nobody can tell
which real value a pseudonym stands for, or recompute one to test a guess. Values are compared
after case-folding and collapsing spaces ("Margaret" and "margaret" get one pseudonym).
Different real values may, rarely, draw the same pseudonym. Faker's output for a seed is fixed
for a given Faker version: keep the version to keep pseudonyms stable across runs.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from textveil.privacy.secrets import Secret

# The Faker provider that writes each entity type's fake value; a type not named here gets its
# placeholder (there is no convincing fake of it).
_FAKERS = {
    "PERSON": lambda fake, value: fake.first_name() if len(value.split()) == 1 else fake.name(),
    "LOCATION": lambda fake, value: fake.city(),
    "ORGANIZATION": lambda fake, value: fake.company(),
    "EMAIL_ADDRESS": lambda fake, value: fake.email(),
    "PHONE_NUMBER": lambda fake, value: fake.phone_number(),
    "URL": lambda fake, value: fake.url(),
    "IP_ADDRESS": lambda fake, value: fake.ipv4(),
    "CREDIT_CARD": lambda fake, value: fake.credit_card_number(),
    "IBAN_CODE": lambda fake, value: fake.iban(),
    "DATE_TIME": lambda fake, value: fake.date(),
    "US_SSN": lambda fake, value: fake.ssn(),
    "NRP": lambda fake, value: fake.country(),
}


def placeholder(entity_type: str) -> str:
    """The placeholder of an entity type.

    >>> placeholder("PERSON")
    '<PERSON>'
    """
    return f"<{entity_type}>"


def normalise(value: str) -> str:
    """What two mentions must share to be one entity.

    >>> normalise("  Margaret\\tOkafor ") == normalise("margaret okafor")
    True
    """
    return " ".join(value.split()).casefold()


class Pseudonymiser:
    """Fake values of entities, keyed. ``scope`` is folded into the hash: the stage passes the
    document's digest for per-document pseudonyms and nothing for one mapping across a corpus.

    >>> one = Pseudonymiser(Secret(b"k1"))
    >>> one.value("PERSON", "Margaret") == one.value("PERSON", "margaret")
    True
    >>> one.value("PERSON", "Margaret") != Pseudonymiser(Secret(b"k2")).value("PERSON", "Margaret")
    True
    """

    def __init__(self, key: Secret) -> None:
        from faker import Faker

        self._key = key
        self._fake: Any = Faker("en_US")

    def value(self, entity_type: str, original: str, scope: bytes = b"") -> str:
        """The pseudonym of ``original`` (an entity of ``entity_type``) within ``scope``."""
        write = _FAKERS.get(entity_type)
        if write is None:
            return placeholder(entity_type)
        message = b"\x00".join([scope, entity_type.encode(), normalise(original).encode("utf-8")])
        digest = hmac.new(self._key.reveal(), message, hashlib.sha256).digest()
        self._fake.seed_instance(int.from_bytes(digest[:8], "big"))
        return str(write(self._fake, original))
