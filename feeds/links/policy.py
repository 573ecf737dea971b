"""When to check a link, or try the network or the lookups, again. Pure: results and the
clock in, a due time out."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from feeds.model import LinkStatus
from feeds.net.pacing import MAX_RETRY, backoff
from feeds.words import say_time

if TYPE_CHECKING:
    from feeds.links.check import CheckResult

RECHECK_OK = timedelta(days=7)
RECHECK_DEAD = timedelta(days=30)
RECHECK_BLOCKED = timedelta(days=30)
DEAD_NAME_AFTER = timedelta(days=7)  # a name that has not resolved this long is dead
# A network that is down is tried again at least this often: a try costs a few failed
# name lookups, and every link and lookup waits for it (see network_after).
NETWORK_MAX_RETRY = timedelta(hours=4)


def schedule(
    result: CheckResult,
    now: datetime,
    failures: int,
    dns_failing_since: datetime | None,
    network_up: bool,
) -> tuple[LinkStatus, datetime, int, datetime | None]:
    """Return (status, next check, failures, DNS-failing-since) after a check.

    Errors back off (see backoff). A name that fails to resolve counts towards "dead" only
    while other servers answer: a machine without network must not declare every link dead.
    """
    status = result.status
    since = None
    if result.dns_failure:
        since = dns_failing_since or (now if network_up else None)
        if since is not None and network_up and now - since >= DEAD_NAME_AFTER:
            status = "dead"
    if status in ("ok", "redirected"):
        return status, now + RECHECK_OK, 0, None
    if status == "dead":
        return status, now + RECHECK_DEAD, 0, since
    if status == "blocked":
        return status, now + RECHECK_BLOCKED, 0, None
    return status, now + backoff(failures, result.retry_after), failures + 1, since


# The state's meta keys of what fails run after run (see Outage): the network as a whole,
# and the lookup APIs while the network works.
NETWORK_KEY = "network"
LOOKUPS_KEY = "lookups"


@dataclass(frozen=True)
class Outage:
    """Something that fails run after run (the network, the lookup APIs): since when, why,
    and when to try again. Kept in the state between runs (see to_text)."""

    since: datetime | None = None  # when the current (or last) outage began
    ended: datetime | None = None  # when the last one ended; None while it lasts
    failures: int = 0  # tries in a row that found it still down
    retry_at: datetime | None = None
    cause: str = ""  # in words: "names do not resolve (export.arxiv.org, github.com)"

    @property
    def down(self) -> bool:
        return self.since is not None and self.ended is None

    def due(self, now: datetime) -> bool:
        """Return True when it is time to try: it works, or its retry time has come."""
        return not self.down or self.retry_at is None or now >= self.retry_at

    def failed(self, now: datetime, cause: str, longest: timedelta = MAX_RETRY) -> Outage:
        """Return the outage after a try that failed: it begins now, or goes on longer."""
        if not self.down:
            return Outage(since=now, failures=1, retry_at=now + backoff(0), cause=cause)
        wait = backoff(self.failures, longest=longest)
        return replace(self, failures=self.failures + 1, retry_at=now + wait, cause=cause)

    def worked(self, now: datetime) -> Outage:
        """Return the outage after a try that worked: over (its dates are kept to show)."""
        return replace(self, ended=now, failures=0, retry_at=None) if self.down else self

    def to_text(self) -> str:
        """Return the outage as the state's meta table keeps it."""
        return json.dumps({
            "since": _iso(self.since), "ended": _iso(self.ended), "failures": self.failures,
            "retry_at": _iso(self.retry_at), "cause": self.cause,
        })  # fmt: skip

    @classmethod
    def from_text(cls, text: str | None) -> Outage:
        """Return an outage from to_text's text; none (it works) for no or unreadable text."""
        try:
            d = json.loads(text or "{}")
            return cls(
                since=_dt(d.get("since")), ended=_dt(d.get("ended")),
                failures=int(d.get("failures") or 0), retry_at=_dt(d.get("retry_at")),
                cause=str(d.get("cause") or ""),
            )  # fmt: skip
        except (ValueError, TypeError, AttributeError):  # a damaged value: start afresh
            return cls()


def network_after(
    network: Outage, now: datetime, answered: bool, unreachable: set[str], cause: str
) -> Outage:
    """Return the network's state after a run's lookups and link checks.

    `answered`: some server answered (the network works). `unreachable`: the hosts that
    could not be reached at all (no name, no connection, no answer in time). One such host
    alone is its own trouble; two or more with nobody answering is the network's.
    """
    if answered:
        return network.worked(now)
    if not unreachable or (not network.down and len(unreachable) < 2):
        return network  # nothing tried, or nothing to tell
    return network.failed(now, cause, NETWORK_MAX_RETRY)


def say_outage(outage: Outage) -> str:
    """Return an outage in words: `down since 2026-12-04 16:36 UTC (names do not resolve:
    github.com); tried again after 17:36 UTC`, or `up since ... (down from ...)`."""
    if outage.since is None:
        return "up"
    if outage.ended is not None:
        return f"up since {say_time(outage.ended)} (down from {say_time(outage.since)})"
    said = f"down since {say_time(outage.since)} ({outage.cause or 'no answer'})"
    if outage.retry_at is not None:
        said += f"; tried again after {say_time(outage.retry_at)}"
    return said


def _iso(dt: datetime | None) -> str | None:
    return dt.isoformat() if dt else None


def _dt(text: object) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None
