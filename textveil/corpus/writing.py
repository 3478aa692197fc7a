"""Releases rendered for writing: each input file's records in its own shape, or as JSON Lines (the
files themselves are written whole or not at all by :mod:`textveil.atomic_files`)."""

from __future__ import annotations


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
