"""Atomic writes: a file appears whole (temporary file in the same folder, then rename) or not at all."""

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


def render_releases(
    documents: list, releases: list, output_format: str = "text", text_field: str = "text"
) -> dict:
    """Group releases by input file and render each file's output.

    ``output_format="text"`` gives each file back in its own shape: a plain text file's
    released text, or the JSONL/CSV records with the text field replaced (other fields kept).
    ``output_format="json"`` gives one JSON object per document (JSON Lines): its source,
    record number, released text, the tokens that changed, and its guarantee.
    Returns ``{InputFile: rendered text}`` in input order.
    """
    import csv
    import io
    import json

    grouped: dict = {}
    for document, release in zip(documents, releases):
        grouped.setdefault(document.source, []).append((document, release))
    rendered: dict = {}
    for source, pairs in grouped.items():
        if output_format == "json":
            lines = []
            for document, release in pairs:
                item = {"source": source.display, "record": document.record, **release.to_dict()}
                lines.append(json.dumps(item, ensure_ascii=False))
            rendered[source] = "\n".join(lines) + "\n"
        elif source.fmt == "text":
            rendered[source] = pairs[0][1].text
        elif source.fmt == "jsonl":
            rows = [json.dumps({**d.fields, text_field: r.text}, ensure_ascii=False) for d, r in pairs]
            rendered[source] = "\n".join(rows) + "\n"
        else:
            buffer = io.StringIO(newline="")
            writer = csv.DictWriter(buffer, fieldnames=list(pairs[0][0].fields), lineterminator="\n")
            writer.writeheader()
            for document, release in pairs:
                writer.writerow({**document.fields, text_field: release.text})
            rendered[source] = buffer.getvalue()
    return rendered
