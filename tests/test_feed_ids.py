"""Item ids and authors (SPEC.md, "Output"): a paper's item has an id of its own in each feed,
the same in every run, whatever the digest files are called and wherever the site is; RSS
items carry their authors in dc:creator and Atom entries every author. And an unchanged
item's entry is still taken from the file written last time."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import feedparser
import pytest
from lxml import etree

from feeds.model import Item, Paper
from feeds.pipeline import run
from feeds.publish import render
from feeds.publish.view import FeedView, Site
from tests.conftest import Workspace

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
NEW_DIGEST = Path(__file__).parent / "data" / "new_digest"
OTHER_BASE_URL = "https://elsewhere.example.net/lab/feeds-site/"
DC = "{http://purl.org/dc/elements/1.1/}"
ATOM = "{http://www.w3.org/2005/Atom}"

# (feed, format) -> {paper id: item id}
Ids = dict[tuple[str, str], dict[str, str]]


def _feeds(public: Path) -> list[str]:
    names = sorted(p.name.removesuffix(".json") for p in (public / "feeds").glob("*.json"))
    assert "all" in names, names
    assert len(names) > 2, names
    return names


def _paper_ids(public: Path) -> dict[str, str]:
    """Return the paper id of each title, from the JSON Feed extension."""
    items = json.loads((public / "feeds" / "all.json").read_bytes())["items"]
    return {i["title"]: i["_paperfeeds"]["paper_id"] for i in items}


def _ids(public: Path) -> Ids:
    """Return every item id in public/, by feed and format, by paper id."""
    papers = _paper_ids(public)
    found: Ids = {}
    for name in _feeds(public):
        doc = json.loads((public / "feeds" / f"{name}.json").read_bytes())
        found[name, "json"] = {i["_paperfeeds"]["paper_id"]: i["id"] for i in doc["items"]}
        for fmt in ("rss", "atom"):
            parsed = feedparser.parse((public / "feeds" / f"{name}.{fmt}.xml").read_bytes())
            assert not parsed.bozo, (name, fmt, parsed.get("bozo_exception"))
            found[name, fmt] = {papers[e.title]: e.id for e in parsed.entries}
    return found


@pytest.fixture(scope="module")
def published(new_workspace: Callable[[str], Workspace]) -> tuple[Workspace, Ids]:
    ws = new_workspace("feed-ids")
    assert run(ws.config(), now=lambda: T0).exit_code == 0
    return ws, _ids(ws.public)


def test_each_feed_gives_a_paper_an_id_of_its_own(published: tuple[Workspace, Ids]) -> None:
    ws, ids = published
    feeds = _feeds(ws.public)
    for name in feeds:
        # One id per item in a feed, the same in its three formats.
        assert ids[name, "rss"] == ids[name, "atom"] == ids[name, "json"], name
        assert len(set(ids[name, "rss"].values())) == len(ids[name, "rss"]), name
    by_paper: dict[str, list[str]] = {}
    for name in feeds:
        for paper, item in ids[name, "rss"].items():
            by_paper.setdefault(paper, []).append(item)
    assert by_paper.keys() == set(_paper_ids(ws.public).values())
    assert any(len(items) > 2 for items in by_paper.values())  # in `all` and two topics
    for paper, items in by_paper.items():
        assert len(set(items)) == len(items), f"{paper}: one id in several feeds: {items}"
    every = [item for items in by_paper.values() for item in items]
    assert len(set(every)) == len(every)  # no two items of any feeds share an id
    for item in every:
        text = item.removeprefix("urn:uuid:")
        assert item.startswith("urn:uuid:"), item
        assert str(uuid.UUID(text)) == text, item
        assert uuid.UUID(text).version == 5, item


def test_item_ids_come_from_the_feed_and_the_paper_alone(
    published: tuple[Workspace, Ids], new_workspace: Callable[[str], Workspace]
) -> None:
    _ws, ids = published
    for (name, _fmt), items in ids.items():
        for paper, item in items.items():
            assert item == render.item_id(name, paper)
    # Another run elsewhere: digest files renamed, another base URL, another clock.
    other = new_workspace("feed-ids-other")
    for path in sorted(other.inbox.iterdir()):
        path.rename(path.with_name("renamed-" + path.name))
    settings = other.root / "config" / "settings.yaml"
    settings.write_text(f"site:\n  title: Other\n  base_url: {OTHER_BASE_URL}\n", "utf-8")
    config = other.config(settings=settings)
    assert run(config, now=lambda: T0 + timedelta(days=40)).exit_code == 0
    assert _ids(other.public) == ids
    assert OTHER_BASE_URL in (other.public / "feeds" / "all.rss.xml").read_text("utf-8")


def test_item_id_is_a_version_5_uuid_in_the_feeds_namespace() -> None:
    # The id is spelled out from SHA-1 by hand (no UUID object per item): it must be what
    # uuid.uuid5 gives, in the namespace that is the feed's own id.
    for feed in ("all", "speculative-decoding", "图", ""):
        view = FeedView(feed, "t", "", T0, (), 10)
        namespace = uuid.UUID(render.feed_id(view).removeprefix("urn:uuid:"))
        for paper in ("0123456789abcdef", "fedcba9876543210", "5" * 16):
            assert render.item_id(feed, paper) == f"urn:uuid:{uuid.uuid5(namespace, paper)}"
    assert render.item_id("a", "0123456789abcdef") != render.item_id("b", "0123456789abcdef")


def _authors(public: Path, name: str) -> dict[str, list[str]]:
    items = json.loads((public / "feeds" / f"{name}.json").read_bytes())["items"]
    return {i["title"]: i["_paperfeeds"]["authors"] for i in items}


def test_atom_entries_list_every_author(published: tuple[Workspace, Ids]) -> None:
    ws, _ids = published
    for name in _feeds(ws.public):
        authors = _authors(ws.public, name)
        entries = feedparser.parse((ws.public / "feeds" / f"{name}.atom.xml").read_bytes()).entries
        assert len(entries) == len(authors), name
        for e in entries:
            assert [a["name"] for a in e.get("authors", [])] == authors[e.title], e.title
    assert any(len(a) > 3 for a in _authors(ws.public, "all").values())


def test_rss_items_carry_their_authors_in_dc_creator(published: tuple[Workspace, Ids]) -> None:
    ws, _ids = published
    for name in _feeds(ws.public):
        authors = _authors(ws.public, name)
        data = (ws.public / "feeds" / f"{name}.rss.xml").read_bytes()
        for e in feedparser.parse(data).entries:
            if authors[e.title]:
                assert e.author == ", ".join(authors[e.title]), e.title
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False))
        for item in root.iter("item"):
            title = item.findtext("title")
            creators = [c.text for c in item.findall(f"{DC}creator")]
            assert creators == ([", ".join(authors[title])] if authors[title] else []), title
            # RSS 2.0's <author> is an email address: never a name.
            assert item.find("author") is None, title


def _paper(n: int, authors: int) -> Paper:
    names = tuple(f"Author {k} of {n}" for k in range(authors))
    return Paper(f"{n:016x}", f"Paper number {n}", authors=names)


def test_long_author_lists_are_kept_whole() -> None:
    site = Site("Lab", "https://example.org/")
    items = (Item(_paper(1, 45), T0), Item(_paper(2, 1), T0), Item(_paper(3, 0), T0))
    view = FeedView("t", "Topic", "", T0, items, 10)
    atom = feedparser.parse(render.render_feed(site, view, "atom")).entries
    assert [len(e.get("authors", [])) for e in atom] == [45, 1, 0]
    assert atom[0].authors[-1]["name"] == "Author 44 of 1"
    rss = render.render_feed(site, view, "rss")
    entries = feedparser.parse(rss).entries
    assert entries[0].author.endswith(", Author 44 of 1")
    assert entries[1].author == "Author 0 of 2"
    assert "author" not in entries[2]
    assert b"<author>" not in rss
    assert b"dc:creator" not in render.render_feed(site, view, "atom")


def _blocks(public: Path, name: str) -> dict[str, dict[str, bytes]]:
    out = {}
    for fmt, file in (("rss", f"{name}.rss.xml"), ("atom", f"{name}.atom.xml"),
                      ("json", f"{name}.json")):  # fmt: skip
        out[fmt] = render.entry_blocks(fmt, (public / "feeds" / file).read_bytes())
    return out


def test_unchanged_entries_are_reused_from_the_files(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = workspace.config()
    assert run(config, now=lambda: T0).exit_code == 0
    feeds = _feeds(workspace.public)
    before = {name: _blocks(workspace.public, name) for name in feeds}
    known = set(_paper_ids(workspace.public).values())
    for path in NEW_DIGEST.glob("*.txt"):
        shutil.copy(path, workspace.inbox / path.name)
    built: dict[str, list[str]] = {"rss": [], "atom": []}
    real_feedgen = render._feedgen

    def spy(site: Site, feed: FeedView, fmt: str, items: list[Item]) -> Any:
        built[fmt] += [i.paper.title for i in items]
        return real_feedgen(site, feed, fmt, items)

    monkeypatch.setattr(render, "_feedgen", spy)
    summary = run(config, now=lambda: T0 + timedelta(days=1))
    assert summary.exit_code == 0, summary
    assert summary.papers_new == 3, summary
    papers = _paper_ids(workspace.public)
    new = set(papers.values()) - known
    assert len(new) == 3
    # MineDraft came again with a code link: its entries change too.
    changed = {papers["MineDraft: A Framework for Batch Parallel Speculative Decoding"]}
    for name in ("all", "speculative-decoding"):
        after = _blocks(workspace.public, name)
        kept = 0
        for fmt, blocks in after.items():
            for paper, key in _by_paper(name, blocks, papers).items():
                if paper in new or paper in changed:
                    continue
                assert blocks[key] == before[name][fmt][key], (name, fmt, paper)
                kept += 1
        assert kept > 0, name
    # Only the new and the changed papers' RSS and Atom entries were built, each once for
    # all the feeds that carry it.
    titles = {t for t, p in papers.items() if p in new | changed}
    for fmt in ("rss", "atom"):
        assert sorted(built[fmt]) == sorted(titles), (fmt, built[fmt])


def _by_paper(feed: str, blocks: dict[str, bytes], papers: dict[str, str]) -> dict[str, str]:
    """Return the item id of each paper (of `papers`) in the feed's blocks."""
    return {p: key for p in papers.values() if (key := render.item_id(feed, p)) in blocks}
