"""A real HTTP server for link-check tests: routes set per test, connections and requests counted.

`LinkServer("127.0.0.2")` listens on an ephemeral port in a daemon thread. `server.route(path,
handler)` sets what a path does; a handler receives the request handler (`req.command`,
`req.path`, `req.headers`, `req.wfile`). Every accepted connection is counted (also those that
never send a request), every request is logged with its method, path and headers, and the
number of requests in flight at once is tracked. `server.stop` is set on close so handlers that
drip forever end.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Route = Callable[["_Handler"], None]


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: LinkServer

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.owner.lock:
            self.owner.connections += 1
        super().process_request(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: connections == requests

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _dispatch(self) -> None:
        owner = self.server.owner
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
        with owner.lock:
            owner.requests.append(seen)
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
        try:
            route = owner.routes.get(self.path) or owner.routes.get(urlsplit(self.path).path)
            if route is None:
                send(self, 404, body=b"no route")
            else:
                route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with owner.lock:
                owner.in_flight -= 1

    do_GET = do_HEAD = do_POST = _dispatch


class LinkServer:
    """A threaded HTTP server on `host`, port 0, with per-test routes and counters."""

    def __init__(self, host: str = "127.0.0.2") -> None:
        self.host = host
        self.routes: dict[str, Route] = {}
        self.lock = threading.Lock()
        self.connections = 0
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.stop = threading.Event()
        self.stats: dict[str, Any] = {}  # for handlers to report what they did
        server_class = _Server6 if ":" in host else _Server
        self._server = server_class((host, 0), _Handler)
        self._server.owner = self
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def route(self, path: str, handler: Route) -> None:
        self.routes[path] = handler

    def methods(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(r.method, r.path) for r in self.requests]

    def close(self) -> None:
        self.stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def send(
    req: _Handler,
    status: int,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> None:
    """Write a complete response (the body is left out for HEAD)."""
    req.send_response(status)
    for name, value in (headers or {}).items():
        req.send_header(name, value)
    req.send_header("Content-Length", str(len(body)))
    req.end_headers()
    if req.command != "HEAD" and body:
        req.wfile.write(body)


def reply(
    status: int,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    *,
    head: int | None = None,
) -> Route:
    """Return a route that answers `status` (or `head` to HEAD requests when given)."""

    def handler(req: _Handler) -> None:
        code = head if head is not None and req.command == "HEAD" else status
        send(req, code, headers, body)

    return handler


def redirect(location: str, status: int = 302) -> Route:
    return reply(status, {"Location": location})


def json_reply(status: int, data: Any, headers: dict[str, str] | None = None) -> Route:
    body = json.dumps(data).encode()
    return reply(status, {"Content-Type": "application/json", **(headers or {})}, body)


def sequence(*routes: Route) -> Route:
    """Return a route that answers with each route in turn (the last one repeats)."""
    it = iter(routes)
    last = routes[-1]
    lock = threading.Lock()

    def handler(req: _Handler) -> None:
        with lock:
            route = next(it, last)
        route(req)

    return handler


def slow(route: Route, seconds: float) -> Route:
    """Return a route that waits before answering (to see requests overlap)."""

    def handler(req: _Handler) -> None:
        time.sleep(seconds)
        route(req)

    return handler
