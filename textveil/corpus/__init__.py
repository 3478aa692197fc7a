"""Reading and writing corpora: text files, folders, stdin, JSON Lines and CSV."""

from textveil.corpus.reading import Document, InputFile, expand_inputs, read_documents, read_text_file
from textveil.corpus.writing import atomic_write_bytes, atomic_write_text

__all__ = [
    "Document",
    "InputFile",
    "atomic_write_bytes",
    "atomic_write_text",
    "expand_inputs",
    "read_documents",
    "read_text_file",
]
