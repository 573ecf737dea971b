"""The deadline of the request under way in this thread: a whole check, a whole fetch.

Every connect, read and write gets at most what is left of it, so a server that drips a
byte a second cannot hold a run (httpx's timeouts are per read, not per request).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Give everything fetched inside at most `seconds` in all."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def budget(timeout: float | None, error: type[Exception]) -> float | None:
    """Return the seconds one I/O step may take: `timeout`, or what is left of the deadline
    when that is less; raise `error` when nothing is left."""
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the total time for this URL is used up")
    return left if timeout is None else min(timeout, left)
