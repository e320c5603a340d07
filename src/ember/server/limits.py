"""The gate every request passes before an endpoint: who it is (a bearer token, 401), how fast
it may go (a token bucket per principal, 429 with Retry-After) and how large its body may be
(413, refused before it is read whole). Public paths (the UI's files, `/health`,
`/openapi.json`) pass without a token.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ember.errors import AuthenticationError
from ember.server.errors import ApiError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ember.config import ServerSettings

__all__ = ["PUBLIC", "Gate", "RateLimiter"]

PUBLIC = ("/health", "/openapi.json", "/", "/favicon.ico")
_PUBLIC_TREES = ("/static/",)


class RateLimiter:
    """A token bucket per principal: `rate` requests a second, bursts of `burst`."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # principal -> (tokens, when)

    def take(self, principal: str) -> float:
        """Take one request from `principal`'s bucket: 0.0 if it may go, else the seconds
        until it may."""
        now = self.clock()
        tokens, then = self._buckets.get(principal, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        if tokens < 1.0:
            self._buckets[principal] = (tokens, now)
            return (1.0 - tokens) / self.rate
        self._buckets[principal] = (tokens - 1.0, now)
        return 0.0


class Gate:
    """ASGI middleware: authenticate (`authenticate(header) -> principal`, or act as `local`
    without a token: `--no-auth`), rate-limit, and cap the request body; the principal goes
    into `request.state.principal`."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticate: Callable[[str | None], str],
        local: str | None,
        limits: ServerSettings,
    ) -> None:
        self.app = app
        self.authenticate = authenticate
        self.local = local
        self.max_body = limits.max_body_bytes
        self.rates = RateLimiter(limits.rate_per_s, limits.rate_burst)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _public(scope["path"]):
            await self.app(scope, receive, send)
            return
        try:
            principal = self._principal(scope)
            wait = self.rates.take(principal)
            if wait:
                raise ApiError(
                    429,
                    f"too many requests from {principal}: at most "
                    f"{self.rates.rate:g} a second (bursts of {self.rates.burst})",
                    "wait as long as Retry-After says, then try again",
                    headers={"Retry-After": str(math.ceil(wait))},
                )
            self._check_length(scope)
        except ApiError as refused:
            await refused.response()(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, self._capped(receive), send)

    def _principal(self, scope: Scope) -> str:
        if self.local is not None:
            return self.local
        header = dict(scope["headers"]).get(b"authorization")
        try:
            return self.authenticate(header.decode("latin-1") if header else None)
        except AuthenticationError as exc:
            raise ApiError(
                401,
                f"unauthorized: {exc}",
                "send `Authorization: Bearer TOKEN` with a token from `ember tokens create NAME`",
                headers={"WWW-Authenticate": 'Bearer realm="ember"'},
            ) from None

    def _check_length(self, scope: Scope) -> None:
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            raise self._too_large()

    def _too_large(self) -> ApiError:
        return ApiError(
            413,
            f"the request body is larger than {self.max_body} bytes",
            "send less (a task is a request in plain words); the limit is max_body_bytes in "
            "the [server] table of ember.toml",
        )

    def _capped(self, receive: Receive) -> Receive:
        """`receive` that refuses a body growing past the limit (a chunked one has no length)."""
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise self._too_large()
            return message

        return capped


def _public(path: str) -> bool:
    return path in PUBLIC or path.startswith(_PUBLIC_TREES)
