"""Everything paperfeeds does over HTTP: the one network edge.

- policy.py: which URLs and addresses may be fetched (pure).
- guard.py: the network backend that enforces the policy where sockets connect, and the
  socket streams, every step within the deadline (deadline.py).
- transport.py: an httpx transport on httpcore's connection pool with that backend.
- client.py: the guarded client (one User-Agent, no proxy) and its streamed answers;
  httpx's errors become errors.py's NetErrors there, once.
- redirects.py: `follow`, the one way to follow redirects, hop by hop, each hop judged.

httpx and httpcore are imported in this package only, and only when a client is made:
importing feeds.net itself loads neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from feeds import __version__
from feeds.net.deadline import deadline
from feeds.net.errors import (
    BlockedAddress,
    ConnectionFailed,
    InvalidURL,
    NameNotResolved,
    NetError,
    ProtocolFailed,
    RedirectRefused,
    TimedOut,
    Unreachable,
)
from feeds.net.policy import AddressPolicy, public_address
from feeds.net.redirects import REDIRECT_CODES, Chain, follow
from feeds.urls import http_url_problem

if TYPE_CHECKING:
    from feeds.net.client import Client

# Sent with every request: arXiv's terms ask for one that names the client.
USER_AGENT = f"paperfeeds/{__version__} (+https://pypi.org/project/paperfeeds/)"

__all__ = [
    "REDIRECT_CODES",
    "USER_AGENT",
    "AddressPolicy",
    "BlockedAddress",
    "Chain",
    "ConnectionFailed",
    "InvalidURL",
    "NameNotResolved",
    "NetError",
    "ProtocolFailed",
    "RedirectRefused",
    "TimedOut",
    "Unreachable",
    "deadline",
    "follow",
    "guarded_client",
    "http_url_problem",
    "public_address",
]


def guarded_client(policy: AddressPolicy, *, timeout: float, max_connections: int = 16) -> Client:
    """Return an HTTP client that connects only where the policy allows, never via a proxy,
    with paperfeeds' User-Agent (see client.Client)."""
    from feeds.net.client import Client

    return Client(policy, timeout=timeout, max_connections=max_connections)
