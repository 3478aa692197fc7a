"""The ``serve`` command: the local service and its web page (:mod:`textveil.service`).

It reads the options and the token, and hands them to :func:`textveil.service.run_service`.
The token is read from a file or from ``TEXTVEIL_API_TOKEN`` and never printed or logged; so is
the pseudonym key (``--pseudonym-key FILE``).
No privacy logic lives here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional

import typer

from textveil.cli.console import stderr
from textveil.errors import InputError

TOKEN_VARIABLE = "TEXTVEIL_API_TOKEN"


def read_token(token_file: Optional[Path]) -> Optional[str]:
    """The API token: the file's first line, else ``$TEXTVEIL_API_TOKEN``, else None."""
    if token_file is not None:
        try:
            mode = token_file.stat().st_mode
            lines = token_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"--token-file '{token_file}' cannot be read ({type(error).__name__}); give a UTF-8 "
                             "file holding the token on its first line") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise InputError(f"--token-file '{token_file}' is empty; put the token on its first line")
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            stderr.print(f"WARNING: --token-file '{token_file}' is readable by other users; chmod 600 it",
                         style="bold yellow", markup=False)
        return token
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    return token or None


def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on. Anything but loopback needs an API token."),
    port: int = typer.Option(8765, help="Port to listen on."),
    ledger: Optional[Path] = typer.Option(
        None, "--ledger", help="A budget ledger (SQLite file): every release then names a subject and spends from "
        "its budget; releases past a cap are refused."),
    token_file: Optional[Path] = typer.Option(
        None, "--token-file", help=f"A file whose first line is the API token (else ${TOKEN_VARIABLE}). Every /v1 "
        "request must then send 'Authorization: Bearer TOKEN'."),
    cors_origins: Optional[list[str]] = typer.Option(
        None, "--cors-origin", help="A web origin allowed to call the API from a browser (repeatable; default: none)."),
    embeddings: str = typer.Option("default", help="'default' or a word2vec/GloVe/fastText vectors file."),
    max_body_bytes: int = typer.Option(1 << 20, help="The largest request body, in bytes (larger: 413)."),
    max_text_chars: int = typer.Option(
        20_000, help="The longest text, in characters (longer: 422; in an uploaded file: 413)."),
    max_texts: int = typer.Option(200, help="The most texts in one request (more: 422; in an uploaded file: 413)."),
    concurrency: Optional[int] = typer.Option(
        None, help="Releases at once, sharing the CPUs out (default: one per CPU); more wait their turn up to 2 s, then get 503."),
    batched_concurrency: int = typer.Option(
        32, help="Releases with a language model (paraphrase, restyle) at once: their texts are decoded together in "
        "the model's batches; more wait their turn up to 2 s, then get 503."),
    timeout: float = typer.Option(30.0, help="Seconds a request may take (longer: 504)."),
    models: Optional[list[Path]] = typer.Option(
        None, "--model", help="A trained mechanism's folder ('textveil train') to release with, or a language model "
        "for paraphrase and restyle (a .gguf file or a Hugging Face causal LM folder; requests name it by its file "
        "or folder name); repeatable."),
    offered: Optional[list[str]] = typer.Option(
        None, "--mechanism", help="A mechanism the service offers (repeatable; default: every one it can release "
        "with); the API's schema lists only these."),
    pseudonym_key: Optional[Path] = typer.Option(
        None, "--pseudonym-key", help="A file holding the key of the entity stage's pseudonyms (requests with "
        "entities.operator 'pseudonym'): the same key gives the same pseudonyms across restarts; default: a fresh key, "
        "for as long as the service runs. Never printed, logged or written."),
) -> None:
    """Run the local service: the HTTP API (/v1, docs at /docs) and the web page (/, /results)."""
    from textveil.service import ServiceSettings, run_service

    from textveil.service.release_service import read_pseudonym_key

    options = {} if concurrency is None else {"concurrency": concurrency}
    key = None if pseudonym_key is None else read_pseudonym_key(pseudonym_key)  # unreadable: one line, now
    settings = ServiceSettings(
        ledger=ledger, api_token=read_token(token_file), max_body_bytes=max_body_bytes, max_text_chars=max_text_chars,
        max_texts=max_texts, batched_concurrency=batched_concurrency, request_timeout=timeout,
        cors_origins=tuple(cors_origins or ()), embeddings=embeddings,
        models=tuple(models or ()), pseudonym_key=key, mechanisms=tuple(offered) if offered else None, **options)
    run_service(host, port, settings)


def register_service_commands(app: typer.Typer) -> None:
    """Add ``serve`` to the ``textveil`` command line."""
    app.command("serve")(serve)
