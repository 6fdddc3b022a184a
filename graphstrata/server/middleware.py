"""Pure ASGI middleware (no BaseHTTPMiddleware: it would buffer streams and hide client
disconnects): API-key authentication and the request body limit. Both answer before the body is
read, so an unauthenticated or oversized upload costs the server nothing."""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from graphstrata.server.errors import BodyTooLarge, error_body

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: reachable without a key: liveness/readiness probes and the API documentation
OPEN_PATHS = frozenset({"/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})


def is_loopback(host: str | None) -> bool:
    """127.0.0.0/8, ::1 and `localhost`; 0.0.0.0, :: and every other address are not."""
    if not host:
        return False
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def send_json(send: Send, status: int, body: dict, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"connection", b"close"),  # the rest of the request body is not read
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", ()):
        if k.lower() == name:
            return v.decode("latin-1")
    return None


class AuthMiddleware:
    """``Authorization: Bearer <key>`` or ``X-API-Key: <key>`` on every route outside OPEN_PATHS.

    With no key configured, requests are only served on a loopback socket (the CLI refuses to bind
    anything else without a key; this guards an app started some other way, e.g. ``uvicorn --factory``).
    """

    def __init__(self, app: ASGIApp, api_key: str | None) -> None:
        self.app = app
        self.key = api_key.encode() if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.key is None:
            server = scope.get("server")
            if server and not is_loopback(server[0]):
                await send_json(
                    send,
                    401,
                    error_body(
                        "unauthorized",
                        "this server is reachable beyond loopback and has no API key: set GRAPHSTRATA_API_KEY",
                    ),
                )
                return
            await self.app(scope, receive, send)
            return
        given = None
        auth = _header(scope, b"authorization")
        if auth and auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        given = given or _header(scope, b"x-api-key")
        # header values arrive as bytes (decoded latin-1 here): compare those bytes with the key's UTF-8,
        # so a non-ASCII key sent as UTF-8 matches
        if not given or not hmac.compare_digest(given.encode("latin-1"), self.key):
            message = "missing API key" if not given else "wrong API key"
            await send_json(
                send,
                401,
                error_body("unauthorized", f"{message}: send `Authorization: Bearer <key>` or `X-API-Key: <key>`"),
                [(b"www-authenticate", b"Bearer")],
            )
            return
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """413 for a declared ``Content-Length`` over the limit (before reading), and for a chunked body
    the moment it passes the limit (the endpoint's read raises :class:`BodyTooLarge`)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.limit
            except ValueError:
                too_big = False
            if too_big:
                await send_json(send, 413, error_body("too_large", BodyTooLarge(self.limit).message))
                return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge as exc:  # raised where no handler turned it into a response
            if started:
                raise
            await send_json(send, 413, error_body(exc.code, exc.message))
