"""`feeds watch`: the run cycle on a schedule (APScheduler 3). Wiring only."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import FrameType

from apscheduler.events import EVENT_JOB_ERROR, JobExecutionEvent
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from feeds.config import Settings

log = logging.getLogger("feeds.watch")

CYCLE = "cycle"
RETRY = "settled-files"

# A cycle must never be skipped silently for being late (APScheduler's default grace time
# of one second drops it): None runs it however late, and coalescing runs a backlog once.
JOB_DEFAULTS = {"misfire_grace_time": None, "coalesce": True, "max_instances": 1}


def trigger_for(settings: Settings) -> IntervalTrigger | CronTrigger:
    if settings.schedule_cron:
        return CronTrigger.from_crontab(settings.schedule_cron, timezone=UTC)
    return IntervalTrigger(seconds=settings.schedule_every or 900, timezone=UTC)


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
    scheduler.add_job(run_cycle, trigger_for(settings), id=CYCLE, next_run_time=datetime.now(UTC))
    scheduler.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        scheduler.shutdown(wait=True)  # lets a running cycle finish
        for s, handler in previous.items():
            signal.signal(s, handler)
