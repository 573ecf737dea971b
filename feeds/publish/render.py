"""Render feeds, OPML and HTML pages to bytes. Pure: same views in, same bytes out."""

from __future__ import annotations

import contextlib
import html
import json
import re
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree as ET

import jinja2
from markupsafe import Markup, escape

from feeds import __version__
from feeds.model import Hit, Item, Link, Paper
from feeds.publish.view import (
    FORMATS,
    FeedView,
    Kept,
    PaperView,
    Site,
    best_link,
    feed_path,
    link_words,
    links_by_kind,
    matched_text,
    paper_path,
    safe_href,
    topic_path,
    web_url,
)
from feeds.state.records import ListRow
from feeds.text import PAPER_NAMESPACE, clean_xml, paper_uuid

if TYPE_CHECKING:
    from feedgen.entry import FeedEntry

GENERATOR_URI = "https://pypi.org/project/paperfeeds/"


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """Jinja's cache of compiled templates, in our cache folder: compiling them costs each
    run that publishes ~15 ms. Like our other caches, one that cannot be read or written
    is a miss, never an error (Jinja checks a template's source and Python's version)."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 -- a damaged file: compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):  # a read-only or full disk: compiled every time
            super().dump_bytecode(bucket)


def _template_cache() -> jinja2.BytecodeCache | None:
    from feeds.cache import cache_dir

    folder = cache_dir() / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return _TemplateCache(str(folder))


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("feeds.publish", "templates"),
        bytecode_cache=_template_cache(),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        auto_reload=False,  # the templates are part of the package: no stat per render
    )
    env.globals.update(
        feed_path=feed_path, paper_path=paper_path, topic_path=topic_path,
        links_by_kind=links_by_kind,
    )  # fmt: skip
    env.filters["matched"] = matched_text
    return env


def item_id(item: Item | Kept) -> str:
    """Return the item's id (RSS guid, Atom id, JSON id): from the paper's identity alone."""
    return item.id if isinstance(item, Kept) else title_id(item.paper.title)


@lru_cache(maxsize=65536)
def title_id(title: str) -> str:
    """Return the item id of the paper with this title."""
    return f"urn:uuid:{paper_uuid(title)}"


def paper_of_item(item_id: str) -> str:
    """Return the paper id behind an item id (see title_id): paper_id() is the first
    sixteen hex digits of the paper's UUID, which the item id spells out."""
    u = item_id[9:]  # after "urn:uuid:"; hex digits 0-7, 9-12 and 14-17
    return u[:8] + u[9:13] + u[14:18]


def feed_id(feed: FeedView) -> str:
    return f"urn:uuid:{uuid.uuid5(PAPER_NAMESPACE, 'feed:' + feed.id)}"


def item_html(item: Item) -> str:
    """Return the HTML body of a feed item: the paper (shared by all its feeds) + hits."""
    body = _body_html(item.paper, item.links)
    if item.matched:
        body += f"\n<p>matched: {escape(clean_xml(matched_text(item.matched)))}</p>"
    return body


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


def render_feed(
    site: Site, feed: FeedView, fmt: str, reuse: dict[str, bytes] | None = None
) -> bytes:
    """Return an RSS 2.0 (`rss`) or Atom 1.0 (`atom`) document for a feed.

    `reuse`: entry blocks (from entry_blocks) of items known to be unchanged since they
    were written; only the other items are built, and the document is the same bytes.
    """
    reuse = reuse or {}
    fresh = [i for i in feed.items if not isinstance(i, Kept) and item_id(i) not in reuse]
    data = _feedgen(site, feed, fmt, fresh)
    if len(fresh) == len(feed.items):
        return data
    # Splice: feedgen's head and tail around the entries, in the feed's order.
    made = _spans(fmt, data)
    if made:
        head, tail = data[: made[0][0]], data[made[-1][1] :]
    else:
        tail = _EMPTY_TAIL[fmt]
        if not data.endswith(tail):  # not the layout assumed above: no splicing
            items = [i for i in feed.items if not isinstance(i, Kept)]
            if len(items) < len(feed.items):
                raise ValueError("feed entries cannot be reused with this version of feedgen")
            return _feedgen(site, feed, fmt, items)
        head = data[: -len(tail)]
    new = iter(data[a:b] for a, b in made)
    body = [  # a Kept item's entry must be in reuse: a KeyError here is a caller's mistake
        reuse[item.id] if isinstance(item, Kept) else reuse.get(item_id(item)) or next(new)
        for item in feed.items
    ]
    return head + b"".join(body) + tail


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
    # feedgen's RSS <link> is the last link added: self first, the topic page last.
    fg.link(href=site.url(feed_path(feed.id, fmt)), rel="self")
    fg.link(href=site.url(topic_path(feed.id)), rel="alternate")
    fg.updated(feed.updated)  # feedgen would stamp now() otherwise
    fg.lastBuildDate(feed.updated)
    for item in items:
        fg.add_entry(_entry(site, item), order="append")  # the default prepends
    data: bytes = fg.rss_str(pretty=True) if fmt == "rss" else fg.atom_str(pretty=True)
    return data


# Entries (~5 kB each with their strings) mostly serve the two formats of one feed: an item
# is the same in another feed only with the same hits. 2,048 covers a long feed; 8,192 cost
# a full build 80 MB of memory (with _json_item's) and saved nothing measurable.
_ENTRIES = 2048


@lru_cache(maxsize=_ENTRIES)
def _entry(site: Site, item: Item) -> FeedEntry:
    """Return the feed entry of an item, built once per run however many feeds (and both
    formats) carry it: a paper of a broad topic is an item of many feeds."""
    from feedgen.entry import FeedEntry

    fe = FeedEntry()
    fe.id(item_id(item))
    fe.guid(item_id(item), permalink=False)
    fe.title(clean_xml(item.paper.title) or item.paper.paper_id)
    fe.link(href=best_link(site, item.paper, item.links))
    fe.published(item.entered)
    fe.updated(item.entered)
    fe.content(item_html(item), type="html")
    # summary(), not description(): feedgen's description() overwrites Atom's content.
    # Readers take RSS <description> as HTML, so the plain text is escaped as HTML.
    fe.summary(html.escape(_plain_summary(item), quote=False), type="html")
    for author in item.paper.authors[:20]:
        fe.author({"name": clean_xml(author) or "?"})
    return fe


def _plain_summary(item: Item) -> str:
    p = item.paper
    parts = [p.title_zh or "", ", ".join(p.authors), p.summary or ""]
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
        if (key := item_id(item)) in old or isinstance(item, Kept)
        else _json_item(site, item)
        for item in feed.items
    )
    return b"".join((head.encode(), b'"items": [\n    ', lines, b"\n  ]", tail.encode()))


@lru_cache(maxsize=_ENTRIES)
def _json_item(site: Site, item: Item) -> bytes:
    p = item.paper
    data = {
        "id": item_id(item),
        "url": best_link(site, p, item.links),
        "title": p.title,
        "content_html": item_html(item),
        "summary": _plain_summary(item),
        "date_published": _rfc3339(item.entered),
        "authors": [{"name": a} for a in p.authors],
        "_paperfeeds": {
            "paper_id": p.paper_id,
            "page": site.url(paper_path(p.paper_id)),
            "venue": p.venue,
            "title_zh": p.title_zh,
            "authors": list(p.authors),
            "institutions": [{"name": i.name, "name_zh": i.name_zh} for i in p.institutions],
            "summary_zh": p.summary,
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
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def render_opml(site: Site, feeds: Iterable[FeedView]) -> bytes:
    """Return an OPML 2.0 list of every topic's RSS feed, for importing into a reader."""
    opml = ET.Element("opml", version="2.0")
    head = ET.SubElement(opml, "head")
    ET.SubElement(head, "title").text = f"{site.title} feeds"
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


def render_index(site: Site, feeds: list[FeedView], all_feed: FeedView) -> bytes:
    template = _env().get_template("index.html")
    links: list[str] = []
    rows: list[str] = []
    for f in [all_feed, *feeds]:
        title, rss, atom, js = _esc(f.title), *(_esc(feed_path(f.id, x)) for x in FORMATS)
        for kind, name, href in (("atom+xml", "Atom", atom), ("rss+xml", "RSS", rss),
                                  ("feed+json", "JSON", js)):  # fmt: skip
            links.append(
                f'<link rel="alternate" type="application/{kind}" title="{title} ({name})"'
                f' href="{href}">\n'
            )
        about = f'<br><span class="meta">{_esc(f.description)}</span>' if f.description else ""
        rows.append(
            f'<tr><td><a href="{_esc(topic_path(f.id))}">{title}</a>{about}</td>'
            f'<td>{f.count}</td><td class="sub"><a href="{rss}">RSS</a>'
            f'<a href="{atom}">Atom</a><a href="{js}">JSON</a></td></tr>\n'
        )
    html = template.render(
        site=site,
        root="",
        feed_links=Markup("".join(links)),
        topic_rows=Markup("".join(rows)),
        topics=feeds,
        papers=all_feed.count,
        latest=[i for i in all_feed.items[:30] if isinstance(i, Item)],  # all are Items
        updated=all_feed.updated if all_feed.items else None,
    )
    return html.encode("utf-8")


def render_topic(
    site: Site,
    feed: FeedView,
    rows: Iterable[ListRow | str],
    links: dict[str, tuple[Link, ...]],
    *,
    archives: int = 0,
    page: int = 0,
) -> Iterator[bytes]:
    """Yield a page of a topic's reading list in pieces: the newest papers (page 0, at
    topics/<id>.html) or archive page `page` (topics/<id>/<page>.html), with links to the
    `archives` archive pages.

    A row given as a string is its line as this page rendered it before (see
    reading_rows); only the others are rendered."""
    template = _env().get_template("topic.html")
    root = "../../" if page else "../"
    lines = _chunks(
        row if isinstance(row, str) else _reading_row(root, row, links.get(row[0], ()))
        for row in rows
    )
    # The front page links to every archive part, newest first: a long history has
    # hundreds, joined here rather than looped over in the template (~20 us apiece).
    # (An archive page links only to its neighbours.)
    parts = "" if page else "".join(
        f'<a href="{_esc(feed.id)}/{k}.html">part {k}</a>' for k in range(archives, 0, -1)
    )  # fmt: skip
    stream = template.generate(
        site=site, root=root, feed=feed, rows=lines, archives=archives, page=page,
        parts=Markup(parts),
    )  # fmt: skip
    for piece in stream:
        yield piece.encode("utf-8")


_ROW_KINDS = ("code", "project", "paper")


def _chunks(lines: Iterable[str], size: int = 100) -> Iterator[Markup]:
    # The template is streamed piece by piece, and each piece passes through Jinja's
    # generators: a hundred rows a piece instead of one.
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield Markup("".join(batch))
            batch.clear()
    if batch:
        yield Markup("".join(batch))


def _esc(text: str) -> str:
    """Escape like markupsafe (so pages stay byte-identical), without building Markup."""
    # Most titles have nothing to escape. Five `in` tests, not a loop over the characters:
    # a full build escapes several strings per reading-list row, millions of them.
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return str(escape(text))
    return text


def _reading_row(root: str, row: ListRow, links: tuple[Link, ...]) -> str:
    """Return one line of a reading list as HTML.

    Plain Python rather than a template loop: a full build writes one line per topic
    membership (millions), and this is several times faster than Jinja's per-item work.
    """
    paper_id, title, title_zh, venue, entered, hits = row
    out = f'<li><a href="{root}{paper_path(paper_id)}">{_esc(title)}</a>'
    if title_zh:
        out += f'<br><span lang="zh">{_esc(title_zh)}</span>'
    out += f'<br><span class="meta">{entered[:10]}'  # stored as UTC ISO 8601: the day
    if venue:
        out += f" · {_esc(venue)}"
    for link in links:
        if link.kind in _ROW_KINDS:
            href = safe_href(link)
            kind = _esc(link.kind)
            out += f' · <a href="{_esc(href)}">{kind}</a>' if href else f" · {kind}"
    if hits:
        out += f" · matched: {_matched_html(hits)}"
    return out + "</span></li>\n"


# A reading-list row of a front page (topics/<id>.html), from the paper id to the end of
# its line. Titles and hits are escaped, so a row is one line and cannot hold this prefix.
_FRONT_ROW = re.compile(r'^<li><a href="\.\./papers/([^"]+)\.html">.*</span></li>\n', re.MULTILINE)


def reading_rows(document: str) -> dict[str, str]:
    """Return the rows of a topic's front page this module wrote, by paper id: what a new
    render of that page may reuse for papers that did not change (a row depends on the
    paper, its links and its membership, and any change to those marks the paper)."""
    return {m.group(1): m.group(0) for m in _FRONT_ROW.finditer(document)}


@lru_cache(maxsize=65536)
def _matched_html(hits: tuple[Hit, ...]) -> str:
    # Rows of one topic mostly share their hits: worded and escaped once (hits are tuples
    # of strings: hashed in C).
    return str(escape(matched_text(hits)))


def content_html(paper: Paper, links: tuple[Link, ...]) -> str:
    """Return the body of a paper as HTML: shared by its feed items and its page.

    Plain Python rather than a template: a full build renders it for every paper (a million
    pages) and for every feed item, and this is several times faster than Jinja's macro.
    Every value is escaped as autoescape would."""
    out = ""
    if paper.title_zh:
        out += f'<p lang="zh"><strong>{_esc(paper.title_zh)}</strong></p>'
    if paper.authors:
        out += f"<p>{', '.join(map(_esc, paper.authors))}</p>"
    if paper.institutions:
        names = [
            _esc(i.name) + (f" ({_esc(i.name_zh)})" if i.name_zh and i.name_zh != i.name else "")
            for i in paper.institutions
        ]
        out += f"<p><em>{'; '.join(names)}</em></p>"
    if paper.summary:
        out += f'<p lang="zh">{_esc(paper.summary)}</p>'
    out += "<p>"
    if paper.venue:
        out += f"Venue: {_esc(paper.venue)}"
    if paper.comments:
        out += f"{'<br>' if paper.venue else ''}Comments: {_esc(paper.comments)}"
    if paper.journal_ref:
        out += f"<br>Journal ref: {_esc(paper.journal_ref)}"
    out += "</p>\n"
    if not links:
        return out + "<p>No code or project link yet.</p>"
    out += "<ul>\n"
    for kind, group in links_by_kind(links):
        for link in group:
            href, text = safe_href(link), _esc(link.url)
            shown = f'<a href="{_esc(href)}">{text}</a>' if href else text
            out += f"<li>{_esc(kind)}: {shown} — {_esc(link_words(link))}"
            if link.source != "digest":
                out += f"; found via {_esc(link.source)}"
            out += "</li>\n"
    return out + "</ul>"


@lru_cache(maxsize=8)
def _frame(site: Site, root: str) -> tuple[str, str, str]:
    # A page's frame (base.html) rendered once per site, around markers split out after:
    # the pages that are rendered by the million fill it in Python. The markers are control
    # characters, which config text never holds (removed at load, see configfile).
    html = _env().get_template("frame.html").render(site=site, root=root, title="\x00", main="\x01")
    head, rest = html.split("\x00")
    middle, tail = rest.split("\x01")
    return head, middle, tail


def render_paper(site: Site, view: PaperView) -> bytes:
    """Return a paper's page (papers/<id>.html)."""
    p = view.paper
    head, middle, tail = _frame(site, "../")
    main = f"<article>\n<h1>{_esc(p.title)}</h1>\n{content_html(p, view.links)}\n"
    main += f'<p class="meta">First seen {view.first_seen.strftime("%Y-%m-%d")}.</p>\n'
    if view.topics:
        main += "<h2>In topics</h2>\n<ul>"
        for topic_id, title, hits in view.topics:
            main += f'<li><a href="../topics/{_esc(topic_id)}.html">{_esc(title)}</a>'
            if hits:
                main += f" — matched: {_esc(matched_text(hits))}"
            main += "</li>\n"
        main += "</ul>"
    main += "</article>\n"
    title = _esc(f"{p.title} · {site.title}")
    return f"{head}{title}{middle}{main}{tail}".encode()
