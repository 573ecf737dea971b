"""Publish: render what changed since the last publish, from the state, into public/.

A run marks in the state what it changed (papers, topics); this renders those papers'
pages and those topics' feeds and pages, plus the index and OPML, and nothing else. When
the site settings change or public/ is missing, everything is rendered again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from feeds import __version__
from feeds.config import Config
from feeds.publish.write import Writer, WriteStats, cannot_write, sweep
from feeds.store import ListRow, Store

if TYPE_CHECKING:
    from feeds.model import Hit, Paper
    from feeds.publish.view import FeedView, PaperView, Site

ALL = "all"


# Bumped whenever what the renderers write changes: the next publish writes everything
# again (and reuses no feed entry written the old way).
RENDER_FORMAT = 2


def _site_key(config: Config) -> str:
    s = config.settings
    data = [s.site_title, s.base_url, s.max_items, str(Path(s.public_dir).resolve())]
    data += [RENDER_FORMAT, __version__]
    # The text itself, not a hash of it: every run compares it, and hashlib's import
    # (OpenSSL) would cost a run that has nothing to do more than the rest of publish().
    return json.dumps(data, ensure_ascii=False)


def publish(
    config: Config,
    store: Store,
    *,
    force: bool = False,
    progress: Callable[[str], None] = lambda _m: None,
) -> WriteStats:
    """Render and write what changed; return how many files were written and removed.

    Raise PublishError if public/ cannot be written: what was published stays whole, and
    what was not is still marked to do in the state.
    """
    try:
        return _publish(config, store, force, progress)
    except OSError as e:  # reading or removing our files; the writer's own come wrapped
        raise cannot_write(e.filename or config.settings.public_dir, e) from e


def _publish(
    config: Config, store: Store, force: bool, progress: Callable[[str], None]
) -> WriteStats:
    s = config.settings
    public = Path(s.public_dir)
    looks = store.topic_looks()
    retitled = [t for t in config.topics if t.id in looks and looks[t.id] != t.looks]
    if retitled:  # a write lock only when there is something to write
        with store.transaction():
            for topic in retitled:
                store.set_topic_looks(topic.id, topic.looks)  # a new title: render again
    # A publish that died (SIGKILL, power cut) may have left temp files anywhere: the next
    # one sweeps them all. Otherwise there are none, and nothing is looked at.
    died = store.meta("publishing") == "1"
    full = force or store.meta("site") != _site_key(config) or not (public / "index.html").exists()
    # A full build renders everything and needs no list of what changed (which, after a
    # first run over a big inbox, names every paper: not worth holding).
    dirty = store.dirty() if not full else {k: set() for k in store.DIRTY_KINDS}
    if not full and not any(dirty.values()):
        # Temp files exist only if a publish died: otherwise there is nothing to look at.
        return WriteStats(0, 0, sweep(public, lambda _rel: True, papers=True) if died else 0)
    with store.transaction():
        store.set_meta("publishing", "1")

    # Only when something is written: jinja2 and feedgen above all, but every module
    # counts when a run with nothing to do should take a blink.
    from feeds.model import Item
    from feeds.publish import render
    from feeds.publish.view import (
        FORMATS,
        FeedView,
        Kept,
        Site,
        feed_path,
        paper_path,
        topic_path,
    )

    site = Site(title=s.site_title, base_url=s.base_url)

    created = store.created()
    counts = store.member_counts()
    wanted = {t.id for t in config.topics}

    def feed_view(fid: str, title: str, desc: str, cap: int, *, with_items: bool) -> FeedView:
        rows: list[tuple[Paper, datetime, tuple[Hit, ...]]]
        if not with_items:  # the index and OPML need only its title and size
            return FeedView(fid, title, desc, created, (), cap, counts.get(fid, 0))
        if fid == ALL:
            rows = [(p, seen, ()) for p, seen in store.all_items(cap)]
            total = store.paper_count()
        else:
            rows = list(store.topic_items(fid, cap))
            total = counts.get(fid, 0)
        links = store.links_of(p.paper_id for p, _e, _h in rows)
        items = tuple(Item(p, e, links[p.paper_id], h) for p, e, h in rows)
        updated = items[0].entered if items else created  # never the clock
        return FeedView(fid, title, desc, updated, items, cap, total)

    removed_pages = 0
    # Items are read for one feed at a time, as it is rendered, and let go after: a full
    # build renders every feed, and holding them all would cost a hundred papers a topic.
    views = [
        feed_view(t.id, t.title, t.description or "", t.max_items or s.max_items, with_items=False)
        for t in config.topics
    ]
    all_feed = feed_view(ALL, f"{s.site_title}: all papers", "Every paper, newest first",
                         s.max_items, with_items=True)  # fmt: skip

    def kept_view(light: FeedView, blocks: dict[str, dict[str, bytes]]) -> FeedView:
        # The topic's items, but those whose entries are in all three files written last
        # time and whose papers did not change are Kept: not read, not built.
        heads = store.topic_heads(light.id, light.max_items)
        reusable = blocks["rss"].keys() & blocks["atom"].keys() & blocks["json"].keys()
        kept = {
            pid: key
            for pid, title, _entered in heads
            if pid not in dirty["paper"] and (key := render.title_id(title)) in reusable
        }
        rows = store.topic_items_of(light.id, [pid for pid, *_ in heads if pid not in kept])
        links = store.links_of(rows)
        items = tuple(
            Kept(kept[pid])
            if pid in kept
            else Item(rows[pid][0], entered, links[pid], rows[pid][2])
            for pid, _title, entered in heads
        )
        updated = heads[0][2] if heads else created
        return replace(light, updated=updated, items=items)

    # Feeds and reading lists are written on a second thread while the next ones render
    # (see Writer).
    with Writer() as out:
        todo = [f for f in [all_feed, *views] if full or f.id in dirty["topic"]]
        for n, light in enumerate(todo, start=1):
            progress(f"publishing: feeds and reading lists, topic {n:,} of {len(todo):,}")
            # Entries of items whose papers did not change are taken from the files written
            # last time (see render.entry_blocks): a new paper in a big topic reads and builds
            # one entry, not the feed's hundred.
            paths = {fmt: public / feed_path(light.id, fmt) for fmt in FORMATS}
            blocks = {fmt: {} if full else _blocks(paths[fmt], fmt) for fmt in FORMATS}
            if light.id == ALL:
                view = light
            elif full:
                view = feed_view(
                    light.id, light.title, light.description, light.max_items, with_items=True
                )
            else:
                view = kept_view(light, blocks)
            changed = {
                render.item_id(i)
                for i in view.items
                if isinstance(i, Item) and i.paper.paper_id in dirty["paper"]
            }
            for fmt, path in paths.items():
                reuse = {k: v for k, v in blocks[fmt].items() if k not in changed}
                if fmt == "json":
                    data = render.render_json_feed(site, view, reuse)
                else:
                    data = render.render_feed(site, view, fmt, reuse)
                out.write(path, data)
            if view.id != ALL:
                every = full or view.id in dirty["archive"]
                removed_pages += _reading_list(
                    store, site, view, public, s.page_size, every, dirty["paper"], out
                )

        titles = {t.id: t.title for t in config.topics}
        paper_ids = None if full else sorted(dirty["paper"])
        pages = store.paper_count() if paper_ids is None else len(paper_ids)
        for n, paper_view in enumerate(_paper_views(store, paper_ids, titles), start=1):
            if n % 1000 == 1:
                progress(f"publishing: paper pages, {n:,} of {pages:,}")
            page = render.render_paper(site, paper_view)
            out.write(public / paper_path(paper_view.paper.paper_id), page)

        out.write(public / "feeds.opml", render.render_opml(site, [all_feed, *views]))
        out.write(public / "index.html", render.render_index(site, views, all_feed))

    removed = removed_pages
    if died:  # only a publish that was killed leaves temp files (see _replace)
        removed += sweep(public, lambda _rel: True, papers=True)
    if full:  # whatever is not a current topic's goes (papers are never removed)
        ok = {topic_path(t) for t in wanted} | {feed_path(t, f) for t in wanted | {ALL}
                                                for f in FORMATS}  # fmt: skip
        removed += sweep(public, lambda rel: rel.startswith("papers/") or rel in ok, papers=True)
    else:
        for gone in dirty["dropped"] - wanted:
            for rel in (topic_path(gone), *(feed_path(gone, f) for f in FORMATS)):
                if (public / rel).exists():
                    (public / rel).unlink()
                    removed += 1
            if (public / "topics" / gone).is_dir():
                import shutil  # rare: not imported by every run

                shutil.rmtree(public / "topics" / gone)
    if out.written or removed:
        os.sync()  # one sync for the whole run instead of an fsync per file
    with store.transaction():  # only now: a publish that died is done again next time
        store.clear_dirty()
        store.set_meta("site", _site_key(config))
        store.set_meta("publishing", "0")
    return WriteStats(out.written, out.unchanged, removed)


def _blocks(path: Path, fmt: str) -> dict[str, bytes]:
    """Return the entry blocks of a feed file written before, by item id."""
    from feeds.publish.render import entry_blocks

    try:
        document = path.read_bytes()
    except FileNotFoundError:
        return {}
    return entry_blocks(fmt, document)


def _reusable_rows(path: Path, dirty_papers: set[str]) -> dict[str, str]:
    """Return the rows of a topic's front page, by paper id, but those of changed papers."""
    from feeds.publish.render import reading_rows

    try:
        document = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    return {k: v for k, v in reading_rows(document).items() if k not in dirty_papers}


def _reading_list(
    store: Store,
    site: Site,
    view: FeedView,
    public: Path,
    size: int,
    every: bool,
    dirty_papers: set[str],
    out: Writer,
) -> int:
    """Write a topic's reading list: the front page, and the archive pages that changed
    (all when `every`; else new ones, the one before them, and those holding a changed
    paper).
    Return how many archive pages were removed (the list got shorter)."""
    from feeds.publish import render
    from feeds.publish.view import archive_path, pages, topic_path

    front, archives = pages(view.count, size)

    def page_of(rows: Sequence[ListRow | str], k: int = 0) -> bytes:
        # Links only for the rows to render (at most `size` papers).
        links = store.links_of(row[0] for row in rows if not isinstance(row, str))
        return b"".join(render.render_topic(site, view, rows, links, archives=archives, page=k))

    # The front page's rows of papers that did not change are taken from the page written
    # last time: a new paper in a big topic renders one row, not the page's five hundred.
    path = public / topic_path(view.id)
    old = {} if every else _reusable_rows(path, dirty_papers)
    front_rows: list[ListRow | str]
    if old:
        front_ids = store.topic_ids(view.id, front)
        fresh = store.member_rows(view.id, [pid for pid in front_ids if pid not in old])
        front_rows = [old.get(pid) or fresh[pid] for pid in front_ids]
    else:
        front_rows = list(store.topic_rows(view.id, front))
        front_ids = [row[0] for row in front_rows]
    out.write(path, page_of(front_rows))
    stale = set(range(1, archives + 1)) if every else set()
    folder = public / "topics" / view.id
    try:  # one listing, not a stat per part: a big topic has hundreds of parts
        there = set(os.listdir(folder))
    except FileNotFoundError:
        there = set()
    if not every and archives:
        missing = {k for k in range(1, archives + 1) if f"{k}.html" not in there}
        # The part before a new one had the front page as its "newer" neighbour.
        stale |= missing | ({min(missing) - 1} - {0} if missing else set())
        if 0 < len(dirty_papers) <= 5000:
            # A changed paper of this topic is on an archive part unless it is on the front
            # page (new papers are): only those need their position looked up.
            older = dirty_papers.difference(front_ids)
            stale |= {r // size + 1 for r in store.ranks(view.id, older) if r < archives * size}
        elif dirty_papers:  # many changed papers: one pass over the topic is cheaper
            for rank, pid in enumerate(store.topic_order(view.id)):
                if rank >= archives * size:
                    break
                if pid in dirty_papers:
                    stale.add(rank // size + 1)
    if len(stale) > 2:  # one pass over the topic; skipping to each part costs a pass each
        for k, rows in store.topic_parts(view.id, size, max(stale)):
            if k in stale:
                out.write(public / archive_path(view.id, k), page_of(rows, k))
    else:  # a new part and the one before it, or a changed paper's: skip to them
        for k in sorted(stale):
            page = page_of(store.topic_rows(view.id, size, (k - 1) * size, view.count), k)
            out.write(public / archive_path(view.id, k), page)
    removed = 0
    for name in there:  # parts past the last: the list got shorter
        if name.endswith(".html") and name[:-5].isdigit() and int(name[:-5]) > archives:
            (folder / name).unlink(missing_ok=True)
            removed += 1
    return removed


def _paper_views(
    store: Store, paper_ids: list[str] | None, titles: dict[str, str]
) -> Iterator[PaperView]:
    from feeds.publish.view import PaperView

    for paper, first_seen, links, topics in store.paper_pages(paper_ids):
        shown = tuple((t, titles[t], h) for t, h in topics if t in titles)
        yield PaperView(paper, first_seen, links, shown)
