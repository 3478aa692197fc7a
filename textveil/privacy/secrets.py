"""Secrets (a key): a type whose value never reaches results, logs, reports or cache keys.

A :class:`Secret` prints, compares and serialises as the SHA-256 digest of its value, so a
secret placed by mistake in a mechanism's parameters, a results file or a log line shows only
that digest. The value itself is read with :meth:`Secret.reveal`, by the code that uses it.

>>> key = Secret(b"correct horse battery staple")
>>> str(key)
'<secret sha256:c4bbcb1fbec99d65>'
>>> key == Secret(b"correct horse battery staple"), "horse" in repr(key)
(True, False)
>>> import json; json.dumps({"key": key}, default=str)
'{"key": "<secret sha256:c4bbcb1fbec99d65>"}'
"""

from __future__ import annotations

import hashlib
import secrets as _system_secrets

from textveil.errors import InvalidParameterError


class Secret:
    """A secret value (bytes). Only its digest is ever shown."""

    __slots__ = ("_value",)

    def __init__(self, value: bytes | str) -> None:
        if isinstance(value, str):
            value = value.encode("utf-8")
        if not isinstance(value, bytes) or not value:
            raise InvalidParameterError("a secret key must be non-empty bytes or text")
        self._value = value

    @classmethod
    def generate(cls, size: int = 32) -> Secret:
        """A fresh random key from the operating system's entropy."""
        return cls(_system_secrets.token_bytes(size))

    def reveal(self) -> bytes:
        """The value: for the code that uses the key, never for display."""
        return self._value

    @property
    def digest(self) -> str:
        """A short SHA-256 digest: identifies the key without revealing it."""
        return hashlib.sha256(self._value).hexdigest()[:16]

    def __str__(self) -> str:
        return f"<secret sha256:{self.digest}>"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and _system_secrets.compare_digest(self._value, other._value)

    def __hash__(self) -> int:
        return hash(self.digest)

    def __copy__(self) -> Secret:  # immutable: a copy is the same key
        return self

    def __deepcopy__(self, memo: dict) -> Secret:
        return self

    def __reduce__(self):  # pickling would copy the value into caches and worker payloads
        raise TypeError("a Secret is not picklable; pass the key to the process that needs it explicitly")
