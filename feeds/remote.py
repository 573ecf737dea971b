"""The remote-sources step of a run: fetch what is due, remember validators and health."""

from __future__ import annotations

from datetime import datetime, timedelta

from feeds.ingest import Input
from feeds.net import AddressPolicy, guarded_client
from feeds.settings import Settings
from feeds.sources import (
    Down,
    SourceFailed,
    after_failure,
    after_success,
    fetch,
    newly_stale,
    put_failing_since,
)
from feeds.state import Store


def fetch_sources(
    store: Store, settings: Settings, now: datetime, last_run: datetime | None = None
) -> tuple[list[Input], list[str], list[Down]]:
    """Return the new contents of the remote sources, those that became stale since the
    last run (`last_run`) and why, and those whose failures began now."""
    policy = AddressPolicy.from_settings(settings.links.allow_hosts)
    stale_after = timedelta(seconds=settings.stale_after)
    inputs: list[Input] = []
    stale: list[str] = []
    down: list[Down] = []
    with guarded_client(policy, timeout=settings.links.timeout) as c:
        for url in settings.sources:
            before = state = store.source(url)
            tried = state.next_try is None or state.next_try <= now
            if tried:
                try:
                    fetched = fetch(c, policy, state, timeout=settings.links.timeout)
                except SourceFailed as e:
                    state = after_failure(state, now, str(e))
                else:
                    state = after_success(state, fetched, now)
                    if fetched.content is not None:
                        inputs.append(Input(url, fetched.content, state))
            with store.transaction():
                since = put_failing_since(store, url, before, state, now)
                if tried and (not inputs or inputs[-1].source is not state):
                    store.put_source(state)  # (one that brought content: with its digest)
            if state.failures and not before.failures:
                down.append(Down(url, state.error or "failed", state.next_try))
            reason = newly_stale(state, now, stale_after, since, last_run)
            if reason:
                stale.append(f"{url}: {reason}")
    return inputs, stale, down
