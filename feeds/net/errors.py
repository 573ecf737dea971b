"""The errors of the network edge: every one a FeedsError.

httpx's errors are wrapped once, where feeds.net calls httpx, with the cause chained; the
guard's own refusals are raised as these from the start. Callers turn them into results
(a link's status and note, a source's error, a lookup that failed).

    NetError
    ├── BlockedAddress        the policy refuses where the request would go
    │   └── RedirectRefused   a redirect to what is not an http(s) URL with a host
    ├── Unreachable           no server answered
    │   ├── NameNotResolved   no such name, or no network
    │   ├── TimedOut          no answer in time (a timeout, or the deadline)
    │   └── ConnectionFailed  refused, reset, cut off
    ├── ProtocolFailed        an answer that is not HTTP as it should be
    └── InvalidURL            a text that cannot be asked for
"""

from __future__ import annotations

from feeds.errors import FeedsError


class NetError(FeedsError):
    """A request got no usable answer.

    `kind` names the failure as link notes and source errors say it: httpx's class name for
    a wrapped httpx error (`ConnectError`, `ReadTimeout`), else this class's own name.
    `url` is the URL asked, when known.
    """

    def __init__(self, message: str, *, url: str | None = None, kind: str | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.kind = kind or type(self).__name__

    @property
    def described(self) -> str:
        """Return `kind: message`: `ConnectError: [Errno 111] Connection refused`."""
        return f"{self.kind}: {self.message}"


class BlockedAddress(NetError):
    """The policy refused every address a host name resolved to (or the address itself)."""


class RedirectRefused(BlockedAddress):
    """A redirect points where no request may go: not an http(s) URL with a host."""

    def __init__(self, status: int, problem: str) -> None:
        super().__init__(f"redirect to {problem}")
        self.status = status


class Unreachable(NetError):
    """No server answered: no name, no connection, no answer in time.

    The host's trouble, or the network's when no host answers (see links.policy).
    """


class NameNotResolved(Unreachable):
    """A host name did not resolve (no such name, or no network)."""


class TimedOut(Unreachable):
    """No answer in time: a connect, read or write timeout, or the deadline used up."""


class ConnectionFailed(Unreachable):
    """The connection was refused, reset or cut off."""


class ProtocolFailed(NetError):
    """The server answered, but not in HTTP that can be read (or a body that cannot be decoded)."""


class InvalidURL(NetError):
    """The text is not a URL that can be asked for (a control character, a bad IDNA name)."""
