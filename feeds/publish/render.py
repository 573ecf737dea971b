"""Render feeds and the OPML list to bytes. Pure: same views in, same bytes out.

The HTML pages are pages.py's; a paper's body, shared by its feed items and its page, is
content.py's."""

from __future__ import annotations

import hashlib
import html
import json
import re
import uuid
from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree as ET

from markupsafe import escape

from feeds import __version__
from feeds.match.hits import matched_text
from feeds.model import Hit, Item, Link, Paper
from feeds.publish.content import AI_LABEL, content_html
from feeds.publish.formats import BY_NAME
from feeds.publish.view import (
    FeedView,
    Kept,
    Site,
    best_link,
    feed_path,
    paper_path,
    topic_path,
    web_url,
)
from feeds.text import PAPER_NAMESPACE, clean_xml, strip_bidi

if TYPE_CHECKING:
    from feedgen.entry import FeedEntry

__all__ = [
    "content_html", "entry_blocks", "item_html", "item_id", "render", "render_feed",
    "render_json_feed", "render_opml",
]  # fmt: skip

GENERATOR_URI = "https://pypi.org/project/paperfeeds/"


def item_id(feed: str, paper_id: str) -> str:
    """Return the id (RSS guid, Atom id, JSON id) of a paper's item in a feed: the version-5
    UUID of the paper id in the feed's namespace (the feed's own id).

    From the paper's identity and the feed alone, so the same across runs, digest file names
    and base URLs; and different in each feed, because readers such as newsboat keep one
    article per id across all their feeds: with one id everywhere, a paper showed in only
    one of its topics. (What ties one paper's items together is the same in every feed:
    the item link, and in JSON the paper id and page.)"""
    h = hashlib.sha1(_feed_uuid(feed).bytes + paper_id.encode()).hexdigest()
    # uuid.uuid5's digits, without a UUID object per item (three times slower).
    return (
        f"urn:uuid:{h[:8]}-{h[8:12]}-5{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"
    )


def _key(feed: str, item: Item | Kept) -> str:
    """Return the item's id in the feed: a Kept item carries it."""
    return item.id if isinstance(item, Kept) else item_id(feed, item.paper.paper_id)


@lru_cache(maxsize=1024)
def _feed_uuid(feed: str) -> uuid.UUID:
    return uuid.uuid5(PAPER_NAMESPACE, "feed:" + feed)


def feed_id(feed: FeedView) -> str:
    return f"urn:uuid:{_feed_uuid(feed.id)}"


def item_html(item: Item) -> str:
    """Return the HTML body of a feed item: the paper (shared by all its feeds) + hits."""
    return _body_html(item.paper, item.links) + _hits_html(item.matched)


def _hits_html(hits: tuple[Hit, ...]) -> str:
    return f"\n<p>matched: {escape(clean_xml(matched_text(hits)))}</p>" if hits else ""


@lru_cache(maxsize=4096)
def _body_html(paper: Paper, links: tuple[Link, ...]) -> str:
    # The same paper is an item in many feeds: render its body once per run.
    return clean_xml(content_html(paper, links)).strip()


# Entries as feedgen pretty-prints them. An entry's bytes depend on the entry alone (text
# is escaped, so these lines cannot occur inside one), so the block of an unchanged item in
# the feed written last time is byte for byte what rendering it again would give.
_BLOCK_IDS = {  # the line that holds an entry's id, up to the id
    "rss": b'\n      <guid isPermaLink="false">',
    "atom": b"\n    <id>",
}
_JSON_LINE = re.compile(rb'^    (\{"id": "([^"\\]+)".*\}),?$', re.MULTILINE)
_MARKS = {  # an entry's first and last line, each with the newline before it
    "rss": (b"\n    <item>\n", b"\n    </item>\n"),
    "atom": (b"\n  <entry>\n", b"\n  </entry>\n"),
}
_EMPTY_TAIL = {"rss": b"  </channel>\n</rss>\n", "atom": b"</feed>\n"}


def _spans(fmt: str, document: bytes) -> list[tuple[int, int]]:
    """Return where the entries of an RSS or Atom document are: (start, end) offsets."""
    start, end = _MARKS[fmt]
    spans = []
    i = document.find(start)
    while i >= 0:  # bytes.find, not a regex: this runs over every feed a run rewrites
        j = document.find(end, i)
        if j < 0:
            break
        spans.append((i + 1, j + len(end)))
        i = document.find(start, j)
    return spans


def entry_blocks(fmt: str, document: bytes) -> dict[str, bytes]:
    """Return the entries of a feed document this module wrote, by item id: what a new
    render of that feed may reuse for items that did not change (see render_feed)."""
    if fmt == "json":
        return {m.group(2).decode(): m.group(1) for m in _JSON_LINE.finditer(document)}
    found = {}
    for a, b in _spans(fmt, document):
        block = document[a:b]
        k = block.find(_BLOCK_IDS[fmt])
        if k >= 0:
            k += len(_BLOCK_IDS[fmt])
            found[block[k : block.index(b"<", k)].decode()] = block
    return found


def render(site: Site, feed: FeedView, fmt: str, reuse: dict[str, bytes] | None = None) -> bytes:
    """Return the feed document in format `fmt` (see formats.py), by the writer it names;
    `reuse` as for render_feed."""
    if BY_NAME[fmt].writer == "json":
        return render_json_feed(site, feed, reuse)
    return render_feed(site, feed, fmt, reuse)


def render_feed(
    site: Site, feed: FeedView, fmt: str, reuse: dict[str, bytes] | None = None
) -> bytes:
    """Return an RSS 2.0 (`rss`) or Atom 1.0 (`atom`) document for a feed.

    `reuse`: entry blocks (from entry_blocks) of items known to be unchanged since they
    were written; only the other items are built, and the document is the same bytes.

    An item's entry is its paper's, made once for every feed that carries the paper (see
    _made), with the feed's own id and why the paper matched put in.
    """
    reuse = reuse or {}
    keys = [_key(feed.id, item) for item in feed.items]
    made = _made[fmt]
    if len(made) > _ENTRIES:
        made.clear()
    todo: dict[_Shape, Item] = {}
    for item, key in zip(feed.items, keys, strict=True):
        if isinstance(item, Item) and key not in reuse:
            shape = _shape(site, item)
            if shape not in made:
                todo.setdefault(shape, item)
    data = _feedgen(site, feed, fmt, list(todo.values()))
    spans = _spans(fmt, data)
    if len(spans) != len(todo):  # not the layout assumed here (see _MARKS)
        raise ValueError("feed entries cannot be spliced with this version of feedgen")
    if spans:
        head, tail = data[: spans[0][0]], data[spans[-1][1] :]
    else:
        tail = _EMPTY_TAIL[fmt]
        if not data.endswith(tail):  # not the layout assumed here
            raise ValueError("feed entries cannot be spliced with this version of feedgen")
        head = data[: -len(tail)]
    for shape, (a, b) in zip(todo, spans, strict=True):
        made[shape] = data[a:b]
    body = [  # a Kept item's entry must be in reuse: a KeyError here is a caller's mistake
        reuse[key] if isinstance(item, Kept) else reuse.get(key) or _filled(made, site, key, item)
        for item, key in zip(feed.items, keys, strict=True)
    ]
    return head + b"".join(body) + tail


# What an entry shows besides its id and hits: its paper, links and date in the feed (a
# paper enters the feeds of a first build all at once).
_Shape = tuple[Site, Paper, tuple[Link, ...], datetime]

# A paper's entry, as feedgen writes it, with these in place of the item's id and of the
# line that says why it matched: words no text can hold (new each run), so that a plain
# replace puts the real ones in.
_ID = f"urn:uuid:{uuid.uuid4()}"
_HITS = f"paperfeeds{uuid.uuid4().hex}"
_ID_BYTES, _HITS_BYTES = _ID.encode(), _HITS.encode()
_made: dict[str, dict[_Shape, bytes]] = {"rss": {}, "atom": {}}


def _shape(site: Site, item: Item) -> _Shape:
    return site, item.paper, item.links, item.entered


def _filled(made: dict[_Shape, bytes], site: Site, key: str, item: Item) -> bytes:
    block = made[_shape(site, item)].replace(_ID_BYTES, key.encode())
    return block.replace(_HITS_BYTES, _hits_xml(item.matched))


@lru_cache(maxsize=4096)
def _hits_xml(hits: tuple[Hit, ...]) -> bytes:
    """Return the line of an item's content that says why it matched, as the feed's XML
    holds it: escaped by lxml, which writes the rest of the entry (b"" without hits)."""
    if not hits:
        return b""
    from lxml import etree

    element = etree.Element("x")
    element.text = _hits_html(hits)
    xml: bytes = etree.tostring(element, encoding="utf-8")
    return xml[len(b"<x>") : -len(b"</x>")]


def _feedgen(site: Site, feed: FeedView, fmt: str, items: list[Item]) -> bytes:
    from feedgen.feed import FeedGenerator  # costly import: only when a feed is rendered

    # Config and state text is cleaned at load time; cleaning again here keeps the writer
    # total: lxml refuses to serialize a string with a character XML forbids.
    title = clean_xml(feed.title).strip() or feed.id
    description = clean_xml(feed.description).strip()
    fg = FeedGenerator()
    fg.id(feed_id(feed))
    fg.title(title)
    # Readers take RSS descriptions as HTML (Atom's subtitle is declared text). RSS 2.0
    # requires one, so a topic without a description has its title there; Atom's subtitle
    # is optional, and a reader shows it under the title: none rather than the title twice.
    if fmt == "rss":
        fg.subtitle(html.escape(description or title, quote=False))
    elif description:
        fg.subtitle(description)
    fg.author({"name": clean_xml(site.title), "uri": site.base_url})
    fg.generator("paperfeeds", __version__, GENERATOR_URI)
    fg.language("en")
    if fmt == "rss":  # its items' authors: RSS's own <author> is an email address
        fg.load_extension("dc", atom=False)
    # feedgen's RSS <link> is the last link added: self first, the topic page last.
    fg.link(href=site.url(feed_path(feed.id, fmt)), rel="self")
    fg.link(href=site.url(topic_path(feed.id)), rel="alternate")
    fg.updated(feed.updated)  # feedgen would stamp now() otherwise
    fg.lastBuildDate(feed.updated)
    for item in items:
        fg.add_entry(_entry(*_shape(site, item)), order="append")  # the default prepends
    data: bytes = fg.rss_str(pretty=True) if fmt == "rss" else fg.atom_str(pretty=True)
    return data


# Entries (~5 kB each with their strings) serve the two formats: built once for a paper's
# RSS and Atom entries (a paper's body, the costly part, is shared by its feeds:
# _body_html). 2,048 covers a long feed; 8,192 cost a full build 80 MB of memory (with
# _json_item's) and saved nothing measurable.
_ENTRIES = 2048


@lru_cache(maxsize=_ENTRIES)
def _entry(site: Site, paper: Paper, links: tuple[Link, ...], entered: datetime) -> FeedEntry:
    """Return a paper's entry, built once for its RSS and Atom entries in every feed, with
    _ID for its id and _HITS where its content says why it matched."""
    from feedgen.entry import FeedEntry

    fe = FeedEntry()
    fe.id(_ID)
    fe.guid(_ID, permalink=False)
    fe.title(clean_xml(paper.title) or paper.paper_id)
    fe.link(href=best_link(site, paper, links))
    fe.published(entered)
    fe.updated(entered)
    fe.content(_body_html(paper, links) + _HITS, type="html")
    # summary(), not description(): feedgen's description() overwrites Atom's content.
    # Readers take RSS <description> as HTML, so the plain text is escaped as HTML.
    fe.summary(html.escape(_plain_summary(paper), quote=False), type="html")
    authors = [clean_xml(a) or "?" for a in paper.authors]
    if authors:
        # One <author> each in Atom. feedgen's author() adds to those set before (feedparser
        # keeps them all in entry.authors; its entry.author is the last <author> alone).
        fe.author([{"name": a} for a in authors])
        # RSS's <author> must be an email address (feedgen writes none without one): the
        # names go in dc:creator. One element with every name, as arXiv's own RSS has it:
        # readers keep one author per item, and of several dc:creator elements newsboat
        # and feedparser's entry.author keep the last alone.
        # Registered by class: load_extension first tries to import a module feedgen does
        # not have (feedgen.ext.dc_entry), a search of the import path for every entry.
        fe.register_extension("dc", _dc_entry(), atom=False)
        fe.dc.dc_creator(", ".join(authors))
    return fe


@lru_cache(maxsize=1)
def _dc_entry() -> Any:
    from feedgen.ext.dc import DcEntryExtension

    return DcEntryExtension


def _plain_summary(p: Paper) -> str:
    said = f"{AI_LABEL}: {p.summary}" if p.summary else p.abstract or ""
    parts = [p.title_zh or "", ", ".join(p.authors), said]
    return clean_xml(" — ".join(x for x in parts if x)) or clean_xml(p.title) or p.paper_id


def _rfc3339(dt: datetime) -> str:
    return dt.isoformat(timespec="seconds").replace("+00:00", "Z")


def render_json_feed(site: Site, feed: FeedView, reuse: dict[str, bytes] | None = None) -> bytes:
    """Return a JSON Feed 1.1 document, with the `_paperfeeds` extension on each item.

    Indented, except that each item is one line: items go through json's C encoder (the
    indenting one is pure Python) and are encoded once per run however many feeds carry
    them."""
    doc: dict[str, Any] = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": feed.title,
        "home_page_url": site.url(topic_path(feed.id)),
        "feed_url": site.url(feed_path(feed.id, "json")),
        "description": feed.description or feed.title,
        "language": "en",
        "authors": [{"name": site.title, "url": site.base_url}],
        "items": [],
    }
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    if not feed.items:
        return text.encode("utf-8")
    # Spliced as bytes: reused items are bytes already. "items" is the last key, and the
    # text before it cannot hold `"items": []` (quotes in values are escaped).
    head, _items, tail = text.rpartition('"items": []')
    old = reuse or {}
    lines = b",\n    ".join(
        old[key]
        if (key := _key(feed.id, item)) in old or isinstance(item, Kept)
        else _json_item(site, feed.id, item)
        for item in feed.items
    )
    return b"".join((head.encode(), b'"items": [\n    ', lines, b"\n  ]", tail.encode()))


@lru_cache(maxsize=_ENTRIES)
def _json_item(site: Site, feed: str, item: Item) -> bytes:
    p = item.paper
    data = {
        "id": item_id(feed, p.paper_id),
        "url": best_link(site, p, item.links),
        "title": p.title,
        "content_html": item_html(item),
        "summary": _plain_summary(p),
        "date_published": _rfc3339(item.entered),
        "authors": [{"name": a} for a in p.authors],
        "_paperfeeds": {
            "paper_id": p.paper_id,
            "page": site.url(paper_path(p.paper_id)),
            "venue": p.venue,
            "title_zh": p.title_zh,
            "authors": list(p.authors),
            "institutions": [{"name": i.name, "name_zh": i.name_zh} for i in p.institutions],
            "summary_zh": p.summary,  # the AI summary: machine-written
            "abstract": p.abstract,
            "categories": list(p.categories),
            "arxiv_id": p.arxiv_id,
            "comments": p.comments,
            "journal_ref": p.journal_ref,
            "matched": [{"term": h.term, "field": h.field} for h in item.matched],
            "links": [
                {
                    "url": web_url(link.url),
                    "kind": link.kind,
                    "source": link.source,
                    "status": link.status,
                    "final_url": web_url(link.final_url),
                    "http_status": link.http_status,
                    "note": link.note,
                }
                for link in item.links
            ],
        },
    }
    # A paper stored before ingest removed bidi controls may hold one (RSS and Atom lose
    # them with what XML forbids, see _entry).
    return strip_bidi(json.dumps(data, ensure_ascii=False)).encode("utf-8")


def render_opml(site: Site, feeds: Iterable[FeedView]) -> bytes:
    """Return an OPML 2.0 list of every topic's RSS feed, for importing into a reader."""
    opml = ET.Element("opml", version="2.0")
    head = ET.SubElement(opml, "head")
    ET.SubElement(head, "title").text = site.title  # "paperfeeds", not "paperfeeds feeds"
    body = ET.SubElement(opml, "body")
    group = ET.SubElement(body, "outline", text=site.title, title=site.title)
    for feed in feeds:
        ET.SubElement(
            group,
            "outline",
            type="rss",
            text=feed.title,
            title=feed.title,
            description=feed.description,
            xmlUrl=site.url(feed_path(feed.id, "rss")),
            htmlUrl=site.url(topic_path(feed.id)),
        )
    ET.indent(opml)
    data: bytes = ET.tostring(opml, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def blocks_in(path: Path, fmt: str) -> dict[str, bytes]:
    """Return the entry blocks of a feed file written before, by item id (see entry_blocks;
    {} when there is none)."""
    try:
        document = path.read_bytes()
    except FileNotFoundError:
        return {}
    return entry_blocks(fmt, document)
