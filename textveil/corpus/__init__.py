"""Reading and writing corpora: text files, folders, stdin, JSON Lines and CSV (files are written
whole by :mod:`textveil.atomic_files`)."""

from textveil.corpus.reading import Document, InputFile, expand_inputs, read_documents, read_text_file

__all__ = [
    "Document",
    "InputFile",
    "expand_inputs",
    "read_documents",
    "read_text_file",
]
