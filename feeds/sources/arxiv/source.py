"""The arXiv step of a run: harvest the followed categories that are due, through the
guarded client, paced. Returns what each brought; the pipeline stores it (the entries,
the cursor and the source's health together, in one transaction)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from feeds.model import SourceState
from feeds.net import AddressPolicy, guarded_client
from feeds.net.pacing import Throttle
from feeds.settings import Settings
from feeds.sources.arxiv.client import Harvester
from feeds.sources.arxiv.harvest import ArxivPaper, Cursor, after_harvest, to_paper
from feeds.state import Store


def source_key(category: str) -> str:
    """Return how the state's sources table knows a category (beside remote digests' URLs)."""
    return f"arxiv:{category}"


@dataclass(frozen=True)
class Harvested:
    category: str
    papers: tuple[ArxivPaper, ...]  # new entries, as papers
    cursor: Cursor  # to store with them
    source: SourceState  # the category's health after this harvest


def harvest(store: Store, settings: Settings, now: datetime, throttle: Throttle) -> list[Harvested]:
    """Return what the categories that are due brought this cycle (one that is backing off
    after a failure or a rate limit is not asked)."""
    due = []
    for category in settings.arxiv:
        state = store.source(source_key(category))
        if state.next_try is None or state.next_try <= now:
            due.append((category, state))
    if not due:
        return []
    policy = AddressPolicy.from_settings(settings.links.allow_hosts)
    links = settings.links
    with guarded_client(policy, timeout=links.timeout) as client:
        harvester = Harvester(
            client, links.arxiv_api, policy=policy,
            backfill=timedelta(seconds=settings.arxiv_backfill), throttle=throttle,
        )  # fmt: skip
        cursors = [Cursor.from_text(c, store.harvest_cursor(c)) for c, _state in due]
        results = harvester.harvest_all(cursors, now, store.has_arxiv_paper)
    return [
        Harvested(category, tuple(map(to_paper, result.entries)), result.cursor,
                  after_harvest(state, result, now))
        for (category, state), result in zip(due, results, strict=True)
    ]  # fmt: skip
