"""Remote digests: fetch `sources:` URLs with conditional GET, guarded, with backoff, and
remember their validators and health (fetch_sources: the remote-sources step of a cycle).

The network edge of ingestion; what comes back is handled like a file from the inbox.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from feeds.errors import FeedsError
from feeds.model import SourceState
from feeds.net import (
    AddressPolicy,
    BlockedAddress,
    NameNotResolved,
    NetError,
    TimedOut,
    deadline,
    follow,
    guarded_client,
)
from feeds.net.errors import ConnectionFailed
from feeds.net.pacing import backoff
from feeds.settings import Settings
from feeds.sources.inbox import Input
from feeds.words import say_duration, say_time

if TYPE_CHECKING:
    from feeds.net.client import Client, Response
    from feeds.state import Store

MAX_DIGEST_BYTES = 20 * 1024 * 1024
MAX_REDIRECTS = 4  # followed: five requests at most
RETRY_FIRST = timedelta(minutes=5)
RETRY_MAX = timedelta(hours=6)
# The state's meta keys of when each failing source began to fail (see failing_since).
_FAILING_SINCE = "failing since:"


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
    except NetError as e:
        raise SourceFailed(f"{urlsplit(url).hostname}: {unreachable_words(e)}") from e


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


def unreachable_words(e: NetError) -> str:
    """Return why a request got no answer, in words: `its name does not resolve`, not
    `[Errno -2] Name or service not known` (the host is the caller's to name)."""
    if isinstance(e, BlockedAddress):
        return f"not asked: {e.message}"
    if isinstance(e, NameNotResolved):
        return "its name does not resolve (no network, or no such host)"
    if isinstance(e, TimedOut):
        return "no answer in time"
    if isinstance(e, ConnectionFailed):
        return "connection refused" if "refused" in e.message.lower() else "connection lost"
    return e.described[:200]


def stale_reason(
    state: SourceState, now: datetime, stale_after: timedelta, since: datetime | None = None
) -> str | None:
    """Return why a source is stale (failing, or unchanged, for `stale_after`), or None.

    `since`: when its failures began (failing_since); unknown, a failing source is stale.
    """
    if state.error and state.failures:
        if since is not None and now - since < stale_after:
            return None  # a first failure, or a short one: said once (say_down), not stale
        how_long = f" for {say_duration(now - since)}" if since is not None else ""
        last = f"last fetched {say_time(state.last_ok)}" if state.last_ok else "never fetched"
        return f"failing{how_long} ({state.error}); {last}"
    if state.last_change and now - state.last_change >= stale_after:
        return f"unchanged for {say_duration(now - state.last_change)}"
    return None


def newly_stale(
    state: SourceState, now: datetime, stale_after: timedelta, since: datetime | None,
    last_run: datetime | None,
) -> str | None:  # fmt: skip
    """Return why a source is stale when it became so since the last run, else None: a run
    says it once (cron mails only news); `feeds status` shows it as long as it lasts."""
    reason = stale_reason(state, now, stale_after, since)
    if reason and last_run is not None and last_run < now:
        return None if stale_reason(state, last_run, stale_after, since) else reason
    return reason


def failing_since(store: Store, key: str) -> datetime | None:
    """Return when a source's current failures began, as the state keeps it."""
    text = store.meta(_FAILING_SINCE + key)
    return datetime.fromisoformat(text) if text else None


def put_failing_since(
    store: Store, key: str, before: SourceState, after: SourceState, now: datetime
) -> datetime | None:
    """Record when a source's failures began (now, when this try is the first to fail;
    nothing once it works again) and return it. Call in the transaction of put_source."""
    since = failing_since(store, key)
    if not after.failures:
        if since is not None:
            store.set_meta(_FAILING_SINCE + key, "")
        return None
    if before.failures and since is not None:
        return since
    store.set_meta(_FAILING_SINCE + key, now.isoformat())
    return now


@dataclass(frozen=True)
class Down:
    """A source this run found failing, its failures just begun."""

    name: str  # `arXiv cs.CL`, or the URL
    cause: str  # in words
    retry_at: datetime | None


def say_down(down: Iterable[Down]) -> tuple[str, ...]:
    """Return the sources that began to fail, in words, those with one cause in one line:
    `sources arXiv cs.CL, arXiv cs.LG down (export.arxiv.org: its name does not resolve
    ...); tried again after 2026-12-07 09:05 UTC`."""
    causes: dict[str, list[Down]] = {}
    for d in down:
        causes.setdefault(d.cause, []).append(d)
    lines = []
    for cause, ds in causes.items():
        which = "sources" if len(ds) > 1 else "source"
        line = f"{which} {', '.join(d.name for d in ds)} down ({cause})"
        retry = min((d.retry_at for d in ds if d.retry_at), default=None)
        lines.append(line + (f"; tried again after {say_time(retry)}" if retry else ""))
    return tuple(lines)


def fetch_sources(
    store: Store, settings: Settings, now: datetime, last_run: datetime | None = None
) -> tuple[list[Input], list[str], list[Down]]:
    """Return the new contents of the remote sources, those that became stale since the
    last run (`last_run`) and why, and those whose failures began now."""
    policy = AddressPolicy.from_settings(settings.links.allow_hosts)
    stale_after = timedelta(seconds=settings.stale_after)
    inputs: list[Input] = []
    stale: list[str] = []
    down: list[Down] = []
    with guarded_client(policy, timeout=settings.links.timeout) as c:
        for url in settings.sources:
            before = state = store.source(url)
            tried = state.next_try is None or state.next_try <= now
            if tried:
                try:
                    fetched = fetch(c, policy, state, timeout=settings.links.timeout)
                except SourceFailed as e:
                    state = after_failure(state, now, str(e))
                else:
                    state = after_success(state, fetched, now)
                    if fetched.content is not None:
                        inputs.append(Input(url, fetched.content, state))
            with store.transaction():
                since = put_failing_since(store, url, before, state, now)
                if tried and (not inputs or inputs[-1].source is not state):
                    store.put_source(state)  # (one that brought content: with its digest)
            if state.failures and not before.failures:
                down.append(Down(url, state.error or "failed", state.next_try))
            reason = newly_stale(state, now, stale_after, since, last_run)
            if reason:
                stale.append(f"{url}: {reason}")
    return inputs, stale, down
