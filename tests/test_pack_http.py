"""The http pack against a real HTTP server on loopback: the allowlist (redirects included),
and the size, time and redirect limits."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ember.config import HttpPack, Packs
from ember.errors import ToolCallError
from ember.tools.packs.http import HttpTools

from .packs_support import failure, packs_registry


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_: object) -> None:  # quiet
        pass

    def _send(
        self, status: int, body: bytes, kind: str = "application/json", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        routes = {
            "/orders": lambda: self._send(200, b'{"open": 3}'),
            "/big": lambda: self._send(200, b"x" * 5000, "text/plain"),
            "/hop": lambda: self._send(302, b"", Location="/orders"),
            "/away": lambda: self._send(302, b"", Location=f"http://localhost:{port}/orders"),
            "/loop": lambda: self._send(302, b"", Location="/loop"),
        }
        if self.path == "/slow":
            time.sleep(1.5)
            self._send(200, b"{}")
        else:
            routes.get(self.path, lambda: self._send(404, b"{}"))()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        echo = {"got": body, "key": self.headers.get("Idempotency-Key")}
        self._send(201, json.dumps(echo).encode())


class Server(ThreadingHTTPServer):
    def handle_error(self, *_: object) -> None:  # a client that gave up (the timeout case)
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def pack(port: int) -> HttpPack:
    return HttpPack(allow=[f"127.0.0.1:{port}"], max_bytes=1000, timeout_s=0.5, max_redirects=2)


def test_get_and_post_to_an_allowed_host(server: int) -> None:
    http = HttpTools(pack(server))
    got = http.http_get(f"http://127.0.0.1:{server}/orders")
    assert (got["status"], got["json"]) == (200, {"open": 3})
    assert http.http_get(f"http://127.0.0.1:{server}/hop")["json"] == {"open": 3}
    posted = http.http_post(f"http://127.0.0.1:{server}/tickets", {"a": 1}, idempotency_key="k-1")
    assert (posted["status"], posted["json"]) == (201, {"got": {"a": 1}, "key": "k-1"})


def test_limits_and_the_allowlist_are_clear_errors_on_the_step(server: int, tmp_path: Path) -> None:
    registry = packs_registry(Packs(http=pack(server)), tmp_path)
    base = f"http://127.0.0.1:{server}"
    cases = {
        "https://example.com/": "host example.com:443 of 'https://example.com/' is not on the "
        f"egress allowlist (127.0.0.1:{server}): add it to [packs.http] allow",
        f"http://127.0.0.1:{server + 1}/": "is not on the egress allowlist",
        f"{base}/away": f"host localhost:{server} of 'http://localhost:{server}/orders' is not on",
        f"{base}/big": "is larger than max_bytes=1000",
        f"{base}/slow": "took longer than timeout_s=0.5",
        f"{base}/loop": "more than max_redirects=2 redirects",
        "file:///etc/passwd": "is not an http or https URL",
    }
    for index, (url, expected) in enumerate(cases.items()):
        error = failure(registry, "http_get", {"url": url}, tmp_path / str(index))
        assert expected in error, error


def test_a_host_without_a_port_allows_any_port() -> None:
    http = HttpTools(HttpPack(allow=["api.example.com"]))
    http.check("http_get", "https://api.example.com:8443/x")
    with pytest.raises(ToolCallError, match="not on the egress allowlist"):
        http.check("http_get", "https://evil.example.com/x")
