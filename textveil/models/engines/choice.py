"""Which engine runs a language model: ``auto``, ``llama-cpp`` or ``transformers``.

``auto`` takes llama.cpp for a GGUF file on the CPU, where llama.cpp is installed and passed its
check on this CPU (:func:`~textveil.models.engines.native.llama_cpp_unavailable`), and
transformers for a Hugging Face model folder, on CUDA, or where llama.cpp cannot run (saying so
in one line, once per process). Naming an engine that cannot run the model is a one-line error.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from textveil.errors import InputError, InvalidParameterError

ENGINES = ("auto", "llama-cpp", "transformers")
"""The engine names a language-model mechanism takes (its ``engine`` parameter)."""

log = logging.getLogger("textveil.models")
_TOLD: set[str] = set()


def check_engine(engine: str) -> str:
    """``engine`` if it names an engine, else a one-line error.

    >>> check_engine("llama-cpp")
    'llama-cpp'
    >>> check_engine("vllm")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: unknown engine 'vllm'; use one of: auto, llama-cpp, transformers
    """
    if engine not in ENGINES:
        raise InvalidParameterError(f"unknown engine '{engine}'; use one of: {', '.join(ENGINES)}")
    return engine


def resolve_engine(engine: str, model: Path, device: str) -> str:
    """The engine that runs ``model`` (a GGUF file or a model folder) on ``device`` (resolved:
    ``cpu`` or ``cuda[:N]``) when ``engine`` is asked for."""
    from textveil.models.engines.native import llama_cpp_unavailable

    check_engine(engine)
    is_gguf = model.suffix == ".gguf"
    on_cpu = device == "cpu"
    if engine == "transformers":
        return engine
    if engine == "llama-cpp":
        if not is_gguf:
            raise InputError(f"the llama-cpp engine reads GGUF files and '{model.name}' is a model folder: give a "
                             ".gguf file or engine=transformers")
        if not on_cpu:
            raise InputError(f"the llama-cpp engine runs on the CPU here, not on {device}: use device=cpu or "
                             "engine=transformers")
        reason = llama_cpp_unavailable()
        if reason is not None:
            raise InputError(reason)
        return engine
    if not (is_gguf and on_cpu):
        return "transformers"
    reason = llama_cpp_unavailable()
    if reason is None:
        return "llama-cpp"
    if reason not in _TOLD:  # one line per process: the run goes on, slower
        _TOLD.add(reason)
        log.warning("textveil: note: %s; the language model runs on transformers (slower)", reason)
    return "transformers"


def load_llama_cpp_engine(gguf: Path, digest: str) -> Any:
    """llama.cpp reading ``gguf`` (whose content digest is ``digest``) in the weights format this
    machine runs fastest (:func:`~textveil.models.engines.native.chosen_weights`), on every usable CPU."""
    from textveil.machine import usable_cpus
    from textveil.models.engines.llama_cpp_engine import LlamaCppEngine
    from textveil.models.engines.native import chosen_weights, converted_weights, installed_version

    weights = chosen_weights(gguf, digest)
    return LlamaCppEngine(converted_weights(gguf, digest, weights), weights, usable_cpus(), installed_version() or "")
