"""`feeds alerts`: list the destinations, send each a test message, or what is pending."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from feeds.cli.common import fail, load_config, options
from feeds.errors import EXIT_FAILURE, EXIT_OK, FeedsError
from feeds.settings import Config


@click.command()
@options("subscriptions", "settings", "state", "json")
@click.option("--test", is_flag=True, help="Send each a test message (one that arrives: no wait).")
@click.option("--send-now", is_flag=True, help="Send each what is pending now, backoff or not.")
def alerts(subscriptions: Path, settings: Path | None, state: str | None, as_json: bool,
           test: bool, send_now: bool) -> None:  # fmt: skip
    """List the alert destinations, send each a test message, or what is pending now."""
    if test and send_now:
        raise click.UsageError("--test or --send-now, not both")
    try:
        config = load_config(subscriptions, settings, state=state)
    except FeedsError as e:
        fail(e)
        return
    if not config.settings.alerts:
        click.echo("no alert destinations: add `alerts:` to the settings (see the README)")
        return
    if send_now:
        _send_now(config, as_json)
        return
    if not test:
        from feeds.cli.report import alert_report

        try:
            destinations = alert_report(config)
        except FeedsError as e:
            fail(e)
            return
        click.echo(json.dumps(destinations, ensure_ascii=False, indent=2) if as_json
                   else "\n".join(_alert_lines(destinations)))  # fmt: skip
        return
    from feeds.alerts.send import send_test_messages

    try:
        results = send_test_messages(config)
    except FeedsError as e:  # the state is locked or cannot be written
        fail(e)
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
        fail(e)
        return
    doc = [{"destination": o.shown, "sent": o.papers, "pending": o.pending,
            "error": o.error or o.unset} for o in outcomes]  # fmt: skip
    click.echo(json.dumps(doc, indent=2) if as_json else "\n".join(o.said() for o in outcomes)
               or "nothing pending: no state yet (`feeds run` first)")  # fmt: skip
    sys.exit(EXIT_OK if all(o.ok for o in outcomes) else EXIT_UNDELIVERED)


def _alert_lines(destinations: list[dict[str, Any]]) -> list[str]:
    from feeds.cli.report import alert_line

    return [alert_line(d) for d in destinations]
