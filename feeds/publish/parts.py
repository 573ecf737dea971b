"""The parts of a publish: one topic's feeds and reading list, its reading list as BibTeX
and RIS, or a batch of paper pages.

Each part reads what it needs from the state and writes its own files, so that the parts
of a big publish can be shared between this process and a helper on the other core
(feeds.parallel): either renders a part the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from feeds.publish.paths import ALL
from feeds.publish.write import Stamp, file_stamp
from feeds.state import Store

if TYPE_CHECKING:
    from feeds.model import Hit, Paper
    from feeds.publish.cite import Citation
    from feeds.publish.view import FeedView, PaperView, Site
    from feeds.publish.write import Writer
    from feeds.state.records import ListRow


@dataclass(frozen=True)
class Plan:
    """What every part of one publish needs besides the state, in whichever process."""

    public: Path
    site: Site
    full: bool  # everything is rendered again; nothing is reused from the files
    dirty: dict[str, set[str]]  # what changed, by kind (see Store.dirty); empty when full
    # The changed papers of each topic (Store.topics_of), when they are few enough to look
    # up (see CHANGED_LOOKUPS); else None.
    changed_in: dict[str, set[str]] | None
    created: datetime  # the state's: a feed with no items is as old as that
    counts: dict[str, int]  # members by topic
    titles: dict[str, str]  # of the current topics, by id: paper pages list them
    page_size: int  # of a topic's reading list (the all-papers list has its own)
    # The archive parts of each topic our publishes wrote into public/ (see
    # remove_parts_after): only those are ever removed.
    made: dict[str, int | None] = field(default_factory=dict)
    # Each paper's citation and its BibTeX and RIS entries, made once per publish in each
    # process, whichever topics list the paper (filled as parts render; sent empty).
    cited: dict[str, Cited] = field(default_factory=dict, compare=False, repr=False)
    # What each paper's reading-list line holds whatever its topic (pages.row_ends), made
    # once per publish in each process (a paper is listed by every topic it is in).
    rows: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False, repr=False)
    # The stamps of the files our publishes wrote (Store.published_stamps), by path under
    # public/: a file is built upon only while it is what we wrote (see ours).
    stamps: dict[str, Stamp] = field(default_factory=dict, compare=False, repr=False)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "cited": {}, "rows": {}}  # the helper makes its own

    def ours(self, path: Path) -> bool:
        """Whether a published file is as our last publish of it left it: one changed or
        damaged since (by hand, a disk, a sync tool) is rendered anew, never built upon
        (a new item merged into broken bytes would keep a feed invalid for good)."""
        was = self.stamps.get(path.relative_to(self.public).as_posix())
        return was is not None and file_stamp(path) == was


# A paper's citation, with its BibTeX and RIS entries under the key the state gave it.
Cited = tuple["Citation", str, str]


@dataclass(frozen=True)
class Topic:
    """A part: a topic's (or `all`'s) three feeds and its reading list's pages."""

    view: FeedView  # without items (they are read as the part renders), but for `all`


@dataclass(frozen=True)
class Citations:
    """A part: a topic's (or `all`'s) reading list as BibTeX and RIS files.

    A part of its own, apart from the topic's feeds and pages: the parts are shared
    between two processes, and each makes the per-paper work of the parts it does (a
    paper's citation and entries here; its feed entry and list line there), which every
    topic listing the paper needs. Split by kind, each is made once per publish."""

    view: FeedView  # its id and count


@dataclass(frozen=True)
class Pages:
    """A part: the pages of some papers, given by id or (a full build) by arrival range."""

    ids: tuple[str, ...] = ()
    seqs: tuple[int, int] | None = None  # [first, last) of papers.seq
    count: int = 0  # how many papers (for progress)


Part = Topic | Citations | Pages

# Up to this many changed papers, their memberships are looked up once for the whole
# publish (Plan.changed_in) and each topic finds the archive parts they are on by index;
# above, each topic is read through once instead.
CHANGED_LOOKUPS = 5000

_TOPIC_WORK = 100  # a topic's files take about as long as a hundred paper pages
# Papers whose citations a process keeps from topic to topic (Plan.cited): all of them at
# ten thousand papers (a broad topic set lists a paper ~20 times), a topic's worth beyond.
CITED_KEPT = 50_000
ROWS_KEPT = 100_000  # papers whose reading-list lines' ends a process keeps (~1 kB each)


def weight(part: Part) -> int:
    """How much work a part is, in paper pages (see feeds.parallel.HELP_FROM): a topic's
    feeds, and a quarter of a page for each paper its reading list lists (a line in one of
    its pages); a quarter for each paper of its BibTeX and RIS files (the entries, the
    paper's citation when no topic made it before: the all-papers list of a million took
    minutes)."""
    if isinstance(part, Pages):
        return part.count
    return part.view.count // 4 + (_TOPIC_WORK if isinstance(part, Topic) else 0)


@dataclass(frozen=True)
class Publishing:
    """The helper's job in a big publish (see feeds.parallel): it renders parts with a
    writer of its own, and answers how many files it removed, wrote and left unchanged,
    and the stamps of those it wrote or left (see Plan.ours)."""

    plan: Plan

    def run(self, store: Store, part: Part) -> tuple[int, int, int, dict[str, Stamp]]:
        from feeds.publish.write import Writer

        with Writer() as out:
            removed = render_part(self.plan, store, out, part)
        return removed, out.written, out.unchanged, relative(self.plan.public, out.stamps)


def _reused(plan: Plan, path: Path) -> bool:
    """Whether what a file holds may be taken into its next version (see Plan.ours)."""
    return not plan.full and plan.ours(path)


def relative(public: Path, stamps: dict[Path, Stamp]) -> dict[str, Stamp]:
    """Return a writer's stamps by path under public/, as the state keeps them."""
    return {path.relative_to(public).as_posix(): stamp for path, stamp in stamps.items()}


def render_part(plan: Plan, store: Store, out: Writer, part: Part) -> int:
    """Render and write one part; return how many archive pages it removed."""
    if isinstance(part, Pages):
        _pages(plan, store, out, part)
        return 0
    if isinstance(part, Citations):
        _citation_lists(plan, store, part.view, out)
        return 0
    return _topic(plan, store, out, part.view)


def feed_view(
    plan: Plan, store: Store, fid: str, title: str, desc: str, cap: int, *, with_items: bool
) -> FeedView:
    """Return a feed's view: with its newest `cap` items, or (for the index and the OPML,
    and to be filled in as it renders) only its title and size."""
    from feeds.model import Item
    from feeds.publish.view import FeedView

    rows: list[tuple[Paper, datetime, tuple[Hit, ...]]]
    if not with_items:
        return FeedView(fid, title, desc, plan.created, (), cap, plan.counts.get(fid, 0))
    if fid == ALL:
        rows = [(p, seen, ()) for p, seen in store.all_items(cap)]
        total = store.paper_count()
    else:
        rows = list(store.topic_items(fid, cap))
        total = plan.counts.get(fid, 0)
    links = store.links_of(p.paper_id for p, _e, _h in rows)
    items = tuple(Item(p, e, links[p.paper_id], h) for p, e, h in rows)
    updated = items[0].entered if items else plan.created  # never the clock
    return FeedView(fid, title, desc, updated, items, cap, total)


def _kept_view(
    plan: Plan, store: Store, light: FeedView, blocks: dict[str, dict[str, bytes]]
) -> FeedView:
    """The topic's items, but those whose entries are in all three files written last
    time and whose papers did not change are Kept: not read, not built."""
    from feeds.model import Item
    from feeds.publish import render
    from feeds.publish.view import Kept

    heads = store.topic_heads(light.id, light.max_items)
    reusable = set.intersection(*(set(b) for b in blocks.values()))
    # An item's id comes from the feed and the paper id: the titles need not be read.
    kept = {
        pid: key
        for pid, _entered in heads
        if pid not in plan.dirty["paper"] and (key := render.item_id(light.id, pid)) in reusable
    }
    rows = store.topic_items_of(light.id, [pid for pid, _entered in heads if pid not in kept])
    links = store.links_of(rows)
    items = tuple(
        Kept(kept[pid]) if pid in kept else Item(rows[pid][0], entered, links[pid], rows[pid][2])
        for pid, entered in heads
    )
    updated = heads[0][1] if heads else plan.created
    return replace(light, updated=updated, items=items)


def _topic(plan: Plan, store: Store, out: Writer, light: FeedView) -> int:
    from feeds.model import Item
    from feeds.publish import render
    from feeds.publish.view import FORMATS, feed_path

    # Entries of items whose papers did not change are taken from the files written last
    # time (see render.entry_blocks): a new paper in a big topic reads and builds one
    # entry, not the feed's hundred.
    paths = {fmt: plan.public / feed_path(light.id, fmt) for fmt in FORMATS}
    blocks = {fmt: render.blocks_in(paths[fmt], fmt) if _reused(plan, paths[fmt]) else {}
              for fmt in FORMATS}  # fmt: skip
    if light.id == ALL:
        view = light
    elif plan.full:
        view = feed_view(
            plan, store, light.id, light.title, light.description, light.max_items,
            with_items=True,
        )  # fmt: skip
    else:
        view = _kept_view(plan, store, light, blocks)
    changed = {
        render.item_id(view.id, i.paper.paper_id)
        for i in view.items
        if isinstance(i, Item) and i.paper.paper_id in plan.dirty["paper"]
    }
    for fmt, path in paths.items():
        reuse = {k: v for k, v in blocks[fmt].items() if k not in changed}
        out.write(path, render.render(plan.site, view, fmt, reuse))
    every = plan.full or view.id in plan.dirty["archive"]
    if view.id == ALL:
        return _all_papers(plan, store, view, every, out)
    return _reading_list(plan, store, view, every, out)


def _citation_lists(plan: Plan, store: Store, view: FeedView, out: Writer) -> None:
    """Write a topic's reading list as BibTeX and RIS: every paper, newest first, each
    under the citation key the state gave it (see give_keys).

    The entries of papers that did not change are taken from the files written last time
    (see cite.entry_blocks), with their keys; the others are made once per publish (see
    Plan.cited), whichever topics list them: the cost follows the new papers, not the
    topic's size times the topics a paper is in."""
    from feeds.publish import cite
    from feeds.publish.paths import LISTS
    from feeds.publish.view import feed_path

    ids = store.all_ids() if view.id == ALL else store.topic_ids(view.id, view.count)
    paths = {fmt: plan.public / feed_path(view.id, fmt) for fmt in LISTS}
    if len(plan.cited) > CITED_KEPT:  # ~3 kB a paper: a million would hold GBs
        plan.cited.clear()
    on_top = None if plan.full else _on_top(plan, store, ids, paths)
    if on_top is not None:
        for fmt, data in on_top.items():
            out.write(paths[fmt], data)
        return
    kept = {fmt: cite.entries_in(paths[fmt], fmt, plan.dirty["paper"])
            if _reused(plan, paths[fmt]) else {} for fmt in LISTS}  # fmt: skip
    # Kept when both files hold the paper under one key (a file cut short holds fewer).
    bib, ris = kept["bibtex"], kept["ris"]
    reused = {pid for pid in ids if pid in bib and pid in ris and bib[pid][0] == ris[pid][0]}
    fresh = [pid for pid in ids if pid not in reused]
    _cite(plan, store, fresh)
    texts: dict[str, list[str]] = {fmt: [] for fmt in LISTS}
    for pid in ids:  # each under the key the state gave it, unique in every file
        if pid in reused:
            texts["bibtex"].append(bib[pid][1])
            texts["ris"].append(ris[pid][1])
        elif pid in plan.cited:
            _c, bib_entry, ris_entry = plan.cited[pid]
            texts["bibtex"].append(bib_entry)
            texts["ris"].append(ris_entry)
    for fmt in LISTS:
        out.write(paths[fmt], "\n".join(texts[fmt]).encode())


def _on_top(
    plan: Plan, store: Store, ids: Sequence[str], paths: dict[str, Path]
) -> dict[str, bytes] | None:
    """Return a topic's BibTeX and RIS files when all that changed is new papers on top
    (a new digest; see cite.on_top), else None: the entries are then taken apart."""
    from feeds.publish import cite

    dirty = plan.dirty["paper"]
    n = next((i for i, pid in enumerate(ids) if pid not in dirty), len(ids))
    if any(pid in dirty for pid in ids[n:]):
        return None  # a changed paper further down: its entry is made again in place
    if not all(map(plan.ours, paths.values())):
        return None
    try:
        documents = {fmt: path.read_bytes() for fmt, path in paths.items()}
    except FileNotFoundError:
        return None
    _cite(plan, store, ids[:n])
    if any(pid not in plan.cited for pid in ids[:n]):
        return None
    return cite.on_top(documents, list(ids[n:]), [plan.cited[pid] for pid in ids[:n]])


def give_keys(
    store: Store, progress: Callable[[str], None], among: Collection[str] | None = None
) -> None:
    """Give each paper that has no citation key yet its key, for good: its base key (see
    cite.base_key), with a suffix where another paper has it, in order of arrival. Done
    before anything is rendered (the helper process reads the keys from the state).

    `among`: only these papers can lack one (a publish's changed papers: a paper without
    a key is new, or was marked changed by the upgrade that brought keys); None looks at
    every paper (a full build), which at a million papers takes a second or two."""
    from feeds.publish import cite

    if among is None:
        todo = store.keyless()
    else:
        keyed = store.citation_keys(list(among))
        missing = [pid for pid in among if pid not in keyed]
        seqs = store.seqs_of(missing)
        todo = sorted((pid for pid in missing if pid in seqs), key=seqs.__getitem__)
    for start in range(0, len(todo), _KEYS_AT_ONCE):
        if len(todo) > _KEYS_AT_ONCE:
            progress(f"publishing: citation keys, {start:,} of {len(todo):,} papers")
        chunk = todo[start : start + _KEYS_AT_ONCE]
        links = store.links_of(chunk)
        made = [
            cite.citation(p, links[p.paper_id], seen, "") for p, seen in store.papers_seen(chunk)
        ]
        given = cite.keys(made, store.keys_taken({cite.base_key(c) for c in made}))
        with store.transaction():
            store.put_citation_keys((c.paper_id, key) for c, key in zip(made, given, strict=True))


_KEYS_AT_ONCE = 10_000


def _cite(plan: Plan, store: Store, paper_ids: Sequence[str]) -> None:
    """Make the citations and entries of these papers that this publish has not made yet."""
    from feeds.publish import cite
    from feeds.publish.view import paper_path

    todo = [pid for pid in paper_ids if pid not in plan.cited]
    if not todo:
        return
    links, given = store.links_of(todo), store.citation_keys(todo)
    for paper, seen in store.papers_seen(todo):
        pid = paper.paper_id
        c = cite.citation(paper, links[pid], seen, plan.site.url(paper_path(pid)), given.get(pid))
        plan.cited[pid] = (c, cite.bibtex_entry(c, c.key), cite.ris_entry(c, c.key))


def _reading_list(plan: Plan, store: Store, view: FeedView, every: bool, out: Writer) -> int:
    """Write a topic's reading list: the front page, and the archive pages that changed
    (all when `every`; else new ones, the one before them, and those holding a changed
    paper).
    Return how many archive pages were removed (the list got shorter)."""
    from feeds.publish.pages import render_topic, reusable_rows
    from feeds.publish.view import archive_path, pages, topic_path

    public, size, dirty_papers = plan.public, plan.page_size, plan.dirty["paper"]
    front, archives = pages(view.count, size)

    def page_of(rows: Sequence[ListRow | str], k: int = 0) -> bytes:
        lines = _lines(plan, store, rows, k)
        return b"".join(render_topic(plan.site, view, lines, {}, archives=archives, page=k))

    # The front page's rows of papers that did not change are taken from the page written
    # last time: a new paper in a big topic renders one row, not the page's five hundred.
    path = public / topic_path(view.id)
    old = reusable_rows(path, dirty_papers) if not every and plan.ours(path) else {}
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
        if plan.changed_in is not None:
            # A changed paper of this topic is on an archive part unless it is on the front
            # page (new papers are): only those need their position looked up.
            older = plan.changed_in.get(view.id, set()).difference(front_ids)
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
    return remove_parts_after(folder, there, archives, plan.made.get(view.id, 0))


def _lines(plan: Plan, store: Store, rows: Sequence[ListRow | str], page: int) -> list[str]:
    """Return the lines of a reading list's page (`page` 0: the front page) for its rows;
    a row given as a string is its line already. A paper's line but for what its topic
    says of it is made once per publish (Plan.rows): links, authors and summaries are read
    only for papers no list had before."""
    from feeds.publish.pages import row_ends, row_with, stored_details

    ends = plan.rows
    if len(ends) > ROWS_KEPT:  # before looking: this page's rows are all kept until it is done
        ends.clear()
    todo = [row for row in rows if not isinstance(row, str) and row[0] not in ends]
    if todo:
        ids = [row[0] for row in todo]
        links, texts = store.links_of(ids), store.row_texts(ids)
        for row in todo:
            details = stored_details(*texts[row[0]]) if row[0] in texts else ""
            ends[row[0]] = row_ends(row, links[row[0]], details)
    root = "../../" if page else "../"
    return [row if isinstance(row, str) else row_with(root, row, ends[row[0]]) for row in rows]


def remove_parts_after(folder: Path, there: set[str], archives: int, made: int | None) -> int:
    """Remove the archive parts in `folder` (named in `there`) past the last, `archives`,
    that our publishes wrote (1..`made`; None: all there, in a state of an earlier version,
    which did not count them): the list got shorter. Return how many were removed.

    A page there of another number is the user's: a first publish into a folder holding
    `topics/icml/99.html` keeps it."""
    removed = 0
    for name in there:
        if name.endswith(".html") and name[:-5].isdigit():
            k = int(name[:-5])
            if archives < k and (made is None or k <= made) and name == f"{k}.html":
                (folder / name).unlink(missing_ok=True)
                removed += 1
    return removed


def _all_papers(plan: Plan, store: Store, view: FeedView, every: bool, out: Writer) -> int:
    """Write the all-papers reading list: a front page and archive parts like a topic's,
    cut by arrival order (seq) every ALL_PAGE_SIZE papers, so that a part never changes
    when papers arrive. Written again: the front page, new parts and the one before them,
    and (unless `every`) the parts holding a changed paper. Return the parts removed."""
    from feeds.publish.pages import render_topic
    from feeds.publish.paths import ALL_PAGE_SIZE
    from feeds.publish.view import archive_path, pages, topic_path

    size = ALL_PAGE_SIZE
    _front, archives = pages(view.count, size)

    def page_of(first: int, end: int, k: int = 0) -> bytes:
        # Papers of seqs [first, end), newest first (see Store.rows_between).
        lines = _lines(plan, store, store.rows_between(first, end), k)
        return b"".join(render_topic(plan.site, view, lines, {}, archives=archives, page=k))

    out.write(plan.public / topic_path(ALL), page_of(archives * size + 1, view.count + 1))
    folder = plan.public / "topics" / ALL
    try:
        there = set(os.listdir(folder))
    except FileNotFoundError:
        there = set()
    stale = set(range(1, archives + 1)) if every else set()
    if not every and archives:
        missing = {k for k in range(1, archives + 1) if f"{k}.html" not in there}
        stale |= missing | ({min(missing) - 1} - {0} if missing else set())
        changed = store.seqs_of(plan.dirty["paper"]).values()
        stale |= {(seq - 1) // size + 1 for seq in changed if seq <= archives * size}
    for k in sorted(stale):
        out.write(plan.public / archive_path(ALL, k), page_of((k - 1) * size + 1, k * size + 1, k))
    return remove_parts_after(folder, there, archives, plan.made.get(ALL, 0))


def _pages(plan: Plan, store: Store, out: Writer, part: Pages) -> None:
    from feeds.publish import cite
    from feeds.publish.pages import render_paper
    from feeds.publish.view import paper_path

    if len(plan.cited) > CITED_KEPT:
        plan.cited.clear()
    views = list(_paper_views(store, part, plan.titles))
    given = store.citation_keys([view.paper.paper_id for view in views])
    for view in views:
        # Its citation and entries are made once, for its page and its topics' lists.
        p = view.paper
        cited = plan.cited.get(p.paper_id)
        if cited is None:
            url = plan.site.url(paper_path(p.paper_id))
            c = cite.citation(p, view.links, view.first_seen, url, given.get(p.paper_id))
            cited = plan.cited[p.paper_id] = (c, cite.bibtex_entry(c, c.key),
                                              cite.ris_entry(c, c.key))  # fmt: skip
        page = render_paper(plan.site, view, cited[:2])
        out.write(plan.public / paper_path(p.paper_id), page)


def _paper_views(store: Store, part: Pages, titles: dict[str, str]) -> Iterator[PaperView]:
    from feeds.publish.view import PaperView

    for page in store.paper_pages(part.ids, seqs=part.seqs):
        shown = tuple((t, titles[t], h) for t, h in page.topics if t in titles)
        yield PaperView(page.paper, page.first_seen, page.links, shown)


PAGES_PER_PART = 1000  # ~0.3 s of rendering: fine enough to share, coarse enough to hand over


def page_parts(store: Store, paper_ids: list[str] | None) -> list[Pages]:
    """Split the paper pages to render into parts: the given papers, or (None) every
    paper, by ranges of arrival order."""
    size = PAGES_PER_PART
    if paper_ids is not None:
        chunks = (tuple(paper_ids[i : i + size]) for i in range(0, len(paper_ids), size))
        return [Pages(ids=ids, count=len(ids)) for ids in chunks]
    return [Pages(seqs=(r.first, r.end), count=r.papers) for r in store.seq_ranges(size)]
