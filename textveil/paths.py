"""Where textveil keeps what it builds once and reuses (embeddings, casing table, releases)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$TEXTVEIL_CACHE_DIR``, or the user's cache folder for textveil.

    >>> cache_root().name in {"textveil", os.environ.get("TEXTVEIL_CACHE_DIR", "textveil").rstrip("/").split("/")[-1]}
    True
    """
    override = os.environ.get("TEXTVEIL_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("textveil"))
