"""Loading a pretrained model without the loaders' chatter on the user's stderr.

transformers 5 draws a weight-loading progress bar and prints a "LOAD REPORT" that flags the
packaged MiniLM checkpoint's unused ``position_ids`` buffer (harmless); skeletoken (under
model2vec) warns that it sets a padding token. None of it is actionable for a user, and it
landed in every first run and evaluation. Errors still get through: only warnings and below are
held back, and only while the ``with`` block runs.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

# Loggers whose warnings during a load are noise for textveil's users.
_CHATTY_LOGGERS = ("transformers", "sentence_transformers", "model2vec", "skeletoken")


@contextmanager
def quiet_model_loading() -> Iterator[None]:
    """Hold back the loaders' warnings and transformers' progress bars while loading; restore after.

    >>> import logging
    >>> before = logging.getLogger("skeletoken").level
    >>> with quiet_model_loading():
    ...     logging.getLogger("skeletoken").level == logging.ERROR
    True
    >>> logging.getLogger("skeletoken").level == before
    True
    """
    from transformers.utils import logging as transformers_logging

    loggers = [logging.getLogger(name) for name in _CHATTY_LOGGERS]
    levels = [logger.level for logger in loggers]
    bars = transformers_logging.is_progress_bar_enabled()
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
        if bars:
            transformers_logging.enable_progress_bar()
