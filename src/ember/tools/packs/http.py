"""The http pack: GET and POST with httpx, to the hosts of an allowlist only.

```toml
[packs.http]
allow = ["api.example.com", "127.0.0.1:8080"]   # a host (any port) or host:port
max_bytes = 1000000                              # a larger response is refused
timeout_s = 10                                   # for the whole exchange
max_redirects = 3                                # each redirect's host is checked too
```

Nothing else is reachable: a URL whose host is not allowed is refused before any connection
is made, and so is a redirect that leads off the list. A POST carries the step's idempotency
key in an `Idempotency-Key` header, which many APIs use to make a repeat harmless; it is not
marked idempotent, so a POST interrupted by a crash is held for a person's decision.
"""

from __future__ import annotations

import json
import time
from typing import Any, TypedDict
from urllib.parse import urljoin, urlsplit

import httpx

from ember.config import HttpPack
from ember.errors import ToolCallError
from ember.tools.decorator import ToolFunction, tool

__all__ = ["HttpTools"]


class Response(TypedDict):
    url: str
    status: int
    content_type: str
    text: str
    json: Any


class HttpTools:
    """The http pack's tools over one configuration."""

    def __init__(self, config: HttpPack) -> None:
        self.config = config
        self.allow = {entry.lower() for entry in config.allow}

    def tools(self) -> list[ToolFunction]:
        return [self.http_get, self.http_post]

    @tool(idempotent=True, read_only=True)
    def http_get(self, url: str) -> Response:
        """GET a URL on an allowed host; the body as text, and parsed when it is JSON.

        Args:
            url: An http or https URL.
        """
        return self._exchange("http_get", "GET", url, None, {})

    @tool(read_only=False)
    def http_post(
        self, url: str, body: dict[str, Any] | list[Any], idempotency_key: str = ""
    ) -> Response:
        """POST a JSON body to a URL on an allowed host.

        Args:
            url: An http or https URL.
            body: The JSON to send.
        """
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return self._exchange("http_post", "POST", url, body, headers)

    def check(self, tool: str, url: str) -> None:
        """Refuse a URL that is not http(s) or whose host is not on the allowlist."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolCallError(tool, f"{url!r} is not an http or https URL")
        host = parts.hostname.lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if host not in self.allow and f"{host}:{port}" not in self.allow:
            raise ToolCallError(
                tool,
                f"host {host}:{port} of {url!r} is not on the egress allowlist "
                f"({', '.join(sorted(self.allow)) or 'empty'}): add it to [packs.http] allow "
                "if it should be reachable",
            )

    def _exchange(
        self, tool: str, method: str, url: str, body: Any, headers: dict[str, str]
    ) -> Response:
        deadline = time.monotonic() + self.config.timeout_s
        with httpx.Client(timeout=self.config.timeout_s, follow_redirects=False) as client:
            for _ in range(self.config.max_redirects + 1):
                self.check(tool, url)
                response, content = self._one(
                    tool=tool, client=client, method=method, url=url, body=body,
                    headers=headers, deadline=deadline,
                )  # fmt: skip
                if not response.is_redirect:
                    return response_of(response, content)
                url = urljoin(url, response.headers.get("location", ""))
                if response.status_code in (301, 302, 303):
                    method, body = "GET", None
        raise ToolCallError(
            tool, f"more than max_redirects={self.config.max_redirects} redirects, last to {url}"
        )

    def _one(
        self,
        *,
        tool: str,
        client: httpx.Client,
        method: str,
        url: str,
        body: Any,
        headers: dict[str, str],
        deadline: float,
    ) -> tuple[httpx.Response, bytes]:
        try:
            request = client.build_request(method, url, json=body, headers=headers)
            response = client.send(request, stream=True)
            return response, _read_capped(tool, response, self.config.max_bytes, deadline)
        except httpx.TimeoutException:
            raise ToolCallError(
                tool,
                f"{method} {url} took longer than timeout_s={self.config.timeout_s}",
                retryable=True,
            ) from None
        except httpx.HTTPError as exc:
            raise ToolCallError(
                tool, f"{method} {url} failed: {type(exc).__name__}: {exc}", retryable=True
            ) from None


def _read_capped(tool: str, response: httpx.Response, max_bytes: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise ToolCallError(
                    tool, f"the response from {response.url} is larger than max_bytes={max_bytes}"
                )
            if time.monotonic() > deadline:
                raise ToolCallError(tool, f"reading {response.url} went past the time limit")
            chunks.append(chunk)
    finally:
        response.close()
    return b"".join(chunks)


def response_of(response: httpx.Response, content: bytes) -> Response:
    content_type = response.headers.get("content-type", "")
    text = content.decode(response.charset_encoding or "utf-8", errors="replace")
    parsed = None
    if "json" in content_type:
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
    return {
        "url": str(response.url),
        "status": response.status_code,
        "content_type": content_type,
        "text": text,
        "json": parsed,
    }
