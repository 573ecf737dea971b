"""Publish: render what changed since the last publish, from the state, into public/.

A run marks in the state what it changed (papers, topics); this renders those papers'
pages and those topics' feeds and pages (`all`'s: every paper), plus the index, the OPML
and the search page, then brings the search index up to date for the papers that changed
(see search.py), and nothing else. When the site settings change or public/ is missing,
everything is rendered again.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from feeds import __version__
from feeds.publish.paths import ALL, ALL_PAGE_SIZE, ICON, SEARCH_PAGE, pages, topic_files
from feeds.publish.write import Stamp, Writer, WriteStats, cannot_write, sweep
from feeds.settings import Config
from feeds.state import Store

if TYPE_CHECKING:
    from feeds.publish.parts import Part
    from feeds.publish.search import Update


# Bumped whenever what the renderers write changes: the next publish writes everything
# again (and reuses no feed entry written the old way).
RENDER_FORMAT = 8


# What shapes the published files, as text compared on every run (not a hash: hashlib's
# import, OpenSSL, would cost a run that has nothing to do more than the rest of publish()).
def _site_key(config: Config) -> str:
    """Return what every file depends on (page frames, absolute URLs): a change renders
    everything again."""
    s = config.settings
    data = [s.site_title, s.base_url, str(Path(s.public_dir).resolve()), RENDER_FORMAT]
    return json.dumps([*data, __version__], ensure_ascii=False)


def _lists_key(config: Config) -> str:
    """Return what only feeds and reading lists depend on (feed length, page size): a change
    renders every topic's files again, and no paper page."""
    s = config.settings
    return json.dumps([s.max_items, s.page_size])


@dataclass(frozen=True)
class _Published:
    """What our publishes wrote into a public/ folder, as the state remembers it."""

    topics: frozenset[str]  # topics (and `all`) whose feeds and reading lists they wrote
    # The archive parts of each topic's reading list they wrote (1..n); None in a state of
    # an earlier version, which did not count them.
    parts: dict[str, int] | None


def _owned(store: Store, public: Path) -> _Published | None:
    """Return what our publishes wrote into public/; None if the state knows of nothing
    there (a first publish, a state of an earlier version, another folder)."""
    text = store.meta("published")
    data = json.loads(text) if text else {}
    if data.get("public") != str(public.resolve()):
        return None
    parts = data.get("parts")
    return _Published(frozenset(data["topics"]), None if parts is None else dict(parts))


def _owned_key(public: Path, topics: set[str], parts: dict[str, int]) -> str:
    return json.dumps(
        {
            "public": str(public.resolve()),
            "topics": sorted(topics),
            "parts": dict(sorted(parts.items())),
        }
    )


def _made(owned: _Published | None, topic: str) -> int | None:
    """Return how many archive parts of a topic our publishes wrote here (None: all that
    are there, in a state that did not count them)."""
    if owned is None or topic not in owned.topics:
        return 0  # none: what its folder holds is the user's
    return None if owned.parts is None else owned.parts.get(topic, 0)


def _present(path: Path | str) -> bool:
    """Return True when a published file is there and not empty."""
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False


def begin_search(
    config: Config,
    store: Store,
    *,
    force: bool = False,
    progress: Callable[[str], None] = lambda _m: None,
) -> Update | None:
    """Begin the search index's update as soon as the papers are stored, before matching:
    a paper's records do not depend on its topics, and Pagefind then has the other core
    while this one matches. Return None when no paper changed (publish begins the update
    itself if a topic's title did); else hand the update to publish, which finishes it.
    Used as a context manager around matching and publishing, it stops Pagefind if they
    fail."""
    full = _full(config, store, force)
    recheck = store.meta("search") == "recheck"
    changed = set() if full else store.dirty()["paper"]
    if not (full or recheck or changed):
        return None
    return _begin_search(config, store, full or recheck, changed, progress)


def _full(config: Config, store: Store, force: bool) -> bool:
    """Whether a publish renders everything: asked to, the site settings changed, or
    public/ has no site."""
    public = Path(config.settings.public_dir)
    return force or store.meta("site") != _site_key(config) or not (public / "index.html").exists()


def publish(
    config: Config,
    store: Store,
    *,
    force: bool = False,
    progress: Callable[[str], None] = lambda _m: None,
    searching: Update | None = None,
) -> WriteStats:
    """Render and write what changed; return how many files were written and removed.
    `searching`: the search index's update begun before (see begin_search), finished here.

    Raise PublishError if public/ cannot be written: what was published stays whole, and
    what was not is still marked to do in the state.
    """
    try:
        return _publish(config, store, force, progress, searching)
    except OSError as e:  # reading or removing our files; the writer's own come wrapped
        raise cannot_write(e.filename or config.settings.public_dir, e) from e


def _publish(
    config: Config, store: Store, force: bool, progress: Callable[[str], None],
    early: Update | None,
) -> WriteStats:  # fmt: skip
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
    full = _full(config, store, force)
    # A full build renders everything and needs no list of what changed (which, after a
    # first run over a big inbox, names every paper: not worth holding).
    dirty = store.dirty() if not full else {k: set() for k in store.DIRTY_KINDS}
    if not full and store.meta("lists") != _lists_key(config):
        topics = {t.id for t in config.topics}
        dirty["topic"] |= topics | {ALL}  # the feeds' length
        dirty["archive"] |= topics  # paged anew (the all-papers list has its own page size)
    if not full:
        # Feeds and reading lists deleted or emptied behind our back (`rm -rf public/feeds`)
        # are written again: a few files a topic, one stat each. Paper pages and anything
        # else damaged: `feeds run --repair` (force), which compares every file.
        ids = [ALL, *(t.id for t in config.topics)]
        lost = [t for t in ids if not all(_present(public / f) for f in topic_files(t))]
        dirty["topic"].update(lost)
        if not all(_present(public / f) for f in ("feeds.opml", SEARCH_PAGE, ICON)):
            dirty["topic"].add(ALL)  # these are written whenever anything is
    # A search index that could not be updated is compared with the state whole next time.
    recheck = store.meta("search") == "recheck"
    if not full and not recheck and not any(dirty.values()) and early is None:
        # Temp files exist only if a publish died: otherwise there is nothing to look at.
        return WriteStats(0, 0, sweep(public, papers=True) if died else 0)
    # Only the files our publishes wrote into public/ are ever removed: it may hold the
    # user's own (a CNAME, notes, feeds of their own, in feeds/ and topics/ too, and pages
    # in a topic's archive folder). Remembered before any is written: a publish that dies
    # still knows what it wrote.
    owned, current = _owned(store, public), {ALL, *(t.id for t in config.topics)}
    counts = store.member_counts()
    archives = {t.id: pages(counts.get(t.id, 0), s.page_size)[1] for t in config.topics}
    archives[ALL] = pages(store.paper_count(), ALL_PAGE_SIZE)[1]
    before = {t: n for t in (owned.topics if owned else ()) if (n := _made(owned, t))}
    with store.transaction():
        store.set_meta("publishing", "1")
        if (
            owned is None
            or owned.parts is None
            or not current <= owned.topics
            or any(n > before.get(t, 0) for t, n in archives.items())
        ):
            most = {t: max(n, before.get(t, 0)) for t, n in archives.items()}
            topics = set(owned.topics if owned else ()) | current
            store.set_meta("published", _owned_key(public, topics, {**before, **most}))

    # Only when something is written: jinja2 and feedgen above all, but every module
    # counts when a run with nothing to do should take a blink.
    from feeds.parallel import shared
    from feeds.publish import pages as html
    from feeds.publish import render
    from feeds.publish.parts import (
        CHANGED_LOOKUPS,
        Citations,
        Plan,
        Publishing,
        Topic,
        feed_view,
        give_keys,
        page_parts,
        relative,
        render_part,
        weight,
    )
    from feeds.publish.view import Site

    give_keys(store, progress, None if full else dirty["paper"])

    site = Site(title=s.site_title, base_url=s.base_url)
    titles = {t.id: t.title for t in config.topics}
    changed = dirty["paper"]
    # Which topics hold the changed papers, looked up once: asking each topic about each
    # changed paper would cost a new digest's hundred topics ten lookups apiece.
    changed_in = store.topics_of(changed) if len(changed) <= CHANGED_LOOKUPS else None
    made = {t: _made(owned, t) for t in current}
    plan = Plan(public, site, full, dirty, changed_in, store.created(), counts, titles,
                s.page_size, made, stamps={} if full else store.published_stamps())  # fmt: skip
    wanted = {t.id for t in config.topics}

    # Items are read for one feed at a time, as it is rendered, and let go after: a full
    # build renders every feed, and holding them all would cost a hundred papers a topic.
    views = [
        feed_view(plan, store, t.id, t.title, t.description or "",
                  t.max_items or s.max_items, with_items=False)
        for t in config.topics
    ]  # fmt: skip
    all_feed = feed_view(plan, store, ALL, f"{s.site_title}: all papers",
                         "Every paper, newest first", s.max_items, with_items=True)  # fmt: skip
    todo = [f for f in [all_feed, *views] if full or f.id in dirty["topic"]]
    paper_parts = page_parts(store, None if full else sorted(dirty["paper"]))
    # This process takes parts from the first on, the helper from the last back (see
    # feeds.parallel.share): this one the feeds and reading lists (first: readers get the
    # feeds first), the helper the papers' citations (the BibTeX and RIS files, then paper
    # pages, which show them). Each paper's citation, feed entry and list line is then
    # made in one process, not in both.
    parts: list[Part] = [*map(Topic, todo), *paper_parts, *map(Citations, todo)]
    begun = {"topics": 0, "lists": 0, "pages": 0}
    page_count = sum(p.count for p in paper_parts)

    def begin(part: Part) -> None:
        if isinstance(part, Topic):
            begun["topics"] += 1
            progress(f"publishing: feeds and reading lists, topic {begun['topics']:,} of "
                     f"{len(todo):,}")  # fmt: skip
        elif isinstance(part, Citations):
            begun["lists"] += 1
            progress(f"publishing: BibTeX and RIS files, topic {begun['lists']:,} of "
                     f"{len(todo):,}")  # fmt: skip
        else:
            progress(f"publishing: paper pages, {begun['pages'] + 1:,} of {page_count:,}")
            begun["pages"] += part.count

    # Feeds and reading lists are written on a second thread while the next ones render
    # (see Writer); a big publish shares its parts with a second process (see feeds.parallel).
    # The search index is built beside them, and named only once they are written.
    searching = early or _begin_search(config, store, full or recheck, dirty["paper"], progress)
    removed, helped = 0, [0, 0]  # files removed; written and unchanged by the helper
    stamps: dict[str, Stamp] = {}  # of the files the helper wrote (`out` keeps its own)
    with Writer() as out, searching:

        def here(part: Part) -> tuple[int, int, int, dict[str, Stamp]]:
            return render_part(plan, store, out, part), 0, 0, {}  # `out` counts its own

        job = Publishing(plan)
        for cleared, written, unchanged, theirs in shared(
            store.path, job, parts, weight, here, begin
        ):
            removed += cleared
            helped[0] += written
            helped[1] += unchanged
            stamps.update(theirs)
        out.write(public / "feeds.opml", render.render_opml(site, [all_feed, *views]))
        out.write(public / "index.html", html.render_index(site, views, all_feed))
        out.write(public / SEARCH_PAGE, html.render_search(site))
        out.write(public / ICON, html.render_icon())

    # Only a publish that was killed leaves temp files (see _replace); a full build looks
    # all the same (the state that would say so may be new).
    if died or full:
        removed += sweep(public, papers=True)
    # The files of topics gone from the config go (papers are never removed): those our
    # publishes wrote here, of topics the state says were dropped or that it remembers
    # publishing here; what else the folder holds is the user's, whatever its name.
    mine = owned.topics if owned else frozenset()
    for gone in sorted(((dirty["dropped"] - wanted) & mine) | (mine - current)):
        for rel in topic_files(gone):
            if (public / rel).exists():
                (public / rel).unlink()
                removed += 1
        folder = public / "topics" / gone  # its reading list's archive pages
        if folder.is_dir():
            from feeds.publish.parts import remove_parts_after  # rare: not every run

            removed += remove_parts_after(folder, set(os.listdir(folder)), 0, _made(owned, gone))
            with contextlib.suppress(OSError):  # not empty: the user's files stay
                folder.rmdir()
    written = out.written + helped[0]
    if written:  # the feeds and pages go to disk while the search index is finished
        import threading

        threading.Thread(target=os.sync, name="feeds-sync", daemon=True).start()
    searched = _search(searching)
    if written or removed or searched.shards or searched.topics:
        os.sync()  # one sync for the whole run instead of an fsync per file
    with store.transaction():  # only now: a publish that died is done again next time
        store.put_published_stamps({**stamps, **relative(public, out.stamps)}, whole=full)
        store.clear_dirty()
        store.set_meta("site", _site_key(config))
        store.set_meta("lists", _lists_key(config))
        store.set_meta("publishing", "0")
        if owned is None or owned.topics != current or owned.parts != archives:
            store.set_meta("published", _owned_key(public, current, archives))
        if (store.meta("search") == "recheck") != bool(searched.failed):
            store.set_meta("search", "recheck" if searched.failed else "ok")
    return WriteStats(written, out.unchanged + helped[1], removed, searched.note)


def _begin_search(
    config: Config, store: Store, whole: bool, changed: set[str], progress: Callable[[str], None]
) -> Update:
    """Begin bringing the search index up to date with the papers that changed (all, when
    `whole`), beside the publishing (see Update)."""
    from feeds.publish.search import Update
    from feeds.publish.view import topic_path

    topics = [(topic_path(ALL), "All papers", "Every paper, newest first")]
    topics += [(topic_path(t.id), t.title, t.description or "") for t in config.topics]
    return Update(Path(config.settings.public_dir), store, topics, None if whole else changed,
                  progress)  # fmt: skip


def _search(searching: Update) -> Searched:
    """Finish the search index's update; return what to tell. Search never fails a
    publish: what went wrong is said, and the next publish compares the whole index with
    the state."""
    from feeds.publish.search import SearchError

    try:
        done = searching.finish()
    except (SearchError, OSError) as e:
        return Searched(note=f"the search index was not updated: {e}", failed=True)
    return Searched(done.shards, done.topics, done.note)


@dataclass(frozen=True)
class Searched:
    shards: int = 0
    topics: bool = False
    note: str = ""
    failed: bool = False
