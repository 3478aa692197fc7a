"""Errors that a user can act on.

Every error raised for bad input derives from :class:`TextveilError`; the CLI prints its
message on one line and exits with status 2, so the message itself must name the input
that was wrong and the fix.
"""

from __future__ import annotations


class TextveilError(Exception):
    """A problem with the user's input or setup, explained in one line."""


class InvalidParameterError(TextveilError, ValueError):
    """A parameter (epsilon, a policy name, a size) has a value the code cannot honour."""


class InputError(TextveilError):
    """An input file, folder or stream cannot be read as asked."""


class EmbeddingsError(TextveilError):
    """An embeddings file is missing, corrupt or does not fit the rest of the run."""
