"""Who may reach the app: the Host it answers, the origins whose pages may drive it, the
pages that may frame it, the scripts a page may run, and the identity header it believes.

Shiny's websocket is the app: whoever opens it reads every conversation and writes to
the review log as the reviewer. A page on another site that a reviewer has open could
open it (the handshake carries the browser's cookies and no check of where the page came
from), and through DNS rebinding reach a `serve` bound to 127.0.0.1. So, for every
request, before Shiny sees it:

- **Host**: only a name the app is reached by — the loopback names, this machine's own
  names, the address the connection came in on, and TRAJECTORY_ALLOWED_HOSTS. A rebound
  domain carries its own name in Host, never one of these.
- **Origin**: the websocket handshake and any request that can change state (not GET,
  HEAD, OPTIONS) must come from a page of the same origin (scheme, host and port) as
  the request it makes, from
  Posit Connect's own address when running there, or from TRAJECTORY_ALLOWED_ORIGINS. A
  request without Origin is not a browser's cross-site request (browsers always send it
  there), so it passes.
- **Framing and scripts**: every response forbids framing by other sites; the page gets a
  Content Security Policy whose scripts run only with this response's nonce (Shiny's own
  inline start-up scripts get it here) or are loaded by those ('strict-dynamic': Shiny
  loads an output's dependencies itself), with no inline event handlers, no plug-ins, and
  images only from the app (a recorded `<img src=http://…>` that slipped through would
  still fetch nothing).
- **Identity**: `Shiny-Server-Credentials` (and Connect's older name for it) is dropped
  unless a trusted proxy writes it (settings.trusted_proxy): otherwise any client could
  send one and be recorded as anyone.
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from htmltools import tags

from trajectory_review import settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

IDENTITY_HEADERS = (b"shiny-server-credentials", b"rstudio-connect-credentials")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
FRAMING = [
    (b"x-frame-options", b"SAMEORIGIN"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
CSP = (
    "default-src 'self'; script-src 'nonce-{nonce}' 'strict-dynamic'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'self'; base-uri 'self'; form-action 'self'; "
    "object-src 'none'"
)
# Responses that are not the page still forbid framing (a download, an asset).
CSP_OTHER = b"frame-ancestors 'self'; object-src 'none'"
MAX_PAGE = 16 * 1024 * 1024  # an HTML page held to give its scripts their nonce


@dataclass(frozen=True)
class Policy:
    hosts: frozenset[str]  # names (any port) or name:port pairs, lower case
    any_host: bool
    origins: frozenset[str]  # scheme://host[:port], lower case
    trust_identity: bool

    @classmethod
    def from_settings(cls) -> Policy:
        extra = {h.lower() for h in settings.allowed_hosts()}
        origins = {o.lower().rstrip("/") for o in settings.allowed_origins()}
        if settings.on_posit_connect() and settings.connect_server():
            origins.add(origin_of(settings.connect_server()))  # the dashboard's address
        return cls(
            hosts=frozenset(extra - {"*"}) | machine_names(),
            any_host="*" in extra,
            origins=frozenset(o for o in origins if o),
            trust_identity=settings.trusted_proxy(),
        )

    def host_allowed(self, host: str, local: str | None) -> bool:
        if self.any_host:
            return True
        name, _, port = split_host(host)
        if not name:
            return False
        return (
            name in LOOPBACK_NAMES
            or name in self.hosts
            or f"{name}:{port}" in self.hosts
            or (local is not None and name == local.lower())
        )

    def origin_allowed(self, origin: str, host: str, request: RequestOrigin) -> bool:
        """The page's origin must name the host and the scheme this request reached the
        app by (an http page on the same host:port is another origin than the https
        app, as browsers count them); behind a trusted proxy, the host or the scheme it
        says the browser used."""
        o = origin.strip().lower().rstrip("/")
        if o in self.origins:
            return True
        parts = urlsplit(o) if "://" in o else None
        if parts is None or not parts.netloc:
            return False  # "null" (a sandboxed frame, a file) or nonsense
        scheme = (self.trust_identity and request.forwarded_scheme) or request.scheme
        if parts.scheme != scheme:
            return False
        if parts.netloc == host.strip().lower():
            return True
        return self.trust_identity and parts.netloc == request.forwarded_host


@dataclass(frozen=True)
class RequestOrigin:
    scheme: str  # http or https, as the request reached the app
    forwarded_host: str | None  # X-Forwarded-Host's first value (a proxy's word)
    forwarded_scheme: str | None  # X-Forwarded-Proto's first value

    @classmethod
    def of(cls, scope: Scope, headers: dict[bytes, bytes]) -> RequestOrigin:
        scheme = str(scope.get("scheme") or "http").lower()

        def first(name: bytes) -> str | None:
            value = headers.get(name, b"").decode("latin-1").split(",")[0].strip().lower()
            return value or None

        return cls(
            {"ws": "http", "wss": "https"}.get(scheme, scheme),
            first(b"x-forwarded-host"),
            first(b"x-forwarded-proto"),
        )


def split_host(host: str) -> tuple[str, str, str]:
    """`name`, ":", `port` of a Host value (IPv6 in brackets kept whole)."""
    h = host.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        return (h[: end + 1], ":", h[end + 2 :]) if end > 0 else ("", "", "")
    return h.partition(":")


def origin_of(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""


@cache
def machine_names() -> frozenset[str]:
    """This machine's own names: a colleague may reach a `serve --host 0.0.0.0` by them,
    and a rebound domain is never one of them."""
    names = set()
    for get in (socket.gethostname, socket.getfqdn):
        try:
            names.add(get().lower())
        except OSError:
            pass
    return frozenset(n for n in names if n)


class Guard:
    """ASGI middleware in front of Shiny's app (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: Policy | None = None) -> None:
        self.app = app
        self.policy = policy or Policy.from_settings()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        host = headers.get(b"host", b"").decode("latin-1")
        server = scope.get("server")
        local = str(server[0]) if server else None
        if not self.policy.host_allowed(host, local):
            await refuse(scope, receive, send, "this address is not one the app answers")
            return
        origin = headers.get(b"origin")
        if origin is not None and (kind == "websocket" or scope.get("method") not in SAFE_METHODS):
            if not self.policy.origin_allowed(
                origin.decode("latin-1"), host, RequestOrigin.of(scope, headers)
            ):
                await refuse(scope, receive, send, "a page of another site may not do this")
                return
        if not self.policy.trust_identity:
            scope = dict(scope)
            scope["headers"] = [
                (k, v) for k, v in scope.get("headers") or [] if k.lower() not in IDENTITY_HEADERS
            ]
        if kind == "websocket":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, Page(send).send)


class Page:
    """A response on its way out: framing forbidden on every one; an HTML page held
    whole so its script tags carry this response's nonce and its CSP names it."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._start: Message | None = None
        self._body: list[bytes] = []
        self._size = 0

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers") or [])
            ctype = next((v for k, v in headers if k.lower() == b"content-type"), b"")
            headers += FRAMING
            if ctype.startswith(b"text/html"):
                self._start = {**message, "headers": headers}
                return
            await self._send(
                {**message, "headers": [*headers, (b"content-security-policy", CSP_OTHER)]}
            )
            return
        if message["type"] != "http.response.body" or self._start is None:
            await self._send(message)
            return
        self._body.append(message.get("body", b""))
        self._size += len(self._body[-1])
        if message.get("more_body", False) and self._size <= MAX_PAGE:
            return
        await self._flush(more=message.get("more_body", False))

    async def _flush(self, more: bool) -> None:
        start, self._start = self._start, None
        assert start is not None
        nonce = secrets.token_urlsafe(18)
        body = b"".join(self._body).replace(b"<script", f'<script nonce="{nonce}"'.encode())
        self._body = []
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-security-policy", CSP.format(nonce=nonce).encode()))
        if not more:
            headers.append((b"content-length", str(len(body)).encode()))
        await self._send({**start, "headers": headers})
        await self._send({"type": "http.response.body", "body": body, "more_body": more})


def forbidden_page(why: str) -> str:
    """The 403 page: a page a screen reader can read (its language, a heading, the main
    landmark), as every other page of the app; plain text had none of them."""
    page = tags.html(
        tags.head(tags.meta(charset="utf-8"), tags.title("Forbidden · trajectory-review")),
        tags.body(
            tags.main(
                tags.h1("Forbidden"),
                tags.p(f"{why}."),
                tags.p("Why a request is refused: docs/security.md in the project."),
            )
        ),
        lang="en",
    )
    return "<!DOCTYPE html>\n" + str(page)


async def refuse(scope: Scope, receive: Receive, send: Send, why: str) -> None:
    """403 for a request, a closed handshake (403 as well) for a websocket; nothing of
    the request is echoed back."""
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.close", "code": 1008})
        return
    body = forbidden_page(why).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *FRAMING,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
