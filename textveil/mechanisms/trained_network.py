"""What every mechanism built on a trained torch network shares (ER-AE, AE-DP, synth): the
weights as one flat array in the fitted state (saved and loaded by the mechanism's face), the
network rebuilt from them once per weights array, a saved model that does not fit refused on
load, and the weights' digest in the fingerprint (two trainings with other seeds release
differently, so they must not share cached releases)."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

import numpy as np

from textveil.errors import InputError, InvalidParameterError
from textveil.models.device import resolve_device


class TrainedNetwork:
    """A mixin placed before :class:`~textveil.mechanisms.base.Mechanism`; the subclass builds
    its untrained network in :meth:`_build_network` and sets ``_network_cache = None`` and
    ``device`` in ``__init__``."""

    name: str
    device: str
    _network_cache: tuple[int, Any] | None
    trains_network: ClassVar[bool] = True

    def _build_network(self) -> Any:  # pragma: no cover - every subclass builds its own
        raise NotImplementedError

    def fingerprint(self) -> dict[str, Any]:
        weights = getattr(self, "weights_", None)
        model = None if weights is None else hashlib.sha256(np.ascontiguousarray(weights).tobytes()).hexdigest()[:16]
        return {**super().fingerprint(), "model": model}  # type: ignore[misc]

    def _network(self) -> Any:
        """The trained network on its device, rebuilt from ``weights_`` when they changed."""
        weights = getattr(self, "weights_", None)
        if weights is None:
            raise InvalidParameterError(
                f"{self.name} has no trained model: fit it first, or load one "
                f"('textveil train {self.name} --corpus FILE --out DIR', then --model DIR)")
        if self._network_cache is not None and self._network_cache[0] == id(weights):
            return self._network_cache[1]
        from textveil.models.autoencoder import load_flat_parameters

        network = self._build_network()
        try:
            load_flat_parameters(network, np.asarray(weights))
        except ValueError as error:
            raise InputError(f"the saved {self.name} model does not fit its parameters ({error}); train it again") from None
        network.to(resolve_device(self.device)).eval()
        self._network_cache = (id(weights), network)
        return network

    def _set_fitted_state(self, state: dict[str, Any]) -> None:
        super()._set_fitted_state(state)  # type: ignore[misc]
        if "weights_" in state:
            self._network()  # a saved model that does not fit its parameters fails on load, not later
