"""When a destination gets its next message. Pure: its record and the clock in, a decision
or a new record out (the shape of links/policy.py, whose backoff it shares)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from feeds.net.pacing import backoff
from feeds.words import say_time

# Digest periods are counted from here: `every: 1d` runs from midnight UTC to midnight UTC.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class AlertState:
    """What the state remembers of one alert destination between runs (cf. SourceState)."""

    last_sent: datetime | None = None  # the last message Apprise reported delivered
    pending: int = 0  # papers waiting to be announced
    failures: int = 0  # failed deliveries since the last success
    next_try: datetime | None = None  # after a failure: not again before this
    error: str | None = None  # the last failure, safe to show (see deliver.Delivery)


def due_at(record: AlertState, every: timedelta | None) -> datetime | None:
    """Return the earliest time the next message may go (None: at once, once papers wait).

    `every` makes a digest: at most one message per period, the periods counted in UTC
    from midnight (`1d`: one a day; `6h`: at 0:00, 6:00, 12:00, 18:00 UTC or later), and
    never two within half a period. Counting periods, not time since the last message, is
    what gives a daily cron job one message each day although its start time jitters, and
    `feeds watch` one at a steady time of day. A failed delivery is tried again after its
    backoff, not a period later: the papers it held are late already.
    """
    if record.failures:
        return record.next_try
    if every is None or record.last_sent is None:
        return None
    period_end = EPOCH + ((record.last_sent - EPOCH) // every + 1) * every
    return max(period_end, record.last_sent + every / 2)


def is_due(record: AlertState, every: timedelta | None, now: datetime) -> bool:
    """Return True when a message should go now: papers wait and nothing holds them."""
    when = due_at(record, every)
    return record.pending > 0 and (when is None or now >= when)


def after_delivery(
    record: AlertState, now: datetime, *, ok: bool, sent: int = 0, error: str | None = None
) -> AlertState:
    """Return the record after a delivery of `sent` papers that succeeded (`ok`) or not.

    Success resets the backoff; a failure keeps every paper pending and waits longer each
    time (1 h, 2 h, 4 h ... at most 2 days: policy.backoff).
    """
    if ok:
        return AlertState(last_sent=now, pending=max(0, record.pending - sent))
    return replace(
        record,
        failures=record.failures + 1,
        next_try=now + backoff(record.failures),
        error=error or "delivery failed",
    )


def say_wait(record: AlertState, now: datetime) -> str:
    """Return a destination that waits out its backoff in words: `waiting until 07:35 UTC
    after a failed try (connection refused)` (the date too when it is not today's)."""
    why = f" ({record.error})" if record.error else ""
    if record.next_try is None:
        return f"waiting after a failed try{why}"
    return f"waiting until {say_time(record.next_try, today=now)} after a failed try{why}"
