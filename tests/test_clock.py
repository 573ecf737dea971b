"""The one clock: PAPERFEEDS_NOW sets "now" for the library and the commands alike."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from subprocess import CompletedProcess

import pytest

from feeds.clock import NOW_VARIABLE, utcnow
from feeds.errors import ConfigError
from tests.conftest import Workspace

Cli = Callable[..., CompletedProcess[str]]


def test_the_clock_is_the_system_clock_to_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NOW_VARIABLE, raising=False)
    before = datetime.now(UTC).replace(microsecond=0)
    now = utcnow()
    assert now.tzinfo is UTC
    assert now.microsecond == 0
    assert before <= now <= datetime.now(UTC)


def test_the_variable_sets_the_time_in_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NOW_VARIABLE, "2027-03-01T08:30:15.5+01:00")
    assert utcnow() == datetime(2027, 3, 1, 7, 30, 15, tzinfo=UTC)
    monkeypatch.setenv(NOW_VARIABLE, "2027-03-01T07:00:00Z")
    assert utcnow() == datetime(2027, 3, 1, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "said"), [("tomorrow", "not an ISO 8601 time"), ("2027-03-01T07:00", "no time zone")]
)
def test_a_bad_time_is_a_config_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str, said: str
) -> None:
    monkeypatch.setenv(NOW_VARIABLE, value)
    with pytest.raises(ConfigError, match=said) as e:
        utcnow()
    assert NOW_VARIABLE in str(e.value)


def test_the_commands_take_their_time_from_the_variable(
    workspace: Workspace, feeds_cli: Cli
) -> None:
    when = datetime(2031, 5, 4, 3, 2, 1, tzinfo=UTC)
    ran = feeds_cli(workspace.root, "run", *workspace.cli_args(), "--quiet", now=when)
    assert ran.returncode == 0, ran.stderr
    args = ["--subscriptions", str(workspace.subscriptions), "--state", str(workspace.state)]
    status = feeds_cli(workspace.root, "status", *args, "--json", now=when + timedelta(hours=1))
    assert json.loads(status.stdout)["last_run"]["started"] == when.isoformat()
    feed = json.loads((workspace.public / "feeds" / "all.json").read_text(encoding="utf-8"))
    assert {item["date_published"] for item in feed["items"]} == {"2031-05-04T03:02:01Z"}
