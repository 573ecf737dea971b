"""`feeds watch`: the run cycle on a schedule (APScheduler 3). Wiring only."""

from __future__ import annotations

import logging
import re
import signal
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import FrameType

from apscheduler.events import EVENT_JOB_ERROR, JobExecutionEvent
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from feeds.settings import Settings
from feeds.words import say_interval, say_time

log = logging.getLogger("feeds.watch")

CYCLE = "cycle"
RETRY = "settled-files"

# A cycle must never be skipped silently for being late (APScheduler's default grace time
# of one second drops it): None runs it however late, and coalescing runs a backlog once.
JOB_DEFAULTS = {"misfire_grace_time": None, "coalesce": True, "max_instances": 1}


def trigger_for(settings: Settings) -> IntervalTrigger | CronTrigger | OrTrigger:
    if settings.schedule_cron:
        return crontab(settings.schedule_cron)
    return IntervalTrigger(seconds=settings.schedule_every or 900, timezone=UTC)


_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab's 0-6 (7 is sun)
_WEEKDAY_ITEM = re.compile(r"(\*|\w+)(?:-(\w+))?(?:/(\d+))?")


def crontab(line: str) -> CronTrigger | OrTrigger:
    """Return the trigger of a five-field crontab line, in UTC, as cron reads it; raise
    ValueError saying what is wrong (APScheduler's own words, but for the weekdays).

    APScheduler 3 counts weekday numbers from Monday = 0 (its from_crontab says so), so
    `1-5` would run Tuesday to Saturday. The weekday field is handed to it as day names,
    counted as cron counts them (0 and 7 = Sunday); APScheduler reads and checks the rest.
    """
    fields = line.split()
    if len(fields) != 5:
        raise ValueError(f"needs 5 fields (minute hour day month weekday), not {len(fields)}")
    minute, hour, day, month, weekday = fields
    names = _weekday_names(weekday)

    def cron(day: str, names: str) -> CronTrigger:
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=names,
                           timezone=UTC)  # fmt: skip

    if day != "*" and weekday != "*":  # cron runs on either; APScheduler wants both
        return OrTrigger([cron(day, "*"), cron("*", names)])
    return cron(day, names)


def _weekday_names(field: str) -> str:
    """Return a crontab weekday field as the names of its days (`1-5` -> `mon,...,fri`)."""
    if field == "*":
        return field
    days: set[int] = set()
    for item in field.lower().split(","):
        m = _WEEKDAY_ITEM.fullmatch(item)
        if m is None:
            raise ValueError(f"cannot read {item!r} in the weekday field")
        first, last, step = m.groups()
        low = 0 if first == "*" else _weekday(first)
        high = 7 if first == "*" or (step and not last) else _weekday(last or first)
        if first == "*" and last:
            raise ValueError(f"cannot read {item!r} in the weekday field")
        if low > high:
            raise ValueError(f"{item!r}: a range of weekdays goes forward (Sunday is 0 or 7)")
        if step is not None and int(step) == 0:
            raise ValueError(f"{item!r}: a step must be at least 1")
        days.update(d % 7 for d in range(low, high + 1, int(step or 1)))
    return ",".join(_WEEKDAYS[d] for d in sorted(days))


def _weekday(word: str) -> int:
    if word.isdigit() and int(word) <= 7:
        return int(word)
    if word in _WEEKDAYS:
        return _WEEKDAYS.index(word)
    raise ValueError(f"{word!r} is not a weekday (0-7, Sunday being 0 or 7, or sun-sat)")


def next_times(settings: Settings, now: datetime, count: int = 3) -> list[datetime]:
    """Return when the schedule fires next after `now`, computed by the trigger `watch`
    runs (an interval counts from `now`, when a `watch` started now would start it)."""
    trigger = trigger_for(settings)
    times: list[datetime] = []
    previous: datetime | None = None
    if isinstance(trigger, IntervalTrigger):
        trigger.start_date = now  # watch runs a cycle at once, then every interval
        previous = now
    while len(times) < count:
        when = trigger.get_next_fire_time(previous, now)
        if when is None:
            break
        times.append(when)
        previous, now = when, when + timedelta(microseconds=1)
    return times


def say_when(when: datetime, *, seconds: bool = False) -> str:
    """Return a time as `2026-12-07 07:00 UTC (Mon)`, or with `seconds` as
    `2026-12-07 07:00:30 UTC (Mon)` (for a schedule that is not in whole minutes)."""
    return say_time(when, seconds=seconds, weekday=True)


def say_every(settings: Settings) -> str:
    """Return the schedule's interval as the settings write it (`15m`, `2h`, `90s`)."""
    return say_interval(settings.schedule_every or 900)  # the default schedule (trigger_for)


def in_seconds(settings: Settings) -> bool:
    """Return True when the schedule's times need their seconds to be told apart: an
    interval that is not whole minutes (`30s`, `90s`). A cron line fires on minutes."""
    return not settings.schedule_cron and (settings.schedule_every or 900) % 60 != 0


def stop_signals() -> tuple[signal.Signals, ...]:
    """Return the signals on which `watch` finishes the current cycle and returns.

    SIGHUP as well: a closed terminal or a `kill -HUP` would otherwise end the process
    mid-cycle (the signal's default action). It does not reload: the config is read once at
    start, so a restart applies a change. SIGHUP ignored when we start stays ignored:
    `nohup feeds watch` asked to outlive its terminal.
    """
    hangup = () if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else (signal.SIGHUP,)
    return (signal.SIGINT, signal.SIGTERM, *hangup)


def watch(
    settings: Settings,
    cycle: Callable[[], float | None],
    *,
    stop: threading.Event | None = None,
) -> None:
    """Run `cycle` at once and then on the schedule until SIGINT/SIGTERM/SIGHUP (or `stop`).

    `cycle` returns when files it left unread (still being written) may have settled; a
    one-off cycle is scheduled then. The current cycle always finishes before we return.
    """
    stop = stop or threading.Event()
    lock = threading.Lock()  # one cycle at a time, whichever job starts it
    scheduler = BackgroundScheduler(timezone=UTC, job_defaults=JOB_DEFAULTS)

    def run_cycle() -> None:
        if stop.is_set() or not lock.acquire(blocking=False):
            return  # another cycle is running: it will see the same files
        try:
            retry_at = cycle()
        finally:
            lock.release()
        # From the trigger itself: asking the scheduler (get_job) would wait for its lock,
        # which shutdown() holds while it waits for this very cycle to end.
        after = trigger.get_next_fire_time(None, datetime.now(UTC))
        if after is not None and not stop.is_set():
            log.info("next cycle: %s", say_when(after, seconds=in_seconds(settings)))
        if retry_at is not None and not stop.is_set():
            when = datetime.fromtimestamp(retry_at, UTC) + timedelta(milliseconds=200)
            scheduler.add_job(run_cycle, DateTrigger(when), id=RETRY, replace_existing=True)

    def failed(event: JobExecutionEvent) -> None:
        log.error("cycle failed: %s", event.exception, exc_info=event.exception)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s: finishing the current cycle, then exiting", signal.Signals(signum).name)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in stop_signals()}
    scheduler.add_listener(failed, EVENT_JOB_ERROR)
    trigger = trigger_for(settings)
    scheduler.add_job(run_cycle, trigger, id=CYCLE, next_run_time=datetime.now(UTC))
    scheduler.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        scheduler.shutdown(wait=True)  # lets a running cycle finish
        for s, handler in previous.items():
            signal.signal(s, handler)
