"""The ``textveil`` app assembled from the command modules, and ``main``, the console script.

Each module of :mod:`textveil.cli` holds one family of commands and a ``register_*`` function;
the order below is the order ``textveil --help`` lists them in.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer
from rich.console import Console

from textveil.cli.attack import register_attack_commands
from textveil.cli.audit import register_audit_commands
from textveil.cli.budget import register_budget_commands
from textveil.cli.compare import register_compare_commands
from textveil.cli.embeddings import register_embeddings_commands
from textveil.cli.help import fit_help_panels
from textveil.cli.models import register_model_commands
from textveil.cli.pivot import pivot_app
from textveil.cli.release import register_release_commands
from textveil.cli.sanitize import register_sanitize_commands
from textveil.cli.service import register_service_commands
from textveil.cli.synthesis import register_synthesis_commands
from textveil.errors import TextveilError
from textveil.models.device import DEVICE_VARIABLE, check_device

app = typer.Typer(
    name="textveil",
    help="Release text with a formal privacy guarantee against authorship re-identification.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _run_on(device: Optional[str] = typer.Option(
        None, "--device", metavar="auto|cpu|cuda[:N]",
        help="Where the language models run, for every command: auto (a GPU when one is present, else "
             "the CPU), cpu, or cuda[:N]. Sets TEXTVEIL_DEVICE, which a release's workers inherit.")) -> None:
    """Release text with a formal privacy guarantee against authorship re-identification."""
    if device is not None:
        os.environ[DEVICE_VARIABLE] = check_device(device)


register_embeddings_commands(app)  # embeddings: the bundled default vectors, built once
register_sanitize_commands(app)  # mechanisms, sanitize, calibrate: release texts
register_attack_commands(app)  # attack, evaluate: red-team a release, sweep a mechanism
register_model_commands(app)  # train and split: the commands of mechanisms that learn
register_synthesis_commands(app)  # synthesize: the synthetic corpus of a trained synth
register_audit_commands(app)  # audit: the mechanisms' privacy claims checked from the outside
register_service_commands(app)  # serve: the local service and its web page
register_budget_commands(app)  # budget: the privacy budget ledger's caps, totals and export
register_release_commands(app)  # release: a corpus of any size, sharded, resumable, on Dask
register_compare_commands(app)  # compare: mechanisms on one split, one frontier
app.add_typer(pivot_app, name="pivot")
fit_help_panels()  # every --help laid out at the terminal's width, nothing cut


def main() -> None:
    """Entry point: run the app; a TextveilError becomes one line on stderr and exit status 2."""
    if not sys.stderr.isatty():
        # Progress bars of the libraries below (model2vec's, the GGUF reader's) are tqdm bars, and
        # tqdm reads TQDM_* when it is imported, which no command has done yet: off the terminal
        # they would be one endless line of carriage returns. Ours become a line per stage.
        os.environ.setdefault("TQDM_DISABLE", "1")
    try:
        app(prog_name="textveil")
    except TextveilError as error:
        Console(stderr=True, highlight=False).print(f"textveil: error: {error}", markup=False, soft_wrap=True)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        raise SystemExit(0) from None
