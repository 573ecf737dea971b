"""arXiv as a source: reading the API's Atom, turning entries into papers, and harvesting
categories against a fake arXiv API on 127.0.0.1 (tests/arxivserver.py): paging, the
backfill window, stopping at what was seen, cross-lists, new versions, 429/503 with
Retry-After, and harvests interrupted and resumed without gaps or duplicates."""

from __future__ import annotations

import contextlib
import email.utils
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeds.errors import FeedsError
from feeds.model import Institution, Link, SourceState
from feeds.net import AddressPolicy, guarded_client
from feeds.net.client import Client
from feeds.net.pacing import Throttle
from feeds.sources.arxiv import client as arxiv_client
from feeds.sources.arxiv.atom import ApiError, ArxivError, Author, BadAnswer, Entry, Page, parse
from feeds.sources.arxiv.client import FetchFailed, Harvester, fetch_page, query_url
from feeds.sources.arxiv.harvest import (
    Cursor,
    HarvestResult,
    Request,
    after_harvest,
    after_page,
    next_request,
    to_paper,
    valid_category,
)
from feeds.sources.digest import parse as parse_digest
from feeds.text import clean_xml
from tests.arxivserver import ArxivServer, FakePaper, error_feed, feed_xml
from tests.linkserver import LinkServer, redirect, reply, slow

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
ALLOW_LOOPBACK = AddressPolicy.from_settings(["127.0.0.1"])


def fake(n: int, hours_ago: float, *categories: str, **kw: object) -> FakePaper:
    """Return paper n, submitted `hours_ago` before NOW (title and id from n)."""
    return FakePaper(
        arxiv_id=f"2612.{n:05d}",
        title=f"Drafting Tokens Number {n} for Faster Speculative Decoding",
        published=NOW - timedelta(hours=hours_ago),
        categories=categories or ("cs.CL",),
        **kw,  # type: ignore[arg-type]
    )


def page_of(*papers: FakePaper, start: int = 0, total: int | None = None) -> bytes:
    n = len(papers) if total is None else total
    return feed_xml(list(papers), query="cat:cs.CL", start=start, max_results=10, total=n)


# --- reading the Atom ------------------------------------------------------------------------

FULL = FakePaper(
    arxiv_id="2412.01234",
    title="Tiny Drafters, Big Verifiers: Speculative Decoding for Long Contexts with "
    "Retrieval-Augmented Drafting Models",
    published=datetime(2024, 12, 2, 18, 59, 58, tzinfo=UTC),
    updated=datetime(2024, 12, 9, 10, 0, 1, tzinfo=UTC),
    version=2,
    categories=("cs.CL", "cs.LG", "I.2.7"),
    abstract="Large language models decode slowly. We draft tokens with a tiny model and "
    "verify them with the large one, which keeps the output distribution unchanged.\n\n"
    "On long contexts the drafter retrieves, and decoding is 3x faster.",
    authors=(
        ("Ada Lovelace", ("University of London", "MIT")),
        ("Alan Turing", ("University of Manchester",)),
        ("Grace Hopper", ("mit",)),
        ("Edsger Dijkstra", ()),
    ),
    comment="12 pages, 4 figures; code at https://github.com/ada/drafter and project "
    "page https://ada.github.io/drafter",
    journal_ref="ACL 2026",
    doi="10.1145/3395363.3397376",
)


def test_parse_reads_arxivs_atom() -> None:
    page = parse(page_of(FULL, total=1234))
    assert (page.total, page.start, page.per_page, page.problems) == (1234, 0, 10, ())
    [entry] = page.entries
    assert entry.arxiv_id == "2412.01234"
    assert entry.version == 2
    # The API wraps titles over lines with a two-space indent: one line again.
    assert entry.title == FULL.title
    assert entry.abstract == FULL.abstract  # wrapped lines joined, the paragraph kept
    assert entry.authors == (
        Author("Ada Lovelace", ("University of London", "MIT")),
        Author("Alan Turing", ("University of Manchester",)),
        Author("Grace Hopper", ("mit",)),
        Author("Edsger Dijkstra", ()),
    )
    assert entry.comment == FULL.comment
    assert entry.journal_ref == "ACL 2026"
    assert entry.doi == "10.1145/3395363.3397376"
    assert entry.categories == ("cs.CL", "cs.LG", "I.2.7")
    assert entry.primary_category == "cs.CL"
    assert entry.published == datetime(2024, 12, 2, 18, 59, 58, tzinfo=UTC)
    assert entry.updated == datetime(2024, 12, 9, 10, 0, 1, tzinfo=UTC)
    assert entry.published.tzinfo is UTC


# The API as it answers since its 2025 move, recorded shape: namespaces declared on the root,
# titles and abstracts on one line, categories before the primary one, https links.
NEW_FORMAT = b"""<?xml version='1.0' encoding='UTF-8'?>
<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"
      xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">
  <id>https://arxiv.org/api/+yL+2aOC2tMwSSbNUvwVflQZ4gc</id>
  <title>arXiv Query: search_query=cat:cs.LG&amp;id_list=&amp;start=200&amp;max_results=2</title>
  <updated>2026-04-12T22:10:22Z</updated>
  <link href="https://arxiv.org/api/query?search_query=cat:cs.LG&amp;start=200"
        type="application/atom+xml"/>
  <opensearch:itemsPerPage>2</opensearch:itemsPerPage>
  <opensearch:totalResults>214881</opensearch:totalResults>
  <opensearch:startIndex>200</opensearch:startIndex>
  <entry>
    <id>http://arxiv.org/abs/2604.05001v1</id>
    <title>Learning to Rank Drafts &amp; Verifiers</title>
    <updated>2026-04-10T15:05:19Z</updated>
    <link href="https://arxiv.org/abs/2604.05001v1" rel="alternate" type="text/html"/>
    <link href="https://arxiv.org/pdf/2604.05001v1" rel="related" type="application/pdf"
          title="pdf"/>
    <summary>Deep learning has changed &#x85;everything. We show how.</summary>
    <category term="cs.SE" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
    <published>2026-04-10T15:05:19Z</published>
    <arxiv:comment>Workshop paper</arxiv:comment>
    <arxiv:primary_category term="cs.LG"/>
    <author>
      <name>Mohit Kumar Ahuja</name>
      <arxiv:affiliation>Simula Research Laboratory</arxiv:affiliation>
    </author>
    <arxiv:doi>10.1109/ICSTW55395.2022.00035</arxiv:doi>
    <link rel="related" href="https://doi.org/10.1109/ICSTW55395.2022.00035" title="doi"/>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/cond-mat/0603029v3</id>
    <title>From stripe to checkerboard order on the square lattice</title>
    <updated>2006-03-09T02:22:45Z</updated>
    <published>2006-03-02T02:22:45-05:00</published>
    <summary>  We discuss the effects of quenched disorder.</summary>
    <author><name>Adrian Del Maestro</name></author>
    <category term="cond-mat.str-el" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
</feed>
"""


def test_parse_reads_the_newer_format_and_old_style_ids() -> None:
    page = parse(NEW_FORMAT)
    assert (page.total, page.start, page.per_page) == (214881, 200, 2)
    new, old = page.entries
    assert new.arxiv_id == "2604.05001"
    assert new.title == "Learning to Rank Drafts & Verifiers"
    assert new.categories == ("cs.LG", "cs.SE")  # the primary one first, whatever the order
    assert new.primary_category == "cs.LG"
    assert new.authors == (Author("Mohit Kumar Ahuja", ("Simula Research Laboratory",)),)
    assert new.abstract == "Deep learning has changed everything. We show how."  # no C1
    assert (old.arxiv_id, old.version) == ("cond-mat/0603029", 3)
    assert old.primary_category == "cond-mat.str-el"  # none named: the first category
    assert old.published == datetime(2006, 3, 2, 7, 22, 45, tzinfo=UTC)  # -05:00 to UTC
    assert (old.comment, old.journal_ref, old.doi) == (None, None, None)


def test_a_cross_listed_paper_is_one_entry_with_all_its_categories() -> None:
    paper = fake(1, 1, "cs.LG", "cs.CL", "stat.ML")
    [entry] = parse(page_of(paper)).entries
    assert entry.categories == ("cs.LG", "cs.CL", "stat.ML")
    assert entry.primary_category == "cs.LG"


def test_the_api_error_feed_raises_with_arxivs_message() -> None:
    with pytest.raises(ApiError, match="incorrect id format for 1234"):
        parse(error_feed("incorrect id format for 1234"))


BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
<!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
]>
<feed xmlns="http://www.w3.org/2005/Atom"><title>&f;</title></feed>"""


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (page_of(FULL)[:-200], "not well-formed"),
        (b"", "not well-formed"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not well-formed"),
        (b"<html><body>Rate exceeded.</body></html>", "not an Atom feed"),
        (b'<rss version="2.0"><channel/></rss>', "not an Atom feed"),
        (BOMB, "document type"),
        (
            (
                b'<!DOCTYPE feed [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                b'<feed xmlns="http://www.w3.org/2005/Atom"><title>&x;</title></feed>'
            ),
            "document type",
        ),
        (b'<feed xmlns="http://www.w3.org/2005/Atom"><entry/></feed>', "totalResults"),
    ],
    ids=["cut", "empty", "binary", "html", "rss", "entity-bomb", "external-entity", "no-totals"],
)
def test_malformed_and_hostile_answers_are_refused(content: bytes, said: str) -> None:
    with pytest.raises(BadAnswer, match=said) as caught:
        parse(content)
    assert isinstance(caught.value, FeedsError)


def test_the_stdlib_parser_bounds_entity_expansion_by_itself() -> None:
    """Without the document-type refusal, expat (2.4.1+) still stops a billion laughs."""
    import xml.etree.ElementTree as ET

    with pytest.raises(ET.ParseError, match="amplification"):
        ET.fromstring(BOMB.replace(b"&f;", b"&f;&f;&f;&f;&f;&f;&f;&f;"))


def test_unreadable_entries_are_left_out_and_named() -> None:
    content = page_of(fake(1, 1), fake(2, 2), fake(3, 3), total=3)
    content = content.replace(b"/abs/2612.00002v1</id>", b"/abs/not-an-id</id>", 1)
    content = content.replace(b"<published>2026-12-07T09", b"<published>yesterday", 1)
    page = parse(content)
    assert [e.arxiv_id for e in page.entries] == ["2612.00001"]
    assert page.size == 3  # offsets count every entry, read or not
    assert page.problems == (
        "entry 1 of the results: no arXiv id in <id> ('http://arxiv.org/abs/not-an-id')",
        "entry 2 of the results: <published> is not a date ('yesterday:00:00Z')",
    )


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_parse_never_raises_anything_but_its_own_error(content: bytes) -> None:
    with contextlib.suppress(ArxivError):
        parse(b'<feed xmlns="http://www.w3.org/2005/Atom">' + content)


# Text that XML 1.0 can carry (no C0 controls but tab, newline and CR, no surrogates).
XML_TEXT = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\ufffe\uffff").filter(
        lambda c: c in "\t\n\r" or not ("\x00" <= c < " ")
    ),
    min_size=1,
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(XML_TEXT, XML_TEXT, XML_TEXT)
def test_any_title_comment_and_name_come_back_collapsed(
    title: str, comment: str, name: str
) -> None:
    if not clean_xml(title).split() or not clean_xml(name).split():
        return  # an entry without a title is unreadable; an author without a name is no one
    paper = replace(fake(1, 1), title=title, comment=comment, authors=((name, (comment,)),))
    [entry] = parse(page_of(paper)).entries
    assert entry.title == " ".join(clean_xml(title).split())
    assert entry.comment == (" ".join(clean_xml(comment).split()) or None)
    assert entry.authors[0].name == " ".join(clean_xml(name).split())


# --- entries as papers -----------------------------------------------------------------------


def test_an_arxiv_paper_has_the_id_of_the_same_title_from_a_digest() -> None:
    [entry] = parse(page_of(FULL)).entries
    digest = (
        "ICML\n\n"
        "Tiny Drafters,  Big Verifiers: Speculative Decoding for Long Contexts with "
        "Retrieval-Augmented Drafting Models\n\n"
        "小型草稿模型与大型验证器\n\nAda Lovelace, Alan Turing\n\nAI总结 一篇论文。\n"
    )
    [(_line, from_digest)] = parse_digest(digest.encode(), "icml.txt").papers
    assert to_paper(entry).paper_id == from_digest.paper_id


def test_to_paper_gives_links_institutions_and_arxivs_fields() -> None:
    [entry] = parse(page_of(FULL)).entries
    paper = to_paper(entry)
    assert paper.links == (
        Link("https://arxiv.org/abs/2412.01234", "paper", "arxiv"),  # no version: the latest
        Link("https://arxiv.org/pdf/2412.01234", "paper", "arxiv"),
        Link("https://doi.org/10.1145/3395363.3397376", "paper", "arxiv"),
        Link("https://github.com/ada/drafter", "code", "arxiv"),
        Link("https://ada.github.io/drafter", "project", "arxiv"),
    )
    # Affiliations feed institutions: each once (case aside), in the order met.
    assert paper.institutions == (
        Institution("University of London"),
        Institution("MIT"),
        Institution("University of Manchester"),
    )
    assert paper.authors == ("Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra")
    assert (paper.venue, paper.arxiv_id, paper.version) == ("arXiv", "2412.01234", 2)
    assert paper.categories == ("cs.CL", "cs.LG", "I.2.7")
    assert paper.abstract == FULL.abstract
    assert (paper.comments, paper.journal_ref) == (FULL.comment, "ACL 2026")
    as_paper = paper.as_paper()
    assert (as_paper.paper_id, as_paper.title, as_paper.venue) == (
        paper.paper_id,
        paper.title,
        "arXiv",
    )
    assert as_paper.institutions == paper.institutions


def test_links_in_the_comments_are_not_repeated() -> None:
    paper = fake(7, 1, comment="see https://arxiv.org/abs/2612.00007 and doi.org/10.1/x")
    links = to_paper(parse(page_of(replace(paper, doi="10.1/x"))).entries[0]).links
    assert [link.url for link in links] == [
        "https://arxiv.org/abs/2612.00007",
        "https://arxiv.org/pdf/2612.00007",
        "https://doi.org/10.1/x",
    ]


def test_a_new_version_is_the_same_paper() -> None:
    v1 = parse(page_of(fake(9, 30))).entries[0]
    v2 = parse(page_of(fake(9, 30, version=2, updated=NOW))).entries[0]
    assert (v1.version, v2.version) == (1, 2)
    assert v1.published == v2.published  # submittedDate is version 1's
    p1, p2 = to_paper(v1), to_paper(v2)
    assert (p1.arxiv_id, p1.paper_id, p1.links) == (p2.arxiv_id, p2.paper_id, p2.links)


# --- the decider, alone -----------------------------------------------------------------------


def entry(n: int, published: datetime) -> Entry:
    return Entry(
        arxiv_id=f"2612.{n:05d}",
        version=1,
        title=f"Paper {n}",
        abstract="",
        authors=(),
        comment=None,
        journal_ref=None,
        doi=None,
        categories=("cs.CL",),
        primary_category="cs.CL",
        published=published,
        updated=published,
    )


def test_a_first_harvest_reaches_back_the_backfill_and_one_harvest_runs_a_cycle() -> None:
    cursor = Cursor("cs.CL")
    request = next_request(cursor, NOW, timedelta(days=7), 50)
    assert request == Request(0, 50, NOW - timedelta(days=7))
    page = Page(1, 0, (entry(1, NOW - timedelta(hours=1)),))
    step = after_page(cursor, request, page, NOW, lambda _id: False)
    assert step.done
    assert step.cursor == Cursor("cs.CL", NOW - timedelta(hours=1), NOW)
    assert next_request(step.cursor, NOW) is None  # finished this cycle: not again
    later = NOW + timedelta(minutes=15)
    assert next_request(step.cursor, later) == Request(0, 100, NOW - timedelta(hours=1))
    lookback = next_request(step.cursor, later, lookback=timedelta(days=2))
    assert lookback is not None
    assert lookback.floor == NOW - timedelta(hours=1, days=2)


def test_the_cursor_keeps_as_text() -> None:
    cursor = Cursor("cs.CL", NOW, NOW, NOW - timedelta(days=1), NOW, 300, NOW, "2612.00001")
    assert Cursor.from_text("cs.CL", cursor.to_text()) == cursor
    assert Cursor.from_text("cs.CL", None) == Cursor("cs.CL")
    assert Cursor.from_text("cs.CL", "{not json") == Cursor("cs.CL")
    assert Cursor.from_text("cs.CL", '{"offset": "x"}') == Cursor("cs.CL")


def test_category_names() -> None:
    for good in ("cs.CL", "hep-th", "q-bio.NC", "cond-mat.stat-mech", "physics.acc-ph"):
        assert valid_category(good)
    for bad in ("", "cs.CL OR all:x", "cs.CL&max_results=9", "CS", "cs..CL", "cs.CL "):
        assert not valid_category(bad)


def simulated_api(papers: list[Entry], request: Request) -> Page:
    """Return the page arXiv would answer for the papers (newest first, ties by id)."""
    ordered = sorted(papers, key=lambda e: (e.published, e.arxiv_id), reverse=True)
    chosen = ordered[request.start : request.start + request.max_results]
    return Page(len(ordered), request.start, tuple(chosen))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=60),  # papers at the first harvest
    st.integers(min_value=1, max_value=12),  # page size
    st.integers(min_value=1, max_value=4),  # page budget a cycle
    st.lists(  # cycles: new submissions before it, and the request number that fails
        st.tuples(st.integers(0, 15), st.integers(0, 5)), min_size=1, max_size=8
    ),
    st.randoms(use_true_random=False),
)
def test_harvests_interrupted_anywhere_miss_nothing_and_repeat_nothing(
    first: int, page_size: int, budget: int, cycles: list[tuple[int, int]], rnd: random.Random
) -> None:
    """Papers arrive (newest at the top, some with a date the newest already has) while
    harvests page, fail at any request and run out of budget: every paper is returned once."""
    window = window_start = NOW - timedelta(days=7)
    stamps = [
        window_start - timedelta(hours=10) + timedelta(hours=rnd.randrange(200))
        for _ in range(first)
    ]
    papers = [entry(n, t) for n, t in enumerate(stamps)]
    store: set[str] = set()
    returned: list[str] = []
    cursor = Cursor("cs.CL")
    now = NOW
    after_arrivals = False  # a harvest began after the last arrivals
    for cycle, (arrivals, fails_at) in enumerate([*cycles, *[(0, 0)] * 1000]):
        for _ in range(arrivals):  # new submissions: as new as the newest, or newer
            newest = max((e.published for e in papers), default=now)
            later = timedelta(minutes=rnd.choice([0, 0, 1, 30]))
            papers.append(entry(len(papers), newest + later))
        after_arrivals = after_arrivals or (cycle >= len(cycles) and not cursor.in_progress)
        got: list[Entry] = []
        for number in range(1, budget + 1):
            request = next_request(cursor, now, timedelta(days=7), page_size)
            if request is None or number == fails_at:
                break  # a failed request leaves the cursor as it was
            if cursor.watermark is None:  # a first harvest: what it reads back to
                window = request.floor
            ids = store | {e.arxiv_id for e in got}
            step = after_page(
                cursor, request, simulated_api(papers, request), now, ids.__contains__
            )
            got += step.new
            stuck = step.cursor == cursor and not step.done
            cursor = step.cursor
            if stuck or step.done:
                break
        store.update(e.arxiv_id for e in got)
        returned += [e.arxiv_id for e in got]
        now += timedelta(minutes=15)
        if after_arrivals and not cursor.in_progress:
            break
    else:
        raise AssertionError("the harvests never finished")
    expected = {e.arxiv_id for e in papers if e.published >= window}
    assert len(returned) == len(set(returned)), "a paper returned twice"
    assert expected <= set(returned), f"missed {sorted(expected - set(returned))}"


# --- harvesting against the fake API ---------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ArxivServer]:
    s = ArxivServer()
    yield s
    s.close()


@pytest.fixture
def http() -> Iterator[Client]:
    with guarded_client(ALLOW_LOOPBACK, timeout=10) as c:
        yield c


class Clock:
    """A monotonic clock that moves only when slept on: delays are seen, not waited."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


@dataclass
class Follower:
    """What the pipeline does with harvests: keeps entries and cursors, one cycle at a time."""

    harvester: Harvester
    cursors: dict[str, Cursor] = field(default_factory=dict)
    stored: dict[str, Entry] = field(default_factory=dict)
    returned: list[str] = field(default_factory=list)  # every id ever returned, in order
    now: datetime = NOW

    def cycle(self, *categories: str) -> tuple[HarvestResult, ...]:
        cursors = [self.cursors.get(c, Cursor(c)) for c in categories]
        results = self.harvester.harvest_all(cursors, self.now, self.stored.__contains__)
        for r in results:  # one transaction: the entries and the cursor
            self.stored.update((e.arxiv_id, e) for e in r.entries)
            self.returned += [e.arxiv_id for e in r.entries]
            self.cursors[r.cursor.category] = r.cursor
        self.now += timedelta(minutes=15)
        return results

    def until_done(self, *categories: str, cycles: int = 20) -> None:
        for _ in range(cycles):
            if all(r.done for r in self.cycle(*categories)):
                return
        raise AssertionError("never finished")


def harvester(http: Client, server: ArxivServer, **kw: object) -> Harvester:
    kw.setdefault("sleep", lambda _s: None)
    return Harvester(http, server.url, policy=ALLOW_LOOPBACK, **kw)  # type: ignore[arg-type]


def test_a_harvest_pages_newest_first_politely(http: Client, server: ArxivServer) -> None:
    server.add(*(fake(n, n * 0.1) for n in range(250)))
    clock = Clock()
    h = harvester(http, server, page_size=100, throttle=Throttle(3.0, clock, clock.sleep))
    [result] = h.harvest_all([Cursor("cs.CL")], NOW, lambda _id: False)
    assert result.done
    assert result.error is None
    assert result.requests == 3
    assert [e.arxiv_id for e in result.entries] == [f"2612.{n:05d}" for n in range(250)]
    assert result.cursor == Cursor("cs.CL", watermark=NOW, finished=NOW)
    queries = server.queries()
    assert [q["start"] for q in queries] == ["0", "99", "198"]  # one entry of overlap
    assert all(
        q["search_query"] == "cat:cs.CL"
        and q["sortBy"] == "submittedDate"
        and q["sortOrder"] == "descending"
        and q["max_results"] == "100"
        for q in queries
    )
    assert clock.slept == [3.0, 3.0]  # between requests, none before the first
    assert all("paperfeeds" in r.headers["user-agent"] for r in server.requests)
    assert query_url(server.url, "cs.CL", Request(0, 100, NOW)).startswith(server.url + "?")
    again = h.harvest(result.cursor, NOW, lambda _id: False)  # the same cycle: not again
    assert (again.requests, len(server.requests)) == (0, 3)


def test_the_delay_is_waited_by_default_sleep_injected(http: Client, server: ArxivServer) -> None:
    server.add(*(fake(n, n) for n in range(5)))
    slept: list[float] = []
    h = harvester(http, server, page_size=2, sleep=slept.append, delay=3.0)
    h.harvest(Cursor("cs.CL"), NOW, lambda _id: False)
    assert len(server.requests) == 4  # pages of two overlap by one: 0-1, 1-2, 2-3, 3-4
    # This sleep returns at once, so each slot is 3 s after the last one's, on the clock.
    assert slept == pytest.approx([3.0, 6.0, 9.0], abs=0.5)


def test_a_first_harvest_stops_at_the_backfill_window(http: Client, server: ArxivServer) -> None:
    server.add(*(fake(n, n * 2) for n in range(121)))  # every 2 hours for 10 days
    result = harvester(http, server, page_size=50).harvest(Cursor("cs.CL"), NOW, lambda _: False)
    assert result.done
    assert result.requests == 2
    assert [e.arxiv_id for e in result.entries] == [f"2612.{n:05d}" for n in range(85)]
    assert all(e.published >= NOW - timedelta(days=7) for e in result.entries)


def test_later_harvests_stop_at_what_the_last_one_saw(http: Client, server: ArxivServer) -> None:
    server.add(*(fake(n, 1 + n) for n in range(150)))
    follow = Follower(harvester(http, server, page_size=50))
    follow.cycle("cs.CL")
    asked = len(server.requests)
    server.add(fake(900, 0.5), fake(901, 0.25), fake(902, 0))
    [result] = follow.cycle("cs.CL")
    assert [e.arxiv_id for e in result.entries] == ["2612.00902", "2612.00901", "2612.00900"]
    assert result.done
    assert result.requests == 1 == len(server.requests) - asked
    [quiet] = follow.cycle("cs.CL")
    assert (quiet.entries, quiet.requests, quiet.done) == ((), 1, True)
    assert len(follow.returned) == len(set(follow.returned)) == 153


def test_a_cross_listed_paper_is_one_paper(http: Client, server: ArxivServer) -> None:
    server.add(*(fake(n, n, "cs.CL") for n in range(10)))
    server.add(*(fake(n, n - 95, "cs.LG") for n in range(100, 110)))
    server.add(fake(50, 7.5, "cs.LG", "cs.CL"))  # primary cs.LG, cross-listed to cs.CL
    follow = Follower(harvester(http, server, page_size=4))
    cl, lg = follow.cycle("cs.CL", "cs.LG")
    assert "2612.00050" in [e.arxiv_id for e in cl.entries]
    lg_ids = [e.arxiv_id for e in lg.entries]
    assert "2612.00050" not in lg_ids
    # cs.LG's harvest went on past the paper cs.CL brought: seen is skipped, not an end.
    assert lg_ids == [f"2612.{n:05d}" for n in range(100, 110)]
    assert lg.done
    assert cl.done
    assert sorted(follow.returned) == sorted(set(follow.returned))
    server.add(fake(51, 0, "cs.CL", "cs.LG"))
    cl2, lg2 = follow.cycle("cs.CL", "cs.LG")
    assert ([e.arxiv_id for e in cl2.entries], lg2.entries) == (["2612.00051"], ())


def test_a_new_version_of_a_seen_paper_is_not_harvested_again(
    http: Client, server: ArxivServer
) -> None:
    """A v2 keeps its submission date (version 1's): sortBy=submittedDate leaves it where
    it was, below the watermark, so harvests do not bring it again. Were it met (a
    category followed later, a lookback), its arXiv id is seen: the same paper."""
    server.add(*(fake(n, 1 + n, "cs.CL", "cs.LG") for n in range(5)))
    follow = Follower(harvester(http, server))
    follow.cycle("cs.CL")
    server.update("2612.00003", version=2, updated=NOW + timedelta(days=1))
    [again] = follow.cycle("cs.CL")
    assert (again.entries, again.requests) == ((), 1)
    [lg] = follow.cycle("cs.LG")  # a first harvest that meets the v2: seen, by id
    assert lg.entries == ()
    assert lg.done
    assert sorted(follow.returned) == [f"2612.{n:05d}" for n in range(5)]


@pytest.mark.parametrize("status", [429, 503])
def test_a_rate_limit_stops_every_category_and_says_how_long_to_wait(
    http: Client, server: ArxivServer, status: int
) -> None:
    server.add(*(fake(n, n, "cs.CL", "cs.LG") for n in range(5)))
    server.fail(status, retry_after="10800")
    cl, lg = Follower(harvester(http, server)).cycle("cs.CL", "cs.LG")
    assert len(server.requests) == 1  # no retry, and cs.LG is not asked
    assert cl.requests == 1
    assert not cl.done
    assert cl.retry_after == 10800.0
    assert cl.error == f"127.0.0.1 answered HTTP {status}; it asks to wait 10800 s"
    assert lg.requests == 0
    assert lg.error == cl.error  # not asked, for the same cause
    assert (cl.cursor, lg.cursor) == (Cursor("cs.CL"), Cursor("cs.LG"))
    state = after_harvest(SourceState("arxiv:cs.CL"), cl, NOW)
    assert state.next_try == NOW + timedelta(hours=3)  # as asked: longer than the backoff
    assert (state.failures, state.error) == (1, cl.error)
    # A Retry-After years ahead does not silence the source for good.
    forever = replace(cl, retry_after=10.0**9)
    assert after_harvest(state, forever, NOW).next_try == NOW + timedelta(days=2)


def test_retry_after_as_an_http_date(http: Client, server: ArxivServer) -> None:
    server.add(fake(1, 1))
    server.fail(503, retry_after=email.utils.formatdate(time.time() + 7200, usegmt=True))
    [result] = Follower(harvester(http, server)).cycle("cs.CL")
    assert result.retry_after is not None
    assert 7100 < result.retry_after <= 7200


def test_a_rate_limit_mid_harvest_resumes_without_gap_or_duplicate(
    http: Client, server: ArxivServer
) -> None:
    server.add(*(fake(n, n * 0.1) for n in range(250)))
    follow = Follower(harvester(http, server, page_size=100))
    server.fail(429, retry_after="60", after=1)
    [first] = follow.cycle("cs.CL")
    assert len(first.entries) == 100
    assert first.retry_after == 60.0
    assert not first.done
    assert first.cursor.in_progress
    assert first.cursor.watermark is None
    [second] = follow.cycle("cs.CL")
    assert second.done
    assert len(second.entries) == 150
    assert follow.returned == [f"2612.{n:05d}" for n in range(250)]
    assert [q["start"] for q in server.queries()] == ["0", "99", "99", "198"]


def test_an_interrupted_harvest_resumes_while_new_papers_push_offsets_down(
    http: Client, server: ArxivServer
) -> None:
    server.add(*(fake(n, 1 + n * 0.1) for n in range(250)))
    follow = Follower(harvester(http, server, page_size=100))
    server.fail(503, after=1)
    follow.cycle("cs.CL")
    upper = follow.cursors["cs.CL"].upper
    server.add(*(fake(1000 + n, 0.5 - n * 0.01) for n in range(30)))  # above everything
    [resumed] = follow.cycle("cs.CL")
    assert resumed.done
    assert len(resumed.entries) == 150
    assert resumed.cursor.watermark == upper  # not the new papers': they are not all read
    [newer] = follow.cycle("cs.CL")
    assert len(newer.entries) == 30
    assert sorted(follow.returned) == sorted(
        {f"2612.{n:05d}" for n in [*range(250), *range(1000, 1030)]}
    )
    assert len(follow.returned) == 280


def test_a_harvest_steps_back_when_papers_leave_the_results(
    http: Client, server: ArxivServer
) -> None:
    server.add(*(fake(n, 1 + n * 0.1) for n in range(250)))
    follow = Follower(harvester(http, server, page_size=100))
    server.fail(503, after=1)
    follow.cycle("cs.CL")
    for n in range(40, 50):  # read already; now gone (withdrawn from the category)
        server.remove(f"2612.{n:05d}")
    [resumed] = follow.cycle("cs.CL")
    assert resumed.done
    assert follow.returned == [f"2612.{n:05d}" for n in range(250)]  # 100..109 not skipped
    assert [q["start"] for q in server.queries()][2:4] == ["99", "0"]  # stepped back


def test_an_empty_page_mid_harvest_is_not_the_end(http: Client, server: ArxivServer) -> None:
    server.add(*(fake(n, n * 0.1) for n in range(250)))
    server.empty(after=1)  # the second page: no entries, totalResults 0
    [result] = Follower(harvester(http, server, page_size=100)).cycle("cs.CL")
    assert result.done
    assert len(result.entries) == 250


def test_an_empty_first_page_changes_nothing(http: Client, server: ArxivServer) -> None:
    server.add(*(fake(n, n) for n in range(5)))
    follow = Follower(harvester(http, server))
    follow.cursors["cs.CL"] = Cursor("cs.CL", watermark=NOW - timedelta(hours=10))
    server.empty()
    [flaky] = follow.cycle("cs.CL")
    assert flaky.entries == ()
    assert flaky.cursor.watermark == NOW - timedelta(hours=10)
    [result] = follow.cycle("cs.CL")
    assert len(result.entries) == 5


def test_the_page_budget_spreads_a_long_backfill_over_cycles(
    http: Client, server: ArxivServer
) -> None:
    server.add(*(fake(n, n * 0.5) for n in range(250)))
    follow = Follower(harvester(http, server, page_size=40, max_pages=2))
    results = [follow.cycle("cs.CL")[0] for _ in range(4)]
    assert [r.requests for r in results] == [2, 2, 2, 1]
    assert [r.done for r in results] == [False, False, False, True]
    assert all(r.error is None for r in results)
    assert follow.returned == [f"2612.{n:05d}" for n in range(250)]


def test_a_refused_query_says_arxivs_message(http: Client, server: ArxivServer) -> None:
    server.add(fake(1, 1))
    [result] = Follower(harvester(http, server, page_size=5000)).cycle("cs.CL")
    refused = "cannot run search_query=cat:cs.CL start=0 max_results=5000"
    assert result.error == f"the arXiv API refused the query: {refused}"
    assert result.retry_after is None


def test_the_address_guard_applies(server: ArxivServer) -> None:
    policy = AddressPolicy()  # arXiv is public: no allow_hosts, so loopback is refused
    with guarded_client(policy, timeout=5) as c:
        with pytest.raises(FetchFailed, match="not asked"):
            fetch_page(c, server.url, "cs.CL", Request(0, 10, NOW), policy=policy)
        with pytest.raises(FetchFailed, match="not public"):  # at connect time, too
            fetch_page(c, server.url, "cs.CL", Request(0, 10, NOW))
    assert server.requests == []


def test_a_category_that_is_not_one_is_never_asked(http: Client, server: ArxivServer) -> None:
    with pytest.raises(ArxivError, match="not an arXiv category"):
        fetch_page(http, server.url, "cs.CL OR all:x", Request(0, 10, NOW))
    assert server.requests == []


def test_a_categorys_own_trouble_does_not_stop_the_others(
    http: Client, server: ArxivServer
) -> None:
    server.add(fake(1, 1))
    bad, good = Follower(harvester(http, server)).cycle("cs.CL OR all:x", "cs.CL")
    assert bad.error == "'cs.CL OR all:x' is not an arXiv category (like cs.CL or hep-th)"
    assert good.error is None
    assert [e.arxiv_id for e in good.entries] == ["2612.00001"]


def test_slow_big_and_redirected_answers_fail(
    http: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = LinkServer("127.0.0.1")
    try:
        s.route("/slow", slow(reply(200, body=page_of(fake(1, 1))), 3))
        s.route("/big", reply(200, body=page_of(*(fake(n, n) for n in range(30)))))
        s.route("/moved", redirect("https://export.arxiv.org/api/query", 301))
        s.route("/down", reply(500, body=b"oops"))
        request = Request(0, 10, NOW)
        with pytest.raises(FetchFailed, match="did not answer within 0 s"):
            fetch_page(http, s.url("/slow"), "cs.CL", request, timeout=0.3)
        monkeypatch.setattr(arxiv_client, "MAX_PAGE_BYTES", 10_000)
        with pytest.raises(FetchFailed, match="more than 10000 bytes"):
            fetch_page(http, s.url("/big"), "cs.CL", request)
        with pytest.raises(FetchFailed, match=r"HTTP 301 to https://export\.arxiv\.org/api/query"):
            fetch_page(http, s.url("/moved"), "cs.CL", request)
        with pytest.raises(FetchFailed, match="HTTP 500"):
            fetch_page(http, s.url("/down"), "cs.CL", request)
    finally:
        s.close()


def test_after_a_harvest_that_worked_the_source_is_healthy() -> None:
    failing = SourceState("arxiv:cs.CL", failures=3, next_try=NOW, error="HTTP 503")
    result = HarvestResult(Cursor("cs.CL"), (entry(1, NOW),), 1, True)
    state = after_harvest(failing, result, NOW)
    assert (state.failures, state.next_try, state.error) == (0, None, None)
    assert state.last_ok == state.last_change == NOW
    quiet = after_harvest(state, HarvestResult(Cursor("cs.CL")), NOW + timedelta(hours=1))
    assert quiet.last_change == NOW
    assert quiet.last_ok == NOW + timedelta(hours=1)
