"""Streaming readers and shard writers for release jobs: corpora of any size, one record at a time.

:mod:`textveil.corpus.reading` reads whole files (``textveil sanitize`` releases what fits in
memory); a release job streams instead: JSONL line by line, CSV record by record over the open
file (:func:`~textveil.corpus.reading.csv_records`: a record it cannot delimit is refused),
Parquet batch by batch (``ParquetFile.iter_batches``) and folders one text file (one record) at
a time, so its memory does not grow with the corpus. Records are numbered
0.. in input order (files in :func:`~textveil.corpus.reading.expand_inputs`'s order), and the
error wording is reading.py's own (:func:`~textveil.corpus.reading.parse_jsonl_line`,
:func:`~textveil.corpus.reading.record_text`).

A shard is written in the input's format (:class:`ShardFormat`): JSONL shards for JSONL input,
CSV for CSV files sharing one header, Parquet for Parquet files sharing one schema; a folder of
text files, or a mix of formats, gives JSONL records ``{"path": ..., "text": ...}``. Every record
keeps the input record's other fields; only the text field is replaced by its release.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "posts.jsonl").write_text('{"id": 1, "text": "one"}\\n\\n{"id": 2, "text": "two"}\\n')
>>> files = release_inputs([str(folder / "posts.jsonl")])
>>> [(r.where, r.fields) for r in iter_records(files)]
[('line 1', {'id': 1, 'text': 'one'}), ('line 3', {'id': 2, 'text': 'two'})]
>>> shard = choose_shard_format(files)
>>> shard.render([{"id": 1, "text": "one"}], ["ONE"])
b'{"id": 1, "text": "ONE"}\\n'
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textveil.corpus.reading import (
    INPUT_FORMATS,
    STDIN,
    InputFile,
    csv_records,
    csv_rows,
    decode_input,
    expand_inputs,
    parse_jsonl_line,
    read_text_file,
    record_text,
)
from textveil.errors import InputError

RELEASE_INPUT_FORMATS = ("auto", "text", "jsonl", "csv", "parquet")
PARQUET_SUFFIXES = (".parquet", ".pq")
PARQUET_BATCH_ROWS = 4096
"""Rows read from a Parquet file at a time: a few MB of text, whatever the file's size."""
PATH_FIELD = "path"
"""The field naming a text file's path (relative to the folder given) in its JSONL record."""


@dataclass(frozen=True)
class Record:
    """One record to release: its fields (the whole input record; for a text file, its path and
    text), where it is (for messages: ``"line 3"``, ``"row 3"``) and which file it came from."""

    fields: dict[str, Any]
    source: InputFile
    where: str

    @property
    def display(self) -> str:
        """The record for a message: ``posts.jsonl line 3``."""
        return f"{self.source.display} {self.where}" if self.where else self.source.display


def release_inputs(inputs: list[str], input_format: str = "auto") -> list[InputFile]:
    """The files a release job reads, in order: :func:`~textveil.corpus.reading.expand_inputs`
    with Parquet (``.parquet``, ``.pq``, or ``--input-format parquet``) recognised. Standard input
    is refused: a job must read its input again to resume.

    >>> release_inputs(["-"])
    Traceback (most recent call last):
    ...
    textveil.errors.InputError: textveil release reads files and folders, not standard input ('-'): a job reads its input again to resume; save it to a file first
    """
    if STDIN in inputs:
        raise InputError("textveil release reads files and folders, not standard input ('-'): a job reads its input "
                         "again to resume; save it to a file first")
    if input_format not in RELEASE_INPUT_FORMATS:
        raise InputError(f"unknown input format '{input_format}'; use one of: {', '.join(RELEASE_INPUT_FORMATS)}")
    files = expand_inputs(inputs, input_format if input_format in INPUT_FORMATS else "auto")
    if input_format == "parquet":
        files = [dataclasses.replace(f, fmt="parquet") for f in files]
    elif input_format == "auto":
        files = [dataclasses.replace(f, fmt="parquet") if f.path is not None and f.path.suffix.lower()
                 in PARQUET_SUFFIXES else f for f in files]
    if not files:
        raise InputError(f"no input file found in {', '.join(inputs)}; give files or folders that hold some")
    return files


# -- reading ------------------------------------------------------------------------------


def iter_records(files: Sequence[InputFile], text_field: str = "text", encoding: str = "utf-8") -> Iterator[Record]:
    """Every record of every file, in order, one at a time; each record's text field is checked
    (present, text) as it is read, so a bad record stops the job with one line naming it."""
    _check_encoding(encoding)
    for source in files:
        if source.fmt == "text":
            text = read_text_file(source, encoding)
            yield Record({PATH_FIELD: source.relative.as_posix(), text_field: text}, source, "")
            continue
        rows = {"jsonl": _jsonl_rows, "csv": _csv_rows, "parquet": _parquet_rows}[source.fmt](source, encoding)
        for where, fields in rows:
            record_text(source, where, fields, text_field)
            yield Record(fields, source, where)


def check_records(files: Sequence[InputFile], text_field: str = "text", encoding: str = "utf-8") -> None:
    """Read every JSONL and CSV record once, streamed and kept nowhere, so that a record the
    reader refuses (a quote that never closes, a wrong number of fields, a line that is not a
    JSON object, a missing text field) stops a job before it writes anything, not after some of
    its shards. Text and Parquet files are read as the job goes."""
    for _ in iter_records([source for source in files if source.fmt in ("jsonl", "csv")], text_field, encoding):
        pass


def _check_encoding(encoding: str) -> None:
    import codecs

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise InputError(f"unknown encoding '{encoding}'; pass a Python codec name such as utf-8 or latin-1") from None


def _newline_is_one_byte(encoding: str) -> bool:
    """Whether lines can be split on the byte ``\\n`` before decoding (UTF-8, Latin-1: yes; UTF-16: no)."""
    return "a\n".encode(encoding) == b"a\n"


def _jsonl_rows(source: InputFile, encoding: str) -> Iterator[tuple[str, dict[str, Any]]]:
    assert source.path is not None
    if _newline_is_one_byte(encoding):
        # Split bytes, decode each line: a decoding error names its line, and a BOM is dropped.
        with source.path.open("rb") as stream:
            for number, raw in enumerate(stream, start=1):
                record = parse_jsonl_line(source, number, decode_input(raw, f"{source.display} line {number}",
                                                                       encoding))
                if record is not None:
                    yield f"line {number}", record
        return
    with source.path.open("r", encoding=encoding, newline="") as text:
        number = 0
        try:
            for number, line in enumerate(text, start=1):
                record = parse_jsonl_line(source, number, line)
                if record is not None:
                    yield f"line {number}", record
        except UnicodeDecodeError:
            raise _undecodable(source, encoding, number + 1) from None


def _csv_rows(source: InputFile, encoding: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The records of a CSV file, streamed, as strictly as :func:`~textveil.corpus.reading.csv_records`
    reads them (the file is read a second time only to name where an unclosed quote opened)."""
    path = source.path
    assert path is not None

    def lines() -> Iterator[str]:
        with path.open("r", encoding=_csv_encoding(encoding), newline="") as text:
            yield from text

    for line, row in csv_records(source, lines(), lines, lambda at: _undecodable(source, encoding, at)):
        yield f"line {line}", row


def _csv_encoding(encoding: str) -> str:
    # A UTF-8 byte-order mark is not part of the first column's name.
    return "utf-8-sig" if encoding.replace("-", "").replace("_", "").lower() == "utf8" else encoding


def _undecodable(source: InputFile, encoding: str, line: int) -> InputError:
    return InputError(f"{source.display} is not valid {encoding} (near line {line}); pass --encoding with the file's "
                      "encoding (e.g. --encoding latin-1)")


def _parquet_rows(source: InputFile, encoding: str) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow as pa

    parquet = _parquet_file(source)
    row = 0
    try:
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for fields in batch.to_pylist():
                row += 1
                yield f"row {row}", fields
    except (OSError, pa.ArrowException) as error:
        raise InputError(f"{source.display}: Parquet row {row + 1} cannot be read ({error}); the file is truncated "
                         "or corrupt") from None


def _parquet_file(source: InputFile):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(source.path)
    except (OSError, pa.ArrowException) as error:
        raise InputError(f"{source.display} is not a readable Parquet file ({error}); give a .parquet file or "
                         "another --input-format") from None


def estimate_records(files: Sequence[InputFile]) -> int:
    """About how many records ``files`` hold, cheaply, for a progress bar's total: line counts of
    JSONL and CSV (blank lines and multi-line fields make it an upper bound), a Parquet file's
    row count from its footer, one per text file.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.jsonl"
    >>> _ = path.write_text('{"text": "a"}\\n{"text": "b"}')
    >>> estimate_records(release_inputs([str(path)]))
    2
    """
    total = 0
    for source in files:
        assert source.path is not None
        if source.fmt == "text":
            total += 1
        elif source.fmt == "parquet":
            total += _parquet_file(source).metadata.num_rows
        else:
            lines, last = 0, b"\n"
            with source.path.open("rb") as stream:
                while chunk := stream.read(1 << 20):
                    lines += chunk.count(b"\n")
                    last = chunk[-1:]
            lines += last != b"\n"
            total += max(0, lines - (source.fmt == "csv"))  # a CSV file's header is no record
    return total


# -- writing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardFormat:
    """How a shard is written: its format (``jsonl``, ``csv`` or ``parquet``), the text field the
    release replaces, and the CSV header or the Parquet schema (Arrow IPC bytes) it keeps."""

    fmt: str
    text_field: str = "text"
    columns: tuple[str, ...] = ()
    schema: bytes = b""

    @property
    def suffix(self) -> str:
        return "." + self.fmt

    def describe(self) -> dict[str, Any]:
        """The format as shown data (the schema as a digest), for the manifest and the job's fingerprint."""
        import hashlib

        shown: dict[str, Any] = {"format": self.fmt, "text_field": self.text_field, "encoding": "utf-8"}
        if self.columns:
            shown["columns"] = list(self.columns)
        if self.schema:
            shown["schema_sha256"] = hashlib.sha256(self.schema).hexdigest()
        return shown

    def render(self, records: Sequence[dict[str, Any]], texts: Sequence[str]) -> bytes:
        """The shard's bytes: each record with its text field replaced by the text at the same
        position, every other field as it was (UTF-8)."""
        released = [{**fields, self.text_field: text} for fields, text in zip(records, texts, strict=True)]
        if self.fmt == "jsonl":
            # default=str: a Parquet value JSON has no type for (a date, a decimal) in a mixed-format job.
            return "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in released).encode("utf-8")
        if self.fmt == "csv":
            buffer = io.StringIO(newline="")
            writer = csv.DictWriter(buffer, fieldnames=list(self.columns), lineterminator="\n")
            writer.writeheader()
            writer.writerows(released)
            return buffer.getvalue().encode("utf-8")
        if self.fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pylist(released, schema=pa.ipc.read_schema(pa.py_buffer(self.schema)))
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink)
            return sink.getvalue().to_pybytes()
        raise InputError(f"unknown shard format '{self.fmt}'")  # pragma: no cover - ShardFormat is made below


def choose_shard_format(files: Sequence[InputFile], text_field: str = "text", encoding: str = "utf-8") -> ShardFormat:
    """The format of the shards: the inputs' own when they share it (CSV files: one header;
    Parquet files: one schema), else JSONL (text files, mixed formats or headers)."""
    formats = {source.fmt for source in files}
    if formats == {"csv"}:
        headers = {tuple(_csv_header(source, encoding)) for source in files}
        if len(headers) == 1:
            return ShardFormat("csv", text_field, columns=headers.pop())
    if formats == {"parquet"}:
        schemas = {_parquet_file(source).schema_arrow.serialize().to_pybytes() for source in files}
        if len(schemas) == 1:
            return ShardFormat("parquet", text_field, schema=schemas.pop())
    return ShardFormat("jsonl", text_field)


def _csv_header(source: InputFile, encoding: str) -> list[str]:
    path = source.path
    assert path is not None
    _check_encoding(encoding)

    def lines() -> Iterator[str]:
        with path.open("r", encoding=_csv_encoding(encoding), newline="") as text:
            yield from text

    rows = csv_rows(source, lines(), lines, lambda at: _undecodable(source, encoding, at))
    try:
        return next(rows, (0, []))[1]
    finally:
        rows.close()


def read_shard(path: str | Path) -> list[dict[str, Any]]:
    """The records of a written shard (for checks and tests), whatever its format.

    >>> import tempfile, pathlib
    >>> shard = pathlib.Path(tempfile.mkdtemp()) / "shard-00000.csv"
    >>> _ = shard.write_bytes(ShardFormat("csv", columns=("id", "text")).render([{"id": "1", "text": "a"}], ["b"]))
    >>> read_shard(shard)
    [{'id': '1', 'text': 'b'}]
    """
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if path.suffix == ".csv":
        with path.open("r", encoding="utf-8", newline="") as text:
            return list(csv.DictReader(text))
    with path.open("rb") as stream:
        return [json.loads(line) for line in stream if line.strip()]
