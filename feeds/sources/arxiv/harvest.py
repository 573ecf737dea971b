"""What to ask arXiv next, and what is new in its answer. Pure: a cursor, a page and the
clock in; the next cursor and the new entries out. client.py does the asking.

A category is read newest submission first (`sortBy=submittedDate&sortOrder=descending`),
paged with `start`/`max_results`, down to a floor: the newest submission date the last
finished harvest saw (its watermark), or `backfill` before now on a first harvest.

Offsets into a newest-first list move while a harvest pages: every new submission pushes
every entry one place down. So a harvest never trusts an offset alone:

- It takes its watermark-to-be (`upper`) from its first page, and the watermark moves only
  when the harvest finishes. Papers submitted while it pages are above `upper`, and the next
  harvest reads them.
- Each page after the first starts one entry before where the last one ended. That entry
  (or anything newer) being there proves the pages join; if the list moved the other way
  (entries left it), the page does not join, and the harvest steps back a page instead.
- Entries already seen are skipped, not a reason to stop: overlap between pages, papers
  shifted down, and cross-listed papers that another category's harvest brought.

A harvest stopped half-way (an error, a 429, the page budget) keeps its place in the cursor
and the next cycle goes on from there: no gap, no duplicate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import NamedTuple
from urllib.parse import quote

from feeds.links.extract import classify, extract_links, normalize_url
from feeds.model import Institution, Link, Paper, SourceState
from feeds.net.pacing import MAX_RETRY, backoff
from feeds.sources.arxiv.atom import Entry, Page
from feeds.text import fold, paper_id

BACKFILL = timedelta(days=7)  # a first harvest reads at most this far back
# Read again below the watermark on every harvest, for papers announced after others that
# were submitted later (held for moderation, cross-listed afterwards). 0: none.
LOOKBACK = timedelta(0)
PAGE_SIZE = 100
VENUE = "arXiv"

# `cs.CL`, `hep-th`, `q-bio.NC`, `cond-mat.stat-mech`, `physics.acc-ph`: nothing that could
# turn `cat:` into a wider query (`cs.CL OR all:x`).
_CATEGORY = re.compile(r"[a-z]+(?:-[a-z]+)*(?:\.[A-Za-z]+(?:-[A-Za-z]+)*)?")
_DOI = re.compile(r"10\.\d{4,9}/\S+")


def valid_category(name: str) -> bool:
    """Return True for a name shaped like an arXiv category (cs.CL, hep-th, q-bio.NC)."""
    return _CATEGORY.fullmatch(name) is not None


@dataclass(frozen=True)
class Cursor:
    """Where the harvest of one category stands; kept in the state between cycles."""

    category: str
    watermark: datetime | None = None  # newest submission date the last finished harvest saw
    finished: datetime | None = None  # when the last harvest finished
    # The harvest in progress (None and 0 when there is none):
    floor: datetime | None = None  # entries submitted before this end it
    upper: datetime | None = None  # newest submission date on its first page: the next watermark
    offset: int = 0  # entries of the results it has been through
    oldest: datetime | None = None  # submission date of the last entry it read...
    last_id: str | None = None  # ...and that entry's id: where to join the next page

    @property
    def in_progress(self) -> bool:
        return self.floor is not None

    def to_text(self) -> str:
        """Return the cursor as JSON text, for a state that keeps it as a value."""
        data = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in vars(self).items()}
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_text(cls, category: str, text: str | None) -> Cursor:
        """Return the cursor to_text() wrote; a fresh one (a first harvest, bounded by the
        backfill) for no text or damaged text."""
        try:
            d = json.loads(text or "{}")
            return cls(
                category=category,
                watermark=_dt(d.get("watermark")),
                finished=_dt(d.get("finished")),
                floor=_dt(d.get("floor")),
                upper=_dt(d.get("upper")),
                offset=int(d.get("offset") or 0),
                oldest=_dt(d.get("oldest")),
                last_id=d.get("last_id") if isinstance(d.get("last_id"), str) else None,
            )
        except (ValueError, TypeError, AttributeError):
            return cls(category)


@dataclass(frozen=True)
class Request:
    """One page to ask for, and the floor of the harvest it belongs to."""

    start: int
    max_results: int
    floor: datetime


class Step(NamedTuple):
    """What one page did: the cursor after it, its new entries, and whether the harvest is
    finished (the cursor's watermark has moved)."""

    cursor: Cursor
    new: tuple[Entry, ...]
    done: bool


def next_request(
    cursor: Cursor,
    now: datetime,
    backfill: timedelta = BACKFILL,
    page_size: int = PAGE_SIZE,
    *,
    lookback: timedelta = LOOKBACK,
) -> Request | None:
    """Return the page to ask for next; None once a harvest finished at `now` (one harvest
    a cycle: a caller that asks again after `done` does not start over)."""
    page_size = max(2, page_size)  # a page of one would hold nothing but the overlap
    if cursor.floor is not None:  # in progress: one entry of overlap, to see the pages join
        return Request(max(0, cursor.offset - 1), page_size, cursor.floor)
    if cursor.finished is not None and cursor.finished >= now:
        return None
    if cursor.watermark is None:
        return Request(0, page_size, now - backfill)
    return Request(0, page_size, cursor.watermark - lookback)


def after_page(
    cursor: Cursor, request: Request, page: Page, now: datetime, seen: Callable[[str], bool]
) -> Step:
    """Return the cursor after `page` (the answer to `request`), the entries in it that
    are new (not `seen`, by arXiv id), and whether the harvest is finished.

    A step that changes nothing (an empty page where the results say there is more:
    arXiv's API does that now and then) is no progress: the caller stops for this cycle.
    """
    fresh = cursor.floor is None
    if fresh:
        if not page.entries:
            # Nothing in the category (or arXiv's flaky empty answer): finished with the
            # watermark where it was, so a flake costs nothing. Empty but saying there is
            # more: no progress, ask again later.
            done = not page.total
            return Step(_finished(cursor, now) if done else cursor, (), done)
        cursor = replace(cursor, floor=request.floor, upper=page.entries[0].published, offset=0)
    elif not page.entries:
        if page.start > 0 and page.total <= page.start:
            return Step(_back(cursor, request), (), False)  # the results got shorter
        return Step(cursor, (), False)  # never "finished" on an empty page: that left gaps
    elif page.start > 0 and not _joins(cursor, page, seen):
        return Step(_back(cursor, request), (), False)
    assert cursor.floor is not None
    new: list[Entry] = []
    taken: set[str] = set()
    last: Entry | None = None
    for entry in page.entries:
        if entry.published < cursor.floor:
            return Step(_finished(cursor, now), tuple(new), True)
        last = entry
        if entry.arxiv_id not in taken and not seen(entry.arxiv_id):
            taken.add(entry.arxiv_id)
            new.append(entry)
    if page.start + page.size >= page.total:
        return Step(_finished(cursor, now), tuple(new), True)
    assert last is not None
    moved = replace(
        cursor, offset=page.start + page.size, oldest=last.published, last_id=last.arxiv_id
    )
    return Step(moved, tuple(new), False)


def _joins(cursor: Cursor, page: Page, seen: Callable[[str], bool]) -> bool:
    """Return True when the page continues what the harvest has read: it holds the last
    entry read, or starts above it (new submissions pushed entries down): with an entry
    newer than that one, or as old and seen (read already, not one that moved up)."""
    if cursor.oldest is None:
        return True
    if any(e.arxiv_id == cursor.last_id for e in page.entries):
        return True
    first = page.entries[0]
    return first.published > cursor.oldest or (
        first.published == cursor.oldest and seen(first.arxiv_id)
    )


def _back(cursor: Cursor, request: Request) -> Cursor:
    """Return the cursor a page further up: entries left the results above where it was,
    so the entries it has not read moved up past its offset."""
    return replace(cursor, offset=max(0, cursor.offset - request.max_results))


def _finished(cursor: Cursor, now: datetime) -> Cursor:
    marks = [m for m in (cursor.watermark, cursor.upper) if m is not None]
    return Cursor(cursor.category, max(marks) if marks else None, now)


@dataclass(frozen=True)
class HarvestResult:
    """What one cycle's harvest of a category brought. Store `entries` and `cursor`
    together (one transaction): the cursor assumes the entries are seen from now on."""

    cursor: Cursor
    entries: tuple[Entry, ...] = ()  # new ones, newest submission first
    requests: int = 0
    done: bool = False  # the harvest reached the floor: the watermark moved
    error: str | None = None  # why it stopped early (None: done, or the page budget used)
    retry_after: float | None = None  # seconds the API asked us to wait (429, 503)
    problems: tuple[str, ...] = ()  # entries that could not be read


def after_harvest(state: SourceState, result: HarvestResult, now: datetime) -> SourceState:
    """Return an arXiv source's health after a harvest: a failure backs off like every
    failure of paperfeeds (policy.backoff), at least as long as the API asked, up to the
    longest backoff (a Retry-After years ahead must not silence a source for good)."""
    changed = now if result.entries else state.last_change
    if result.error is None:
        return replace(
            state, last_ok=now, last_change=changed, failures=0, next_try=None, error=None
        )
    asked = min(result.retry_after, MAX_RETRY.total_seconds()) if result.retry_after else None
    return replace(
        state,
        last_change=changed,
        failures=state.failures + 1,
        next_try=now + backoff(state.failures, asked),
        error=result.error,
    )


@dataclass(frozen=True)
class ArxivPaper:
    """An arXiv entry as a paper: the fields a Paper has, and what arXiv adds."""

    paper_id: str  # from the English title, as a digest's paper's: one paper either way
    title: str
    authors: tuple[str, ...]
    institutions: tuple[Institution, ...]
    abstract: str | None
    comments: str | None
    journal_ref: str | None
    venue: str
    arxiv_id: str
    version: int
    categories: tuple[str, ...]  # the primary one first
    published: datetime
    updated: datetime
    links: tuple[Link, ...]  # abstract and PDF pages, the DOI, and links in the comments

    def as_paper(self) -> Paper:
        """Return the fields that a Paper holds."""
        return Paper(
            paper_id=self.paper_id,
            title=self.title,
            authors=self.authors,
            institutions=self.institutions,
            comments=self.comments,
            journal_ref=self.journal_ref,
            venue=self.venue,
            abstract=self.abstract,
            categories=self.categories,
            arxiv_id=self.arxiv_id,
        )


def to_paper(entry: Entry) -> ArxivPaper:
    """Return an entry as a paper, its links found (all with source "arxiv")."""
    institutions: dict[str, Institution] = {}
    for author in entry.authors:
        for name in author.affiliations:
            institutions.setdefault(fold(name), Institution(name))
    return ArxivPaper(
        paper_id=paper_id(entry.title),
        title=entry.title,
        authors=tuple(a.name for a in entry.authors),
        institutions=tuple(institutions.values()),
        abstract=entry.abstract or None,
        comments=entry.comment,
        journal_ref=entry.journal_ref,
        venue=VENUE,
        arxiv_id=entry.arxiv_id,
        version=entry.version,
        categories=entry.categories,
        published=entry.published,
        updated=entry.updated,
        links=_links(entry),
    )


def _links(entry: Entry) -> tuple[Link, ...]:
    """Return the paper's links: arXiv's pages without a version (they show the latest),
    the DOI's, then those in the comments and journal ref, each once."""
    urls = [f"https://arxiv.org/abs/{entry.arxiv_id}", f"https://arxiv.org/pdf/{entry.arxiv_id}"]
    links = [Link(url, "paper", "arxiv") for url in urls]
    for doi in _DOI.findall(entry.doi or ""):
        url = normalize_url("https://doi.org/" + quote(doi, safe="/:;()._-"))
        links.append(Link(url, classify(url), "arxiv"))
    found = extract_links(entry.comment, entry.journal_ref)
    links += (replace(link, source="arxiv") for link in found)
    unique: dict[str, Link] = {}
    for link in links:
        unique.setdefault(link.url, link)
    return tuple(unique.values())


def _dt(text: object) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None
