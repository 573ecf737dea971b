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

from feeds.alerts.due import AlertState, after_delivery, is_due
from feeds.alerts.env import AlertsConfigError, expand
from feeds.alerts.message import Message, NewPaper, compose

if TYPE_CHECKING:
    from feeds.alerts.deliver import Delivery
    from feeds.config import Config
    from feeds.publish.view import Site
    from feeds.settings import AlertDestination
    from feeds.state import Store
    from feeds.state.records import AlertRecord

# Papers a message lists when the destination sets no max_papers: a topic edited to take
# in hundreds of old papers is one short message, "and 212 more" with the topic's page.
DEFAULT_MAX_PAPERS = 50
SENDERS = 8  # destinations served at once: one that hangs holds only its own thread

Send = Callable[[str, Message], "Delivery"]


@dataclass(frozen=True)
class Outcome:
    """What a cycle did for one destination."""

    shown: str  # service and host
    papers: int  # papers announced (0: none was due)
    error: str | None = None  # why it failed: its papers stay pending
    pending: int = 0  # papers waiting after this cycle

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class _Due:
    url: str
    record: AlertRecord
    state: AlertState
    message: Message


def send_alerts(
    config: Config, store: Store, now: datetime, *, send: Send | None = None
) -> tuple[Outcome, ...]:
    """Send each destination that is due its message; record what was delivered. Return
    the outcome per destination that had something pending or failed."""
    if send is None:
        from feeds.alerts.deliver import deliver

        timeout = config.settings.alerts_timeout

        def send(url: str, message: Message) -> Delivery:
            return deliver(url, message, timeout=timeout)

    outcomes: list[Outcome] = []
    due: list[_Due] = []
    for dest in config.settings.alerts:
        try:
            prepared = _prepare(config, store, dest, now)
        except AlertsConfigError as e:  # a variable gone since the config was checked
            outcomes.append(Outcome(f"the alert at {dest.file}:{dest.line}", 0, e.message))
            continue
        if isinstance(prepared, _Due):
            due.append(prepared)
        elif prepared is not None:
            outcomes.append(prepared)
    with ThreadPoolExecutor(max_workers=SENDERS) as pool:
        deliveries = list(pool.map(lambda d: send(d.url, d.message), due))
    with store.transaction():
        for d, delivery in zip(due, deliveries, strict=True):
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
            outcomes.append(Outcome(d.record.shown, sent, delivery.error, state.pending))
    return tuple(outcomes)


def _prepare(
    config: Config, store: Store, dest: AlertDestination, now: datetime
) -> _Due | Outcome | None:
    """Return the message a destination is due, or its outcome when it waits (failing,
    or a digest not yet due), or None when nothing is pending."""
    from feeds.alerts.deliver import describe

    url = expand(dest.to, os.environ, file=dest.file, line=dest.line)
    with store.transaction():
        record = store.alert_record(dest.key, describe(url), now)
    titles = {t.id: t.title for t in config.topics}
    topics = [t for t in (dest.topics if dest.topics is not None else titles) if t in titles]
    per_topic, pending = store.alert_counts(topics, record.watermark, now)
    state = AlertState(record.last_sent, pending, record.failures, record.next_try, record.error)
    every = timedelta(seconds=dest.every) if dest.every else None
    if not is_due(state, every, now):
        if not pending and not record.failures:
            return None
        return Outcome(record.shown, 0, record.error, pending)
    cap = dest.max_papers or DEFAULT_MAX_PAPERS
    entries = store.alert_entries(sorted(per_topic), record.watermark, now, cap)
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


def _site(config: Config) -> Site:
    from feeds.publish.view import Site

    return Site(config.settings.site_title, config.settings.base_url)


def send_tests(config: Config) -> list[tuple[str, Delivery]]:
    """Send a short test message to each destination; return how each went."""
    from feeds.alerts.deliver import Delivery, describe, send_test

    out: list[tuple[str, Delivery]] = []
    for dest in config.settings.alerts:
        try:
            url = expand(dest.to, os.environ, file=dest.file, line=dest.line)
            shown = describe(url)
        except AlertsConfigError as e:
            out.append((f"the alert at {dest.file}:{dest.line}", Delivery(False, e.message)))
            continue
        out.append((shown, send_test(url, config.settings.alerts_timeout)))
    return out
