"""Never connect where the policy forbids: a network backend for httpcore that resolves names
itself, drops every address the policy refuses and connects to an allowed one.

Checking the URL is not enough (a name may resolve anywhere), so the policy is applied to
the address actually connected to, at every connect, whatever asked for it. The streams
are plain sockets (TLS-wrapped for https) whose every step keeps within the deadline.
Only httpcore's public interface is used: `NetworkBackend`, `NetworkStream` and its errors.
"""

from __future__ import annotations

import ipaddress
import select
import socket
import ssl
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore

from feeds.net.deadline import budget
from feeds.net.errors import BlockedAddress, NameNotResolved
from feeds.net.policy import AddressPolicy, parse_host_ip


@contextmanager
def _mapped(timeout: type[Exception], failure: type[Exception]) -> Iterator[None]:
    """Raise a socket's timeout as `timeout` and its other errors as `failure` (httpcore's
    errors, which its connections expect of a stream)."""
    try:
        yield
    except TimeoutError as e:
        raise timeout(str(e)) from e
    except OSError as e:
        raise failure(str(e)) from e


def _readable(sock: socket.socket) -> bool:
    """Return True when a read would not block: on an idle kept-alive connection, that the
    server has closed it."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if not hasattr(select, "poll"):  # Windows
        ready, _, _ = select.select([fd], [], [], 0)
        return bool(ready)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class SocketStream(httpcore.NetworkStream):
    """A connected socket as httpcore reads and writes it, every step within the deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        seconds = budget(timeout, httpcore.ReadTimeout)
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            self._sock.settimeout(seconds)
            return self._sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        seconds = budget(timeout, httpcore.WriteTimeout)
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            self._sock.settimeout(seconds)
            while buffer:
                buffer = buffer[self._sock.send(buffer) :]

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        seconds = budget(timeout, httpcore.ConnectTimeout)
        try:
            with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
                self._sock.settimeout(seconds)
                tls = ssl_context.wrap_socket(self._sock, server_hostname=server_hostname)
        except Exception:
            self.close()
            raise
        return SocketStream(tls)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":  # httpcore asks it for the negotiated ALPN protocol
            return self._sock if isinstance(self._sock, ssl.SSLSocket) else None
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "socket":
            return self._sock
        if info == "is_readable":
            return _readable(self._sock)
        return None


class GuardedBackend(httpcore.NetworkBackend):
    """Resolves names itself and connects only to addresses the policy allows."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        seconds = budget(timeout, httpcore.ConnectTimeout)
        literal = parse_host_ip(host)
        if literal is not None:
            candidates = [literal]
        else:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (socket.gaierror, UnicodeError) as e:
                raise NameNotResolved(f"{host}: {e}") from e
            candidates = list(dict.fromkeys(ipaddress.ip_address(i[4][0]) for i in infos))
        allowed = [ip for ip in candidates if self.policy.allows(host, ip)]
        if not allowed:
            shown = ", ".join(str(ip) for ip in candidates[:3])
            raise BlockedAddress(f"{host} resolves to {shown}, which is not public")
        last: Exception | None = None
        for ip in allowed:
            try:
                sock = socket.create_connection((str(ip), port), seconds)
            except TimeoutError as e:
                last = httpcore.ConnectTimeout(str(e))
                continue
            except OSError as e:
                last = httpcore.ConnectError(str(e))
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return SocketStream(sock)
        assert last is not None
        raise last
