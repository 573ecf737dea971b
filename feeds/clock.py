"""The clock: what time it is for a run, a report or an alert, read in one place.

Every command takes "now" from `utcnow`, and the library takes it as a parameter whose
default is `utcnow`. `PAPERFEEDS_NOW` (an ISO 8601 time, e.g. `2026-12-07T07:00:00Z`) sets
it for a whole process and the commands it starts: the tests run the library and the CLI
at one fixed time, and a user can replay a run "as of" a day. APScheduler's own timing
(when `feeds watch` wakes up) stays on the system clock.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from feeds.errors import ConfigError

NOW_VARIABLE = "PAPERFEEDS_NOW"


def utcnow() -> datetime:
    """Return the time now in UTC, to the second: `$PAPERFEEDS_NOW` when set, else the
    system clock."""
    fixed = os.environ.get(NOW_VARIABLE, "").strip()
    if not fixed:
        return datetime.now(UTC).replace(microsecond=0)
    try:
        when = datetime.fromisoformat(fixed)
    except ValueError as e:
        raise ConfigError(
            f"{NOW_VARIABLE}={fixed!r} is not an ISO 8601 time (e.g. 2026-12-07T07:00:00Z)"
        ) from e
    if when.tzinfo is None:
        raise ConfigError(f"{NOW_VARIABLE}={fixed!r} has no time zone (add Z or +00:00)")
    return when.astimezone(UTC).replace(microsecond=0)
