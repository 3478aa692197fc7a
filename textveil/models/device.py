"""Where a network runs: ``auto`` (CUDA when a GPU is present, else the CPU), ``cpu`` or ``cuda[:N]``."""

from __future__ import annotations

from textveil.errors import InvalidParameterError


def check_device(device: str) -> str:
    """``device`` if it names a place a network can run, else a one-line error.

    >>> check_device("cuda:1")
    'cuda:1'
    >>> check_device("tpu")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: unknown device 'tpu'; use auto, cpu or cuda
    """
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise InvalidParameterError(f"unknown device '{device}'; use auto, cpu or cuda")
    return device


def resolve_device(device: str) -> str:
    """``"auto"``: CUDA when a GPU is present, else the CPU; any other name as it is."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
