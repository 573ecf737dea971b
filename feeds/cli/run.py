"""`feeds run` and `feeds watch`: one cycle, or cycles on the schedule, and what they say."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from feeds.cli.common import ALL, fail, inbox_exists, load_config, options, progress_line
from feeds.clock import utcnow
from feeds.errors import FeedsError, StateError
from feeds.settings import Config
from feeds.words import count

if TYPE_CHECKING:
    from feeds.pipeline import RunSummary


@click.command()
@options(*ALL)
@click.option(
    "--repair", is_flag=True,
    help="Render every published file and write again those missing or changed by hand.",
)  # fmt: skip
def run(
    subscriptions: Path, settings: Path | None, inbox: tuple[Path, ...], public: str | None,
    state: str | None, offline: bool, quiet: bool, as_json: bool, repair: bool,
) -> None:  # fmt: skip
    """Run one cycle: ingest new digests, match, publish into public/."""
    from feeds.pipeline import run as run_cycle

    try:
        config = load_config(subscriptions, settings, inbox, public, state)
        inbox_exists(config, inbox)
        show = sys.stderr.isatty() and not quiet and not as_json
        progress = progress_line if show else None
        summary = run_cycle(config, progress=progress, offline=offline, repair=repair)
    except FeedsError as e:
        fail(e)
        return
    if show:
        click.echo("\r\033[K", nl=False, err=True)
    if as_json:
        click.echo(json.dumps(summary.as_json(), ensure_ascii=False, indent=2))
    else:
        print_summary(summary, config, quiet, offline)
    sys.exit(summary.exit_code)


def print_summary(
    summary: RunSummary, config: Config, quiet: bool, offline: bool, *, timed: bool = False
) -> None:
    """Say what a run did: its problems on stderr, then (unless quiet) its numbers. `timed`
    (`feeds watch`): each line starts with the time, as its log lines do."""

    def say(line: str, *, err: bool = False) -> None:
        click.echo(f"{time.strftime(_LOG_TIME)} {line}" if timed else line, err=err)

    for r in summary.rejected:
        say(f"rejected: {r}", err=True)
    for p in summary.problems:
        say(f"skipped record: {p}", err=True)
    for w in summary.warnings:
        say(f"warning: {w}", err=True)
    for source in summary.stale:
        say(f"stale source: {source}", err=True)
    for name in summary.deferred:
        say(f"not yet: {name} is still being written; next cycle", err=True)
    for shown, why in summary.alerts_failed.items():
        waiting = summary.alerts_pending.get(shown, 0)
        say(f"alert failed: {shown}: {why} ({count(waiting, 'paper')} kept for the"
                   " next try)", err=True)  # fmt: skip
    for shown, why in summary.alerts_unset.items():
        waiting = summary.alerts_pending.get(shown, 0)
        say(f"alert not sent: {shown}: {why}; {count(waiting, 'paper')} pending",
                   err=True)  # fmt: skip
    if quiet:  # a wait is no news: the run that failed said so (see RunSummary.exit_code)
        return
    for shown, words in summary.alerts_waiting.items():
        waiting = summary.alerts_pending.get(shown, 0)
        say(f"alert waiting: {shown}: {words}; {count(waiting, 'paper')} pending",
                   err=True)  # fmt: skip
    # Every number with its thousands separated, as count() says them: `10,000 new`.
    s = summary
    before = f" ({s.rejected_before:,} rejected before)" if s.rejected_before else ""
    say(f"digests: {s.digests:,} new, {s.known:,} already ingested,"
               f" {len(s.rejected):,} rejected{before}")  # fmt: skip
    say(f"papers: {s.papers_new:,} new, {s.papers_updated:,} updated,"
               f" {s.papers_total:,} in total")  # fmt: skip
    if s.harvested:
        say("arXiv: " + ", ".join(f"{c} +{n:,}" for c, n in s.harvested.items()))
    say("new matches: " + say_gains(s.new_matches))
    for note in s.notes:
        say(note)
    line = f"links: {s.links_found:,} new in digests"
    if s.lookups:
        line += f", {s.links_looked_up:,} found by looking up {count(s.lookups, 'paper')}"
    if s.links_checked:
        counts = ", ".join(f"{n:,} {status}" for status, n in sorted(s.link_statuses.items()))
        line += f"; {s.links_checked:,} checked ({counts})"
    elif not config.settings.links.check or offline:
        line += " (not checked: offline)"
    say(line)
    f = s.files
    say(
        f"published: {count(f.written, 'file')} written, {f.unchanged:,} unchanged,"
        f" {f.removed:,} removed in {config.settings.public_dir}/"
    )
    if s.bucket:
        b = s.bucket
        say(f"bucket: {count(b['put'], 'object')} uploaded, {b['deleted']:,} deleted,"
                   f" {b['unchanged']:,} unchanged in {config.settings.public_url}")  # fmt: skip
    if f.search:  # not a problem of the run: said, but not with --quiet
        say(f"search: {f.search}")
    if s.alerts_sent:
        sent = ", ".join(f"{count(n, 'paper')} to {shown}" for shown, n in s.alerts_sent.items())
        say(f"alerts: {sent}")
    elif config.settings.alerts and offline:
        say("alerts: none sent (offline: new papers stay pending)")


_LOG_TIME = "%Y-%m-%dT%H:%M:%S"  # `feeds watch`'s lines begin with the time (local, as
# logging's asctime is)

GAINS_SHOWN = 10  # topics named on the `new matches:` line; the rest are counted


def say_gains(gains: dict[str, int]) -> str:
    """Return the topics that gained papers as the run says them: in the config's order,
    `icml +60, llm-reasoning +3`; past GAINS_SHOWN topics, the largest few and how many
    more (a thousand topics would make a line of thousands of words)."""
    gained = [(tid, n) for tid, n in gains.items() if n]
    if not gained:
        return "none"
    if len(gained) <= GAINS_SHOWN:
        return ", ".join(f"{tid} +{n:,}" for tid, n in gained)
    largest = sorted(gained, key=lambda g: -g[1])[:GAINS_SHOWN]  # stable: ties in order
    shown = ", ".join(f"{tid} +{n:,}" for tid, n in largest)
    return f"{shown} and {count(len(gained) - GAINS_SHOWN, 'more topic')}"


@click.command()
@options(*ALL)
def watch(
    subscriptions: Path, settings: Path | None, inbox: tuple[Path, ...], public: str | None,
    state: str | None, offline: bool, quiet: bool, as_json: bool,
) -> None:  # fmt: skip
    """Run the cycle now and then on the schedule; SIGINT/SIGTERM/SIGHUP finish it, exit 0."""
    import logging

    from feeds.pipeline import run as run_cycle
    from feeds.schedule import in_seconds, next_times, say_every, say_when
    from feeds.schedule import watch as run_watch

    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(asctime)s %(message)s",
        datefmt=_LOG_TIME,
    )
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    try:
        config = load_config(subscriptions, settings, inbox, public, state)
    except FeedsError as e:
        fail(e)
        return
    s = config.settings
    log = logging.getLogger("feeds.watch")
    how = f"every {say_every(s)}" if s.schedule_every else f"cron '{s.schedule_cron}' (UTC)"
    (then,) = next_times(s, utcnow(), 1)
    log.info("watching %s, %s: a cycle now, then %s", ", ".join(map(str, s.inbox)), how,
             say_when(then, seconds=in_seconds(s)))  # fmt: skip
    missing: set[str] = set()  # inbox folders said to be missing: said once, not each cycle

    def cycle() -> float | None:
        try:
            summary = run_cycle(config, offline=offline, settle=s.settle, lock_wait=5)
        except StateError as e:  # a `feeds run` holds the lock, say: the next cycle tries
            logging.getLogger("feeds.watch").warning("cycle skipped: %s", e)
            return None
        except FeedsError as e:  # public/ cannot be written, say: told, and tried next time
            logging.getLogger("feeds.watch").error("cycle failed: %s", e)
            return None
        for folder in sorted(set(summary.missing) - missing):
            log.warning("inbox folder %s does not exist; read again when it does", folder)
        for folder in sorted(missing - set(summary.missing)):
            log.info("inbox folder %s is back", folder)
        missing.clear()
        missing.update(summary.missing)
        if as_json:
            click.echo(json.dumps(summary.as_json(), ensure_ascii=False))
        elif quiet or summary.digests or summary.rejected or summary.files.written:
            print_summary(summary, config, quiet, offline, timed=True)  # quiet: only problems
        return summary.retry_at

    run_watch(s, cycle)
