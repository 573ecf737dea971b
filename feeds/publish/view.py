"""What the renderers are given: feeds and papers as they should appear. Pure data."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from feeds.model import Hit, Item, Link, Paper

FORMATS = ("rss", "atom", "json")  # every feed is written in each (see feed_path)
KIND_ORDER = ("paper", "project", "code", "video", "venue", "other")
_BEST = ("paper", "project", "code")
# What nearly every link looks like: an http(s) URL whose host is a plain name or IPv4
# address. urlsplit says the same of these (scheme http(s), a host), in a tenth of the time:
# every reading-list row checks its links, and a full build writes millions of rows.
_PLAIN_WEB_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]*)?(?:[/?#]|$)")


@dataclass(frozen=True)
class Site:
    title: str
    base_url: str  # absolute, ends with "/"

    def url(self, path: str) -> str:
        return self.base_url + path


@dataclass(frozen=True)
class Kept:
    """A feed item whose entries are taken unchanged from the feed files written last
    time (see render.entry_blocks): its id is all the renderers need."""

    id: str


@dataclass(frozen=True)
class FeedView:
    """One topic (or `all`) with the items its feeds carry."""

    id: str
    title: str
    description: str
    updated: datetime  # from the items, never the clock
    items: tuple[Item | Kept, ...]  # newest first, at most max_items: what the feeds carry
    max_items: int
    count: int = -1  # every matching paper (the topic page lists them all)

    def __post_init__(self) -> None:
        if self.count < 0:
            object.__setattr__(self, "count", len(self.items))


@dataclass(frozen=True)
class PaperView:
    paper: Paper
    first_seen: datetime
    links: tuple[Link, ...]
    topics: tuple[tuple[str, str, tuple[Hit, ...]], ...]  # (topic id, title, hits)


def paper_path(paper_id: str) -> str:
    return f"papers/{paper_id}.html"


def feed_path(feed_id: str, fmt: str) -> str:
    return f"feeds/{feed_id}.{ {'rss': 'rss.xml', 'atom': 'atom.xml', 'json': 'json'}[fmt] }"


def archive_path(feed_id: str, page: int) -> str:
    """Return archive page `page` of a topic's reading list (1 holds the oldest papers)."""
    return f"topics/{feed_id}/{page}.html"


def pages(count: int, size: int) -> tuple[int, int]:
    """Return (papers on the front page, archive pages) for a reading list of `count`.

    Archive pages hold `size` papers each, counted from the oldest, so a full one never
    changes when new papers arrive; the front page holds the newest 1..size.
    """
    archives = (count - 1) // size if count else 0
    return count - archives * size, archives


def topic_path(feed_id: str) -> str:
    """Return the page of a feed: its reading list, or the front page for `all`."""
    return "index.html" if feed_id == "all" else f"topics/{feed_id}.html"


def links_by_kind(links: tuple[Link, ...]) -> list[tuple[str, list[Link]]]:
    """Return links grouped by kind, in a fixed order of kinds."""
    return [
        (k, [x for x in links if x.kind == k])
        for k in KIND_ORDER
        if any(x.kind == k for x in links)
    ]


def matched_text(hits: tuple[Hit, ...]) -> str:
    """Return hits as `term in field, field; term in field`, terms in their first order."""
    fields: dict[str, list[str]] = {}
    for hit in hits:
        fields.setdefault(hit.term, []).append(hit.field)
    return "; ".join(f"{term} in {', '.join(names)}" for term, names in fields.items())


def web_url(url: str | None) -> str | None:
    """Return the URL if it is an http(s) URL with a host, else None.

    Only such URLs are written where a browser or a feed reader follows them: whatever
    the state holds (a link checker's answer, an API's), `javascript:` or `data:` would run
    in the reader's browser.
    """
    if not url:
        return None
    if _PLAIN_WEB_URL.match(url):
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # `http://[::1`: not a URL at all
        return None
    return url if parts.scheme in ("http", "https") and parts.hostname else None


def safe_href(link: Link) -> str | None:
    """Return what pages and feeds link to for a link: where it leads, else its own URL,
    whichever is an http(s) URL first; None when neither is (the link is shown as text)."""
    return web_url(link.final_url) or web_url(link.url)


def best_link(site: Site, paper: Paper, links: tuple[Link, ...]) -> str:
    """Return the item link: a paper link, else project, else code, else the paper's page."""
    for kind in _BEST:
        for link in links:
            if link.kind == kind and link.status != "dead":
                href = safe_href(link)
                if href:
                    return href
    return site.url(paper_path(paper.paper_id))
