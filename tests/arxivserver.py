"""A fake arXiv API on 127.0.0.1, for harvest tests (never the internet).

`ArxivServer()` serves `/api/query` from a list of papers the test holds (`add`, `update`,
`remove` between harvests, to see offsets move), as arXiv does: `search_query=cat:X`,
`sortBy` (submittedDate sorts by the first version's date, lastUpdatedDate by the latest),
`sortOrder`, `start` / `max_results` paging with `opensearch:totalResults`, `startIndex` and
`itemsPerPage`. Its Atom is shaped like arXiv's classic answers, recorded ones copied
element for element: namespaces declared where used, titles and comments wrapped with a
two-space indent, abstracts wrapped with bare newlines and a leading indent, `arxiv:`
affiliation, doi, comment, journal_ref and primary_category, the error feed for a bad query.

`fail(status, retry_after=..., after=n, count=k)` makes requests n+1 .. n+k from now answer
`status` instead (429 and 503 as arXiv's front end does), `empty(...)` makes them answer an
empty page with no results (a flake arXiv's API is known for). Requests are recorded by the
LinkServer underneath (`queries()` gives their parameters, `requests` their headers).
"""

from __future__ import annotations

import hashlib
import textwrap
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from urllib.parse import parse_qs, quote, urlsplit
from xml.sax.saxutils import escape, quoteattr

from tests.linkserver import LinkServer, Seen, _Handler, send

OPENSEARCH = 'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"'
ARXIV = 'xmlns:arxiv="http://arxiv.org/schemas/atom"'
SCHEME = "http://arxiv.org/schemas/atom"
MAX_RESULTS = 2000  # arXiv's limit for one request


@dataclass(frozen=True)
class FakePaper:
    """One paper the fake API knows."""

    arxiv_id: str  # without version
    title: str
    published: datetime  # submission of version 1
    categories: tuple[str, ...] = ("cs.CL",)  # the primary first
    version: int = 1
    updated: datetime | None = None  # the latest version's date; default: published
    abstract: str = "We study a problem.\n\nA second paragraph says more about it."
    authors: tuple[tuple[str, tuple[str, ...]], ...] = (("Ada Lovelace", ()),)
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None


def _date(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wrapped(text: str, indent: str = "  ") -> str:
    """Return text wrapped as arXiv wraps titles and comments: lines joined by a newline
    and a two-space indent."""
    lines = textwrap.wrap(escape(text), 72, break_long_words=False, break_on_hyphens=False)
    return f"\n{indent}".join(lines)


def _summary(abstract: str) -> str:
    """Return an abstract as arXiv writes it: two spaces before it, lines wrapped at 79
    columns with bare newlines, each paragraph after the first on an indented line."""
    paragraphs = [
        textwrap.wrap(escape(p), 79, break_long_words=False, break_on_hyphens=False)
        for p in abstract.split("\n\n")
    ]
    return "  " + "\n  ".join("\n".join(lines) for lines in paragraphs) + "\n"


def entry_xml(p: FakePaper) -> str:
    """Return one <entry>, its elements in arXiv's order."""
    vid = f"{p.arxiv_id}v{p.version}"
    out = [
        "  <entry>",
        f"    <id>http://arxiv.org/abs/{vid}</id>",
        f"    <updated>{_date(p.updated or p.published)}</updated>",
        f"    <published>{_date(p.published)}</published>",
        f"    <title>{_wrapped(p.title)}</title>",
        f"    <summary>{_summary(p.abstract)}</summary>",
    ]
    for name, affiliations in p.authors:
        out.append("    <author>")
        out.append(f"      <name>{escape(name)}</name>")
        out += [
            f"      <arxiv:affiliation {ARXIV}>{escape(a)}</arxiv:affiliation>"
            for a in affiliations
        ]
        out.append("    </author>")
    if p.doi:
        out.append(f"    <arxiv:doi {ARXIV}>{escape(p.doi)}</arxiv:doi>")
        href = quoteattr(f"http://dx.doi.org/{p.doi}")
        out.append(f'    <link title="doi" href={href} rel="related"/>')
    if p.comment:
        out.append(f"    <arxiv:comment {ARXIV}>{_wrapped(p.comment)}</arxiv:comment>")
    if p.journal_ref:
        out.append(f"    <arxiv:journal_ref {ARXIV}>{escape(p.journal_ref)}</arxiv:journal_ref>")
    pdf = f'href="http://arxiv.org/pdf/{vid}" rel="related" type="application/pdf"'
    primary = f'term={quoteattr(p.categories[0])} scheme="{SCHEME}"'
    out += [
        f'    <link href="http://arxiv.org/abs/{vid}" rel="alternate" type="text/html"/>',
        f'    <link title="pdf" {pdf}/>',
        f"    <arxiv:primary_category {ARXIV} {primary}/>",
    ]
    out += [f'    <category term={quoteattr(c)} scheme="{SCHEME}"/>' for c in p.categories]
    out.append("  </entry>")
    return "\n".join(out)


def feed_xml(
    papers: list[FakePaper], *, query: str, start: int, max_results: int, total: int
) -> bytes:
    """Return a whole answer: the feed's head, the opensearch counts, the entries."""
    asked = f"search_query={query}&id_list=&start={start}&max_results={max_results}"
    digest = hashlib.sha1(asked.encode()).hexdigest()[:27]
    self_link = quoteattr("http://arxiv.org/api/query?" + quote(asked, safe=""))
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        f'  <link href={self_link} rel="self" type="application/atom+xml"/>',
        f'  <title type="html">ArXiv Query: {escape(asked)}</title>',
        f"  <id>http://arxiv.org/api/{digest}</id>",
        "  <updated>2026-12-07T00:00:00-05:00</updated>",
        f"  <opensearch:totalResults {OPENSEARCH}>{total}</opensearch:totalResults>",
        f"  <opensearch:startIndex {OPENSEARCH}>{start}</opensearch:startIndex>",
        f"  <opensearch:itemsPerPage {OPENSEARCH}>{max_results}</opensearch:itemsPerPage>",
    ]
    body = [entry_xml(p) for p in papers]
    return "\n".join([*head, *body, "</feed>", ""]).encode()


# An answer with no entry: what a title lookup that finds nothing gets.
EMPTY_ANSWER = feed_xml([], query="ti:nothing", start=0, max_results=5, total=0)


def error_feed(message: str) -> bytes:
    """Return arXiv's answer to a query it cannot run: a feed with one error entry."""
    anchor = "_".join(message.split())
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3D%26id_list%3D" rel="self"
    type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=&amp;id_list=</title>
  <id>http://arxiv.org/api/Cnw4RZ1Ao3nNNgPmVYAPGd1Wtkw</id>
  <updated>2026-12-07T00:00:00-05:00</updated>
  <opensearch:totalResults {OPENSEARCH}>1</opensearch:totalResults>
  <opensearch:startIndex {OPENSEARCH}>0</opensearch:startIndex>
  <opensearch:itemsPerPage {OPENSEARCH}>1</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/api/errors#{escape(anchor)}</id>
    <title>Error</title>
    <summary>{escape(message)}</summary>
    <updated>2026-12-07T00:00:00-05:00</updated>
    <link href="http://arxiv.org/api/errors#{escape(anchor)}" rel="alternate" type="text/html"/>
    <author>
      <name>arXiv api core</name>
    </author>
  </entry>
</feed>
""".encode()


@dataclass(frozen=True)
class _Canned:
    status: int
    retry_after: str | None = None
    empty: bool = False


class ArxivServer:
    """The fake API: papers, canned failures, and the requests it answered."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.http = LinkServer(host)
        self.http.route("/api/query", self._answer)
        self.papers: list[FakePaper] = []
        self._canned: dict[int, _Canned] = {}  # request number (1-based) -> answer
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return self.http.url("/api/query")

    @property
    def requests(self) -> list[Seen]:
        with self.http.lock:
            return list(self.http.requests)

    def queries(self) -> list[dict[str, str]]:
        """Return each request's query parameters, in order."""
        return [
            {k: v[0] for k, v in parse_qs(urlsplit(r.path).query).items()} for r in self.requests
        ]

    def add(self, *papers: FakePaper) -> None:
        with self._lock:
            self.papers.extend(papers)

    def update(self, arxiv_id: str, **changes: object) -> None:
        """Change a paper in place (a new version: `version=2, updated=...`)."""
        with self._lock:
            self.papers = [
                replace(p, **changes) if p.arxiv_id == arxiv_id else p  # type: ignore[arg-type]
                for p in self.papers
            ]

    def remove(self, arxiv_id: str) -> None:
        with self._lock:
            self.papers = [p for p in self.papers if p.arxiv_id != arxiv_id]

    def fail(
        self, status: int, *, retry_after: str | None = None, after: int = 0, count: int = 1
    ) -> None:
        """Answer `status` to requests after+1 .. after+count from now."""
        self._can(_Canned(status, retry_after), after, count)

    def empty(self, *, after: int = 0, count: int = 1) -> None:
        """Answer an empty page with totalResults 0 to requests after+1 .. after+count."""
        self._can(_Canned(200, empty=True), after, count)

    def _can(self, canned: _Canned, after: int, count: int) -> None:
        first = len(self.requests) + after + 1
        with self._lock:
            for n in range(first, first + count):
                self._canned[n] = canned

    def close(self) -> None:
        self.http.close()

    def _answer(self, req: _Handler) -> None:
        number = len(self.requests)  # this request is recorded already
        with self._lock:
            canned = self._canned.pop(number, None)
            papers = list(self.papers)
        if canned is not None and canned.status != 200:
            headers = {"Content-Type": "text/html"}
            if canned.retry_after is not None:
                headers["Retry-After"] = canned.retry_after
            send(req, canned.status, headers, b"<html><body>Rate exceeded.</body></html>")
            return
        q = {k: v[0] for k, v in parse_qs(urlsplit(req.path).query).items()}
        query = q.get("search_query", "")
        try:
            start, max_results = int(q.get("start", "0")), int(q.get("max_results", "10"))
        except ValueError:
            send(
                req,
                400,
                {"Content-Type": "application/atom+xml"},
                error_feed("start and max_results must be integers"),
            )
            return
        if not query.startswith("cat:") or start < 0 or not 0 <= max_results <= MAX_RESULTS:
            message = f"cannot run search_query={query} start={start} max_results={max_results}"
            send(req, 400, {"Content-Type": "application/atom+xml"}, error_feed(message))
            return
        category = query.removeprefix("cat:")
        chosen = [p for p in papers if category in p.categories]
        by_update = q.get("sortBy") == "lastUpdatedDate"  # else by version 1's date

        def key(p: FakePaper) -> tuple[datetime, str]:
            return ((p.updated or p.published) if by_update else p.published), p.arxiv_id

        chosen.sort(key=key, reverse=q.get("sortOrder") != "ascending")
        if canned is not None and canned.empty:
            chosen = []
        body = feed_xml(
            chosen[start : start + max_results],
            query=query,
            start=start,
            max_results=max_results,
            total=len(chosen),
        )
        send(req, 200, {"Content-Type": "application/atom+xml; charset=utf-8"}, body)
