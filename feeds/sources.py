"""Remote digests: fetch `sources:` URLs with conditional GET, guarded, with backoff.

The network edge of ingestion; what comes back is handled like a file from the inbox.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from feeds.errors import FeedsError
from feeds.links.policy import backoff
from feeds.model import SourceState
from feeds.net import (
    AddressPolicy,
    BlockedAddress,
    NameNotResolved,
    NetError,
    TimedOut,
    deadline,
    follow,
)

if TYPE_CHECKING:
    from feeds.net.client import Client, Response

MAX_DIGEST_BYTES = 20 * 1024 * 1024
MAX_REDIRECTS = 4  # followed: five requests at most
RETRY_FIRST = timedelta(minutes=5)
RETRY_MAX = timedelta(hours=6)


class SourceFailed(FeedsError):
    """A source could not be fetched this time."""


@dataclass(frozen=True)
class Fetched:
    content: bytes | None  # None: not modified since last time
    etag: str | None
    last_modified: str | None


def fetch(
    client: Client,
    policy: AddressPolicy,
    state: SourceState,
    *,
    timeout: float,
    retries: int = 1,
    sleep: Callable[[float], None] = time.sleep,
) -> Fetched:
    """Return the source's content (or None if unchanged); raise SourceFailed."""
    problem = policy.url_problem(state.url)
    if problem:
        raise SourceFailed(f"not fetched: {problem}")
    headers: dict[str, str] = {}
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    for attempt in range(retries + 1):
        try:
            return _get(client, policy, state.url, headers, timeout)
        except SourceFailed as e:
            if attempt == retries or "HTTP 4" in str(e):  # a 4xx will not fix itself now
                raise
            sleep(0.5 * 2**attempt)
    raise AssertionError("unreachable")


def _get(
    client: Client, policy: AddressPolicy, url: str, headers: dict[str, str], timeout: float
) -> Fetched:
    def ask(target: str) -> Response:
        return client.open("GET", target, headers)

    try:
        with deadline(timeout):
            # Each hop is judged like the source's own URL (as link checks do): the
            # connect-time guard alone would let `*.internal` names through.
            chain = follow(ask, url, policy, max_redirects=MAX_REDIRECTS)
            with chain:
                r = chain.final
                if r is None:  # fetch() judged the URL already: only if the policy changed
                    raise SourceFailed(f"not fetched: {chain.problem}")
                if chain.stop == "refused":
                    raise SourceFailed(f"redirect to {chain.problem}")
                if chain.stop != "answered":  # a loop, or one redirect too many
                    raise SourceFailed("too many redirects")
                if r.status == 304:
                    return Fetched(None, r.headers.get("etag"), r.headers.get("last-modified"))
                if r.status != 200:
                    raise SourceFailed(f"HTTP {r.status}")
                body = r.read_capped(MAX_DIGEST_BYTES)
                if body is None:
                    raise SourceFailed(f"larger than {MAX_DIGEST_BYTES} bytes")
                return Fetched(body, r.headers.get("etag"), r.headers.get("last-modified"))
    except (BlockedAddress, NameNotResolved) as e:
        raise SourceFailed(str(e)) from e
    except TimedOut as e:
        raise SourceFailed("timed out") from e
    except NetError as e:
        raise SourceFailed(e.described[:200]) from e


def after_failure(state: SourceState, now: datetime, error: str) -> SourceState:
    """Return the state after a failed fetch: back off 5 min, 10 min ... at most 6 h."""
    wait = backoff(state.failures, first=RETRY_FIRST, longest=RETRY_MAX)
    return SourceState(
        state.url, state.etag, state.last_modified, state.last_ok, state.last_change,
        state.failures + 1, now + wait, error,
    )  # fmt: skip


def after_success(state: SourceState, fetched: Fetched, now: datetime) -> SourceState:
    changed = fetched.content is not None
    return SourceState(
        state.url,
        fetched.etag or state.etag,
        fetched.last_modified or state.last_modified,
        now,
        now if changed else state.last_change,
        0,
        None,
        None,
    )


def stale_reason(state: SourceState, now: datetime, stale_after: timedelta) -> str | None:
    """Return why a source is stale (failing, or unchanged for long), or None."""
    if state.error and state.failures:
        since = state.last_ok.isoformat() if state.last_ok else "never fetched"
        return f"failing ({state.error}); last fetched: {since}"
    if state.last_change and now - state.last_change >= stale_after:
        return f"unchanged for {_duration_text(now - state.last_change)}"
    return None


def _duration_text(d: timedelta) -> str:
    seconds = int(d.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} seconds"
