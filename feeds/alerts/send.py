"""After a cycle publishes: each alert destination that is due gets one message with what
entered its topics since its last delivered message. This module only orders the steps:
what is due is due.py's decision, the message message.py's, the delivery deliver.py's."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from feeds.alerts.due import AlertState, after_delivery, is_due, say_wait
from feeds.alerts.env import AlertsConfigError, MissingVariable, expand, unset_names
from feeds.alerts.message import Message, NewPaper, compose
from feeds.clock import utcnow

if TYPE_CHECKING:
    from feeds.alerts.deliver import Delivery
    from feeds.publish.view import Site
    from feeds.settings import AlertDestination, Config
    from feeds.state import Store
    from feeds.state.records import AlertRecord

# Papers a message lists when the destination sets no max_papers: a topic edited to take
# in hundreds of old papers is one short message, "and 212 more" with the topic's page.
DEFAULT_MAX_PAPERS = 50
SENDERS = 8  # destinations served at once: one that hangs holds only its own thread

Send = Callable[[str, Message], "Delivery"]


@dataclass(frozen=True)
class Outcome:
    """What a cycle did for one destination: at most one of `error`, `unset`, `waiting`."""

    shown: str  # service and host
    papers: int  # papers announced (0: none was due)
    error: str | None = None  # tried now and failed: its papers stay pending
    pending: int = 0  # papers waiting after this cycle
    # Not tried: a `${NAME}` of its URL is not set (the words name it and the file:line).
    unset: str | None = None
    # Not tried: it waits out its backoff after a failed try (in words, see due.say_wait).
    waiting: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.unset is None

    def said(self) -> str:
        """Return the outcome as `feeds alerts --send-now` says it."""
        from feeds.words import count

        if self.ok:
            return f"{self.shown}: " + (f"sent {count(self.papers, 'paper')}" if self.papers
                                        else "nothing pending")  # fmt: skip
        why = self.error or self.unset
        return f"{self.shown}: failed: {why} ({count(self.pending, 'paper')} pending)"


@dataclass(frozen=True)
class _Due:
    url: str
    record: AlertRecord
    state: AlertState
    message: Message


def send_alerts(
    config: Config,
    store: Store,
    now: datetime,
    *,
    send: Send | None = None,
    force: bool = False,
) -> tuple[Outcome, ...]:
    """Send each destination that is due its message; record what was delivered. Return
    the outcome per destination that had something pending, failed or waits.

    `force` (`feeds alerts --send-now`): every destination with papers pending gets them
    now, backoff or digest period notwithstanding, and every destination has an outcome.
    """
    if send is None:
        from feeds.alerts.deliver import deliver

        timeout = config.settings.alerts_timeout

        def send(url: str, message: Message) -> Delivery:
            return deliver(url, message, timeout=timeout)

    # In the order of the settings, whatever became of each: destinations that share a
    # service and host are told apart by it (`#2`).
    outcomes: dict[int, Outcome] = {}
    due: dict[int, _Due] = {}
    for i, dest in enumerate(config.settings.alerts):
        try:
            prepared = _prepare(config, store, dest, now, force=force)
        except AlertsConfigError as e:  # a `${` broken since the config was checked
            outcomes[i] = Outcome(f"the alert at {dest.file}:{dest.line}", 0, e.message)
            continue
        if isinstance(prepared, _Due):
            due[i] = prepared
        elif prepared is not None:
            outcomes[i] = prepared
    with ThreadPoolExecutor(max_workers=SENDERS) as pool:
        deliveries = list(pool.map(lambda d: send(d.url, d.message), due.values()))
    with store.transaction():
        for (i, d), delivery in zip(due.items(), deliveries, strict=True):
            state = after_delivery(d.state, now, ok=delivery.ok, sent=d.state.pending,
                                   error=delivery.error)  # fmt: skip
            store.put_alert(
                replace(
                    d.record,
                    watermark=now if delivery.ok else d.record.watermark,
                    last_sent=state.last_sent, failures=state.failures,
                    next_try=state.next_try, error=state.error,
                )
            )  # fmt: skip
            sent = d.state.pending if delivery.ok else 0
            outcomes[i] = Outcome(d.record.shown, sent, delivery.error, state.pending)
    return tuple(outcomes[i] for i in sorted(outcomes))


def start_destinations(config: Config, store: Store, now: datetime) -> None:
    """Start each destination seen for the first time with the cycle at `now`, sending
    nothing (an offline run): what entered in this cycle stays pending for it, as it would
    have been sent had the run been online."""
    from feeds.alerts.deliver import describe

    with store.transaction():
        for dest in config.settings.alerts:
            try:
                shown = describe(expand(dest.to, os.environ, file=dest.file, line=dest.line))
            except AlertsConfigError:  # a variable unset here: shown without it
                store.alert_record(dest.key, _shown_unset(dest), now, refresh=False)
            else:
                store.alert_record(dest.key, shown, now)


def links_nobody_opens(config: Config) -> str | None:
    """Return a warning when alert messages link to this machine alone (`site.base_url`
    left at http://localhost:8000/, for `feeds serve`): the people they go to cannot open
    a paper's page, a topic's page or the "and N more" link. None when they can."""
    from feeds.urls import only_here

    base = config.settings.base_url
    if not config.settings.alerts or not only_here(base):
        return None
    return (
        f"alerts link to {base}, which opens only on this machine: set site.base_url to"
        " where public/ is served"
    )


def clear_wait(store: Store, dest: AlertDestination) -> None:
    """Forget a destination's failures: a test message just reached it, so its backoff
    would only delay papers that can go now (the next run sends them)."""
    with store.transaction():
        known = {r.key: r for r in store.alert_records()}
        record = known.get(dest.key)
        if record is not None and record.failures:
            store.put_alert(replace(record, failures=0, next_try=None, error=None))


def _prepare(
    config: Config, store: Store, dest: AlertDestination, now: datetime, *, force: bool = False
) -> _Due | Outcome | None:
    """Return the message a destination is due, or its outcome when it is not sent (a
    variable unset, waiting out a backoff, a digest not yet due), or None when nothing is
    pending and nothing is wrong (with `force`: an outcome of nothing sent)."""
    from feeds.alerts.deliver import describe

    try:
        url = expand(dest.to, os.environ, file=dest.file, line=dest.line)
    except MissingVariable as e:
        # Cron and systemd start us without the shell's variables: this destination waits
        # until its variable is set, and the run goes on for the others (SPEC "Alerts").
        with store.transaction():
            record = store.alert_record(dest.key, _shown_unset(dest), now, refresh=False)
        _per_topic, pending = _pending(config, store, dest, record, now)
        where = f"{dest.file}:{dest.line}"
        unset = f"environment variable {e.name} is not set (${{{e.name}}} at {where})"
        return Outcome(record.shown, 0, pending=pending, unset=unset)
    with store.transaction():
        record = store.alert_record(dest.key, describe(url), now)
    per_topic, pending = _pending(config, store, dest, record, now)
    state = AlertState(record.last_sent, pending, record.failures, record.next_try, record.error)
    every = timedelta(seconds=dest.every) if dest.every else None
    if not pending or not (force or is_due(state, every, now)):
        if force or (not pending and not record.failures):
            return Outcome(record.shown, 0, pending=pending) if force else None
        # Not tried now: a wait is not a new failure (the run that failed said so).
        waiting = say_wait(state, now) if record.failures else None
        return Outcome(record.shown, 0, pending=pending, waiting=waiting)
    cap = dest.max_papers or DEFAULT_MAX_PAPERS
    entries = store.alert_entries(sorted(per_topic), record.watermark, now, cap)
    titles = {t.id: t.title for t in config.topics}
    ids = list(dict.fromkeys(e.paper_id for e in entries))
    papers = {p.paper_id: p for p in store.papers(ids)}
    links = store.links_of(ids)
    new = [
        NewPaper(papers[e.paper_id], e.topic_id, titles[e.topic_id], e.entered,
                 links[e.paper_id], e.hits)
        for e in entries
    ]  # fmt: skip
    site = _site(config)
    message = compose(new, site, cap, totals=per_topic, distinct=pending)
    return _Due(url, record, state, message)


def _pending(
    config: Config, store: Store, dest: AlertDestination, record: AlertRecord, now: datetime
) -> tuple[dict[str, int], int]:
    """Return the papers pending for a destination: per topic, and in all."""
    known = dict.fromkeys(t.id for t in config.topics)
    topics = [t for t in (dest.topics if dest.topics is not None else known) if t in known]
    per_topic, pending = store.alert_counts(topics, record.watermark, now)
    return per_topic, pending


def _shown_unset(dest: AlertDestination) -> str:
    """Return how to show a destination whose variables are not all set: its service and
    host when they do not depend on them, else where it is configured."""
    from feeds.alerts.deliver import describe

    # A stand-in for each value: one word with no dot, so it can never pass for a host.
    stand_in = dict.fromkeys(unset_names(dest.to, os.environ), "x")
    try:
        return describe(expand(dest.to, {**os.environ, **stand_in}))
    except AlertsConfigError:
        return f"the alert at {dest.file}:{dest.line}"


def _site(config: Config) -> Site:
    from feeds.publish.view import Site

    return Site(config.settings.site_title, config.settings.base_url)


def send_tests(config: Config) -> list[tuple[AlertDestination, str, Delivery]]:
    """Send a short test message to each destination; return how each went."""
    from feeds.alerts.deliver import Delivery, describe, send_test

    out: list[tuple[AlertDestination, str, Delivery]] = []
    for dest in config.settings.alerts:
        try:
            url = expand(dest.to, os.environ, file=dest.file, line=dest.line)
            shown = describe(url)
        except AlertsConfigError as e:
            where = f"the alert at {dest.file}:{dest.line}"
            out.append((dest, where, Delivery(False, e.message)))
            continue
        out.append((dest, shown, send_test(url, config.settings.alerts_timeout)))
    return out


def send_pending(config: Config, *, now: Callable[[], datetime] = utcnow,
                 lock_wait: float = 30.0) -> tuple[Outcome, ...]:  # fmt: skip
    """Send every destination what is pending for it now, backoff or not (`feeds alerts
    --send-now`, after a server is fixed); return each destination's outcome (none before
    the first run: nothing is pending)."""
    from feeds.state import Store, exists
    from feeds.state.lock import exclusive

    s = config.settings
    if not exists(s.database):
        return ()
    with exclusive(s.database, wait=lock_wait):
        store = Store(s.database, now())
        try:
            at, last = now(), store.last_started()
            # Up to the last cycle's time at least: it may be a second ahead of the clock
            # (see pipeline._cycle), and what it added is pending all the same.
            return send_alerts(config, store, max(at, last) if last else at, force=True)
        finally:
            store.close()


def send_test_messages(config: Config, *, now: Callable[[], datetime] = utcnow,
                       lock_wait: float = 30.0) -> list[tuple[str, Delivery]]:  # fmt: skip
    """Send each destination a test message; one it reached waits no more (its backoff is
    cleared: the next run sends what is pending). Return how each went."""
    from feeds.state import Store, exists
    from feeds.state.lock import exclusive

    results = send_tests(config)
    reached = [dest for dest, _shown, delivery in results if delivery.ok]
    s = config.settings
    if reached and exists(s.database):  # no state yet: no destination waits
        with exclusive(s.database, wait=lock_wait):
            store = Store(s.database, now())
            try:
                for dest in reached:
                    clear_wait(store, dest)
            finally:
                store.close()
    return [(shown, delivery) for _dest, shown, delivery in results]
