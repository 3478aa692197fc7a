"""Word vectors: the ``WordEmbeddings`` table, file readers, the bundled default, neighbour indexes."""

from textveil.embeddings.default_model import build_default_embeddings, load_default_embeddings, load_embeddings
from textveil.embeddings.decoders import make_neighbour_index
from textveil.embeddings.neighbours import ApproximateNeighbourIndex, ExactNeighbourIndex
from textveil.embeddings.readers import read_embeddings
from textveil.embeddings.word_embeddings import GreedyPieceEmbedder, WordEmbeddings

__all__ = [
    "ApproximateNeighbourIndex",
    "ExactNeighbourIndex",
    "GreedyPieceEmbedder",
    "WordEmbeddings",
    "build_default_embeddings",
    "load_default_embeddings",
    "load_embeddings",
    "make_neighbour_index",
    "read_embeddings",
]
