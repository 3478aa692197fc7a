"""Where a network runs: ``auto`` (``TEXTVEIL_DEVICE`` when set, else CUDA when a GPU is present,
else the CPU), ``cpu`` or ``cuda[:N]``."""

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


DEVICE_VARIABLE = "TEXTVEIL_DEVICE"
"""The environment variable that sets where ``auto`` runs (the CLI's ``--device`` sets it, so a
release's Dask workers inherit it)."""


def resolve_device(device: str) -> str:
    """``"auto"``: the device ``TEXTVEIL_DEVICE`` names when it is set, else CUDA when a GPU is
    present, else the CPU; any other name as it is.

    >>> import os
    >>> os.environ["TEXTVEIL_DEVICE"] = "cpu"
    >>> resolve_device("auto"), resolve_device("cuda:1")
    ('cpu', 'cuda:1')
    >>> del os.environ["TEXTVEIL_DEVICE"]
    """
    if device != "auto":
        return device
    import os

    chosen = os.environ.get(DEVICE_VARIABLE, "").strip()
    if chosen and chosen != "auto":
        try:
            return check_device(chosen)
        except InvalidParameterError as error:
            raise InvalidParameterError(f"{DEVICE_VARIABLE}={chosen}: {error}") from None
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def is_torch_tensor(value: object) -> bool:
    """Whether ``value`` is a torch tensor, told without importing torch (a run that never loaded
    it does not pay for the import).

    >>> import numpy as np
    >>> is_torch_tensor(np.zeros(2))
    False
    """
    return type(value).__module__.startswith("torch")


def on_accelerator(value: object) -> bool:
    """Whether ``value`` is a torch tensor held by an accelerator (a GPU), not by the CPU: the one
    test of where a language model's logits live (:mod:`textveil.mechanisms.sampling` draws them
    there).

    >>> import torch
    >>> on_accelerator(torch.zeros(2)), on_accelerator([0.0, 1.0])
    (False, False)
    """
    return is_torch_tensor(value) and value.device.type != "cpu"  # type: ignore[attr-defined]
