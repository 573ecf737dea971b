"""`feeds check`: validate the config, show what each topic matches, explain one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from feeds.cli.common import UNUSED, fail, load_config, options, progress_line
from feeds.clock import utcnow
from feeds.errors import FeedsError


@click.command()
@options("subscriptions", "settings", "state", "quiet", "json", unlisted=UNUSED)
@click.option(
    "--explain", metavar="TOPIC",
    help="List every stored paper the topic matches and why, and those its `none` excludes.",
)  # fmt: skip
def check(
    subscriptions: Path, settings: Path | None, state: str | None, quiet: bool, as_json: bool,
    explain: str | None, **_ignored: Any,
) -> None:  # fmt: skip
    """Validate the config; show what each topic matches among the stored papers."""
    from feeds.config import warnings
    from feeds.match.report import explained, library_warnings, reported, topic_of
    from feeds.state import Store, exists

    show = sys.stderr.isatty() and not quiet and not as_json

    def progress(n: int) -> None:
        if show:
            progress_line(f"checking: {n:,} stored papers read")

    try:
        config = load_config(subscriptions, settings, state=state)
        topic = None if explain is None else topic_of(config, explain)
        store = None
        if exists(config.settings.database):
            store = Store(config.settings.database, utcnow())
        try:  # the papers are streamed: a long history does not fill memory
            stored = store.papers() if store else ()
            if topic is not None and topic.criteria.by_example and store is not None:
                from feeds.match.likes import report  # compared, not matched: its scores

                doc, lines = report(store, [topic], str(config.subscriptions_path), why=True)
            elif topic is not None:
                doc, lines = explained(topic, stored)
            else:
                found = warnings(config, os.environ)
                if store is not None and any(t.criteria.like for t in config.topics):
                    from feeds.match.likes import example_warnings  # nearly a stored title

                    found += example_warnings(store, config.topics, str(config.subscriptions_path))
                doc, lines = reported(config, stored, utcnow(), found, quiet, progress)
                if (
                    not quiet
                    and store is not None
                    and any(t.criteria.by_example for t in config.topics)
                ):
                    from feeds.match.likes import report

                    where = str(config.subscriptions_path)
                    doc["like"], more = report(store, config.topics, where)
                    lines += more
                elif any(t.criteria.library for t in config.topics):  # no papers yet, or -q
                    from feeds.match.likes import library_report

                    doc["libraries"], more = library_report(config.topics)
                    lines += library_warnings(config.topics) if quiet else more
        finally:
            if store is not None:
                store.close()
    except FeedsError as e:
        fail(e)
        return
    if show:
        click.echo("\r\033[K", nl=False, err=True)
    if as_json:
        click.echo(json.dumps(doc, ensure_ascii=False, indent=2))
    elif lines:  # `-q` with nothing wrong says nothing
        click.echo("\n".join(lines))
