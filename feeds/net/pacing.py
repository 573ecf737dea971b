"""How often to ask a server, and how long to wait after it failed: the pace that every
network client of paperfeeds keeps (link checks, lookups, remote sources, arXiv, alerts).
Pure, but for Throttle's sleeping."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from email.utils import parsedate_to_datetime

FIRST_RETRY = timedelta(hours=1)
MAX_RETRY = timedelta(days=2)


def backoff(
    failures: int,
    retry_after: float | None = None,
    longest: timedelta = MAX_RETRY,
    first: timedelta = FIRST_RETRY,
) -> timedelta:
    """Return how long to wait after a failure that follows `failures` others in a row:
    `first` (1 h), twice that, four times ... at most `longest` (2 days), or as long as the
    server asked.

    The one backoff of paperfeeds: link checks, lookups, the network as a whole, remote
    sources, arXiv harvests and alert destinations."""
    wait = min(first * (1 << min(failures, 16)), longest)  # 2**16 firsts > any `longest`
    if retry_after:
        wait = max(wait, timedelta(seconds=retry_after))
    return wait


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Return the wait a Retry-After header asks for (seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


class Throttle:
    """At most one request per `interval` seconds (arXiv asks for one every 3 seconds)."""

    def __init__(
        self,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = self.clock()
            if now < self._next:
                self.sleep(self._next - now)
                now = self._next
            self._next = now + self.interval
