"""The ``textveil`` command line. It holds no privacy logic: it parses, calls the library, writes.

Releases go to stdout (or ``--output``); reports and progress go to stderr. Bad input gets one
line on stderr and exit status 2. One module per family of commands (``sanitize``, ``attack``,
``compare``, ``release``, ...); what they share is in :mod:`textveil.cli.console` (the error
console, warnings), :mod:`textveil.cli.progress`, :mod:`textveil.cli.options` (options as given)
and :mod:`textveil.cli.entity_options` (the entity stage's options); :mod:`textveil.cli.entry`
assembles them.
"""

from textveil.cli.entry import app, main

__all__ = ["app", "main"]
