"""textveil: release text with a formal guarantee against authorship re-identification.

>>> from textveil import EarthMoversPrivacy, load_embeddings  # doctest: +SKIP
>>> EarthMoversPrivacy(epsilon=20, embeddings=load_embeddings()).sanitize("The market rallied.").text  # doctest: +SKIP
'The market rallied.'
"""

from typing import Any

from textveil.embeddings import WordEmbeddings, load_embeddings, read_embeddings
from textveil.errors import TextveilError
from textveil.mechanisms import Mechanism, Release
from textveil.privacy import Guarantee, Secret

__version__ = "0.3.0"


def __getattr__(name: str) -> Any:
    # Mechanism classes and the Earth Mover's arithmetic (scipy) load on first use, so
    # `import textveil` (and `textveil --help`) stays light.
    if name in {"EarthMoversPrivacy", "RandomReplacement", "SynTF", "Pivot", "PivotKey"}:
        import textveil.mechanisms as mechanisms

        return getattr(mechanisms, name)
    if name in {"earth_movers_distance", "indistinguishability_bound", "utility_lower_bound"}:
        import textveil.privacy as privacy

        return getattr(privacy, name)
    raise AttributeError(f"module 'textveil' has no attribute '{name}'")

__all__ = [
    "EarthMoversPrivacy",
    "Guarantee",
    "Mechanism",
    "Pivot",
    "PivotKey",
    "RandomReplacement",
    "Release",
    "Secret",
    "SynTF",
    "TextveilError",
    "WordEmbeddings",
    "earth_movers_distance",
    "indistinguishability_bound",
    "load_embeddings",
    "read_embeddings",
    "utility_lower_bound",
]
