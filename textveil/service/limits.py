"""The service's guards, as plain ASGI middleware (they run before any route; each an
:class:`HttpGuard`, which checks HTTP requests only):

- :class:`RequireToken`: every ``/v1`` route wants ``Authorization: Bearer TOKEN`` when a
  token is configured, compared in constant time (:func:`hmac.compare_digest`); 401 otherwise;
- :class:`LimitBody`: a body larger than the limit is refused with 413, by its
  ``Content-Length`` before it is read and by counting the bytes as they stream in (a client
  may send no length, or a false one); a JSON body that is not UTF-8 gets 400 naming the byte;
- :class:`AccessLog`: one line per request (method, route template, status, time), never a
  body, a query string or a path parameter (a subject may name a person);
- :class:`SecurityHeaders`: ``nosniff``, no referrer, and ``no-store`` on ``/v1`` (releases
  are not for caches).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("textveil.service")
PROTECTED_PREFIX = "/v1"


async def send_json(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    """A JSON error response ``{"detail": ...}``, as FastAPI writes its own."""
    body = json.dumps({"detail": detail}).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value
    return None


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


def protected(scope: Scope) -> bool:
    path = scope.get("path", "")
    return path == PROTECTED_PREFIX or path.startswith(PROTECTED_PREFIX + "/")


class HttpGuard:
    """A guard of HTTP requests (:meth:`http`); any other scope (lifespan, websocket) goes to the
    app untouched, so every guard lets the server start and stop whatever it checks."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.http(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class RequireToken(HttpGuard):
    """401 on a ``/v1`` request without the configured bearer token (no token configured: a no-op)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        super().__init__(app)
        self._token = None if token is None else _digest(token.encode("utf-8"))

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._token is None or not protected(scope) or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        given = _header(scope, b"authorization")
        challenge = {"WWW-Authenticate": 'Bearer realm="textveil"'}
        if given is None:
            await send_json(send, 401, "this service needs an API token: send the header 'Authorization: Bearer "
                                       "TOKEN' (the token textveil serve was given)", challenge)
            return
        scheme, _, value = given.partition(b" ")
        # Compared in constant time (digests of equal length: not even the token's length shows in the timing).
        matches = hmac.compare_digest(_digest(value.strip()), self._token)
        if scheme.lower() != b"bearer" or not matches:
            await send_json(send, 401, "the API token is wrong: send 'Authorization: Bearer TOKEN' with the token "
                                       "textveil serve was given", challenge)
            return
        await self.app(scope, receive, send)


class LimitBody(HttpGuard):
    """413 on a body over ``max_bytes`` (declared or streamed); 400 on a JSON body that is not
    UTF-8. The body is read whole (it is small) and handed on as one message."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        super().__init__(app)
        self.max_bytes = max_bytes

    def _too_large(self, size: int | None) -> str:
        got = "" if size is None else f" of {size:,} bytes"
        return (f"the request body{got} is larger than this service takes ({self.max_bytes:,} bytes): send fewer "
                "or shorter texts per request, or start textveil serve with a larger --max-body-bytes")

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = _header(scope, b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await send_json(send, 400, "the Content-Length header is not a number")
                return
            if size > self.max_bytes:
                await send_json(send, 413, self._too_large(size), {"Connection": "close"})
                return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_bytes:
                await send_json(send, 413, self._too_large(None), {"Connection": "close"})
                return
            if not message.get("more_body", False):
                break
        content_type = (_header(scope, b"content-type") or b"").split(b";")[0].strip().lower()
        if body and (content_type == b"application/json" or content_type.endswith(b"+json")):
            try:
                bytes(body).decode("utf-8")
            except UnicodeDecodeError as error:
                await send_json(send, 400, f"the request body is not valid UTF-8: undecodable byte "
                                           f"0x{body[error.start]:02x} at byte offset {error.start}; send JSON "
                                           "encoded as UTF-8")
                return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()  # after the body: wait for the client to go

        await self.app(scope, replay, send)


class AccessLog(HttpGuard):
    """One log line per request: method, route template (``/v1/budget/{subject}``), status, seconds."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            route = scope.get("route")
            # The route's template, never the raw path: a path parameter (a subject) may name a person.
            where = getattr(route, "path", None) or (scope["path"] if not protected(scope) else "/v1/(no route)")
            log.info("%s %s -> %d (%.3f s)", scope.get("method"), where, status, time.perf_counter() - started)


class SecurityHeaders(HttpGuard):
    """Headers every answer carries; ``/v1`` answers are never cached."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        extra = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
        if protected(scope):
            extra.append((b"cache-control", b"no-store"))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {key.lower() for key, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [h for h in extra if h[0] not in present]
            await send(message)

        await self.app(scope, receive, with_headers)
