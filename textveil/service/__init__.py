"""The local service and its web page: a FastAPI app (:func:`create_app`) over the library,
run by ``textveil serve`` (:func:`run_service`). It holds no privacy logic."""

from textveil.service.app import ServiceSettings, create_app
from textveil.service.server import is_loopback, run_service

__all__ = ["ServiceSettings", "create_app", "is_loopback", "run_service"]
