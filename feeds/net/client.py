"""The guarded HTTP client: httpx on the guarded transport, one User-Agent, no proxy, no
redirect followed by itself, and no httpx error leaving it (they become feeds.net errors).

Requests stream: `Client.open` gives the status and headers, and the body is read only as
far as the caller asks (`Response.read_capped`, `Response.peek`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from urllib.parse import urljoin

import httpx

from feeds.net import USER_AGENT
from feeds.net.closing import Closing
from feeds.net.errors import (
    ConnectionFailed,
    InvalidURL,
    NetError,
    ProtocolFailed,
    RedirectRefused,
    TimedOut,
)
from feeds.net.policy import AddressPolicy
from feeds.net.transport import GuardedTransport
from feeds.urls import http_url_problem


@contextmanager
def _wrapped(url: str) -> Iterator[None]:
    """Raise httpx's errors, and a text httpx cannot take for a URL, as NetErrors."""
    try:
        yield
    except NetError as e:  # the guard's own, raised where sockets connect
        e.url = e.url or url
        raise
    except httpx.TimeoutException as e:
        raise TimedOut(str(e), url=url, kind=type(e).__name__) from e
    except httpx.NetworkError as e:
        raise ConnectionFailed(str(e), url=url, kind=type(e).__name__) from e
    except httpx.HTTPError as e:
        raise ProtocolFailed(str(e), url=url, kind=type(e).__name__) from e
    except (httpx.InvalidURL, ValueError) as e:
        raise InvalidURL(str(e), url=url, kind=type(e).__name__) from e


class Response(Closing):
    """An answer: status and headers at once, the body read on demand. Close it (or use it
    as a context manager) when done."""

    def __init__(self, url: str, answer: httpx.Response) -> None:
        self.url = url  # as asked for (httpx's copy of it may be normalized)
        self._answer = answer

    @property
    def status(self) -> int:
        return self._answer.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        """The headers, by case-insensitive name (repeated ones joined by commas)."""
        return self._answer.headers

    def read_capped(self, limit: int) -> bytes | None:
        """Return the body (decoded as its Content-Encoding says), or None once it is longer
        than `limit` bytes (the rest is never read)."""
        body = bytearray()
        with _wrapped(self.url):
            for chunk in self._answer.iter_bytes():
                body += chunk
                if len(body) > limit:
                    return None
        return bytes(body)

    def peek(self, limit: int) -> None:
        """Read about `limit` bytes of the body as sent (not decoded), and drop them: enough to
        know the server answers, and never a decompression bomb."""
        taken = 0
        with _wrapped(self.url):
            for chunk in self._answer.iter_raw():
                taken += len(chunk)
                if taken >= limit:
                    break

    def close(self) -> None:
        with _wrapped(self.url):
            self._answer.close()


def _refuse_unfetchable_redirect(response: httpx.Response) -> None:
    """Raise RedirectRefused for a redirect to anything but an http(s) URL with a host.

    httpx builds the next request of every redirect even when it follows none, and raises
    InvalidURL on `Location: javascript:alert(1)`: a check would be an error retried
    forever. As a response hook this runs first, and the redirect is refused like any
    other blocked hop.
    """
    location = response.headers.get("location")
    if location is not None and response.has_redirect_location:
        problem = http_url_problem(urljoin(str(response.request.url), location))
        if problem:
            raise RedirectRefused(response.status_code, problem)


class Client(Closing):
    """Sends requests that connect only where the policy allows, never via a proxy, with
    paperfeeds' User-Agent; follows no redirect (see redirects.follow). Thread-safe."""

    def __init__(self, policy: AddressPolicy, *, timeout: float, max_connections: int = 16):
        self.transport = GuardedTransport(policy, max_connections)
        self._http = httpx.Client(
            transport=self.transport,
            trust_env=False,  # no proxy variables: a proxy would connect on our behalf
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,  # each hop is judged by redirects.follow
            headers={"User-Agent": USER_AGENT},
            event_hooks={"response": [_refuse_unfetchable_redirect]},
        )

    def open(self, method: str, url: str, headers: Mapping[str, str] | None = None) -> Response:
        """Send a request; return the answer with its body unread. Raise a NetError."""
        with _wrapped(url):
            request = self._http.build_request(method, url, headers=headers)
            return Response(url, self._http.send(request, stream=True))

    def close(self) -> None:
        with _wrapped(""):
            self._http.close()
