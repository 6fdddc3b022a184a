"""What protects a server that has no API key from the browser it shares a machine with.

A keyless server listens on loopback only, but any web page the user opens can still reach it: a
page on ``https://evil.example`` can submit a form to ``http://127.0.0.1:8000/documents`` (a "simple"
request the browser sends without asking), and a name the attacker controls can be re-pointed at
127.0.0.1 (DNS rebinding) so that the page's own origin reads the answers. So a keyless server

* answers only requests whose ``Host`` is a loopback name or address (or one of
  ``GRAPHSTRATA_ALLOWED_HOSTS``) — a rebound name is refused;
* refuses state-changing requests (anything but GET/HEAD/OPTIONS) that a browser marks as coming
  from another origin: ``Sec-Fetch-Site`` other than ``same-origin``/``none``, or an ``Origin``
  (else ``Referer``) that is not this server. Clients that are not browsers (curl, httpx, the CLI)
  send none of these headers and are served.

With an API key none of this applies: a browser cannot attach the key to a cross-site request
without a CORS preflight, which this server never grants.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI

from graphstrata.server.errors import error_body
from graphstrata.server.middleware import OPEN_PATHS, ASGIApp, Receive, Scope, Send, _header, is_loopback, send_json

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def split_host(value: str) -> tuple[str, str]:
    """``host[:port]`` (``[v6]:port`` too) as (lower-case host, port or "")."""
    value = value.strip().lower()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host, rest.lstrip(":")
    if value.count(":") > 1:  # a bare IPv6 address
        return value, ""
    host, _, port = value.partition(":")
    return host.rstrip("."), port


class HostOriginMiddleware:
    """The Host allow-list and the cross-origin refusal of a keyless server (see the module docstring)."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]) -> None:
        self.app = app
        self.allowed = {split_host(h)[0] for h in allowed_hosts if h.strip()}

    def host_allowed(self, host: str) -> bool:
        return is_loopback(host) or host in self.allowed

    async def refuse(self, send: Send, message: str) -> None:
        await send_json(send, 403, error_body("forbidden", message))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host_header = _header(scope, b"host") or ""
        host, _ = split_host(host_header)
        if not self.host_allowed(host):
            await self.refuse(
                send,
                f"Host {host_header!r} is not this server's: a keyless server answers loopback names only "
                "(add names to GRAPHSTRATA_ALLOWED_HOSTS, or set GRAPHSTRATA_API_KEY)",
            )
            return
        if scope["method"] not in SAFE_METHODS and scope.get("path") not in OPEN_PATHS:
            problem = self.cross_origin(scope, host_header)
            if problem:
                await self.refuse(
                    send,
                    f"cross-origin request refused ({problem}); a keyless server only "
                    "accepts state-changing requests from itself or from clients that are not browsers",
                )
                return
        await self.app(scope, receive, send)

    def cross_origin(self, scope: Scope, host_header: str) -> str | None:
        """Why the request comes from another site, or None."""
        fetch_site = (_header(scope, b"sec-fetch-site") or "").strip().lower()
        if fetch_site and fetch_site not in ("same-origin", "none"):
            return f"Sec-Fetch-Site: {fetch_site}"
        for name in (b"origin", b"referer"):
            value = _header(scope, name)
            if value is None:
                continue
            if not self.same_origin(value, host_header):
                return f"{name.decode().title()}: {value}"
            return None  # the Origin decides; the Referer only stands in for a missing one
        return None

    def same_origin(self, url: str, host_header: str) -> bool:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # "null" (sandboxed frames, file: pages) and the like
        if parts.netloc.lower() == host_header.strip().lower():
            return True
        return split_host(parts.netloc)[0] in self.allowed


# ------------------------------------------------------------------------------------------------
# the OpenAPI document: the security scheme, and 400 where FastAPI would document 422
# ------------------------------------------------------------------------------------------------

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}
SECURITY_SCHEMES: dict[str, Any] = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer <GRAPHSTRATA_API_KEY>`"},
    "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "GRAPHSTRATA_API_KEY"},
}


def install_openapi(app: FastAPI, key_required: bool) -> None:
    """Publish what the API really does: every route outside OPEN_PATHS needs the key (when one is
    configured), and a request that does not validate is answered 400 with the error body, never 422."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        doc = build()
        components = doc.setdefault("components", {})
        components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
        components["schemas"].pop("HTTPValidationError", None)
        components["schemas"].pop("ValidationError", None)
        components["securitySchemes"] = SECURITY_SCHEMES  # required only when the server has a key
        error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        for path, operations in doc.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                if responses.pop("422", None) is not None or operation.get("requestBody") or "{" in path:
                    responses["400"] = {"description": "the request does not validate", **error}
                if key_required and path not in OPEN_PATHS:
                    operation["security"] = [{"bearer": []}, {"apiKey": []}]
                    responses["401"] = {"description": "no API key, or a wrong one", **error}
                responses.setdefault("default", {"description": "an error (see the codes at /docs)", **error})
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
