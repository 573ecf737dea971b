"""The ingest step of a cycle: read what the sources bring (inbox files, remote digests,
arXiv categories) and store each batch of papers the one way (store_batch), with their
links, counting what happened and noting what was rejected or is failing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from feeds.errors import DigestRejected
from feeds.sources.inbox import Input, inbox_files, read_input, shown
from feeds.words import count

if TYPE_CHECKING:
    from feeds.model import Diagnostic, Link, Paper
    from feeds.net.pacing import Throttle
    from feeds.settings import Settings
    from feeds.sources.remote import Down
    from feeds.state import Store

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Rejection:
    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


class Ingested:
    """What the ingest step did and met, filled in as the inputs are read."""

    # A plain class, not a dataclass: making one costs ~1 ms at import, 1% of a run that
    # has nothing to do.
    def __init__(self) -> None:
        self.counts = {"digests": 0, "new": 0, "changed": 0, "same": 0, "links": 0}
        self.problems: list[Diagnostic] = []  # records skipped, titles shared
        self.rejected: list[Rejection] = []
        self.deferred: list[str] = []  # files still being written, left for a later cycle
        self.retry_at: float | None = None  # when the first deferred file may have settled
        self.stale: list[str] = []  # sources that became stale since the last run
        self.down: list[Down] = []  # sources whose failures began in this run
        self.missing: list[str] = []  # inbox folders that do not exist
        self.seen: set[str] = set()  # the contents (hashes) of inputs ingested before
        self.files = 0  # digest files in the inbox folders, new or not
        self.harvested: dict[str, int] = {}  # arXiv category: entries it brought

    def said_down(self) -> tuple[str, ...]:
        """Return the sources whose failures began in this run, in words (said once)."""
        if not self.down:
            return ()
        from feeds.sources.remote import say_down

        return say_down(self.down)


_PAPERS_PER_COMMIT = 20_000  # ingested between commits (see Store.batched)


def ingest(
    s: Settings, store: Store, now: datetime, progress: Progress, *, offline: bool,
    settle: float, arxiv: Throttle | None, last_run: datetime | None,
    got: Ingested | None = None,
) -> Ingested:  # fmt: skip
    """Ingest what every source brings that is new; return what happened (in `got` when
    given, which then tells what was done before a failure).

    `arxiv`: the run's pace for arXiv (None offline: nothing is asked); `last_run`: when
    the last cycle started (a source is said stale once, in the run where it becomes so)."""
    got = Ingested() if got is None else got
    # Digests are ingested in commits of many, each whole or not at all (Store.batched).
    with store.batched(_PAPERS_PER_COMMIT) as batch:
        for n, item in enumerate(_inputs(s, store, now, settle, offline, got, last_run), 1):
            progress(f"digest {n:,}: {item.name} ({count(got.counts['new'], 'new paper')} so far)")
            batch.done(_digest(store, item, now, got))
    if s.arxiv:
        _harvest(s, store, now, got, progress, arxiv, last_run)
    return got


def store_batch(
    store: Store, name: str, key: str, papers: Iterable[tuple[int, Paper]], now: datetime,
    got: Ingested, links: Callable[[Paper], Sequence[Link]], replaces: str | None = None,
) -> int:  # fmt: skip
    """Store a batch of papers that one input brought (`key`: the digest's hash, or the
    source's), with their links; count what happened in `got`; return how many papers.
    Call in a transaction: the batch is stored whole or not at all."""
    papers = list(papers)
    stored = store.put_papers(papers, key, now, replaces=replaces)
    for result, n in stored.counts.items():
        got.counts[result] = got.counts.get(result, 0) + n
    for _line, paper in papers:
        got.counts["links"] += store.add_links(
            paper.paper_id, links(paper), only=paper.paper_id in stored.reread_alone
        )
    got.problems.extend(_collision(name, c) for c in stored.collisions)
    return len(papers)


def _inputs(
    s: Settings, store: Store, now: datetime, settle: float, offline: bool, got: Ingested,
    last_run: datetime | None,
) -> Iterator[Input]:  # fmt: skip
    """Yield the new inputs one at a time (a big inbox is never held in memory): files
    from the inbox folders that are new or changed, then the remote sources' new content."""
    for folder in s.inbox:
        if not folder.is_dir():  # not a rejected digest: the caller says (watch: once)
            got.missing.append(shown(str(folder)))
            continue
        try:
            paths = list(inbox_files([folder]))
        except DigestRejected as e:
            got.rejected.append(Rejection(e.file or shown(str(folder)), e.message))
            continue

        def known(path: str, size: int, mtime_ns: int) -> bool:
            found = store.known_file(path, size, mtime_ns)
            if found is not None:
                got.seen.add(found)
            return found is not None

        got.files += len(paths)
        for path in paths:
            try:
                # Settling is judged on the real clock, like the files' modification times.
                result = read_input(path, settle, None, known)
            except DigestRejected as e:
                got.rejected.append(Rejection(e.file or shown(path), e.message))
                continue
            if result is None:
                continue  # read before, unchanged: its content is in got.seen
            if isinstance(result, Input):
                yield result
            else:
                got.deferred.append(shown(path))
                got.retry_at = min(result, got.retry_at or result)
    if s.sources and not offline:
        from feeds.sources.remote import fetch_sources  # the network stack, only when used

        fetched, stale, down = fetch_sources(store, s, now, last_run)
        got.stale.extend(stale)
        got.down.extend(down)
        yield from fetched


def _digest(store: Store, item: Input, now: datetime, got: Ingested) -> int:
    """Store a digest's papers and links, unless it was ingested before or is rejected;
    return how many papers it stored."""
    h = item.digest_hash
    if store.digest_status(h) is not None:
        got.seen.add(h)
        with store.transaction():
            _remember(store, item, h)
        return 0
    # Parsing and link extraction compile many patterns: imported only when a digest is
    # new (after the first time, these imports are a dictionary lookup).
    from feeds.links.extract import extract_links
    from feeds.sources.digest import parse

    try:
        parsed = parse(item.content, item.name)
    except DigestRejected as e:
        with store.transaction():
            store.add_digest(h, item.name, now, status="rejected", reason=e.message)
            _remember(store, item, h)
        got.rejected.append(Rejection(item.name, e.message))
        return 0
    # An inbox file read before with other content: read then while being written, or
    # edited since. This reading replaces that one's (see Store.put_papers).
    replaces = store.file_digest(item.path) if item.path is not None else None
    before = len(got.problems)
    got.problems.extend(parsed.diagnostics)
    with store.transaction():  # a digest is ingested whole or not at all
        _remember(store, item, h)
        stored = store_batch(
            store, item.name, h, parsed.papers, now, got,
            lambda p: extract_links(p.comments, p.journal_ref), replaces,
        )  # fmt: skip
        store.add_digest(
            h, item.name, now, status="ok", venue=parsed.venue, papers=stored,
            diagnostics=tuple(got.problems[before:]),
        )  # fmt: skip
    got.counts["digests"] += 1
    return stored


def _harvest(
    s: Settings, store: Store, now: datetime, got: Ingested, progress: Progress,
    arxiv: Throttle | None, last_run: datetime | None,
) -> None:  # fmt: skip
    """Harvest the followed arXiv categories that are due and store what they brought. A
    category's trouble is said once: when its failures begin (got.down), and when it
    becomes stale (got.stale)."""
    from feeds.sources.arxiv.source import harvest, source_key
    from feeds.sources.remote import Down, failing_since, newly_stale, put_failing_since

    if arxiv is not None:  # not offline
        progress("arXiv: harvesting " + ", ".join(s.arxiv))
        for h in harvest(store, s, now, arxiv):
            key = source_key(h.category)
            before = store.source(key)
            links = {p.paper_id: p.links for p in h.papers}  # with their arXiv pages
            with store.transaction():  # the entries, the cursor and the health together
                store_batch(
                    store, f"arXiv {h.category}", key, [(0, p.as_paper()) for p in h.papers],
                    now, got, _links_of(links),
                )  # fmt: skip
                store.put_harvest_cursor(h.category, h.cursor.to_text())
                store.put_source(h.source)
                put_failing_since(store, key, before, h.source, now)
            if h.source.failures and not before.failures:
                cause = h.source.error or "failed"
                got.down.append(Down(f"arXiv {h.category}", cause, h.source.next_try))
            if h.papers or not h.source.error:  # `+0` only when it was asked and answered
                got.harvested[h.category] = len(h.papers)
    stale_after = timedelta(seconds=s.stale_after)
    for category in s.arxiv:
        key = source_key(category)
        since = failing_since(store, key)
        reason = newly_stale(store.source(key), now, stale_after, since, last_run)
        if reason:
            got.stale.append(f"arXiv {category}: {reason}")


def _links_of(links: dict[str, tuple[Link, ...]]) -> Callable[[Paper], Sequence[Link]]:
    return lambda paper: links[paper.paper_id]


def _collision(name: str, found: tuple[int, Paper, Paper]) -> Diagnostic:
    """Return the problem of a record whose title is a stored paper's, by other authors."""
    from feeds.model import Diagnostic
    from feeds.words import et_al

    line, stored, record = found
    return Diagnostic(
        name,
        line,
        f"same title as paper {stored.paper_id} ({et_al(stored.authors, 2)}), but by"
        f" other authors ({et_al(record.authors, 2)}): kept as one paper, with the"
        " authors, institutions and summary that were stored first",
    )


def _remember(store: Store, item: Input, digest_hash: str) -> None:
    """Record that an input was handled, in the same transaction as its digest."""
    if item.source:
        store.put_source(item.source)
    if item.path is not None and item.stamp:
        store.put_file(item.path, *item.stamp, digest_hash)
