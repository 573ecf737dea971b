"""One cycle: ingest, match, publish. It orders the steps and decides nothing itself."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from feeds.errors import EXIT_OK, EXIT_REJECTED, EXIT_UNDELIVERED, DigestRejected, StateError
from feeds.publish.build import publish
from feeds.publish.write import WriteStats
from feeds.settings import Config
from feeds.sources.inbox import Input, inbox_files, read_input, shown
from feeds.state import Store
from feeds.state.lock import exclusive

if TYPE_CHECKING:
    from feeds.alerts.send import Outcome
    from feeds.model import Diagnostic, Paper, ParsedDigest
    from feeds.net.pacing import Throttle
    from feeds.sources.remote import Down

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
    harvested: dict[str, int] = field(default_factory=dict)  # arXiv category: new entries
    files: WriteStats = field(default_factory=lambda: WriteStats(0, 0, 0))
    seconds: float = 0.0  # how long the cycle took
    alerts_sent: dict[str, int] = field(default_factory=dict)  # destination: papers sent
    alerts_failed: dict[str, str] = field(default_factory=dict)  # destination: why
    alerts_pending: dict[str, int] = field(default_factory=dict)  # destination: papers waiting
    alerts_unset: dict[str, str] = field(default_factory=dict)  # destination: variable unset
    # destination: "waiting until 07:35 UTC after a failed try (...)", not tried this run
    alerts_waiting: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        if self.rejected or self.problems:
            return EXIT_REJECTED
        # A destination that waits out its backoff is no new failure: the run that failed
        # exited 4 and said why, and the retry after the backoff will again if it fails.
        # Exiting 4 on every cycle in between would have cron mail the same stale failure
        # every 15 minutes. An unset variable is a failure of each run until it is set.
        return EXIT_UNDELIVERED if self.alerts_failed or self.alerts_unset else EXIT_OK

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
        self.stale: list[str] = []  # sources that became stale since the last run
        self.down: list[Down] = []  # sources whose failures began in this run
        self.missing: list[str] = []  # inbox folders that do not exist
        self.unchanged = 0  # files read before and not changed since


def _inputs(
    config: Config, store: Store, now: datetime, settle: float, offline: bool,
    got: _Collected, last_run: datetime | None = None,
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
        from feeds.sources.remote import fetch_sources  # the network stack, only when used

        fetched, stale, down = fetch_sources(store, s, now, last_run)
        got.stale.extend(stale)
        got.down.extend(down)
        yield from fetched


def _cycle(
    config: Config, store: Store, clock: Callable[[], datetime], progress: Progress,
    offline: bool, settle: float, repair: bool,
) -> RunSummary:  # fmt: skip
    s = config.settings
    began = time.monotonic()
    now = clock()  # the cycle's time: when its papers arrived and its links were checked
    last = store.last_started()
    if last is not None and now <= last:
        # Each cycle's time is later than the one before (two runs within one second, or a
        # clock set back): what entered after a time is what a later cycle added, which
        # alerts count on ("sent everything that entered up to T").
        now = last + timedelta(seconds=1)
    run_id = store.start_run(now)
    problems: list[Diagnostic] = []
    counts = {"digests": 0, "known": 0, "new": 0, "changed": 0, "links": 0}

    got = _Collected()
    rejected = got.rejected
    # Digests are ingested in commits of many, each whole or not at all (Store.batched).
    with store.batched(_PAPERS_PER_COMMIT) as batch:
        inputs = _inputs(config, store, now, settle, offline, got, last)
        for n, item in enumerate(inputs, start=1):
            progress(f"digest {n}: {item.name} ({counts['new']} new papers so far)")
            parsed = _ingest(store, item, now, counts, rejected)
            if parsed is not None:
                problems.extend(parsed.diagnostics)
                batch.done(len(parsed.papers))
    # One pace for everything a run asks arXiv: its harvests and the lookups after them.
    asks_arxiv = (s.arxiv or s.links.check) and not offline
    arxiv = _throttle(s.links.arxiv_delay) if asks_arxiv else None
    harvested: dict[str, int] = {}
    if s.arxiv:
        harvested = _harvest(config, store, now, counts, problems, got, progress, arxiv, last)
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
        from feeds.sources.arxiv.lookup import parse_arxiv

        report = resolve_links(store, s.links, now, progress, arxiv, parse_arxiv)
        if report.changed or report.found:
            progress("publishing")
            again = publish(config, store, progress=progress)
            files = WriteStats(files.written + again.written, again.unchanged,
                               files.removed + again.removed,
                               again.search or files.search)  # fmt: skip
    alerts: tuple[Outcome, ...] = ()
    if s.alerts and not offline:  # offline: nothing is sent, everything stays pending
        from feeds.alerts.send import send_alerts  # Apprise, only when alerts are set

        progress("alerts")
        alerts = send_alerts(config, store, now)
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
        warnings=(*_said_down(got), *(report.problems if report else ())),
        deferred=tuple(got.deferred),
        retry_at=got.retry_at,
        stale=tuple(got.stale),
        harvested=harvested,
        missing=tuple(got.missing),
        rejected=tuple(rejected),
        problems=tuple(problems),
        files=files,
        seconds=round(time.monotonic() - began, 3),
        alerts_sent={name: a.papers for name, a in _named(alerts) if a.ok and a.papers},
        alerts_failed={name: a.error for name, a in _named(alerts) if a.error},
        alerts_pending={name: a.pending for name, a in _named(alerts) if a.pending},
        alerts_unset={name: a.unset for name, a in _named(alerts) if a.unset},
        alerts_waiting={name: a.waiting for name, a in _named(alerts) if a.waiting},
    )
    with store.transaction():
        store.finish_run(run_id, clock(), summary.as_json())
    return summary


def _said_down(got: _Collected) -> tuple[str, ...]:
    """Return the sources whose failures began in this run, in words (said once)."""
    if not got.down:
        return ()
    from feeds.sources.remote import say_down

    return say_down(got.down)


def _harvest(
    config: Config, store: Store, now: datetime, counts: dict[str, int],
    problems: list[Diagnostic], got: _Collected, progress: Progress, arxiv: Throttle | None,
    last_run: datetime | None = None,
) -> dict[str, int]:  # fmt: skip
    """Harvest the followed arXiv categories that are due (`arxiv`, the run's pace for
    arXiv, is None offline: nothing is asked) and store what they brought; return the new
    entries per category (those that failed and brought nothing are not listed). A
    category's trouble is said once: when its failures begin (got.down), and when it
    becomes stale (got.stale)."""
    from feeds.sources.arxiv.source import harvest, source_key
    from feeds.sources.remote import Down, failing_since, newly_stale, put_failing_since

    s = config.settings
    brought: dict[str, int] = {}
    if arxiv is not None:  # not offline
        progress("arXiv: harvesting " + ", ".join(s.arxiv))
        for h in harvest(store, s, now, arxiv):
            key = source_key(h.category)
            before = store.source(key)
            with store.transaction():  # the entries, the cursor and the health together
                stored = store.put_papers([(0, p.as_paper()) for p in h.papers], key, now)
                for result, n in stored.counts.items():
                    counts[result] = counts.get(result, 0) + n
                for paper in h.papers:
                    counts["links"] += store.add_links(paper.paper_id, paper.links)
                problems.extend(_collision(f"arXiv {h.category}", c) for c in stored.collisions)
                store.put_harvest_cursor(h.category, h.cursor.to_text())
                store.put_source(h.source)
                put_failing_since(store, key, before, h.source, now)
            if h.source.failures and not before.failures:
                cause = h.source.error or "failed"
                got.down.append(Down(f"arXiv {h.category}", cause, h.source.next_try))
            if h.papers or not h.source.error:  # `+0` only when it was asked and answered
                brought[h.category] = len(h.papers)
    stale_after = timedelta(seconds=s.stale_after)
    for category in s.arxiv:
        key = source_key(category)
        since = failing_since(store, key)
        reason = newly_stale(store.source(key), now, stale_after, since, last_run)
        if reason:
            got.stale.append(f"arXiv {category}: {reason}")
    return brought


def _throttle(delay: float) -> Throttle:
    from feeds.net.pacing import Throttle  # the network modules only when used

    return Throttle(delay)


def _named(alerts: tuple[Outcome, ...]) -> list[tuple[str, Outcome]]:
    """Return the outcomes by how they are shown: service and host, and `#2`, `#3` for
    destinations that share both."""
    seen: dict[str, int] = {}
    out = []
    for a in alerts:
        seen[a.shown] = seen.get(a.shown, 0) + 1
        out.append((a.shown if seen[a.shown] == 1 else f"{a.shown} #{seen[a.shown]}", a))
    return out


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
    from feeds.links.extract import extract_links
    from feeds.sources.digest import parse

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
    """Update topic memberships as membership.plan and membership.Changes decide; return
    how many papers entered each topic."""
    prints = {t.id: t.fingerprint for t in config.topics}
    known = store.topic_fingerprints()
    waiting = store.has_unmatched()
    new_matches = dict.fromkeys(prints, 0)
    if known == prints and not waiting:  # the common no-op: nothing to decide or load
        return new_matches
    from feeds.match.membership import Changes, plan
    from feeds.match.step import Matching, matched

    criteria = {t.id: t.criteria for t in config.topics}
    todo = plan(prints, known, papers_waiting=waiting)
    with store.transaction(), store.bulk_members():
        for topic_id in todo.drop:
            store.drop_topic(topic_id)
        for topic_ids, unmatched_only in todo.groups:
            job = Matching(tuple((t, criteria[t]) for t in topic_ids), unmatched_only)
            changes = Changes(store.members_of(set(topic_ids), unmatched_only))
            batch: list[tuple[str, str, int, str]] = []
            for paper_id, seq, matches in matched(store, job, progress):
                enter, stay = changes.of(paper_id, seq, matches)
                batch += enter
                for topic_id, _pid, _seq, _hits in enter:
                    new_matches[topic_id] += 1
                for topic_id, hits in stay:
                    store.set_hits(topic_id, paper_id, hits)
                if len(batch) >= 10_000:
                    store.add_members(batch, now)
                    batch.clear()
            store.add_members(batch, now)
            for topic_id, paper_id in changes.gone():
                store.remove_member(topic_id, paper_id)
        for topic_id in todo.record:
            store.set_topic(topic_id, prints[topic_id])
        store.mark_matched()
    return new_matches
