"""Render the site's HTML pages to bytes: the front page, reading lists, paper pages and
the search page. Same views in, same bytes out; the only I/O is Jinja's bytecode cache
(cache_dir) and reading the package's own CSS and scripts, both once per process."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from markupsafe import Markup, escape

from feeds.match.hits import matched_text
from feeds.model import Hit, Item, Link, Paper
from feeds.publish.content import bdi, blurb, content_html, esc
from feeds.publish.formats import DISCOVERY, FEED_FORMATS, LIST_FORMATS
from feeds.publish.paths import ALL
from feeds.publish.view import (
    FeedView,
    PaperView,
    Site,
    feed_path,
    links_by_kind,
    look_elsewhere,
    paper_path,
    safe_href,
    short_words,
    topic_path,
)
from feeds.state.records import ListRow
from feeds.text import strip_bidi
from feeds.words import first_authors

if TYPE_CHECKING:
    from feeds.publish.cite import Citation

ASSETS_DIR = Path(__file__).parent / "assets"


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
        feed_formats=FEED_FORMATS, discovery=DISCOVERY, list_formats=LIST_FORMATS,
        links_by_kind=links_by_kind,
    )  # fmt: skip
    env.filters["matched"] = matched_text
    # The site's style and scripts, put in the pages that use them (see base.html).
    env.globals["css"] = {name: _asset(f"{name}.css") for name in ("page", "lists")}
    env.globals["js"] = {name: _asset(f"{name}.js") for name in ("copy", "search")}
    return env


@cache
def _asset(name: str) -> Markup:
    return Markup((ASSETS_DIR / name).read_text("utf-8").strip())


def render_icon() -> bytes:
    """Return the site's icon (favicon.svg)."""
    return (ASSETS_DIR / "favicon.svg").read_bytes()


def render_search(site: Site) -> bytes:
    """Return the search page (search.html): the box, and results drawn by search.js."""
    return _env().get_template("search.html").render(site=site, root="").encode("utf-8")


def render_index(site: Site, feeds: list[FeedView], all_feed: FeedView) -> bytes:
    template = _env().get_template("index.html")
    links: list[str] = []
    rows: list[str] = []
    for f in [all_feed, *feeds]:
        title = esc(f.title)
        shown = "All papers" if f.id == ALL else title
        for fmt in DISCOVERY:
            links.append(
                f'<link rel="alternate" type="{fmt.media_type}" title="{title} ({fmt.label})"'
                f' href="{esc(feed_path(f.id, fmt.name))}">\n'
            )
        page = esc(topic_path(f.id))
        about = f'<br><span class="meta">{esc(f.description)}</span>' if f.description else ""
        rows.append(
            f'<tr><td><a href="{page}">{shown}</a>{about}</td>'
            f'<td>{f.count}</td><td class="sub"><a href="{page}#subscribe">Subscribe'
            f'<span class="vh"> to {shown}</span></a></td></tr>\n'
        )
    latest = [i for i in all_feed.items[:30] if isinstance(i, Item)]  # all are Items
    newest = "".join(item_row("", i.paper, i.entered.isoformat(), i.links) for i in latest)
    html = template.render(
        site=site,
        root="",
        feed_links=Markup("".join(links)),
        topic_rows=Markup("".join(rows)),
        topics=feeds,
        papers=all_feed.count,
        latest=Markup(newest),
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
    details: Mapping[str, str] | None = None,
) -> Iterator[bytes]:
    """Yield a page of a topic's reading list in pieces: the newest papers (page 0, at
    topics/<id>.html) or archive page `page` (topics/<id>/<page>.html), with links to the
    `archives` archive pages.

    A row given as a string is its line as this page rendered it before (see
    reading_rows); only the others are rendered, each with its paper's authors and one-line
    summary as `details` has them (see details_html)."""
    template = _env().get_template("topic.html")
    root = "../../" if page else "../"
    details = details or {}
    rows = list(rows)
    lines = _chunks(
        row
        if isinstance(row, str)
        else _reading_row(root, row, links.get(row[0], ()), details.get(row[0], ""))
        for row in rows
    )
    # The front page links to every archive part, newest first: a long history has
    # hundreds, joined here rather than looped over in the template (~20 us apiece).
    # (An archive page links only to its neighbours.)
    parts = "" if page else "".join(
        f'<a href="{esc(feed.id)}/{k}.html">part {k}</a>' for k in range(archives, 0, -1)
    )  # fmt: skip
    stream = template.generate(
        site=site, root=root, feed=feed, rows=lines, archives=archives, page=page,
        parts=Markup(parts), rows_here=len(rows),
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


def details_html(authors: Sequence[str], summary: str | None, abstract: str | None) -> str:
    """Return the lines of a reading-list row that depend on the paper alone: its first
    authors and a one-line summary (the AI summary's first sentence, labelled; else the
    abstract's). Each text of the digest is a bidi isolate (see bdi), as in row_ends."""
    out = ""
    if authors:
        named, more = first_authors(authors)
        shown = ", ".join(bdi(esc(a)) for a in named)
        out += f'<br><span class="au">{shown}{" et al." if more else ""}</span>'
    text, ai = blurb(summary, abstract)
    if ai:
        out += (
            f'<br><span class="sum">AI summary: <span lang="zh" dir="auto">{esc(text)}</span>'
            "</span>"
        )
    elif text:
        out += f'<br><span class="sum" dir="auto">{esc(text)}</span>'
    return out


def stored_details(authors: str, summary: str | None, abstract: str | None) -> str:
    """Return details_html from the texts as the state keeps them (authors as JSON)."""
    return details_html(json.loads(authors), summary, abstract)


def item_row(root: str, paper: Paper, entered: str, links: tuple[Link, ...]) -> str:
    """Return a paper's line in a list that is not a topic's (the front page's latest)."""
    row = ListRow(paper.paper_id, paper.title, paper.title_zh, paper.venue, entered, ())
    details = details_html(paper.authors, paper.summary, paper.abstract)
    return _reading_row(root, row, links, details)


def _reading_row(root: str, row: ListRow, links: tuple[Link, ...], details: str) -> str:
    """Return one line of a reading list as HTML: title, Chinese title, first authors, a
    one-line summary, when it was added, venue, why it matched, and the code / project /
    paper links with their status.

    Plain Python rather than a template loop: a full build writes one line per topic
    membership (millions), and this is several times faster than Jinja's per-item work.
    """
    return row_with(root, row, row_ends(row, links, details))


def row_ends(row: ListRow, links: tuple[Link, ...], details: str) -> tuple[str, str]:
    """Return what a paper's reading-list line holds before and after what its topic says
    of it (when it was added and why it matched): the same in every topic that lists it,
    made once (see row_with). Each text of the digest is a bidi isolate (see bdi)."""
    _paper_id, title, title_zh, _venue, _entered, _hits = row
    head = f"{bdi(esc(title))}</a>"
    if title_zh:
        head += f'<br><span lang="zh" dir="auto">{esc(title_zh)}</span>'
    head += details
    tail = "</span>"
    shown = [link for link in links if link.kind in _ROW_KINDS]
    if shown:
        said = []
        for link in shown:
            href = safe_href(link)
            kind = esc(link.kind)
            said.append(f'<a href="{esc(href)}">{kind}</a>' if href else kind)
        tail += f'<br><span class="links">{" · ".join(said)}</span>'
        said = [f"{link.kind} {short_words(link)}" for link in shown if link.kind != "paper"]
        if said:
            tail += f'<span class="st"> — {esc(", ".join(said))}</span>'
    return head, tail + "</li>\n"


def row_with(root: str, row: ListRow, ends: tuple[str, str]) -> str:
    """Return a reading-list line from its paper's ends (see row_ends) and its topic's row."""
    paper_id, _title, _title_zh, venue, entered, hits = row
    # Entry dates are stored as UTC ISO 8601: the day.
    out = f'<li><a href="{root}{paper_path(paper_id)}">{ends[0]}<br><span class="meta">added '
    out += entered[:10]
    if venue:
        out += f" · {bdi(esc(venue))}"
    if hits:
        out += f" · matched: {_matched_html(hits)}"
    return out + ends[1]


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


@lru_cache(maxsize=8)
def _frame(site: Site, root: str) -> tuple[str, str, str, str]:
    # A page's frame (base.html) rendered once per site, around markers split out after:
    # the pages that are rendered by the million fill it in Python. The markers are control
    # characters, which config text never holds (removed at load, see configfile).
    html = (
        _env()
        .get_template("frame.html")
        .render(site=site, root=root, title="\x00", head="\x02", main="\x01")
    )
    before_title, rest = html.split("\x00")
    before_head, rest = rest.split("\x02")
    before_main, tail = rest.split("\x01")
    return before_title, before_head, before_main, tail


def _about(view: PaperView) -> str:
    """Return the line under a paper's body: when it was added, its arXiv id, categories."""
    p = view.paper
    said = [f"Added {view.first_seen.strftime('%Y-%m-%d')}"]
    if p.arxiv_id:
        said.append(
            f'arXiv <a href="https://arxiv.org/abs/{esc(p.arxiv_id)}">{esc(p.arxiv_id)}</a>'
        )
    if p.categories:
        said.append(esc(", ".join(p.categories)))
    return f'<p class="meta">{" · ".join(said)}.</p>\n'


def render_paper(site: Site, view: PaperView, cited: tuple[Citation, str] | None = None) -> bytes:
    """Return a paper's page (papers/<id>.html), with its citation for reference managers:
    the Highwire tags in its head and its BibTeX entry to copy. `cited`: its citation and
    BibTeX entry, when made already (its topics' reading lists list it too)."""
    from feeds.publish import cite

    p = view.paper
    start, middle, before_main, tail = _frame(site, "../")
    if cited is None:
        c = cite.citation(p, view.links, view.first_seen, site.url(paper_path(p.paper_id)))
        cited = c, cite.bibtex_entry(c, c.key)
    c, bibtex = cited
    main = f"<article>\n<h1>{esc(p.title)}</h1>\n{content_html(p, view.links, isolate=True)}\n"
    if not any(link.kind == "code" for link in view.links):
        searches = look_elsewhere(p.title)
        found = " · ".join(f'<a href="{esc(url)}">{name}</a>' for name, url in searches)
        main += f'<p class="elsewhere">Look for its code by title: {found}.</p>\n'
    main += _about(view)
    if view.topics:
        main += "<h2>In topics</h2>\n<ul>"
        for topic_id, title, hits in view.topics:
            main += f'<li><a href="../topics/{esc(topic_id)}.html">{esc(title)}</a>'
            if hits:
                main += f" — matched: {_matched_html(hits)}"
            main += "</li>\n"
        main += "</ul>"
    main += _cite_html(bibtex, view.topics)
    main += "</article>\n"
    # A tab's title holds no markup to isolate the paper's with: its bidi controls go.
    title = esc(f"{strip_bidi(p.title)} · {site.title}")
    return f"{start}{title}{middle}{cite.meta_tags(c)}{before_main}{main}{tail}".encode()


def _cite_html(bibtex: str, topics: Sequence[tuple[str, str, tuple[Hit, ...]]]) -> str:
    """Return a paper page's "Cite" section: its BibTeX entry with a copy button, and how
    to take it (or its topics' reading lists) into a reference manager."""
    lists = ", ".join(
        f'<a href="../{esc(feed_path(tid, "bibtex"))}">{esc(title)}</a>'
        for tid, title, _h in topics
    )
    also = f" Every paper of a topic: {lists} (BibTeX)." if lists else ""
    return (
        '<section class="cite" aria-labelledby="cite-h">\n<h2 id="cite-h">Cite</h2>\n'
        f'<pre id="bibtex">{esc(bibtex)}</pre>\n'
        '<p><button type="button" class="copy" data-copy="bibtex" data-what="the BibTeX entry"'
        " hidden>Copy BibTeX</button> Zotero's browser connector saves this page as a paper;"
        f" a reference manager also imports the entry above.{also}</p>\n"
        '<p class="copied" role="status" aria-live="polite"></p>\n'
        f"<script>{_asset('copy.js')}</script>\n</section>\n"
    )


def reusable_rows(path: Path, dirty_papers: set[str]) -> dict[str, str]:
    """Return the rows of a reading list's front page written before, by paper id, but
    those of changed papers ({} when there is none)."""
    try:
        document = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    return {k: v for k, v in reading_rows(document).items() if k not in dirty_papers}
