"""Never fetch what must not be fetched: an address policy enforced where sockets connect.

Links come from untrusted text. A URL may name `localhost`, `2130706433`, `[::1]`, a DNS name
that resolves to 10.0.0.5, or redirect to any of them. Checking the URL string is not
enough, so the policy is applied to the address actually connected to: our httpcore network
backend resolves the name, drops every address the policy refuses and connects to an
allowed one itself. A proxy from the environment is never used (it would connect for us).
"""

from __future__ import annotations

import contextvars
import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx
from httpcore._backends.sync import SyncStream  # the plain socket stream httpcore itself uses

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddress(Exception):
    """The policy refused every address a host name resolved to."""


class NameNotResolved(Exception):
    """A host name did not resolve (no such name, or no network)."""


class RedirectRefused(BlockedAddress):
    """A redirect points where no request may go: not an http(s) URL with a host."""

    def __init__(self, status: int, problem: str) -> None:
        super().__init__(f"redirect to {problem}")
        self.status = status


# IPv6 prefixes whose last 32 bits are an IPv4 address that packets end up at: NAT64's
# well-known prefix (RFC 6052), SIIT's IPv4-translated form (RFC 7915) and the deprecated
# IPv4-compatible form (RFC 4291). ipaddress has no property for any of them, and its
# `is_global` says True for 64:ff9b::7f00:1, which a NAT64 gateway delivers to 127.0.0.1.
_TRAILING_IPV4 = tuple(
    ipaddress.IPv6Network(n) for n in ("64:ff9b::/96", "::ffff:0:0:0/96", "::/96")
)
# Never public, whatever this Python's ipaddress tables say (they differ between versions):
# local-use NAT64 (RFC 8215) translates to addresses of the operator's choosing, and
# site-local addresses (deprecated by RFC 3879) may still be routed inside a site.
_NOT_PUBLIC = tuple(ipaddress.IPv6Network(n) for n in ("64:ff9b:1::/48", "fec0::/10"))


def _embedded(ip: IPAddress) -> tuple[ipaddress.IPv4Address, ...]:
    """Return the IPv4 addresses an IPv6 address carries (IPv4-mapped, 6to4, Teredo's
    server and client, NAT64, SIIT, IPv4-compatible): where its packets may end up."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return ()
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo
    if any(ip in net for net in _TRAILING_IPV4):
        return (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF),)
    return ()


def public_address(ip: IPAddress) -> bool:
    """Return True only for globally routable unicast addresses; an IPv6 address that
    carries an IPv4 one is public only if that one is too."""
    if isinstance(ip, ipaddress.IPv6Address) and any(ip in net for net in _NOT_PUBLIC):
        return False
    if not all(public_address(inner) for inner in _embedded(ip)):
        return False
    return ip.is_global and not ip.is_multicast


def parse_host_ip(host: str) -> IPAddress | None:
    """Return the address a host string denotes by itself, in any spelling, or None for names.

    `127.1`, `2130706433` and `0x7f000001` are all 127.0.0.1 to the C resolver, so they are
    decoded the same way here (inet_aton) rather than trusted to be names.
    """
    h = host.strip("[]")
    try:
        return ipaddress.ip_address(h)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(h))
    except OSError:
        return None


@dataclass(frozen=True)
class AddressPolicy:
    """Which hosts may be fetched: public addresses, plus what `links.allow_hosts` allows."""

    allow_names: frozenset[str] = frozenset()
    allow_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_settings(cls, allow_hosts: Iterable[str]) -> AddressPolicy:
        names: set[str] = set()
        networks: list[IPNetwork] = []
        for entry in allow_hosts:
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(entry.lower().rstrip("."))
        return cls(frozenset(names), tuple(networks))

    def allows(self, host: str, ip: IPAddress) -> bool:
        if host.lower().rstrip(".") in self.allow_names:
            return True
        if any(ip in net for net in self.allow_networks):
            return True
        return public_address(ip)

    def url_problem(self, url: str) -> str | None:
        """Return why a URL must not be fetched, judged from the URL alone, or None."""
        problem = http_url_problem(url)
        if problem:
            return problem
        host = urlsplit(url).hostname or ""
        ip = parse_host_ip(host)
        if ip is not None and not self.allows(host, ip):
            return f"address {ip} is not public"
        name = host.lower().rstrip(".")
        local = name == "localhost" or name.endswith((".localhost", ".local", ".internal"))
        if local and name not in self.allow_names:
            return f"host {host} is local"
        return None


def http_url_problem(url: str) -> str | None:
    """Return why a text is not an absolute http(s) URL with a host, or None.

    Only such a URL is fetched, and only such a URL may be recorded where a page or feed
    will link to it (a `javascript:` or `data:` one would run in the reader's browser).
    The reason names the scheme, never the rest of the text.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a bad port
    except ValueError:
        return "not a valid URL"
    if parts.scheme not in ("http", "https"):
        return f"not an http(s) URL ({parts.scheme or 'no scheme'})"
    if not parts.hostname:
        return "no host in the URL"
    return None


# The deadline of the check under way in this thread: every connect, read and write gets at
# most what is left of it, so a server that drips a byte a second cannot hold a run.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _budget(timeout: float | None, error: type[Exception]) -> float | None:
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the total time for this URL is used up")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _budget(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _budget(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        budget = _budget(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, budget))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class GuardedBackend(httpcore.SyncBackend):
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
        budget = _budget(timeout, httpcore.ConnectTimeout)
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
                sock = socket.create_connection((str(ip), port), budget)
            except TimeoutError as e:
                last = httpcore.ConnectTimeout(str(e))
                continue
            except OSError as e:
                last = httpcore.ConnectError(str(e))
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return _DeadlineStream(SyncStream(sock))
        assert last is not None
        raise last


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with its connection pool on the guarded backend."""

    def __init__(self, policy: AddressPolicy, max_connections: int = 16) -> None:
        super().__init__(trust_env=False)
        # httpx does not take a network backend, so its pool is replaced by an equal one
        # that has ours (tests check that the guard is in the path).
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            network_backend=GuardedBackend(policy),
        )


def read_capped(response: httpx.Response, limit: int) -> bytes | None:
    """Return a streamed response's body, or None once it is longer than `limit` bytes
    (the rest is never read)."""
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _refuse_unfetchable_redirect(response: httpx.Response) -> None:
    """Raise RedirectRefused for a redirect to anything but an http(s) URL with a host.

    Callers follow redirects hop by hop, but httpx builds the next request of every redirect
    all the same, and raises InvalidURL on `Location: javascript:alert(1)`: the check would
    be an error retried forever, and a remote source or a lookup would crash the run. As a
    response hook this runs first, and the redirect is refused like any other blocked hop.
    """
    location = response.headers.get("location")
    if location is not None and response.has_redirect_location:
        problem = http_url_problem(urljoin(str(response.request.url), location))
        if problem:
            raise RedirectRefused(response.status_code, problem)


def guarded_client(
    policy: AddressPolicy, *, timeout: float, user_agent: str, max_connections: int = 16
) -> httpx.Client:
    """Return an HTTP client that connects only where the policy allows, and never via a proxy."""
    return httpx.Client(
        transport=GuardedTransport(policy, max_connections),
        trust_env=False,  # no proxy variables: a proxy would connect on our behalf
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,  # each hop is checked by us
        headers={"User-Agent": user_agent},
        event_hooks={"response": [_refuse_unfetchable_redirect]},
    )
