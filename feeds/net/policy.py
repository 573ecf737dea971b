"""Which URLs and addresses may be fetched: public ones, and what `links.allow_hosts` allows.

Links come from untrusted text. A URL may name `localhost`, `2130706433`, `[::1]`, a DNS name
that resolves to 10.0.0.5, or redirect to any of them. The URL is judged here before it is
asked for (`AddressPolicy.url_problem`), and the address actually connected to is judged
again by the same policy where sockets connect (guard.py). Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from feeds.urls import http_url_problem

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


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
