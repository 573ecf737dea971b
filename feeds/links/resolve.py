"""The links step of a run: look up missing links, check what is due, record the results."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import httpx

from feeds import __version__
from feeds.config import LinkSettings
from feeds.links.check import Checker, check_many
from feeds.links.enrich import Enricher, LookupFailed, Throttle
from feeds.links.guard import AddressPolicy, guarded_client
from feeds.links.policy import schedule
from feeds.state import Store

USER_AGENT = f"paperfeeds/{__version__} (+https://pypi.org/project/paperfeeds/; link checker)"
LOOKUP_AGAIN = timedelta(days=30)  # nothing found: papers gain code links later
LOOKUP_RETRY = timedelta(days=1)  # the lookup failed


@dataclass(frozen=True)
class LinkReport:
    checked: int = 0
    changed: int = 0  # checks whose outcome a reader sees differently
    statuses: dict[str, int] = field(default_factory=dict)
    looked_up: int = 0
    found: int = 0  # new links from lookups
    network_down: bool = False
    problems: tuple[str, ...] = ()


def resolve_links(
    store: Store,
    settings: LinkSettings,
    now: datetime,
    progress: Callable[[str], None] = lambda _m: None,
) -> LinkReport:
    """Look up papers without a code link, then check every due URL; store what was learnt."""
    policy = AddressPolicy.from_settings(settings.allow_hosts)
    client = guarded_client(
        policy, timeout=settings.timeout, user_agent=USER_AGENT,
        max_connections=max(settings.concurrency, 1) * 2,
    )  # fmt: skip
    with client:
        looked_up, found, problems = _look_up(store, settings, policy, client, now, progress)
        token = os.environ.get("GITHUB_TOKEN") or None
        checker = Checker(
            client, policy, total_timeout=settings.timeout,
            github_api=settings.github_api, github_token=token,
        )  # fmt: skip
        due = store.due_urls(now)
        results = list(
            check_many(
                checker, due, concurrency=settings.concurrency, per_host=settings.per_host,
                progress=lambda n, total: progress(f"checking links {n}/{total}"),
            )
        )  # fmt: skip
    network_up = any(r.responded for r in results)
    statuses: dict[str, int] = {}
    changed = 0
    with store.transaction():
        for r in results:
            failures, since = store.url_check(r.url)
            status, due_at, failures, since = schedule(r, now, failures, since, network_up)
            statuses[status] = statuses.get(status, 0) + 1
            changed += store.put_check(
                r.url, status, r.http_status, r.final_url, r.note, now, due_at, failures, since
            )
    skipped = len(due) - len(results)
    if skipped:
        problems.append(f"no network: {skipped} links left unchecked for the next run")
    return LinkReport(
        checked=len(results), changed=changed, statuses=statuses, looked_up=looked_up,
        found=found, network_down=bool(results) and not network_up, problems=tuple(problems),
    )  # fmt: skip


def _look_up(
    store: Store,
    settings: LinkSettings,
    policy: AddressPolicy,
    client: httpx.Client,
    now: datetime,
    progress: Callable[[str], None],
) -> tuple[int, int, list[str]]:
    """Ask arXiv and Hugging Face about papers that have no code link yet."""
    enricher = Enricher(
        client, policy,
        arxiv_api=settings.arxiv_api if settings.arxiv else None,
        huggingface_api=settings.huggingface_api if settings.huggingface else None,
        arxiv_throttle=Throttle(settings.arxiv_delay), total_timeout=settings.timeout,
    )  # fmt: skip
    source = "arxiv" if settings.arxiv else "huggingface"
    if not (settings.arxiv or settings.huggingface) or settings.lookups_per_run == 0:
        return 0, 0, []
    todo = store.papers_to_look_up(source, now, settings.lookups_per_run)
    looked_up = found = failed = 0
    problems: list[str] = []
    for n, paper in enumerate(store.papers(todo), start=1):
        progress(f"looking up papers {n}/{len(todo)}")
        looked_up += 1
        try:
            arxiv = enricher.arxiv(paper.title)
            hf = enricher.huggingface(paper.title, arxiv.arxiv_id if arxiv else None)
        except LookupFailed as e:
            failed += 1
            with store.transaction():
                store.put_lookup(paper.paper_id, source, now, now + LOOKUP_RETRY, False, str(e))
            if failed == looked_up:  # nothing has worked yet (no network?): stop early
                problems.append(f"lookups failed ({e}); the rest waits for the next run")
                break
            continue
        links = [*(arxiv.links if arxiv else ()), *(hf.links if hf else ())]
        with store.transaction():
            added = store.add_links(paper.paper_id, links)
            has_code = any(link.kind == "code" for link in links)
            due = None if has_code else now + LOOKUP_AGAIN
            store.put_lookup(paper.paper_id, source, now, due, bool(links))
        found += added
    return looked_up, found, problems
