"""One cycle: ingest, match, publish, resolve links (and publish again), send alerts. It
orders the steps and decides nothing itself: each stage's step is its folder's."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from feeds.clock import utcnow
from feeds.errors import EXIT_OK, EXIT_REJECTED, EXIT_UNDELIVERED, StateError
from feeds.match.step import update_members
from feeds.publish.build import begin_search, publish
from feeds.publish.write import WriteStats
from feeds.settings import Config
from feeds.sources.ingest import Ingested, Rejection, ingest
from feeds.state import Store, place_shown
from feeds.state.lock import exclusive

if TYPE_CHECKING:
    from feeds.alerts.send import Outcome
    from feeds.links.resolve import LinkReport
    from feeds.model import Diagnostic
    from feeds.net.pacing import Throttle

Progress = Callable[[str], None]
_MOST_SAID = 500  # characters of a failed run's error kept in the state


@dataclass(frozen=True)
class RunSummary:
    digests: int = 0  # newly ingested
    known: int = 0  # contents ingested before (whatever the files that hold them), skipped
    rejected_before: int = 0  # contents rejected before, skipped (feeds status lists them)
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
    notes: tuple[str, ...] = ()  # what else the run tells (topics by example fitted anew)
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
    bucket: dict[str, int] = field(default_factory=dict)  # put, deleted, unchanged (s3://)

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
    now: Callable[[], datetime] = utcnow,
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
    with exclusive(s.database, wait=lock_wait):
        store = Store(s.database, now(), progress)
        try:
            return _cycle(config, store, now, progress, offline, settle, repair)
        except sqlite3.Error as e:  # a read-only file or folder, a full disk, a damaged file
            raise StateError(
                f"cannot write the state database: {e} (is it or its folder read-only,"
                " or the disk full?)",
                file=place_shown(s.database),
            ) from e
        finally:
            store.close()


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
    # What the cycle did so far: a cycle that fails records it, with its error and exit
    # status, so that `feeds status` says how the last run ended and what it had done.
    got, step = Ingested(), "ingesting"
    new_matches: dict[str, int] = {}
    notes: tuple[str, ...] = ()
    files, report, bucket = WriteStats(0, 0, 0), None, {}
    alerts: tuple[Outcome, ...] = ()
    try:
        # One pace for everything a run asks arXiv: its harvests and the lookups after them.
        asks_arxiv = (s.arxiv or s.links.check) and not offline
        arxiv = _throttle(s.links.arxiv_delay) if asks_arxiv else None
        ingest(s, store, now, progress, offline=offline, settle=settle, arxiv=arxiv,
               last_run=last, got=got)  # fmt: skip
        step = "matching"
        # The search index is begun with the papers stored: Pagefind indexes them on the
        # other core while this one matches.
        searching = begin_search(config, store, force=repair, progress=progress)
        with searching or contextlib.nullcontext():
            progress(step)
            new_matches, notes = update_members(
                config.topics, store, now, progress, where=str(config.subscriptions_path)
            )
            step = "publishing"
            progress(step)
            # The renderers are imported only if something changed (or `repair` asks).
            files = publish(config, store, force=repair, progress=progress, searching=searching)
        # Links are resolved after publishing: feeds go out with what is known, and the
        # items whose links changed are published again below.
        if s.links.check and not offline:
            from feeds.links.resolve import resolve_links  # the network stack, only when used
            from feeds.sources.arxiv.lookup import parse_arxiv

            step = "checking links"
            report = resolve_links(store, s.links, now, progress, arxiv, parse_arxiv)
            if report.changed or report.found:
                step = "publishing"
                progress(step)
                files = files.then(publish(config, store, progress=progress))
        if s.public_url is not None:  # the site published above goes up: before any alert
            from feeds.publish.bucket import sync

            step = "uploading"
            progress(step)
            bucket = asdict(sync(s.public_dir, s.public_url, progress))
        if s.alerts and offline:  # nothing is sent, everything stays pending
            from feeds.alerts.send import start_destinations  # Apprise, only when alerts are set

            start_destinations(config, store, now)
        elif s.alerts:
            from feeds.alerts.send import send_alerts

            step = "sending alerts"
            progress("alerts")
            alerts = send_alerts(config, store, now)
    except BaseException as e:
        seconds = time.monotonic() - began
        _record_failure(store, run_id, clock, e, step, lambda: _summary(
            got, store, new_matches, report, files, bucket, alerts, seconds))  # fmt: skip
        raise
    seconds = time.monotonic() - began
    summary = _summary(got, store, new_matches, report, files, bucket, alerts, seconds)
    summary = replace(summary, notes=notes) if notes else summary
    if summary.alerts_sent:
        from feeds.alerts.send import links_nobody_opens

        unopened = links_nobody_opens(config)
        if unopened:  # said by each run that sends such a message
            summary = replace(summary, warnings=(*summary.warnings, unopened))
    idle = _idle(config, got, summary.papers_total)
    if idle:
        summary = replace(summary, warnings=(*summary.warnings, *idle))
    with store.transaction():
        store.finish_run(run_id, clock(), summary.as_json())
    return summary


def _record_failure(
    store: Store, run_id: int, clock: Callable[[], datetime], error: BaseException, step: str,
    done: Callable[[], RunSummary],
) -> None:  # fmt: skip
    """Record in the state how a cycle failed: its exit status, the step it failed in and
    the error in words, beside what it had done until then. A state that cannot take it
    (the error may be the state's own) keeps the run as one that did not finish."""
    from feeds.errors import FeedsError, exit_status

    if isinstance(error, FeedsError):
        said = str(error)
    elif isinstance(error, KeyboardInterrupt):
        said = "interrupted"
    else:  # a bug: its kind and message (the traceback is the command's to show)
        said = f"{type(error).__name__}: {error}"
    with contextlib.suppress(Exception):  # the first error is the one to raise
        record = done().as_json()
        record.update(exit_code=exit_status(error), error=said[:_MOST_SAID], failed_while=step)
        with store.transaction():
            store.finish_run(run_id, clock(), record)


def _idle(config: Config, got: Ingested, papers: int) -> list[str]:
    """Return why a run publishes nothing a reader would follow, in words: a subscriptions
    file without topics; nothing to read (no digest in the inbox, no sources, no papers)."""
    from feeds.sources.inbox import shown

    s, said = config.settings, []
    if not config.topics:
        said.append(
            f"{shown(str(config.subscriptions_path))} has no topics: only the all-papers feed"
            " is published (add a topic: see the README's Topics)"
        )
    if not papers and not got.files and not got.missing and not s.sources:
        inbox = ", ".join(shown(str(f)) + "/" for f in s.inbox) or "none"
        said.append(
            f"nothing to read: no digest file in the inbox ({inbox}) and no sources in the"
            " settings; put digest files there (`feeds init` writes an example) or name"
            " `sources:` (digest URLs, arXiv categories)"
        )
    return said


def _summary(
    got: Ingested, store: Store, new_matches: dict[str, int], report: LinkReport | None,
    files: WriteStats, bucket: dict[str, int], alerts: tuple[Outcome, ...], seconds: float,
) -> RunSummary:  # fmt: skip
    c = got.counts
    seen = Counter(store.digest_statuses(got.seen).values())
    return RunSummary(
        digests=c["digests"],
        known=seen["ok"],
        rejected_before=seen["rejected"],
        papers_new=c["new"],
        papers_updated=c["changed"],
        papers_total=store.paper_count(),
        new_matches=new_matches,
        links_found=c["links"],
        links_checked=report.checked if report else 0,
        link_statuses=report.statuses if report else {},
        lookups=report.looked_up if report else 0,
        links_looked_up=report.found if report else 0,
        warnings=(*got.said_down(), *(report.problems if report else ())),
        deferred=tuple(got.deferred),
        retry_at=got.retry_at,
        stale=tuple(got.stale),
        harvested=got.harvested,
        missing=tuple(got.missing),
        rejected=tuple(got.rejected),
        problems=tuple(got.problems),
        files=files,
        bucket=bucket,
        seconds=round(seconds, 3),
        alerts_sent={name: a.papers for name, a in _named(alerts) if a.ok and a.papers},
        alerts_failed={name: a.error for name, a in _named(alerts) if a.error},
        alerts_pending={name: a.pending for name, a in _named(alerts) if a.pending},
        alerts_unset={name: a.unset for name, a in _named(alerts) if a.unset},
        alerts_waiting={name: a.waiting for name, a in _named(alerts) if a.waiting},
    )


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
