"""The remote-sources step of a run: fetch what is due, remember validators and health."""

from __future__ import annotations

from datetime import datetime, timedelta

from feeds.ingest import Input
from feeds.net import AddressPolicy, guarded_client
from feeds.settings import Settings
from feeds.sources import SourceFailed, after_failure, after_success, fetch, stale_reason
from feeds.state import Store


def fetch_sources(store: Store, settings: Settings, now: datetime) -> tuple[list[Input], list[str]]:
    """Return the new contents of the remote sources, and why any of them is stale."""
    policy = AddressPolicy.from_settings(settings.links.allow_hosts)
    stale_after = timedelta(seconds=settings.stale_after)
    inputs: list[Input] = []
    stale: list[str] = []
    with guarded_client(policy, timeout=settings.links.timeout) as c:
        for url in settings.sources:
            state = store.source(url)
            if state.next_try is None or state.next_try <= now:
                try:
                    fetched = fetch(c, policy, state, timeout=settings.links.timeout)
                except SourceFailed as e:
                    state = after_failure(state, now, str(e))
                else:
                    state = after_success(state, fetched, now)
                    if fetched.content is not None:
                        inputs.append(Input(url, fetched.content, state))
                if not inputs or inputs[-1].source is not state:
                    with store.transaction():
                        store.put_source(state)
            reason = stale_reason(state, now, stale_after)
            if reason:
                stale.append(f"{url}: {reason}")
    return inputs, stale
