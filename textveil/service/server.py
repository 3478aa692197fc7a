"""Running the service: loopback by default, and never on another address without a token.

>>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
(True, True, True, False)
"""

from __future__ import annotations

import ipaddress
import logging
import sys
import threading

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
    app = create_app(settings)
    # Loaded now: a bad file fails here, and the first request does not wait for it.
    log.info("embeddings: %s", app.state.engine.embeddings())
    for name, model in app.state.engine.models().items():
        log.info("trained %s loaded: %s", name, model.fingerprint().get("training_data"))
    threading.Thread(target=app.state.engine.warm_calibration, name="calibration warm-up", daemon=True).start()
    shown = f"[{host}]" if ":" in host else host
    log.info("textveil service on http://%s:%d/ (API docs /docs; token %s; ledger %s)", shown, port,
             "required" if settings.api_token else "off", "on" if settings.ledger else "off")
    uvicorn.run(app, host=host, port=port, access_log=False, server_header=False, log_level="info")
