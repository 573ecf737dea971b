"""`feeds status`: what has been ingested and published, and what is failing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from feeds.cli.common import UNUSED, fail, load_config, options
from feeds.errors import FeedsError


@click.command()
@options("subscriptions", "settings", "state", "json", unlisted=UNUSED)
@click.option(
    "--verbose", "-v", is_flag=True,
    help="Also list the links in error, by host, with what the checker said.",
)  # fmt: skip
def status(
    subscriptions: Path, settings: Path | None, state: str | None, as_json: bool,
    verbose: bool, **_ignored: Any,
) -> None:  # fmt: skip
    """Show digests ingested and rejected, papers, topics, link health and the last run."""
    from feeds.cli.report import gather, render_text  # the state's modules: when asked

    try:
        config = load_config(subscriptions, settings, state=state)
        report = gather(config, verbose=verbose)
    except FeedsError as e:
        fail(e)
        return
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        click.echo(render_text(report))
