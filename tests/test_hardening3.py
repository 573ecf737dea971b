"""Hardening, third round: a slow alert receiver, passwords in malformed state URLs, a first
publish among the user's files, how a failed run ended, S3 errors in words, the whole
settings menu, the systemd and cron examples, links nobody can open, weak ETags, config
mistakes said at their line, and smaller things a user trips over.

Real parts: HTTP servers on 127.0.0.1 (tests/linkserver.py), whole `feeds` processes, real
files and SQLite states, a real SeaweedFS (tests/test_bucket.py), systemd-analyze.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feeds.alerts.deliver import deliver
from feeds.alerts.send import send_pending
from feeds.pipeline import run
from tests.conftest import ROOT, Workspace
from tests.linkserver import LinkServer, _Handler, send

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
SEEDS = sorted((ROOT / "seeds").glob("*.txt"))

# --- 1. a receiver that answers after Apprise's own 4 s gets one message ------------------

SLOW = 6.0  # seconds the receiver takes: beyond Apprise's default 4 s, within our 30 s


class SlowHook:
    """A JSON webhook that takes `delay` seconds to answer, and counts what it receives."""

    def __init__(self, web: LinkServer, delay: float) -> None:
        self.delay = delay
        self.bodies: list[dict[str, object]] = []
        web.route("/hook", self._handle)
        self.url = f"json://127.0.0.1:{web.port}/hook"

    def _handle(self, req: _Handler) -> None:
        self.bodies.append(json.loads(req.rfile.read(int(req.headers["Content-Length"]))))
        if not req.server.owner.stop.wait(self.delay):
            send(req, 200, body=b"{}")


def _alerting(ws: Workspace, url: str) -> Path:
    for extra in SEEDS[1:]:
        (ws.inbox / extra.name).unlink()
    settings = ws.root / "config" / "settings.yaml"
    settings.write_text(f'links:\n  check: false\nalerts:\n  - to: "{url}"\n', encoding="utf-8")
    return settings


def test_a_receiver_that_answers_after_seconds_gets_one_message(
    workspace: Workspace, web: LinkServer
) -> None:
    hook = SlowHook(web, SLOW)
    config = workspace.config(settings=_alerting(workspace, hook.url))
    run(config, now=lambda: T0)  # a new destination starts now
    shutil.copy(SEEDS[1], workspace.inbox / SEEDS[1].name)
    second = run(config, now=lambda: T0 + timedelta(hours=1))
    assert second.alerts_failed == {}, second.alerts_failed
    assert list(second.alerts_sent.values()) == [30]
    for _ in range(2):  # `feeds alerts --send-now`, twice: nothing is pending any more
        [outcome] = send_pending(config, now=lambda: T0 + timedelta(hours=2))
        assert (outcome.ok, outcome.papers) == (True, 0)
    assert len(hook.bodies) == 1


def test_the_urls_own_read_timeout_overrides_the_wait(web: LinkServer) -> None:
    from tests.test_alerts import MINEDRAFT, SITE, compose

    hook = SlowHook(web, SLOW)
    late = deliver(hook.url + "?rto=0.5", compose([MINEDRAFT], SITE), timeout=30)
    assert not late.ok
    assert late.error
    assert late.error.endswith("(no answer within 0.5 s)"), late.error
