"""textveil: release text with a formal guarantee against authorship re-identification.

>>> from textveil import EarthMoversPrivacy, load_embeddings  # doctest: +SKIP
>>> EarthMoversPrivacy(epsilon=20, embeddings=load_embeddings()).sanitize("The market rallied.").text  # doctest: +SKIP
'The market rallied.'
"""

from textveil.embeddings import WordEmbeddings, load_embeddings, read_embeddings
from textveil.errors import TextveilError
from textveil.mechanisms import EarthMoversPrivacy, Release
from textveil.privacy import Guarantee, earth_movers_distance, indistinguishability_bound, utility_lower_bound

__version__ = "0.2.0"

__all__ = [
    "EarthMoversPrivacy",
    "Guarantee",
    "Release",
    "TextveilError",
    "WordEmbeddings",
    "earth_movers_distance",
    "indistinguishability_bound",
    "load_embeddings",
    "read_embeddings",
    "utility_lower_bound",
]
