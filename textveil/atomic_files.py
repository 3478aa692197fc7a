"""Files written whole or not at all: a temporary file in the same folder, then a rename.

A module of its own at the bottom of the package (it imports nothing of textveil's): every layer
writes files this way, from the casing table in :mod:`textveil.text` and a model's weights to a
release's shards and an experiment's report, so none has to import another layer to do it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` atomically, creating parent folders; returns the path. ``mode``
    (e.g. ``0o600`` for a key) is set on the temporary file before a byte is written, so the file
    never exists with wider permissions."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        if mode is not None:
            os.fchmod(handle, mode)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` atomically, with no newline translation (CRLF stays CRLF).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "out" / "a.txt"
    >>> atomic_write_text(p, "line\\r\\n").read_bytes()
    b'line\\r\\n'
    """
    return atomic_write_bytes(path, text.encode(encoding))
