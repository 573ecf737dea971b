"""What the renderers are given: feeds and papers as they should appear. Pure data."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from urllib.parse import urlsplit

from feeds.model import Hit, Item, Link, Paper
from feeds.publish.paths import FORMATS, archive_path, feed_path, pages, paper_path, topic_path
from feeds.urls import http_url_problem

# Where files are, re-exported: the renderers and the alerts take them from here too.
__all__ = [
    "FORMATS", "KIND_ORDER", "FeedView", "Kept", "PaperView", "Site", "archive_path",
    "best_link", "feed_path", "link_words", "links_by_kind", "look_elsewhere",
    "pages", "paper_path", "safe_href", "short_words", "topic_path", "web_url",
]  # fmt: skip

KIND_ORDER = ("paper", "project", "code", "video", "venue", "other")
_BEST = ("paper", "project", "code")
# What nearly every link looks like: an http(s) URL whose host is a plain name or IPv4
# address. urlsplit says the same of these (scheme http(s), a host), in a tenth of the time:
# every reading-list row checks its links, and a full build writes millions of rows.
_PLAIN_WEB_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?:[/?#]|$)")  # a port: the rule


@dataclass(frozen=True)
class Site:
    title: str
    base_url: str  # absolute, ends with "/"

    def url(self, path: str) -> str:
        return self.base_url + path


@dataclass(frozen=True)
class Kept:
    """A feed item whose entries are taken unchanged from the feed files written last
    time (see render.entry_blocks): its id in that feed is all the renderers need."""

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


def links_by_kind(links: tuple[Link, ...]) -> list[tuple[str, list[Link]]]:
    """Return links grouped by kind, in a fixed order of kinds."""
    return [
        (k, [x for x in links if x.kind == k])
        for k in KIND_ORDER
        if any(x.kind == k for x in links)
    ]


def link_words(link: Link) -> str:
    """Return a link's check status as a reader understands it: `works`, `moved (now at
    …)`, `broken (404)`, `could not be checked: github.com did not answer; will retry`.

    Never the raw note (an exception, an errno): that is for `feeds status --verbose`."""
    status, note = link.status, link.note
    if note is None and status in _PLAIN:  # most links: pages show millions of them
        return _PLAIN[status]
    if status == "blocked" and not web_url(link.url):  # data:, javascript:, ...
        return "blocked: not a web address"
    words = _status_words(status, note, link.http_status)
    if "{host}" in words:
        words = words.replace("{host}", _host(link.url))
    if "{final}" in words:
        final = web_url(link.final_url)
        words = words.replace("{final}", final) if final else words.replace(" (now at {final})", "")
    return words


_PLAIN = {"unchecked": "not checked yet", "ok": "works"}
_PLAIN_HOST = re.compile(r"https?://([A-Za-z0-9.-]+)(?:[:/?#]|$)")


def _host(url: str) -> str:
    m = _PLAIN_HOST.match(url)  # nearly every link; urlsplit for the rest
    if m:
        return m.group(1).lower()
    try:
        host = urlsplit(url).hostname
    except ValueError:
        host = None
    return host or "the server"


_RETRY = "; will retry"
_UNREACHABLE = {  # check.py's notes of a server that was not reached, by their start
    "name not resolved": "{host} was not found (no network?)",
    "timed out": "{host} did not answer in time",
    "ConnectError": "{host} did not answer",
    "ReadError": "{host} stopped answering",
    "WriteError": "{host} stopped answering",
    "CloseError": "{host} stopped answering",
}


@lru_cache(maxsize=4096)
def _status_words(status: str, note: str | None, code: int | None) -> str:
    """Return a status in words, `{host}` and `{final}` standing for the link's host and
    where it leads. From the notes links/check.py writes, which the state keeps: old ones
    are read too, and a note not known here is left out rather than shown raw."""
    note = note or ""
    if status == "unchecked":
        return "not checked yet"
    if status == "ok":
        return "works, archived (read-only)" if note == "archived" else "works"
    if status == "redirected":
        said = "renamed (now at {final})" if note == "renamed" else "moved (now at {final})"
        return said + (", archived (read-only)" if note == "archived" else "")
    if status == "dead":
        if note.startswith("name not resolved"):
            return "broken: {host} no longer exists"
        if note == "no such GitHub repository":
            return "broken: no such GitHub repository"
        return f"broken ({code})" if code else "broken"
    if status == "blocked":
        if note.startswith("redirect to"):
            where = "a private address" if "public" in note or "local" in note else "no web page"
            return f"blocked: it leads to {where}"
        if note.startswith(("not an http(s) URL", "no host", "not a valid URL")):
            return "blocked: not a web address"
        return "blocked: not a public address"
    if status != "error":
        return status
    if note.startswith("invalid URL"):
        return "could not be checked: not a valid web address"
    for start, said in _UNREACHABLE.items():
        if note.startswith(start):
            return f"could not be checked: {said}{_RETRY}"
    if note.startswith("redirect loop"):
        return f"could not be checked: it redirects in a loop{_RETRY}"
    if note.startswith("more than"):
        return f"could not be checked: too many redirects{_RETRY}"
    who = "GitHub" if note.startswith("GitHub") else "{host}"
    if note == "GitHub rate limit" or code == 429:
        return f"could not be checked: {who} asked us to wait{_RETRY}"
    if note == "GitHub API: not a JSON object":
        return f"could not be checked: GitHub's answer was not understood{_RETRY}"
    if code in (401, 403, 407):
        return f"could not be checked: {who} refused access ({code}){_RETRY}"
    if code is not None and code >= 500:
        return f"could not be checked: {who} had a server error ({code}){_RETRY}"
    if code is not None:
        return f"could not be checked: {who} answered {code}{_RETRY}"
    return f"could not be checked: {{host}} gave no usable answer{_RETRY}"


def web_url(url: str | None) -> str | None:
    """Return the URL if it is an http(s) URL with a host, else None.

    Only such URLs are written where a browser or a feed reader follows them: whatever
    the state holds (a link checker's answer, an API's), `javascript:` or `data:` would run
    in the reader's browser.
    """
    if not url:
        return None
    if _PLAIN_WEB_URL.match(url):  # nearly every link; the rule itself for the rest
        return url
    return url if http_url_problem(url) is None else None


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


# A link's status in a word or two, for a reading-list row (the paper's page says more):
# what a reader needs before clicking is whether it leads anywhere.
_SHORT = {
    "ok": "works",
    "redirected": "works (moved)",
    "dead": "broken",
    "error": "could not be checked",
    "blocked": "not linked (unsafe address)",
    "unchecked": "not checked yet",
}


def short_words(link: Link) -> str:
    """Return a link's status as a reading-list row says it: `works`, `broken`, ..."""
    return _SHORT.get(link.status, "not checked yet")


# Where to look for a paper's code when no code link is known: searches by title.
ELSEWHERE = (
    ("arXiv", "https://arxiv.org/search/?searchtype=title&query="),
    ("Google Scholar", "https://scholar.google.com/scholar?q="),
    ("Semantic Scholar", "https://www.semanticscholar.org/search?q="),
    ("GitHub", "https://github.com/search?type=repositories&q="),
)


def look_elsewhere(title: str) -> list[tuple[str, str]]:
    """Return (name, URL) of searches for a paper by its title, for a page whose paper has
    no code link: arXiv, Google Scholar, Semantic Scholar and GitHub."""
    from urllib.parse import quote_plus

    query = quote_plus(title.strip())
    return [(name, base + query) for name, base in ELSEWHERE]
