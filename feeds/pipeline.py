"""One cycle: ingest, match, publish. It orders the steps and decides nothing itself."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from feeds.config import Config
from feeds.errors import DigestRejected, StateError
from feeds.ingest import Input, inbox_files, read_input, shown
from feeds.lock import exclusive
from feeds.publish.build import publish
from feeds.publish.write import WriteStats
from feeds.say import count
from feeds.state import Store, encode_hits

if TYPE_CHECKING:
    from feeds.config import Criteria
    from feeds.match import Matcher
    from feeds.model import Diagnostic, Hit, Paper, ParsedDigest

Progress = Callable[[str], None]


_PAPERS_PER_COMMIT = 20_000  # ingested between commits (see Store.batched)


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class Rejection:
    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass(frozen=True)
class RunSummary:
    digests: int = 0  # newly ingested
    known: int = 0  # seen before (same content), skipped
    papers_new: int = 0
    papers_updated: int = 0
    papers_total: int = 0
    new_matches: dict[str, int] = field(default_factory=dict)
    links_found: int = 0  # new links in digests
    links_checked: int = 0
    link_statuses: dict[str, int] = field(default_factory=dict)  # of this run's checks
    lookups: int = 0  # papers looked up on arXiv / Hugging Face
    links_looked_up: int = 0  # new links those lookups gave
    warnings: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    problems: tuple[Diagnostic, ...] = ()
    deferred: tuple[str, ...] = ()  # files still being written, left for a later cycle
    retry_at: float | None = None  # when the first deferred file may have settled (epoch s)
    stale: tuple[str, ...] = ()  # remote sources failing or unchanged for long
    missing: tuple[str, ...] = ()  # inbox folders that do not exist (skipped)
    files: WriteStats = field(default_factory=lambda: WriteStats(0, 0, 0))
    seconds: float = 0.0  # how long the cycle took

    @property
    def exit_code(self) -> int:
        return 3 if self.rejected or self.problems else 0

    def as_json(self) -> dict[str, Any]:
        # Field by field: asdict's deep copy of a thousand topics' counts shows on a no-op.
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["files"] = asdict(self.files)
        d["rejected"] = [asdict(r) for r in self.rejected]
        d["problems"] = [str(p) for p in self.problems]
        d["exit_code"] = self.exit_code
        return d


def run(
    config: Config,
    *,
    now: Callable[[], datetime] = _utcnow,
    progress: Progress | None = None,
    offline: bool = False,
    settle: float = 0.0,
    lock_wait: float = 30.0,
    repair: bool = False,
) -> RunSummary:
    """Run one cycle under the state's lock and return what happened.

    `settle`: files modified less than this many seconds ago are left for a later cycle
    (`feeds watch`); `feeds run` takes files as they are. `repair`: every published file
    is rendered and compared, and what is missing or differs is written again.
    """
    s = config.settings
    progress = progress or (lambda _msg: None)
    with exclusive(s.state, wait=lock_wait):
        store = Store(s.state, now(), progress)
        try:
            return _cycle(config, store, now, progress, offline, settle, repair)
        except sqlite3.Error as e:  # a read-only file or folder, a full disk, a damaged file
            raise StateError(
                f"cannot write the state database: {e} (is it or its folder read-only,"
                " or the disk full?)",
                file=str(s.state),
            ) from e
        finally:
            store.close()


class _Collected:
    """What reading the inputs met besides new content, filled in as they are read."""

    # A plain class, not a dataclass: making one costs ~1 ms at import, 1% of a run that
    # has nothing to do.
    def __init__(self) -> None:
        self.rejected: list[Rejection] = []
        self.deferred: list[str] = []
        self.retry_at: float | None = None
        self.stale: list[str] = []
        self.missing: list[str] = []  # inbox folders that do not exist
        self.unchanged = 0  # files read before and not changed since


def _inputs(
    config: Config, store: Store, now: datetime, settle: float, offline: bool,
    got: _Collected,
) -> Iterator[Input]:  # fmt: skip
    """Yield the new inputs one at a time (a big inbox is never held in memory): files
    from the inbox folders that are new or changed, then the remote sources' new content."""
    s = config.settings
    for folder in s.inbox:
        if not folder.is_dir():  # not a rejected digest: the caller says (watch: once)
            got.missing.append(shown(str(folder)))
            continue
        try:
            paths = list(inbox_files([folder]))
        except DigestRejected as e:
            got.rejected.append(Rejection(e.file or shown(str(folder)), e.message))
            continue
        for path in paths:
            try:
                # Settling is judged on the real clock, like the files' modification times.
                result = read_input(path, settle, None, store.known_file)
            except DigestRejected as e:
                got.rejected.append(Rejection(e.file or shown(path), e.message))
                continue
            if result is None:
                got.unchanged += 1
            elif isinstance(result, Input):
                yield result
            else:
                got.deferred.append(shown(path))
                got.retry_at = min(result, got.retry_at or result)
    if s.sources and not offline:
        from feeds.remote import fetch_sources  # the network stack, only when used

        fetched, stale = fetch_sources(store, s, now)
        got.stale.extend(stale)
        yield from fetched


def _cycle(
    config: Config, store: Store, clock: Callable[[], datetime], progress: Progress,
    offline: bool, settle: float, repair: bool,
) -> RunSummary:  # fmt: skip
    s = config.settings
    began = time.monotonic()
    now = clock()  # the cycle's time: when its papers arrived and its links were checked
    run_id = store.start_run(now)
    problems: list[Diagnostic] = []
    counts = {"digests": 0, "known": 0, "new": 0, "changed": 0, "links": 0}

    got = _Collected()
    rejected = got.rejected
    # Digests are ingested in commits of many, each whole or not at all (Store.batched).
    with store.batched(_PAPERS_PER_COMMIT) as batch:
        for n, item in enumerate(_inputs(config, store, now, settle, offline, got), start=1):
            progress(f"digest {n}: {item.name} ({counts['new']} new papers so far)")
            parsed = _ingest(store, item, now, counts, rejected)
            if parsed is not None:
                problems.extend(parsed.diagnostics)
                batch.done(len(parsed.papers))
    progress("matching")
    new_matches = _match(config, store, now, progress)
    progress("publishing")
    # The renderers are imported only if something changed (or `repair` asks for all).
    files = publish(config, store, force=repair, progress=progress)
    # Links are resolved after publishing: feeds go out with what is known, and the
    # items whose links changed are published again below.
    report = None
    if s.links.check and not offline:
        from feeds.links.resolve import resolve_links  # the network stack, only when used

        report = resolve_links(store, s.links, now, progress)
        if report.changed or report.found:
            progress("publishing")
            again = publish(config, store, progress=progress)
            files = WriteStats(files.written + again.written, again.unchanged,
                               files.removed + again.removed)  # fmt: skip
    summary = RunSummary(
        digests=counts["digests"],
        known=counts["known"] + got.unchanged,
        papers_new=counts["new"],
        papers_updated=counts["changed"],
        papers_total=store.paper_count(),
        new_matches=new_matches,
        links_found=counts["links"],
        links_checked=report.checked if report else 0,
        link_statuses=report.statuses if report else {},
        lookups=report.looked_up if report else 0,
        links_looked_up=report.found if report else 0,
        warnings=report.problems if report else (),
        deferred=tuple(got.deferred),
        retry_at=got.retry_at,
        stale=tuple(got.stale),
        missing=tuple(got.missing),
        rejected=tuple(rejected),
        problems=tuple(problems),
        files=files,
        seconds=round(time.monotonic() - began, 3),
    )
    with store.transaction():
        store.finish_run(run_id, clock(), summary.as_json())
    return summary


def _ingest(
    store: Store, item: Input, now: datetime, counts: dict[str, int], rejected: list[Rejection]
) -> ParsedDigest | None:
    """Store a digest's papers and links, unless it was ingested before or is rejected
    (then recorded in `rejected`); count what happened; return what was parsed."""
    h = item.digest_hash
    if store.digest_status(h) is not None:
        counts["known"] += 1
        with store.transaction():
            _remember(store, item, h)
        return None
    # Parsing and link extraction compile many patterns: imported only when a digest is
    # new (after the first time, these imports are a dictionary lookup).
    from feeds.digest import parse
    from feeds.links.extract import extract_links

    try:
        parsed = parse(item.content, item.name)
    except DigestRejected as e:
        with store.transaction():
            store.add_digest(h, item.name, now, status="rejected", reason=e.message)
            _remember(store, item, h)
        rejected.append(Rejection(item.name, e.message))
        return None
    # An inbox file read before with other content: read then while being written, or
    # edited since. This reading replaces that one's (see Store.put_papers).
    replaces = store.file_digest(item.path) if item.path is not None else None
    with store.transaction():  # a digest is ingested whole or not at all
        _remember(store, item, h)
        stored = store.put_papers(parsed.papers, h, now, replaces=replaces)
        for result, n in stored.counts.items():
            counts[result] = counts.get(result, 0) + n
        for _line, paper in parsed.papers:
            counts["links"] += store.add_links(
                paper.paper_id,
                extract_links(paper.comments, paper.journal_ref),
                only=paper.paper_id in stored.reread_alone,
            )
        problems = (*parsed.diagnostics, *map(partial(_collision, item.name), stored.collisions))
        store.add_digest(
            h,
            item.name,
            now,
            status="ok",
            venue=parsed.venue,
            papers=len(parsed.papers),
            diagnostics=problems,
        )
    counts["digests"] += 1
    return replace(parsed, diagnostics=problems) if stored.collisions else parsed


def _collision(name: str, found: tuple[int, Paper, Paper]) -> Diagnostic:
    """Return the problem of a record whose title is a stored paper's, by other authors."""
    from feeds.model import Diagnostic

    line, stored, record = found
    return Diagnostic(
        name,
        line,
        f"same title as paper {stored.paper_id} ({_first_authors(stored)}), but by other"
        f" authors ({_first_authors(record)}): kept as one paper, with the authors,"
        " institutions and summary that were stored first",
    )


def _first_authors(paper: Paper) -> str:
    more = " et al." if len(paper.authors) > 2 else ""
    return ", ".join(paper.authors[:2]) + more


def _remember(store: Store, item: Input, digest_hash: str) -> None:
    """Record that an input was handled, in the same transaction as its digest."""
    if item.source:
        store.put_source(item.source)
    if item.path is not None and item.stamp:
        store.put_file(item.path, *item.stamp, digest_hash)


def _match(
    config: Config, store: Store, now: datetime, progress: Progress = lambda _m: None
) -> dict[str, int]:
    """Update topic memberships; return how many papers entered each topic.

    Topics that are new or edited are matched against the whole history; the others only
    against the papers that are new or changed since the last match.
    """
    known = store.topic_fingerprints()
    wanted = {t.id for t in config.topics}
    prints = {t.id: t.fingerprint for t in config.topics}
    fresh = [t for t in config.topics if known.get(t.id) != prints[t.id]]
    steady = [t for t in config.topics if known.get(t.id) == prints[t.id]]
    changed = store.has_unmatched()
    new_matches = {t.id: 0 for t in config.topics}
    with store.transaction(), store.bulk_members():
        for topic_id in known.keys() - wanted:
            store.drop_topic(topic_id)
        groups = [(fresh, False), (steady, True)] if changed else [(fresh, False)]
        for topics, unmatched_only in groups:
            if not topics:
                continue
            job = Matching(tuple((t.id, t.criteria) for t in topics), unmatched_only)
            ids = {t.id for t in topics}
            # Members before, to remove those that no longer match (an edited topic, or a
            # paper whose new information hits a `none` term). Entry dates of those that
            # stay are kept by set_member.
            before = store.members_of(ids, unmatched_only)
            had = {paper_id for _topic, paper_id in before}
            still: set[tuple[str, str]] = set()
            batch: list[tuple[str, str, int, str]] = []
            for paper_id, seq, matches in _matched(store, job, progress):
                if paper_id not in had:
                    # The common case (a new paper): nothing to compare with, so the
                    # memberships are inserted in bulk.
                    for topic_id, matched in matches:
                        batch.append((topic_id, paper_id, seq, matched))
                        new_matches[topic_id] += 1
                else:
                    for topic_id, matched in matches:
                        still.add((topic_id, paper_id))
                        if store.set_member(topic_id, paper_id, matched, now):
                            new_matches[topic_id] += 1
                if len(batch) >= 10_000:
                    store.add_members(batch, now)
                    batch.clear()
            store.add_members(batch, now)
            for topic_id, paper_id in before - still:
                store.remove_member(topic_id, paper_id)
        for topic in fresh:
            store.set_topic(topic.id, prints[topic.id])
        store.mark_matched()
    return new_matches


_PAPERS_PER_MATCH = 2_000  # ~0.1 s of matching: a part to share with the helper

# A paper that matches: its id and seq, its topics and their hits as the state stores them
# (store.encode_hits); what matching a part gives. Encoded by whichever process matched:
# strings cost the run less to receive and to store than Hit objects.
PaperMatches = tuple[str, int, list[tuple[str, str]]]
Matched = list[PaperMatches]


def _matched(store: Store, job: Matching, progress: Progress) -> Iterator[PaperMatches]:
    """Yield (paper id, seq, [(topic id, hits)]) for each paper of the job that matches a
    topic: a long history is matched by this process and the helper together."""
    from feeds.helper import shared

    parts = store.seq_ranges(_PAPERS_PER_MATCH, unmatched_only=job.unmatched_only)
    total, begun = sum(n for _first, _end, n in parts), 0

    def begin(part: tuple[int, int, int]) -> None:
        nonlocal begun
        begun += part[2]
        topics = count(len(job.topics), "topic")
        progress(f"matching: {begun:,} of {count(total, 'paper')} against {topics}")

    def here(part: tuple[int, int, int]) -> Matched:
        return job.run(store, part)

    for matched in shared(store.path, job, parts, total, here, begin):
        yield from matched


class Matching:
    """Matching papers against topics, a range of arrival order at a time (a part:
    first seq, the seq after the last, how many papers), in this process or in the helper
    (see feeds.helper), which is sent it without its matcher and loads its own from the
    cache (see match.cached_matcher)."""

    def __init__(self, topics: tuple[tuple[str, Criteria], ...], unmatched_only: bool) -> None:
        self.topics = topics
        self.unmatched_only = unmatched_only
        self._matcher: Matcher | None = None
        self._encoded: dict[int, tuple[tuple[Hit, ...], str]] = {}  # see run

    def __getstate__(self) -> tuple[tuple[tuple[str, Criteria], ...], bool]:
        return self.topics, self.unmatched_only

    def __setstate__(self, state: tuple[tuple[tuple[str, Criteria], ...], bool]) -> None:
        self.topics, self.unmatched_only = state
        self._matcher = None
        self._encoded = {}

    def run(self, store: Store, part: tuple[int, int, int]) -> Matched:
        if self._matcher is None:
            from feeds.match import cached_matcher

            self._matcher = cached_matcher(self.topics)
        match, encoded = self._matcher.match, self._encoded
        first, end, _count = part
        out: Matched = []
        for seq, paper in store.papers_between(first, end, unmatched_only=self.unmatched_only):
            matches = match(paper)
            if matches:
                row = []
                for topic_id, hits in matches:
                    # Most hits are tuples the matcher keeps and hands out again: encoded
                    # once each, found by identity (a Hit hashes in Python, slowly). The
                    # entry holds the tuple: no other object gets its id while it is there.
                    known = encoded.get(id(hits))
                    if known is None:
                        if len(encoded) > 100_000:
                            encoded.clear()
                        known = encoded[id(hits)] = (hits, encode_hits(hits))
                    row.append((topic_id, known[1]))
                out.append((paper.paper_id, seq, row))
        return out
