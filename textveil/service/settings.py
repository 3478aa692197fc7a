"""How a service runs (:class:`ServiceSettings`): a module of its own, so the app that serves
and the contract that describes it both read the settings without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from textveil.errors import InvalidParameterError
from textveil.machine import usable_cpus

MIN_TOKEN_LENGTH = 16


def _default_concurrency() -> int:
    """One release per usable CPU, each decoding on its own core (see ``ReleaseService``): more
    would only share the cores and scatter the latencies; the rest wait in line."""
    return usable_cpus()


@dataclass(frozen=True)
class ServiceSettings:
    """How a service runs. ``api_token`` never appears in ``repr``, logs or responses.

    ``embeddings``: ``"default"``, a vectors file, or a loaded
    :class:`~textveil.embeddings.WordEmbeddings` (tests pass small ones). ``concurrency``
    releases run at once; a request waits up to ``queue_seconds`` for a free slot, then gets
    503 with ``Retry-After``. ``request_timeout``: seconds before 504.
    ``batched_concurrency``: releases with a language model (``paraphrase``, ``restyle``) run at
    once under their own limit, queued the same way: their texts share the model's batches (a
    request waits at most a few tens of milliseconds to join), so they do not hold a CPU each.
    """

    ledger: str | Path | None = None
    api_token: str | None = field(default=None, repr=False)
    max_body_bytes: int = 1 << 20
    max_text_chars: int = 20_000
    max_texts: int = 200
    concurrency: int = field(default_factory=_default_concurrency)
    batched_concurrency: int = 32
    request_timeout: float = 30.0
    queue_seconds: float = 2.0
    cors_origins: tuple[str, ...] = ()
    embeddings: Any = "default"
    models: tuple[str | Path, ...] = ()
    """Folders of trained mechanisms (ER-AE, AE-DP) to release with, and language models (a .gguf
    file or a Hugging Face model folder) for paraphrase and restyle: each loaded once."""
    pseudonym_key: Any = field(default=None, repr=False)
    """The entity stage's pseudonym key for the life of the service: a file that holds it
    (``textveil serve --pseudonym-key FILE``) or a :class:`~textveil.privacy.secrets.Secret`;
    None: a fresh key, so pseudonyms hold until the service stops. Never shown."""
    mechanisms: Optional[tuple[str, ...]] = None
    """The only mechanisms the service offers (``textveil serve --mechanism NAME``); None: every
    one it can release with."""

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_text_chars", "max_texts", "concurrency", "batched_concurrency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidParameterError(f"{name} must be a whole number of at least 1, got {value!r}")
        for name in ("request_timeout", "queue_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
                raise InvalidParameterError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        if self.api_token is not None and (len(self.api_token) < MIN_TOKEN_LENGTH or self.api_token != self.api_token.strip()):
            raise InvalidParameterError(
                f"the API token must be at least {MIN_TOKEN_LENGTH} characters without surrounding spaces; make one "
                "with: python -c 'import secrets; print(secrets.token_urlsafe(32))'")
        object.__setattr__(self, "cors_origins", tuple(self.cors_origins))
        if self.mechanisms is not None:
            from textveil.mechanisms.registry import MECHANISMS

            object.__setattr__(self, "mechanisms", tuple(MECHANISMS.entry(name).name for name in self.mechanisms))
        if "*" in self.cors_origins:
            raise InvalidParameterError("--cors-origin '*' would let any web site call the service; name the origins")
