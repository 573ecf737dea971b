"""The site a person uses: public/ after `feeds run` (SPEC.md, "Output").

Layout, internal links, page basics, feed autodiscovery, OPML, topic pages that list every
paper, and escaping of hostile digest text in every file; a property test renders feeds from
arbitrary text.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from xml.etree import ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from feeds.model import Hit, Item, Link, Paper
from feeds.pipeline import run
from feeds.publish.render import render_feed, render_json_feed
from feeds.publish.view import FeedView, Site
from feeds.text import paper_id

DATA = Path(__file__).parent / "data"
SEED_PAPERS = 60
DEFAULT_BASE_URL = "http://localhost:8000/"
FIXED = datetime(2026, 3, 2, 8, 30, 0, tzinfo=UTC)
FEED_SUFFIXES = (".rss.xml", ".atom.xml", ".json")
# XML 1.0 forbids these (Char production); C1 controls are dropped at ingest as well.
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


class _Page(HTMLParser):
    """What a page links to and declares."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []  # (tag, href or src)
        self.starttags: list[tuple[str, dict[str, str | None]]] = []
        self.text: dict[str, list[str]] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.starttags.append((tag, a))
        for name in ("href", "src"):
            if a.get(name) is not None:
                self.refs.append((tag, a[name] or ""))
        if tag in ("h1", "title"):
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for tag in self._open:
            self.text.setdefault(tag, []).append(data)

    def tags(self, name: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.starttags if t == name]


def _page(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text("utf-8"))
    p.close()
    return p


def _files(public: Path) -> set[str]:
    return {str(p.relative_to(public)) for p in public.rglob("*") if p.is_file()}


def _html_pages(public: Path) -> list[Path]:
    pages = sorted(public.rglob("*.html"))
    assert pages
    return pages


def _is_external(ref: str) -> bool:
    return urlsplit(ref).scheme in ("http", "https", "mailto")


# --- the site of one CLI run over the seeds -----------------------------------------------


@pytest.fixture(scope="module")
def site(new_workspace, feeds_cli):
    ws = new_workspace("site")
    rel = ["--subscriptions", "config/subscriptions.yaml", "--inbox", "inbox",
           "--public", "public", "--state", "state/state.sqlite3"]  # fmt: skip
    proc = feeds_cli(ws.root, "run", *rel, "--json", "--offline")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["papers_new"] == SEED_PAPERS
    assert summary["exit_code"] == 0
    return ws, ws.config()


@pytest.fixture(scope="module")
def public(site) -> Path:
    return site[0].public


def test_public_holds_every_page_and_feed(site, public):
    topic_ids = [t.id for t in site[1].topics]
    files = _files(public)
    assert {"index.html", "feeds.opml"} <= files
    # Every topic's reading list, and the list of every paper (60: one page), each also
    # for a reference manager.
    assert {f for f in files if f.startswith("topics/")} == {
        f"topics/{t}.{x}" for t in [*topic_ids, "all"] for x in ("html", "bib", "ris")
    }
    assert "search.html" in files
    assert {f for f in files if f.startswith("feeds/")} == {
        f"feeds/{name}{suffix}" for name in ["all", *topic_ids] for suffix in FEED_SUFFIXES
    }
    papers = {f for f in files if f.startswith("papers/")}
    assert len(papers) == SEED_PAPERS
    assert all(re.fullmatch(r"papers/[0-9a-f]{16}\.html", f) for f in papers)
    assert not [f for f in files if Path(f).name.startswith(".")], "temp files left behind"


def test_every_internal_link_resolves(public):
    root = public.resolve()
    broken = []
    for page in _html_pages(public):
        for tag, ref in _page(page).refs:
            if _is_external(ref):
                continue
            parts = urlsplit(ref)
            if not parts.path and parts.fragment:
                continue  # "#section" on the same page
            target = (page.parent / unquote(parts.path)).resolve()
            if parts.scheme or not target.is_relative_to(root) or not target.is_file():
                broken.append(f"{page.relative_to(public)}: <{tag}> {ref!r}")
    assert not broken, "\n".join(broken[:20])


# The site's own scripts, each where it earns its place: the copy buttons (the index and
# topics' front pages) and search (its page); in the page, nothing loaded from elsewhere.
SCRIPTS = {"index.html": 1, "search.html": 1}


def _scripts_expected(where: str) -> int:
    if where in SCRIPTS:
        return SCRIPTS[where]
    # A topic's front page copies feed addresses; a paper's page copies its BibTeX.
    return 1 if re.fullmatch(r"(topics|papers)/[^/]+\.html", where) else 0


def test_pages_are_usable_on_a_phone_and_run_only_our_scripts(public):
    for page in _html_pages(public):
        raw = page.read_text("utf-8")
        p = _page(page)
        where = str(page.relative_to(public))
        assert raw.lstrip().lower().startswith("<!doctype html>"), where
        assert [a.get("lang") for a in p.tags("html")] != [None], where
        assert all(a.get("lang") for a in p.tags("html")), where
        assert [a for a in p.tags("meta") if a.get("name") == "viewport"], where
        assert [a for a in p.tags("meta") if (a.get("charset") or "").lower() == "utf-8"], where
        assert len(p.tags("script")) == _scripts_expected(where), where
        assert not [a for a in p.tags("script") if a.get("src")], where
        assert "".join(p.text.get("title", [])).strip(), where


def test_index_announces_the_feeds(public):
    alternates = [
        a for a in _page(public / "index.html").tags("link") if a.get("rel") == "alternate"
    ]
    types = {a.get("type") for a in alternates}
    assert {"application/rss+xml", "application/atom+xml", "application/feed+json"} <= types
    hrefs = {a.get("href") for a in alternates}
    for suffix in FEED_SUFFIXES:
        assert f"feeds/all{suffix}" in hrefs
    for a in alternates:
        assert a.get("title"), a
        assert (public / str(a.get("href"))).is_file(), a


def test_every_paper_page_is_linked_from_the_index_or_a_topic(public):
    linked = set()
    for page in [public / "index.html", *sorted((public / "topics").glob("*.html"))]:
        for _tag, ref in _page(page).refs:
            if "papers/" in ref and not _is_external(ref):
                linked.add((page.parent / ref).resolve())
    assert {p.resolve() for p in (public / "papers").glob("*.html")} <= linked


def test_the_all_papers_list_links_every_paper_and_is_linked_from_the_index(public):
    index = _page(public / "index.html")
    assert "topics/all.html" in [ref for _tag, ref in index.refs]
    listed = [ref for _tag, ref in _page(public / "topics/all.html").refs if "papers/" in ref]
    assert len(listed) == len(set(listed)) == SEED_PAPERS


def test_opml_lists_feeds_that_exist(site, public):
    tree = ET.parse(public / "feeds.opml")
    assert tree.getroot().tag == "opml"
    urls = [o.get("xmlUrl") for o in tree.iter("outline") if o.get("xmlUrl")]
    assert urls
    for url in urls:
        assert url.startswith(DEFAULT_BASE_URL), url
        assert (public / url.removeprefix(DEFAULT_BASE_URL)).is_file(), url
    named = {Path(urlsplit(u).path).name.split(".")[0] for u in urls}
    assert {t.id for t in site[1].topics} <= named


def test_topic_pages_list_every_paper_and_feeds_carry_max_items(workspace):
    """A topic page is the whole reading list; its feeds carry the newest max_items."""
    subscriptions = workspace.root / "capped.yaml"
    criteria = """
    any: [reasoning, chain-of-thought, CoT, GRPO, 推理, 思维链]
    all: [[LLM*, language model*, 大语言模型, 语言模型, reasoning model*, 推理模型]]
    none: [image quality]"""
    subscriptions.write_text(
        f"topics:\n  - id: capped\n    title: Capped\n    max_items: 2{criteria}\n"
        f"  - id: full\n    title: Full{criteria}\n",
        "utf-8",
    )
    run(workspace.config(subscriptions), now=lambda: FIXED)
    public = workspace.public
    full = json.loads((public / "feeds/full.json").read_text("utf-8"))["items"]
    assert len(full) > 2
    listed = [
        Path(ref).stem
        for _tag, ref in _page(public / "topics/capped.html").refs
        if ref.startswith("../papers/")
    ]
    assert listed == [i["_paperfeeds"]["paper_id"] for i in full]
    capped = json.loads((public / "feeds/capped.json").read_text("utf-8"))["items"]
    # The same papers (each feed gives an item an id of its own; the paper id ties them).
    pid = "_paperfeeds"
    assert [i[pid]["paper_id"] for i in capped] == [i[pid]["paper_id"] for i in full[:2]]
    assert not {i["id"] for i in capped} & {i["id"] for i in full}
    for suffix in (".rss.xml", ".atom.xml"):
        root = etree.parse(str(public / f"feeds/capped{suffix}")).getroot()
        entries = root.findall(".//item") + root.findall(".//{http://www.w3.org/2005/Atom}entry")
        assert len(entries) == 2, suffix


def test_a_rejected_input_still_publishes_and_exits_3(workspace, feeds_cli):
    shutil.copy(DATA / "digests" / "error_page.txt", workspace.inbox / "zz_error_page.txt")
    proc = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert proc.returncode == 3, proc.stderr
    assert "zz_error_page.txt" in proc.stderr + proc.stdout
    assert len(list((workspace.public / "papers").glob("*.html"))) == SEED_PAPERS
    assert (workspace.public / "feeds" / "all.atom.xml").is_file()


# --- hostile text ------------------------------------------------------------------------

HOSTILE_TITLE = "Fast & <b>Bold</b> \"Quoted\" 'Tricky' Attention\x01 for\x0b Everyone"
HOSTILE_DIGEST = (
    "ICML\n\n"
    f"{HOSTILE_TITLE}\n\n"
    "快速 & <b>粗体</b> 注意力\x01\n\n"
    'Alice O\'Neil, Bob "Bobby" Tables, Carol <carol@example.org>\n\n'
    "机构 * Evil & Co <i>Labs</i>（邪恶 & 公司） 纠错\n\n"
    'AI总结 <script>alert(1)</script> 一种新的注意力方法 & 更多 "引号"\x0b。\n\n'
    'Comments Code: https://github.com/example/bold?x=1&y=<2>"q"\x0c see javascript:alert(1)\n'
)
HOSTILE_TOPICS = """\
topics:
  - id: tricky
    title: "Tricky & <odd> \\"topic\\""
    description: "<script>alert(2)</script> & more"
    any: [bold]
"""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.fixture(scope="module")
def hostile(new_workspace) -> Path:
    ws = new_workspace("hostile")
    (ws.inbox / "zz_hostile.txt").write_text(HOSTILE_DIGEST, "utf-8")
    subscriptions = ws.root / "tricky.yaml"
    subscriptions.write_text(HOSTILE_TOPICS, "utf-8")
    summary = run(ws.config(subscriptions), now=lambda: FIXED)
    assert summary.papers_new == SEED_PAPERS + 1
    assert summary.new_matches == {"tricky": 1}
    return ws.public


def test_hostile_text_leaves_every_feed_well_formed(hostile):
    strict = etree.XMLParser(recover=False, resolve_entities=False)
    xml_files = [*sorted(hostile.glob("feeds/*.xml")), hostile / "feeds.opml"]
    for path in xml_files:
        etree.fromstring(path.read_bytes(), strict)
    for path in sorted(hostile.glob("feeds/*.json")):
        json.loads(path.read_text("utf-8"))


def test_hostile_text_is_escaped_not_lost(hostile):
    clean = CONTROL.sub("", HOSTILE_TITLE)
    titles = {
        "rss": etree.parse(str(hostile / "feeds/tricky.rss.xml")).findtext("channel/item/title"),
        "atom": etree.parse(str(hostile / "feeds/tricky.atom.xml")).findtext(
            "{http://www.w3.org/2005/Atom}entry/{http://www.w3.org/2005/Atom}title"
        ),
        "json": json.loads((hostile / "feeds/tricky.json").read_text("utf-8"))["items"][0]["title"],
    }
    assert titles == dict.fromkeys(titles, clean)
    (item,) = json.loads((hostile / "feeds/tricky.json").read_text("utf-8"))["items"]
    page = _page(hostile / f"papers/{item['_paperfeeds']['paper_id']}.html")
    assert "".join(page.text["h1"]).strip() == clean
    assert "<script>alert(1)</script>" in item["_paperfeeds"]["summary_zh"]  # data, as given


def test_hostile_text_runs_no_script_anywhere(hostile):
    for page in _html_pages(hostile):
        raw = page.read_text("utf-8").lower()
        p = _page(page)
        where = str(page.relative_to(hostile))
        assert raw.count("<script") == len(p.tags("script")) == _scripts_expected(where), where
    # HTML carried inside the feeds is escaped too: a reader renders it as text.
    for path in sorted(hostile.glob("feeds/*.json")):
        for item in json.loads(path.read_text("utf-8"))["items"]:
            assert "<script" not in item["content_html"].lower(), path.name
            assert "<b>" not in item["content_html"], path.name
    for path in sorted(hostile.glob("feeds/*.xml")):
        for el in etree.parse(str(path)).getroot().iter():
            if _carries_html(el):
                assert "<script" not in (el.text or "").lower(), f"{path.name} <{el.tag}>"


def _carries_html(el: Any) -> bool:
    """Return True for feed elements whose text readers render as HTML."""
    if not isinstance(el.tag, str):
        return False
    name = etree.QName(el).localname
    if etree.QName(el).namespace == "http://www.w3.org/2005/Atom":
        return name in ("content", "summary", "title") and el.get("type") == "html"
    return name in ("description", "encoded")  # RSS 2.0: entity-encoded HTML


def test_hostile_text_leaves_no_control_characters(hostile):
    for path in sorted(hostile.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text("utf-8")
        found = CONTROL.findall(text)
        assert not found, f"{path.relative_to(hostile)}: {found[:5]}"
        if path.suffix == ".json":
            for s in _strings(json.loads(text)):
                assert not CONTROL.search(s), f"{path.name}: {s!r}"


# --- property: any text renders to well-formed feeds --------------------------------------

ANY_TEXT = st.text(max_size=40)
XML_TEXT = ANY_TEXT.map(lambda s: CONTROL.sub("", s))


def _feed(title: str, summary: str, authors: list[str], feed_title: str) -> FeedView:
    paper = Paper(
        paper_id=paper_id(title),
        title=title,
        title_zh=summary or None,
        authors=tuple(authors),
        summary=summary or None,
        comments=summary or None,
        venue="ICML",
    )
    item = Item(
        paper,
        FIXED,
        links=(Link("https://github.com/example/x?a=1&b=2", "code"),),
        matched=(Hit(summary or "x", "summary"),),
    )
    older = Item(Paper(paper_id("older"), "Older"), FIXED - timedelta(days=1))
    return FeedView("t", feed_title, summary, FIXED, (item, older), 10)


def _check_rendered(title: str, summary: str, authors: list[str], feed_title: str) -> None:
    site = Site(title=feed_title, base_url="https://example.org/p/")
    feed = _feed(title, summary, authors, feed_title)
    strict = etree.XMLParser(recover=False, resolve_entities=False)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("rss", "atom"):
            path = Path(tmp) / f"t.{fmt}.xml"
            path.write_bytes(render_feed(site, feed, fmt))
            root = etree.fromstring(path.read_bytes(), strict)
            entries = root.findall("channel/item") + root.findall(
                "{http://www.w3.org/2005/Atom}entry"
            )
            assert len(entries) == 2, fmt
        path = Path(tmp) / "t.json"
        path.write_bytes(render_json_feed(site, feed))
        doc = json.loads(path.read_text("utf-8"))
        assert [i["title"] for i in doc["items"]] == [title, "Older"]


_PROPERTY = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_PROPERTY
@given(
    title=XML_TEXT.filter(str.strip),
    summary=XML_TEXT,
    authors=st.lists(XML_TEXT.filter(str.strip), max_size=3),
    feed_title=XML_TEXT.filter(str.strip),
)
def test_any_xml_legal_text_renders_well_formed_feeds(title, summary, authors, feed_title):
    _check_rendered(title, summary, authors, feed_title)


@_PROPERTY
@given(
    title=ANY_TEXT.filter(str.strip),
    summary=ANY_TEXT,
    authors=st.lists(ANY_TEXT.filter(str.strip), max_size=3),
    feed_title=ANY_TEXT.filter(str.strip),
)
def test_any_text_at_all_renders_well_formed_feeds(title, summary, authors, feed_title):
    """The renderer is the last line of defence: what XML forbids must not reach a feed."""
    _check_rendered(title, summary, authors, feed_title)


@given(st.text(alphabet=st.sampled_from("&<>\"'a 中\x00é")) | st.text())
def test_the_fast_escape_is_markupsafes(text: str) -> None:
    from markupsafe import escape

    from feeds.publish.content import esc

    for special in "&<>\"'":  # each alone, wherever the text puts it
        assert esc(text + special) == str(escape(text + special))
    assert esc(text) == str(escape(text))
