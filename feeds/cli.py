"""The `feeds` command: parse options, call the library, turn errors into exit statuses."""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from feeds import __version__
from feeds.config import Config, load
from feeds.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, ConfigError, FeedsError, StateError
from feeds.say import count
from feeds.settings import check_places

if TYPE_CHECKING:
    from feeds.pipeline import RunSummary

DEFAULT_SUBSCRIPTIONS = Path("config/subscriptions.yaml")
DEFAULT_SETTINGS = Path("config/settings.yaml")


# The options the commands share, declared once. Each command lists those it uses; those it
# would ignore are still taken (scripts pass the same options to every command), unlisted.
_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "subscriptions": (("--subscriptions",), {
        "type": click.Path(path_type=Path), "default": DEFAULT_SUBSCRIPTIONS,
        "show_default": True, "help": "Topics file."}),
    "settings": (("--settings",), {
        "type": click.Path(path_type=Path), "default": None,
        "help": f"Settings file [default: {DEFAULT_SETTINGS} if it exists]."}),
    "inbox": (("--inbox",), {
        "type": click.Path(path_type=Path), "multiple": True,
        "help": "Folder of digests (repeatable); replaces the settings' inbox."}),
    "public": (("--public",), {"type": click.Path(path_type=Path), "help": "Output folder."}),
    "state": (("--state",), {"type": click.Path(path_type=Path), "help": "State database file."}),
    "offline": (("--offline",), {"is_flag": True, "help": "No network: links are not checked."}),
    "quiet": (("--quiet", "-q"), {"is_flag": True, "help": "Print only problems."}),
    "json": (("--json", "as_json"), {"is_flag": True,
                                     "help": "Print a machine-readable summary."}),
}  # fmt: skip
_ALL = tuple(_OPTIONS)
_UNUSED = ("inbox", "public", "offline")  # by check and status


def _options(
    *names: str, unlisted: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Return a decorator adding the shared options `names` (in this order), and `unlisted`
    ones, accepted and ignored (the command's function takes them as **_ignored)."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed((*names, *unlisted)):
            decls, attrs = _OPTIONS[name]
            f = click.option(*decls, **attrs, hidden=name in unlisted)(f)
        return f

    return decorate


def _config(
    subscriptions: Path,
    settings: Path | None,
    inbox: tuple[Path, ...] = (),
    public: Path | None = None,
    state: Path | None = None,
) -> Config:
    if settings is None and DEFAULT_SETTINGS.exists():
        settings = DEFAULT_SETTINGS
    if subscriptions == DEFAULT_SUBSCRIPTIONS and not subscriptions.exists():
        # A folder without a config: most likely a first try. Say how to get one.
        message = "file not found: `feeds init` writes an example config (and an inbox)"
        raise ConfigError(message, file=str(subscriptions))
    config = load(subscriptions, settings)
    values: dict[str, Any] = {}
    if inbox:
        values["inbox"] = tuple(inbox)
    if public:
        values["public_dir"] = public
    if state:
        values["state"] = state
    s = replace(config.settings, **values)
    check_places(s, (subscriptions, settings))
    # Alerts' `${NAME}`s are not read here: an unset one stops only its destination, when
    # a run sends (feeds.alerts.send), and `feeds check` warns of it.
    return replace(config, settings=s)


def _inbox_exists(config: Config, options: tuple[Path, ...]) -> None:
    """Raise a usage error (exit 2) naming the first inbox folder that does not exist."""
    from feeds.ingest import shown

    for folder in config.settings.inbox:
        if not folder.is_dir():
            where = "given with --inbox" if options else "the settings' inbox"
            raise ConfigError(f"inbox folder {shown(str(folder))} does not exist ({where})")


def _fail(e: FeedsError) -> None:
    click.echo(f"error: {e}", err=True)
    sys.exit(EXIT_USAGE if isinstance(e, ConfigError) else EXIT_FAILURE)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="paperfeeds")
def cli() -> None:
    """paperfeeds: paper digests in, per-topic RSS, Atom and JSON feeds out."""


@cli.command()
@_options(*_ALL)
@click.option(
    "--repair", is_flag=True,
    help="Render every published file and write again those missing or changed by hand.",
)  # fmt: skip
def run(
    subscriptions: Path, settings: Path | None, inbox: tuple[Path, ...], public: Path | None,
    state: Path | None, offline: bool, quiet: bool, as_json: bool, repair: bool,
) -> None:  # fmt: skip
    """Run one cycle: ingest new digests, match, publish into public/."""
    from feeds.pipeline import run as run_cycle

    try:
        config = _config(subscriptions, settings, inbox, public, state)
        _inbox_exists(config, inbox)
        show = sys.stderr.isatty() and not quiet and not as_json
        progress = _progress if show else None
        summary = run_cycle(config, progress=progress, offline=offline, repair=repair)
    except FeedsError as e:
        _fail(e)
        return
    if show:
        click.echo("\r\033[K", nl=False, err=True)
    if as_json:
        click.echo(json.dumps(summary.as_json(), ensure_ascii=False, indent=2))
    else:
        _print_summary(summary, config, quiet, offline)
    sys.exit(summary.exit_code)


def _progress(message: str) -> None:
    click.echo(f"\r\033[K{message[:100]}", nl=False, err=True)


def _print_summary(summary: RunSummary, config: Config, quiet: bool, offline: bool) -> None:
    for r in summary.rejected:
        click.echo(f"rejected: {r}", err=True)
    for p in summary.problems:
        click.echo(f"skipped record: {p}", err=True)
    for w in summary.warnings:
        click.echo(f"warning: {w}", err=True)
    for source in summary.stale:
        click.echo(f"stale source: {source}", err=True)
    for name in summary.deferred:
        click.echo(f"not yet: {name} is still being written; next cycle", err=True)
    for shown, why in summary.alerts_failed.items():
        waiting = summary.alerts_pending.get(shown, 0)
        click.echo(f"alert failed: {shown}: {why} ({count(waiting, 'paper')} kept for the"
                   " next try)", err=True)  # fmt: skip
    for shown, why in summary.alerts_unset.items():
        waiting = summary.alerts_pending.get(shown, 0)
        click.echo(f"alert not sent: {shown}: {why}; {count(waiting, 'paper')} pending",
                   err=True)  # fmt: skip
    if quiet:  # a wait is no news: the run that failed said so (see RunSummary.exit_code)
        return
    for shown, words in summary.alerts_waiting.items():
        waiting = summary.alerts_pending.get(shown, 0)
        click.echo(f"alert waiting: {shown}: {words}; {count(waiting, 'paper')} pending",
                   err=True)  # fmt: skip
    s = summary
    click.echo(f"digests: {s.digests} new, {s.known} already ingested, {len(s.rejected)} rejected")
    click.echo(f"papers: {s.papers_new} new, {s.papers_updated} updated, {s.papers_total} in total")
    if s.harvested:
        click.echo("arXiv: " + ", ".join(f"{c} +{n}" for c, n in s.harvested.items()))
    gained = [f"{tid} +{n}" for tid, n in s.new_matches.items() if n]
    click.echo("new matches: " + (", ".join(gained) if gained else "none"))
    line = f"links: {s.links_found} new in digests"
    if s.lookups:
        line += f", {s.links_looked_up} found by looking up {count(s.lookups, 'paper')}"
    if s.links_checked:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(s.link_statuses.items()))
        line += f"; {s.links_checked} checked ({counts})"
    elif not config.settings.links.check or offline:
        line += " (not checked: offline)"
    click.echo(line)
    f = s.files
    click.echo(
        f"published: {count(f.written, 'file')} written, {f.unchanged} unchanged,"
        f" {f.removed} removed in {config.settings.public_dir}/"
    )
    if f.search:  # not a problem of the run: said, but not with --quiet
        click.echo(f"search: {f.search}")
    if s.alerts_sent:
        sent = ", ".join(f"{count(n, 'paper')} to {shown}" for shown, n in s.alerts_sent.items())
        click.echo(f"alerts: {sent}")
    elif config.settings.alerts and offline:
        click.echo("alerts: none sent (offline: new papers stay pending)")


@cli.command()
@_options("subscriptions", "settings", "state", "json", unlisted=_UNUSED)
@click.option(
    "--verbose", "-v", is_flag=True,
    help="Also list the links in error, by host, with what the checker said.",
)  # fmt: skip
def status(
    subscriptions: Path, settings: Path | None, state: Path | None, as_json: bool,
    verbose: bool, **_ignored: Any,
) -> None:  # fmt: skip
    """Show digests ingested and rejected, papers, topics, link health and the last run."""
    from feeds.status import gather, render_text

    try:
        config = _config(subscriptions, settings, state=state)
        report = gather(config, verbose=verbose)
    except FeedsError as e:
        _fail(e)
        return
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        click.echo(render_text(report))


@cli.command()
@_options("subscriptions", "settings", "state", "quiet", "json", unlisted=_UNUSED)
@click.option(
    "--explain", metavar="TOPIC",
    help="List every stored paper the topic matches and why, and those its `none` excludes.",
)  # fmt: skip
def check(
    subscriptions: Path, settings: Path | None, state: Path | None, quiet: bool, as_json: bool,
    explain: str | None, **_ignored: Any,
) -> None:  # fmt: skip
    """Validate the config; show what each topic matches among the stored papers."""
    from feeds.check import explained, reported, topic_of
    from feeds.config import warnings
    from feeds.state import Store

    show = sys.stderr.isatty() and not quiet and not as_json

    def progress(n: int) -> None:
        if show:
            _progress(f"checking: {n:,} stored papers read")

    try:
        config = _config(subscriptions, settings, state=state)
        topic = None if explain is None else topic_of(config, explain)
        store = None
        if config.settings.state.exists():
            store = Store(config.settings.state, datetime.now(UTC))
        try:  # the papers are streamed: a long history does not fill memory
            stored = store.papers() if store else ()
            if topic is not None:
                doc, lines = explained(topic, stored)
            else:
                found = warnings(config, os.environ)
                doc, lines = reported(config, stored, datetime.now(UTC), found, quiet, progress)
        finally:
            if store is not None:
                store.close()
    except FeedsError as e:
        _fail(e)
        return
    if show:
        click.echo("\r\033[K", nl=False, err=True)
    click.echo(json.dumps(doc, ensure_ascii=False, indent=2) if as_json else "\n".join(lines))


@cli.command()
@_options(*_ALL)
def watch(
    subscriptions: Path, settings: Path | None, inbox: tuple[Path, ...], public: Path | None,
    state: Path | None, offline: bool, quiet: bool, as_json: bool,
) -> None:  # fmt: skip
    """Run the cycle now and then on the schedule; SIGINT/SIGTERM/SIGHUP finish it, exit 0."""
    import logging

    from feeds.pipeline import run as run_cycle
    from feeds.schedule import next_times, say_when
    from feeds.schedule import watch as run_watch

    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(asctime)s %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    try:
        config = _config(subscriptions, settings, inbox, public, state)
    except FeedsError as e:
        _fail(e)
        return
    s = config.settings
    log = logging.getLogger("feeds.watch")
    how = f"every {s.schedule_every:g}s" if s.schedule_every else f"cron '{s.schedule_cron}' (UTC)"
    (then,) = next_times(s, datetime.now(UTC), 1)
    log.info("watching %s, %s: a cycle now, then %s", ", ".join(map(str, s.inbox)), how,
             say_when(then))  # fmt: skip
    missing: set[str] = set()  # inbox folders said to be missing: said once, not each cycle

    def cycle() -> float | None:
        try:
            summary = run_cycle(config, offline=offline, settle=s.settle, lock_wait=5)
        except StateError as e:  # e.g. a `feeds run` holds the lock: next time
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
            _print_summary(summary, config, quiet, offline)  # quiet: only the problems
        return summary.retry_at

    run_watch(s, cycle)


@cli.command()
@click.option("--public", type=click.Path(path_type=Path), help="Folder to serve.")
@click.option("--settings", type=click.Path(path_type=Path), default=None, help="Settings file.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=None,
    type=click.IntRange(0, 65535),
    help="Port (0: any free one)  [default: site.base_url's if local, else 8000]",
)
@click.option("--verbose", "-v", is_flag=True, help="Log every request.")
def serve(
    public: Path | None, settings: Path | None, host: str, port: int | None, verbose: bool
) -> None:
    """Serve public/ on this machine for a feed reader (feed content types, 304s)."""
    from feeds.config import load_settings
    from feeds.serve import make_server

    try:
        if settings is None and DEFAULT_SETTINGS.exists():
            settings = DEFAULT_SETTINGS
        site = load_settings(settings)
        folder = public or site.public_dir
    except FeedsError as e:
        _fail(e)
        return
    base = urlsplit(site.base_url)
    local = base.hostname in ("localhost", "127.0.0.1", "::1")
    if port is None:  # where the feeds' own links point, when that is this machine
        port = (base.port or 80) if local else 8000
    if not (folder / "index.html").is_file():
        click.echo(f"error: {folder}/index.html not found: run `feeds run` first", err=True)
        sys.exit(EXIT_FAILURE)
    address = f"[{host}]" if ":" in host else host  # an IPv6 address as a URL writes it
    try:
        server = make_server(folder, host, port)
    except OSError as e:
        click.echo(f"error: cannot listen on {address}:{port}: {e.strerror}", err=True)
        sys.exit(EXIT_FAILURE)
    server.verbose = verbose  # type: ignore[attr-defined]
    # Not "localhost" for ::1: some readers resolve that name to 127.0.0.1 only.
    shown = "localhost" if host == "127.0.0.1" else address
    if local and (base.port or 80) != server.server_address[1]:
        click.echo(
            f"note: the feeds' links point to {site.base_url} (site.base_url), not to this"
            f" server: a reader would follow them there. Set site.base_url to"
            f" http://{shown}:{server.server_address[1]}/ in the settings and `feeds run`.",
            err=True,
        )
    click.echo(f"serving {folder}/ at http://{shown}:{server.server_address[1]}/ (Ctrl-C stops)")
    click.echo(f"subscribe: http://{shown}:{server.server_address[1]}/feeds.opml")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@cli.command()
@click.option(
    "--dir", "folder", default=".", show_default=True,
    type=click.Path(file_okay=False, path_type=Path), help="The project folder.",
)  # fmt: skip
def init(folder: Path) -> None:
    """Write an example config (topics and settings, commented) and an inbox folder.

    Files that exist are left as they are: init never overwrites."""
    from importlib.resources import files

    examples = files("feeds") / "examples"
    for name in ("subscriptions.yaml", "settings.yaml"):
        target = folder / "config" / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("x", encoding="utf-8") as f:  # "x": never over a file
                f.write((examples / name).read_text(encoding="utf-8"))
        except FileExistsError:
            click.echo(f"{target}: exists, left as it is")
            continue
        except OSError as e:
            click.echo(f"error: cannot write {target}: {e.strerror}", err=True)
            sys.exit(EXIT_FAILURE)
        click.echo(f"wrote {target}")
    inbox = folder / "seeds"
    if not inbox.exists():
        inbox.mkdir(parents=True)
        click.echo(f"made {inbox}/: the inbox, where digest files go")
    click.echo("next: edit the topics, put digests in the inbox, then `feeds run`")


@cli.command()
@_options("subscriptions", "settings", "state", "json")
@click.option("--test", is_flag=True, help="Send each a test message (one that arrives: no wait).")
@click.option("--send-now", is_flag=True, help="Send each what is pending now, backoff or not.")
def alerts(subscriptions: Path, settings: Path | None, state: Path | None, as_json: bool,
           test: bool, send_now: bool) -> None:  # fmt: skip
    """List the alert destinations, send each a test message, or what is pending now."""
    if test and send_now:
        raise click.UsageError("--test or --send-now, not both")
    try:
        config = _config(subscriptions, settings, state=state)
    except FeedsError as e:
        _fail(e)
        return
    if not config.settings.alerts:
        click.echo("no alert destinations: add `alerts:` to the settings (see the README)")
        return
    if send_now:
        _send_now(config, as_json)
        return
    if not test:
        from feeds.status import gather

        try:
            destinations = gather(config)["alerts"]
        except FeedsError as e:
            _fail(e)
            return
        click.echo(json.dumps(destinations, ensure_ascii=False, indent=2) if as_json
                   else "\n".join(_alert_lines(destinations)))  # fmt: skip
        return
    from feeds.alerts.send import send_test_messages

    try:
        results = send_test_messages(config)
    except FeedsError as e:  # the state is locked or cannot be written
        _fail(e)
        return
    if as_json:
        doc = [{"destination": s, "ok": d.ok, "error": d.error} for s, d in results]
        click.echo(json.dumps(doc, ensure_ascii=False, indent=2))
    else:
        for shown, delivery in results:
            click.echo(f"{shown}: " + ("sent" if delivery.ok else f"failed: {delivery.error}"))
    sys.exit(EXIT_OK if all(d.ok for _s, d in results) else EXIT_FAILURE)


def _send_now(config: Config, as_json: bool) -> None:
    """`feeds alerts --send-now`: say per destination what went; exit 4 if one did not."""
    from feeds.alerts.send import send_pending
    from feeds.errors import EXIT_UNDELIVERED

    try:
        outcomes = send_pending(config)
    except FeedsError as e:
        _fail(e)
        return
    doc = [{"destination": o.shown, "sent": o.papers, "pending": o.pending,
            "error": o.error or o.unset} for o in outcomes]  # fmt: skip
    click.echo(json.dumps(doc, indent=2) if as_json else "\n".join(o.said() for o in outcomes)
               or "nothing pending: no state yet (`feeds run` first)")  # fmt: skip
    sys.exit(EXIT_OK if all(o.ok for o in outcomes) else EXIT_UNDELIVERED)


def _alert_lines(destinations: list[dict[str, Any]]) -> list[str]:
    from feeds.status import alert_line

    return [alert_line(d) for d in destinations]


def main() -> None:
    try:
        cli()
    finally:
        # The process ends with the command. Its last garbage collection would walk every
        # object left (the config, click's, the modules') for cycles that exiting frees
        # anyway: ~8 ms, a tenth of a run with nothing to do. It skips frozen objects.
        gc.freeze()
