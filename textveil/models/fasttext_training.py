"""Train fastText supervised models repeatably: in a fresh process, backing off on NaN.

fastText 0.9.2 (the version on PyPI, and the ``fasttext-numpy2-wheel`` build of it)
initialises only the first tenth of its input matrix when it trains with fewer than ten
threads; the rest is whatever memory the allocator hands over. In a fresh process that
memory is zero and training is repeatable; in a process that has allocated and freed before,
it holds old values: two trainings with the same seed differ, or stop with "Encountered NaN"
at any learning rate (seen here: a toy model diverging at lr=0.0005 after other tests ran).
So every training runs in a child process that imports only fastText and saves the model to
a file the caller loads (about half a second of overhead).

A learning rate too high for the data also ends in "Encountered NaN" (tiny corpora); training
is then retried with the rate divided by ``backoff``, a few times, before a clear error.

Used by the fastText authorship attack and the fastText topic task alike.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from typing import Any

from textveil.errors import TextveilError

log = logging.getLogger(__name__)

# What the child runs: train with the JSON parameters, save the model to the given path.
_TRAIN_IN_CHILD = """
import json, sys
import fasttext
try:
    model = fasttext.train_supervised(**json.loads(sys.argv[1]))
except RuntimeError as exc:
    sys.exit(f"fastText: {exc}")
model.save_model(sys.argv[2])
"""


def load_fasttext() -> Any:
    """The ``fasttext`` module, or a clear error naming the package to install."""
    try:
        import fasttext
    except ImportError:
        raise TextveilError("this task needs the 'fasttext' package; pip install fasttext-numpy2-wheel") from None
    return fasttext


def train_supervised(
    params: dict[str, Any], model_path: str | os.PathLike[str], *, retries: int = 5, backoff: float = 4.0
) -> tuple[Any, float]:
    """Train ``fasttext.train_supervised(**params)`` in a fresh process; returns the model and the
    learning rate that trained it (``params["lr"]``, or smaller after a NaN).

    ``params`` must be JSON-serialisable and hold ``input`` (the training file) and ``lr``;
    the model is written to ``model_path`` (which the caller removes).
    """
    fasttext = load_fasttext()
    lr = float(params["lr"])
    for attempt in range(retries + 1):
        child = subprocess.run(
            [sys.executable, "-c", _TRAIN_IN_CHILD, json.dumps({**params, "lr": lr}), os.fspath(model_path)],
            capture_output=True, text=True,
        )
        if child.returncode == 0:
            return fasttext.load_model(os.fspath(model_path)), lr
        problem = (child.stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
        if "NaN" not in problem or attempt == retries:
            raise TextveilError(f"fastText failed to train ({problem}) at learning rate {lr:g}; try a lower lr")
        log.warning("fastText diverged at lr=%g; retrying at lr=%g", lr, lr / backoff)
        lr /= backoff
    raise AssertionError("unreachable")  # pragma: no cover
