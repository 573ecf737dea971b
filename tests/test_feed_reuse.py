"""Feed entries and reading-list rows of unchanged items are reused from the files written
last time, and the documents are byte for byte what rendering everything again gives."""

from __future__ import annotations

import random
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import feedparser
import pytest

from feeds.model import Hit, Item, Link
from feeds.pipeline import run
from feeds.publish import pages, parts, render
from feeds.publish.view import FeedView, Site
from feeds.sources.digest import parse
from feeds.state import Store
from feeds.state.records import ListRow
from tests.conftest import Workspace, project_config

ROOT = Path(__file__).resolve().parent.parent
SITE = Site(title="Lab <papers> & co", base_url="https://example.org/p/")
T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
FORMATS = ("rss", "atom", "json")


def _items() -> list[Item]:
    papers = [p for f in sorted((ROOT / "seeds").glob("*.txt")) for _n, p in
              parse(f.read_bytes(), f.name).papers]  # fmt: skip
    rng = random.Random(7)
    items = []
    for n, paper in enumerate(papers):
        links = (Link(f"https://github.com/x/{n}", "code", status="ok"),) if n % 3 else ()
        hits = (Hit("diffusion", "title"),) if n % 2 else ()
        items.append(Item(paper, T0 + timedelta(hours=rng.randrange(100)), links, hits))
    return items


def _view(items: list[Item], feed: str = "t") -> FeedView:
    updated = items[0].entered if items else T0
    return FeedView(feed, "Topic & <title>", "About it", updated, tuple(items), 100)


def _render(fmt: str, view: FeedView, reuse: dict[str, bytes] | None = None) -> bytes:
    if fmt == "json":
        return render.render_json_feed(SITE, view, reuse)
    return render.render_feed(SITE, view, fmt, reuse)


@pytest.mark.parametrize("fmt", FORMATS)
def test_spliced_feeds_equal_full_renders(fmt: str) -> None:
    items = _items()
    rng = random.Random(fmt)
    for _ in range(25):
        before = rng.sample(items, rng.randrange(0, 30))
        written = _render(fmt, _view(before))
        blocks = render.entry_blocks(fmt, written)
        assert len(blocks) == len(before)  # every entry found again, none invented
        # The next feed: some new items in front, some old ones dropped off the end.
        after = rng.sample(items, rng.randrange(0, 5)) + before[: rng.randrange(0, 30)]
        after = list(dict.fromkeys(after))
        assert _render(fmt, _view(after), blocks) == _render(fmt, _view(after))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_feed_made_only_of_reused_entries_equals_a_full_render(fmt: str) -> None:
    items = _items()[:12]
    blocks = render.entry_blocks(fmt, _render(fmt, _view(items)))
    assert _render(fmt, _view(items[2:]), blocks) == _render(fmt, _view(items[2:]))
    assert _render(fmt, _view([]), blocks) == _render(fmt, _view([]))


def test_only_the_new_items_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items()
    blocks = render.entry_blocks("rss", _render("rss", _view(items[2:40])))
    monkeypatch.setattr(render, "_made", {"rss": {}, "atom": {}})  # none made in this process
    built: list[int] = []
    real = render._feedgen
    monkeypatch.setattr(
        render,
        "_feedgen",
        lambda site, feed, fmt, some: built.append(len(some)) or real(site, feed, fmt, some),
    )
    render.render_feed(SITE, _view(items[:40]), "rss", blocks)
    assert built == [2]
    render.render_feed(SITE, _view(items[:40], feed="other"), "rss")
    assert built == [2, 38]  # in another feed: a paper's entry is made once, then its id put in


def test_a_papers_entry_in_another_feed_is_that_feeds_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # An entry made once for its paper, with another feed's id and hits put in, is the
    # entry feedgen writes for that feed (hits with what XML and HTML escape).
    items = _items()[:5]
    other = [replace(i, matched=(Hit('<b>&amp; ]]> "x"', "title"),)) for i in items]
    for fmt in ("rss", "atom"):
        monkeypatch.setattr(render, "_made", {"rss": {}, "atom": {}})
        render._entry.cache_clear()
        first = _render(fmt, _view(items))
        spliced = _render(fmt, _view(other, feed="other"))  # from the entries made for "t"
        monkeypatch.setattr(render, "_made", {"rss": {}, "atom": {}})
        render._entry.cache_clear()
        assert _render(fmt, _view(other, feed="other")) == spliced
        assert first != spliced
        assert b"&amp;lt;b&amp;gt;&amp;amp;amp; ]]&amp;gt;" in spliced


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_written_entry_is_found_by_its_feed_and_paper(fmt: str) -> None:
    # A run finds a topic's newest papers among last time's entries by the topic's id and
    # the paper ids alone (no title is read); another feed's ids find none of them.
    items = _items()
    blocks = render.entry_blocks(fmt, _render(fmt, _view(items)))
    assert sorted(blocks) == sorted(render.item_id("t", i.paper.paper_id) for i in items)
    assert not blocks.keys() & {render.item_id("all", i.paper.paper_id) for i in items}


def test_blocks_of_foreign_or_damaged_files_are_not_used() -> None:
    assert render.entry_blocks("rss", b"<rss><channel><item>x</item></channel></rss>") == {}
    assert render.entry_blocks("json", b'{"items": [{"id": "a"}]}') == {}
    written = _render("atom", _view(_items()[:3]))
    cut = written[: len(written) // 2]  # a file cut short: only whole entries count
    assert len(render.entry_blocks("atom", cut)) < 3


def _rows(items: list[Item]) -> list[ListRow]:
    return [
        ListRow(i.paper.paper_id, i.paper.title, i.paper.title_zh, i.paper.venue,
                i.entered.isoformat(), i.matched)
        for i in items
    ]  # fmt: skip


def _page(rows: list, links: dict[str, tuple[Link, ...]], details=None) -> str:  # type: ignore[type-arg]
    view = _view([])
    return b"".join(pages.render_topic(SITE, view, rows, links, details=details)).decode()


def test_front_page_rows_reused_equal_full_renders() -> None:
    items = _items()
    tricky = replace(items[0].paper, title='A <b>bold</b> & "quoted" title')
    items[0] = replace(items[0], paper=tricky)
    links = {i.paper.paper_id: i.links for i in items}
    papers = {i.paper.paper_id: i.paper for i in items}
    details = {k: pages.details_html(p.authors, p.summary, p.abstract) for k, p in papers.items()}
    rows = _rows(items)
    written = _page(rows, links, details)
    old = pages.reading_rows(written)
    assert len(old) == len(rows)  # every row found again, none invented
    assert all("AI summary: " in row for pid, row in old.items() if papers[pid].summary)
    rng = random.Random(3)
    for _ in range(10):
        mixed = [old[r[0]] if rng.random() < 0.7 else r for r in rows]
        rng.shuffle(mixed)
        plain = [r if isinstance(r, tuple) else next(x for x in rows if old[x[0]] == r)
                 for r in mixed]  # fmt: skip
        assert _page(mixed, links, details) == _page(plain, links, details)


def test_incremental_runs_publish_what_a_fresh_publish_writes(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds")
    subscriptions = ROOT / "config" / "subscriptions.yaml"
    config = project_config(tmp_path, subscriptions)
    seeds = sorted((tmp_path / "seeds").glob("*.txt"))
    held = tmp_path / "held"
    held.mkdir()
    for f in seeds[1:]:  # digests arrive one run at a time
        f.rename(held / f.name)
    run(config, now=lambda: T0)
    for n, f in enumerate(sorted(held.iterdir()), start=1):
        f.rename(tmp_path / "seeds" / f.name)
        run(config, now=lambda n=n: T0 + timedelta(days=n))
    public = tmp_path / "public"

    def files() -> dict[str, bytes]:  # the feeds and the reading lists
        return {str(p.relative_to(public)): p.read_bytes() for d in ("feeds", "topics")
                for p in (public / d).rglob("*") if p.is_file()}  # fmt: skip

    incremental = files()
    shutil.rmtree(public)
    run(config, now=lambda: T0 + timedelta(days=9))
    fresh = files()
    assert incremental == fresh
    assert any(name.startswith("topics/") for name in fresh)
    for name, data in fresh.items():
        if name.endswith(".xml"):
            assert not feedparser.parse(data).bozo, name


def test_what_a_publish_keeps_of_each_paper_may_be_let_go_anywhere(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A publish keeps each paper's citation, reading-list line and feed entry for the next
    # topic that lists it, up to a bound (a million papers would not fit), and lets them go
    # when it is passed: in the middle of a page or a feed, nothing may be missing. With
    # bounds of two papers, the lists let go of them over and over: the same bytes.
    config = workspace.config()
    run(config, now=lambda: T0)
    files = [p for p in workspace.public.rglob("*") if p.is_file() and "search" not in p.parts]
    before = {p: p.read_bytes() for p in files}
    monkeypatch.setattr(parts, "CITED_KEPT", 2)
    monkeypatch.setattr(parts, "ROWS_KEPT", 2)
    monkeypatch.setattr(render, "_ENTRIES", 2)
    monkeypatch.setattr(render, "_made", {"rss": {}, "atom": {}})
    run(config, now=lambda: T0, repair=True)  # everything rendered again
    assert {p: p.read_bytes() for p in files} == before
    # A page whose papers are some kept, some not, when the bound is passed (a full
    # build lists every paper first, so only a long history meets it).
    store = Store(config.settings.state, T0)
    biggest = max(store.member_counts().items(), key=lambda kv: kv[1])[0]
    rows = list(store.topic_rows(biggest, 6))
    assert len(rows) == 6
    plan = parts.Plan(workspace.public, SITE, True, {}, None, T0, {}, {}, 50)
    fresh = parts._lines(plan, store, rows, 0)
    plan.rows.clear()
    parts._lines(plan, store, rows[:3], 0)  # three kept: past the bound of two
    assert parts._lines(plan, store, rows, 0) == fresh
    store.close()
