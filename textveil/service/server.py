"""Running the service: loopback by default, and never on another address without a token.

>>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
(True, True, True, False)
"""

from __future__ import annotations

import ipaddress
import logging
import sys
import time

from textveil.errors import InvalidParameterError
from textveil.service.app import ServiceSettings, create_app

log = logging.getLogger("textveil.service")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``); any other name counts as not."""
    if host.strip().lower() in {"localhost", "localhost."}:
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, settings: ServiceSettings) -> None:
    """Refuse a non-loopback ``host`` unless an API token is configured."""
    if not is_loopback(host) and settings.api_token is None:
        raise InvalidParameterError(
            f"refusing to listen on '{host}' without an API token: anyone who can reach it could release text and "
            "spend budgets; give --token-file FILE (or set TEXTVEIL_API_TOKEN), or listen on 127.0.0.1")


def run_service(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, settings: ServiceSettings | None = None) -> None:
    """Serve the app with uvicorn until interrupted (uvicorn's access log is off: the app logs
    each request by its route, never a path parameter or a body)."""
    import uvicorn

    settings = settings or ServiceSettings()
    check_bind(host, settings)
    if not 0 < port < 65536:
        raise InvalidParameterError(f"--port must be between 1 and 65535, got {port}")
    if not logging.getLogger().handlers and not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    _one_blas_thread()
    app = create_app(settings)
    # Loaded now: a bad file fails here, and the first request does not wait for it.
    log.info("embeddings: %s", app.state.service.embeddings())
    for name, model in app.state.service.models().items():
        log.info("trained %s loaded: %s", name, model.fingerprint().get("training_data"))
    started = time.perf_counter()
    for name in app.state.service.load_language_models():
        log.info("language model %s loaded and ready (%.1f s: a first request is as fast as the next)", name,
                 time.perf_counter() - started)
    started = time.perf_counter()
    app.state.service.warm_calibration()
    log.info("warmed up in %.1f s (the page's calibration curve and the decoder's index)", time.perf_counter() - started)
    started = time.perf_counter()
    if app.state.service.warm_entity_stage() is None:
        log.info("entity stage loaded in %.1f s (Presidio and spaCy; placeholders unless a request says otherwise; "
                 "pseudonyms keyed by %s)", time.perf_counter() - started,
                 "the --pseudonym-key file" if settings.pseudonym_key is not None else "a fresh key for this run")
    shown = f"[{host}]" if ":" in host else host
    log.info("textveil service on http://%s:%d/ (API docs /docs; token %s; ledger %s)", shown, port,
             "required" if settings.api_token else "off", "on" if settings.ledger else "off")
    uvicorn.run(app, host=host, port=port, access_log=False, server_header=False, log_level="info")


def _one_blas_thread() -> None:
    """BLAS on one thread for the life of the process: the service runs releases side by side and
    shares the CPUs out between them (``ReleaseService.decode_threads``); a BLAS product that
    spread over every core as well would compete with the other releases. Set once, never
    restored: a per-request limit would race, as the BLAS thread count is process-wide."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - comes with scikit-learn
        return
    threadpool_limits(limits=1, user_api="blas")
