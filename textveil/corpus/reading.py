"""Turn command-line inputs (files, folders, ``-``) into documents, without losing a byte.

Plain text files are one document each, decoded from bytes so that line endings (CRLF in
C50) survive. ``.jsonl``/``.ndjson`` and ``.csv`` files hold one document per record, in a
named text field; the rest of each record is kept so a release can be written back in the
same shape.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from textveil.errors import InputError

RECORD_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
INPUT_FORMATS = ("auto", "text", "jsonl", "csv")
STDIN = "-"


@dataclass(frozen=True)
class InputFile:
    """One file to read: where it is, how to read it, and its path relative to the input given."""

    path: Path | None  # None for standard input
    relative: Path  # mirrors the input folder's layout under an output folder
    fmt: str  # "text", "jsonl" or "csv"

    @property
    def display(self) -> str:
        return "<stdin>" if self.path is None else str(self.path)


@dataclass
class Document:
    """One text to release, with where it came from."""

    text: str
    source: InputFile
    record: int | None = None  # record number in a JSONL/CSV file (0-based)
    fields: dict[str, Any] = field(default_factory=dict)  # the whole record, for writing back


def _format_of(path: Path, forced: str) -> str:
    if forced != "auto":
        return forced
    return RECORD_FORMATS.get(path.suffix.lower(), "text")


def expand_inputs(inputs: list[str], input_format: str = "auto") -> list[InputFile]:
    """Files, folders (recursively, hidden entries skipped, sorted) and ``-`` for stdin."""
    if input_format not in INPUT_FORMATS:
        raise InputError(f"unknown input format '{input_format}'; use one of: {', '.join(INPUT_FORMATS)}")
    if not inputs:
        raise InputError("no input given; pass files, folders, or '-' for standard input")
    files: list[InputFile] = []
    for item in inputs:
        if item == STDIN:
            fmt = "text" if input_format == "auto" else input_format
            files.append(InputFile(None, Path("stdin"), fmt))
            continue
        path = Path(item)
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            files.extend(InputFile(p, p.relative_to(path), _format_of(p, input_format)) for p in found)
        elif path.is_file():
            files.append(InputFile(path, Path(path.name), _format_of(path, input_format)))
        else:
            raise InputError(f"input '{item}' does not exist; give a file, a folder, or '-' for standard input")
    return files


def decode_bytes(data: bytes, source: str, encoding: str) -> str:
    """Decode ``data``; a decoding error names the file, the byte offset and the fix."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{source} is not valid {encoding}: undecodable byte 0x{data[exc.start]:02x} at byte offset {exc.start}; "
            f"pass --encoding with the file's encoding (e.g. --encoding latin-1)"
        ) from None
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'; pass a Python codec name such as utf-8 or latin-1") from None


def decode_input(data: bytes, source: str, encoding: str = "utf-8") -> str:
    """The text of an input's bytes (a file, stdin, an upload), a UTF-8 byte-order mark dropped."""
    if data.startswith(b"\xef\xbb\xbf") and encoding.replace("-", "").lower() == "utf8":
        encoding = "utf-8-sig"  # a BOM is not part of the text
    return decode_bytes(data, source, encoding)


def read_text_file(source: InputFile, encoding: str = "utf-8") -> str:
    """The whole text of a file (or stdin), line endings untouched."""
    data = sys.stdin.buffer.read() if source.path is None else source.path.read_bytes()
    return decode_input(data, source.display, encoding)


def parse_jsonl_line(source: InputFile, number: int, line: str) -> dict[str, Any] | None:
    """The JSON object on line ``number`` of a JSONL input (None for a blank line); anything
    else is one line naming the file, the line and the fix.

    >>> upload = InputFile(Path("posts.jsonl"), Path("posts.jsonl"), "jsonl")
    >>> parse_jsonl_line(upload, 1, '{"text": "one"}'), parse_jsonl_line(upload, 2, "  ")
    ({'text': 'one'}, None)
    >>> parse_jsonl_line(upload, 3, '["one"]')
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: posts.jsonl: line 3 is not a JSON object; each line must be an object
    """
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source.display}: line {number} is not valid JSON ({exc.msg}); fix or remove it") from None
    if not isinstance(record, dict):
        raise InputError(f"{source.display}: line {number} is not a JSON object; each line must be an object")
    return record


def record_text(source: InputFile, where: str, record: dict[str, Any], text_field: str = "text") -> str:
    """The text of one JSONL/CSV/Parquet record (``where`` it is: ``"line 3"``, ``"row 3"``); a
    missing or non-text field is one line naming the fields there are and the fix.

    >>> upload = InputFile(Path("posts.jsonl"), Path("posts.jsonl"), "jsonl")
    >>> record_text(upload, "line 1", {"body": "one"}, "body")
    'one'
    >>> record_text(upload, "line 1", {"body": "one"})
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: posts.jsonl: record at line 1 has no field 'text' (fields: body); pass --text-field with the name of the text field
    """
    if text_field not in record:
        fields = ", ".join(sorted(map(str, record))) or "none"
        raise InputError(
            f"{source.display}: record at {where} has no field '{text_field}' (fields: {fields}); "
            "pass --text-field with the name of the text field"
        )
    value = record[text_field]
    if not isinstance(value, str):
        raise InputError(f"{source.display}: field '{text_field}' at {where} is not text; pass the right --text-field")
    return value


def _records(source: InputFile, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if source.fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            record = parse_jsonl_line(source, number, line)
            if record is not None:
                yield number, record
    else:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        for number, row in enumerate(reader, start=2):  # line 1 is the header
            yield number, dict(row)


def parse_documents(source: InputFile, text: str, text_field: str = "text") -> list[Document]:
    """The documents of one input whose ``text`` is already decoded: the whole text for a
    plain text input, else one per JSONL/CSV record (its ``text_field``).

    >>> upload = InputFile(Path("posts.jsonl"), Path("posts.jsonl"), "jsonl")
    >>> [d.text for d in parse_documents(upload, '{"text": "one"}\\n\\n{"text": "two"}\\n')]
    ['one', 'two']
    """
    if source.fmt == "text":
        return [Document(text, source)]
    documents: list[Document] = []
    for index, (number, record) in enumerate(_records(source, text)):
        documents.append(Document(record_text(source, f"line {number}", record, text_field), source, index, record))
    return documents


def read_documents(files: list[InputFile], text_field: str = "text", encoding: str = "utf-8") -> list[Document]:
    """Every document of every input file, in order."""
    documents: list[Document] = []
    for source in files:
        documents.extend(parse_documents(source, read_text_file(source, encoding), text_field))
    return documents
