"""When to check a link again. Pure: a result and the clock in, a due time out."""

from __future__ import annotations

from datetime import datetime, timedelta

from feeds.links.check import CheckResult
from feeds.model import LinkStatus

RECHECK_OK = timedelta(days=7)
RECHECK_DEAD = timedelta(days=30)
RECHECK_BLOCKED = timedelta(days=30)
FIRST_RETRY = timedelta(hours=1)
MAX_RETRY = timedelta(days=2)
DEAD_NAME_AFTER = timedelta(days=7)  # a name that has not resolved this long is dead


def schedule(
    result: CheckResult,
    now: datetime,
    failures: int,
    dns_failing_since: datetime | None,
    network_up: bool,
) -> tuple[LinkStatus, datetime, int, datetime | None]:
    """Return (status, next check, failures, DNS-failing-since) after a check.

    Errors back off exponentially (1 h, 2 h, 4 h ... at most 2 days), or as long as the
    server asked. A name that fails to resolve counts towards "dead" only while other
    servers answer: a machine without network must not declare every link dead.
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
    wait = min(FIRST_RETRY * (2**failures), MAX_RETRY)
    if result.retry_after:
        wait = max(wait, timedelta(seconds=result.retry_after))
    return status, now + wait, failures + 1, since
