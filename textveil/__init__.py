"""textveil: release text with a formal guarantee against authorship re-identification.

>>> import textveil
>>> textveil.mechanism("emp", epsilon=20, seed=7).sanitize("Margaret Okafor's market in Portland rallied.").text
'FCA market in <LOCATION> rallied.'

``textveil.mechanism`` puts the entity stage (names, places and contact details out, Presidio)
before the mechanism, as every command does; the classes themselves (``EarthMoversPrivacy``...)
are the mechanisms alone. Here the stage wrote ``<PERSON> market in <LOCATION> rallied.``, and
emp then released each token within its guarantee: at epsilon 20 the placeholder ``<PERSON>``
came out as another word of the vocabulary.
"""

from typing import Any

from textveil.embeddings import WordEmbeddings, load_embeddings, read_embeddings
from textveil.errors import TextveilError
from textveil.mechanisms import Mechanism, Release
from textveil.privacy import Guarantee, Secret
from textveil.version import __version__


def mechanism(name: str, *, entities: Any = None, embeddings: Any = None, then: Any = None,
              **parameters: Any) -> Any:
    """The mechanism ``name`` with its ``parameters``, the entity stage before it: placeholders
    unless ``entities`` (a :class:`textveil.pii.EntityOptions`) says otherwise. The default
    embeddings are loaded for a mechanism that works with embeddings when none are given.
    ``then="polish"`` rewrites each release into sentences with the language model, which reads
    only the release (:mod:`textveil.mechanisms.polish`: no privacy cost).

    >>> mechanism("redact", entities=__import__("textveil.pii").pii.EntityOptions(operator="off")).name
    'redact'
    """
    from textveil.building import build_mechanism
    from textveil.mechanisms.registry import MECHANISMS
    from textveil.pii import EntityOptions

    if embeddings is None and "embeddings" in getattr(MECHANISMS.load(name), "resources", ()):
        embeddings = load_embeddings()
    return build_mechanism(name, {}, embeddings, entities=entities or EntityOptions(), then=then, **parameters)


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
    "mechanism",
    "read_embeddings",
    "utility_lower_bound",
]
