"""The links step of a run: look up missing links, check what is due, record the results."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from feeds.links.check import Checker, CheckResult, check_many
from feeds.links.enrich import Enricher, Found, LookupFailed
from feeds.links.policy import (
    LOOKUPS_KEY,
    NETWORK_KEY,
    Outage,
    network_after,
    say_outage,
    schedule,
)
from feeds.net import AddressPolicy, NameNotResolved, TimedOut, guarded_client
from feeds.net.pacing import Throttle
from feeds.settings import LinkSettings
from feeds.state import Store
from feeds.state.records import UrlCheck

if TYPE_CHECKING:
    from feeds.net.client import Client

LOOKUP_AGAIN = timedelta(days=30)  # nothing found: papers gain code links later


@dataclass(frozen=True)
class LinkReport:
    checked: int = 0
    changed: int = 0  # checks whose outcome a reader sees differently
    statuses: dict[str, int] = field(default_factory=dict)
    looked_up: int = 0
    found: int = 0  # new links from lookups
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Looked:
    """What a run's lookups did."""

    looked_up: int = 0
    found: int = 0  # new links
    answered: bool = False  # an API answered (the network works)
    failure: LookupFailed | None = None  # the failure that stopped them
    failed_paper: str | None = None


def resolve_links(
    store: Store,
    settings: LinkSettings,
    now: datetime,
    progress: Callable[[str], None] = lambda _m: None,
    arxiv_throttle: Throttle | None = None,
    read_arxiv: Callable[[bytes], list[Found]] | None = None,
) -> LinkReport:
    """Look up papers without a code link, then check every due URL; store what was learnt.

    `read_arxiv` reads arXiv's answer to a title lookup (feeds.sources.arxiv.lookup); without
    it arXiv is not asked.

    Without network nothing is tried again before its time (policy.backoff), and that the
    network is down is said once, by the run that finds it so: cron mails only news.
    """
    network = Outage.from_text(store.meta(NETWORK_KEY))
    if not network.due(now):
        return LinkReport()
    lookups = Outage.from_text(store.meta(LOOKUPS_KEY))
    policy = AddressPolicy.from_settings(settings.allow_hosts)
    client = guarded_client(
        policy, timeout=settings.timeout, max_connections=max(settings.concurrency, 1) * 2
    )
    with client:
        looked = _Looked()
        if lookups.due(now):
            throttle = arxiv_throttle or Throttle(settings.arxiv_delay)
            looked = _look_up(store, settings, policy, client, now, progress, throttle,
                              read_arxiv)  # fmt: skip
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
    answered = looked.answered or any(r.responded for r in results)
    unreachable, cause = _unreachable(results, looked.failure)
    now_network = network_after(network, now, answered, unreachable, cause)
    now_lookups = lookups
    failure = looked.failure
    if failure is not None and not now_network.down:  # the lookup API's own trouble
        why = _unreachable([], failure)[1] if failure.unreachable else str(failure)
        now_lookups = lookups.failed(now, why)
    elif looked.answered:
        now_lookups = lookups.worked(now)
    statuses: dict[str, int] = {}
    changed = 0
    with store.transaction():
        for r in results:
            history = store.url_history(r.url)
            failures, since = history.failures, history.dns_failing_since
            if now_network.down and r.unreachable and now_network.retry_at:
                # Not the link's failure: checked again with the network, as often.
                status, due_at = r.status, now_network.retry_at
            else:
                status, due_at, failures, since = schedule(r, now, failures, since, answered)
            statuses[status] = statuses.get(status, 0) + 1
            changed += store.put_check(
                UrlCheck(r.url, status, r.http_status, r.final_url, r.note, now, due_at,
                         failures, since)
            )  # fmt: skip
        if failure is not None and looked.failed_paper and not now_network.down:
            # Asked again when the lookups are (a network that is down is not the paper's).
            store.put_lookup(looked.failed_paper, _source(settings), now,
                             now_lookups.retry_at, False, str(failure))  # fmt: skip
        for key, before, after in ((NETWORK_KEY, network, now_network),
                                   (LOOKUPS_KEY, lookups, now_lookups)):  # fmt: skip
            if after != before:
                store.set_meta(key, after.to_text())
    problems = []
    if now_network.down and not network.down:
        problems.append(f"network {say_outage(now_network)}; links and lookups wait till then")
    elif now_lookups.down and not lookups.down:
        problems.append(f"lookups {say_outage(now_lookups)}")
    return LinkReport(
        checked=len(results), changed=changed, statuses=statuses, looked_up=looked.looked_up,
        found=looked.found, problems=tuple(problems),
    )  # fmt: skip


def _unreachable(results: list[CheckResult], failure: LookupFailed | None) -> tuple[set[str], str]:
    """Return the hosts nobody could reach, and why, in words: `names do not resolve
    (export.arxiv.org, github.com)`."""
    hosts: dict[str, str] = {}  # host: why
    for r in results:
        if r.unreachable:
            why = "name" if r.dns_failure else "time" if r.note == "timed out" else "connect"
            hosts.setdefault(urlsplit(r.url).hostname or "", why)
    if failure is not None and failure.unreachable:
        cause = failure.__cause__
        why = "name" if isinstance(cause, NameNotResolved) else (
            "time" if isinstance(cause, TimedOut) else "connect")  # fmt: skip
        hosts.setdefault(failure.host, why)
    whys = set(hosts.values())
    said = ("names do not resolve" if "name" in whys else
            "no answer in time" if "time" in whys else "no connection")  # fmt: skip
    shown = sorted(hosts)
    listed = ", ".join(shown[:3]) + (", …" if len(shown) > 3 else "")
    return set(hosts), f"{said}: {listed}" if hosts else said


def _source(settings: LinkSettings) -> str:
    """Return the source lookups are recorded under (the first one asked)."""
    return "arxiv" if settings.arxiv else "huggingface"


def _look_up(
    store: Store,
    settings: LinkSettings,
    policy: AddressPolicy,
    client: Client,
    now: datetime,
    progress: Callable[[str], None],
    throttle: Throttle,
    read_arxiv: Callable[[bytes], list[Found]] | None,
) -> _Looked:
    """Ask arXiv and Hugging Face about papers that have no code link yet; stop at the
    first failure (the caller decides whose it is: the network's or the API's)."""
    enricher = Enricher(
        client, policy,
        arxiv_api=settings.arxiv_api if settings.arxiv else None,
        huggingface_api=settings.huggingface_api if settings.huggingface else None,
        arxiv_throttle=throttle, total_timeout=settings.timeout, read_arxiv=read_arxiv,
    )  # fmt: skip
    source = _source(settings)
    if not (settings.arxiv or settings.huggingface) or settings.lookups_per_run == 0:
        return _Looked()
    todo = store.papers_to_look_up(source, now, settings.lookups_per_run)
    looked_up = found = 0
    for n, paper in enumerate(store.papers(todo), start=1):
        progress(f"looking up papers {n}/{len(todo)}")
        looked_up += 1
        try:
            arxiv = enricher.arxiv(paper.title)
            hf = enricher.huggingface(paper.title, arxiv.arxiv_id if arxiv else None)
        except LookupFailed as e:
            # Whatever failed (the network, the API, this paper's query), the next papers
            # would most likely fail alike: the rest waits, backing off (see resolve_links).
            return _Looked(looked_up, found, looked_up > 1 or e.answered, e, paper.paper_id)
        links = [*(arxiv.links if arxiv else ()), *(hf.links if hf else ())]
        with store.transaction():
            if arxiv is not None and arxiv.paper is not None:
                # The abstract, categories and arXiv id join what the digest gave (merged
                # as a later digest would be: nothing of the digest's is replaced).
                found_on_arxiv = replace(arxiv.paper, paper_id=paper.paper_id, title=paper.title)
                store.put_papers([(0, found_on_arxiv)], "arxiv:lookup", now)
            added = store.add_links(paper.paper_id, links)
            has_code = any(link.kind == "code" for link in links)
            due = None if has_code else now + LOOKUP_AGAIN
            store.put_lookup(paper.paper_id, source, now, due, bool(links))
        found += added
    return _Looked(looked_up, found, looked_up > 0)
