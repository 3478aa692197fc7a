"""Turn command-line inputs (files, folders, ``-``) into documents, without losing a byte.

Plain text files are one document each, decoded from bytes so that line endings (CRLF in
C50) survive. ``.jsonl``/``.ndjson`` and ``.csv`` files hold one document per record, in a
named text field; the rest of each record is kept so a release can be written back in the
same shape. A record the reader cannot delimit (a CSV quote that never closes, a CSV record with
more or fewer fields than the header, a JSONL line that is not one JSON object) is refused with
one line naming the file and the line it starts on, never guessed.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

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
    textveil.errors.InputError: posts.jsonl: line 3 is not a JSON object (it is a list); each line must be one {...} object
    """
    if not line.strip():
        return None
    try:
        record = json.loads(line.rstrip("\r\n"))  # a column, not a line, past the end
    except json.JSONDecodeError as exc:
        raise InputError(f"{source.display}: line {number} is not valid JSON ({exc.msg} at column {exc.colno}); "
                         "each line must be one {...} object") from None
    if not isinstance(record, dict):
        raise InputError(f"{source.display}: line {number} is not a JSON object (it is {_json_kind(record)}); "
                         "each line must be one {...} object")
    return record


def _json_kind(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "true or false", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


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


def csv_records(
    source: InputFile, lines: Iterable[str], reread: Callable[[], Iterable[str]],
    undecodable: Callable[[int], Exception] | None = None,
) -> Iterator[tuple[int, dict[str, str]]]:
    """The records of a CSV input, one at a time, with the line each starts on (1-based; the
    header is the first non-blank row, blank lines are skipped). ``lines`` are the input's lines
    as read with ``newline=""``; ``reread()`` gives them again from the top, read only to name the
    line an unclosed quote opened on. A record the reader cannot delimit is refused, never
    guessed: a quote that never closes (it would swallow the rest of the input), text after a
    closing quote, or a record with more or fewer fields than the header, each one line naming
    the file, the line the record starts on and the fix. ``undecodable(line)`` makes the error
    for bytes that do not decode (streamed files).

    >>> upload = InputFile(Path("posts.csv"), Path("posts.csv"), "csv")
    >>> text = 'author,text\\nx,"two\\nlines"\\n\\ny,fine\\n'
    >>> again = lambda: physical_lines(text)
    >>> list(csv_records(upload, again(), again))
    [(2, {'author': 'x', 'text': 'two\\nlines'}), (5, {'author': 'y', 'text': 'fine'})]
    >>> text = 'author,text\\nx,"unterminated\\ny,fine\\n'
    >>> list(csv_records(upload, again(), again))
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: posts.csv: line 2 opens a quote that never closes (the rest of the file would be one field); close the quote opened on line 2, or quote the field and double the quote inside it ("")
    """
    rows = csv_rows(source, lines, reread, undecodable)
    header = next(rows, None)
    if header is None:
        return
    for start, row in rows:
        if len(row) != len(header[1]):
            raise _field_count_error(source, start, len(row), len(header[1]))
        yield start, dict(zip(header[1], row))


def csv_rows(
    source: InputFile, lines: Iterable[str], reread: Callable[[], Iterable[str]],
    undecodable: Callable[[int], Exception] | None = None,
) -> Iterator[tuple[int, list[str]]]:
    """The non-blank rows of a CSV input (the header first) with the line each starts on, read
    strictly; :func:`csv_records` says what is refused and what the arguments are."""
    # A field may hold a whole document: larger than csv's default limit of 128 KiB.
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(lines, strict=True)
    while True:
        start = reader.line_num + 1  # each row read (a blank one too) ends where the next starts
        try:
            row = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError:
            if undecodable is None:
                raise
            raise undecodable(reader.line_num + 1) from None
        except csv.Error as error:
            raise _csv_error(source, start, reader.line_num, error, reread) from None
        if row:
            yield start, row


def _field_count_error(source: InputFile, line: int, fields: int, expected: int) -> InputError:
    counted = f"{source.display}: line {line} has {fields} field{'s' * (fields != 1)}, the header has {expected}"
    if fields > expected:
        return InputError(f"{counted}: quote fields that hold a comma (\"a, b\")")
    return InputError(f"{counted}: give every record all the header's fields (an empty one as nothing between two "
                      "commas), and quote fields that hold a line break")


def _csv_error(source: InputFile, start: int, end: int, error: csv.Error, reread: Callable[[], Iterable[str]]
               ) -> InputError:
    """The one line for a record csv cannot read: where its quote opened, when a quote is the cause."""
    why = str(error)
    if why.startswith("unexpected end of data") or "expected after" in why:
        lines = itertools.islice(reread(), start - 1, end)
        opened = _open_quote_line(lines, start)
        where = f"line {start}" if opened == start else f"the record starting on line {start}"
        if why.startswith("unexpected end of data"):
            problem = f"{where} opens a quote{'' if opened == start else f' on line {opened}'} that never closes " \
                      "(the rest of the file would be one field)"
        else:
            problem = f"{where} has text after the closing quote of a field opened on line {opened} (on line {end})"
        return InputError(f"{source.display}: {problem}; close the quote opened on line {opened}, or quote the field "
                          "and double the quote inside it (\"\")")
    return InputError(f"{source.display}: line {start} is not valid CSV ({why}); fix the record that starts there")


def _open_quote_line(lines: Iterable[str], first: int) -> int:
    """The line (counted from ``first``) on which the last quoted field of a CSV record opened,
    reading until the input ends or a closing quote is followed by text (csv's strict errors)."""
    delimiter, quote = ",", '"'
    opened, state = first, "start"  # start of a field, in an unquoted field, in a quoted field
    for number, line in enumerate(lines, start=first):
        at, size = 0, len(line)
        while at < size:
            if state == "quoted":
                close = line.find(quote, at)
                if close < 0:
                    break  # the field goes on to the next line
                if close + 1 < size and line[close + 1] == quote:
                    at = close + 2  # a doubled quote inside the field
                    continue
                if close + 1 < size and line[close + 1] not in (delimiter, "\r", "\n"):
                    return opened  # text after the closing quote: this field is the one
                state, at = "field", close + 1
                continue
            char = line[at]
            if state == "start" and char == quote:
                state, opened = "quoted", number
            elif char in (delimiter, "\r", "\n"):
                state = "start"
            else:
                state = "field"
            at += 1
    return opened


def physical_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` with their endings (``\\n``, ``\\r\\n`` or ``\\r``; not U+2028 and the
    like, which a JSON string may hold), as a file opened with ``newline=""`` reads them, without
    copying the text whole.

    >>> list(physical_lines("a\\r\\nb\\u2028c\\rd"))
    ['a\\r\\n', 'b\\u2028c\\r', 'd']
    """
    start = 0
    for end in _LINE_END.finditer(text):
        yield text[start:end.end()]
        start = end.end()
    if start < len(text):
        yield text[start:]


_LINE_END = re.compile(r"\r\n|\r|\n")


def _records(source: InputFile, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    lines = lambda: physical_lines(text)  # noqa: E731
    if source.fmt == "jsonl":
        for number, line in enumerate(lines(), start=1):
            record = parse_jsonl_line(source, number, line)
            if record is not None:
                yield number, record
    else:
        yield from csv_records(source, lines(), lines)


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
