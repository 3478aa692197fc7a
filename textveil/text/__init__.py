"""Tokenising and detokenising text without losing a byte; stop words; casing.

No randomness and no embeddings live here.
"""

from textveil.text.casing import apply_casing
from textveil.text.stopwords import is_stop_word
from textveil.text.tokenize import Token, TokenKind, detokenize, tokenize, word_key

__all__ = ["Token", "TokenKind", "apply_casing", "detokenize", "is_stop_word", "tokenize", "word_key"]
