"""What a new user meets in the first hour: settings that take effect, status that tells the
truth, an example config without warnings, messages that read well."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from feeds.config import Settings
from feeds.pipeline import run
from feeds.schedule import crontab, next_times
from feeds.words import shorten
from tests.conftest import ROOT, Workspace, serve

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
Cli = Callable[..., CompletedProcess[str]]


def _mtimes(public: Path) -> dict[str, int]:
    return {str(p.relative_to(public)): p.stat().st_mtime_ns for p in public.rglob("*.*")}


def test_page_size_alone_pages_the_reading_lists_anew(workspace: Workspace, tmp_path: Path) -> None:
    run(workspace.config(), now=lambda: T0)
    before = _mtimes(workspace.public)
    settings = tmp_path / "settings.yaml"
    settings.write_text("site:\n  page_size: 20\n")
    summary = run(workspace.config(settings=settings), now=lambda: T0 + timedelta(hours=1))
    after = _mtimes(workspace.public)
    # icml-2026 (60 papers): a front page and two archive parts of 20 each.
    assert "topics/icml-2026/1.html" in after
    assert "topics/icml-2026/2.html" in after
    assert "topics/icml-2026/3.html" not in after
    front = (workspace.public / "topics" / "icml-2026.html").read_text()
    assert front.count("<li><a href=") == 20
    # Exactly the reading lists: no paper page and no feed was written again.
    rewritten = {p for p in before if before[p] != after[p]}
    assert rewritten
    assert all(p.startswith("topics/") or p == "index.html" for p in rewritten), rewritten
    assert summary.files.written == len(rewritten) + 2  # and the two new archive parts


def test_feed_length_alone_rewrites_the_feeds_only(workspace: Workspace, tmp_path: Path) -> None:
    run(workspace.config(), now=lambda: T0)
    settings = tmp_path / "settings.yaml"
    settings.write_text("feed:\n  max_items: 5\n")
    run(workspace.config(settings=settings), now=lambda: T0 + timedelta(hours=1))
    feed = json.loads((workspace.public / "feeds" / "all.json").read_text())
    assert len(feed["items"]) == 5
    assert not any((workspace.public / "papers").glob("*.tmp"))


def test_status_says_how_long_the_last_run_took(workspace: Workspace, feeds_cli: Cli) -> None:
    r = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert r.returncode == 0, r.stderr
    status = feeds_cli(workspace.root, "status", "--state", str(workspace.state))
    (line,) = [x for x in status.stdout.splitlines() if x.startswith("last run:")]
    assert ", took " in line
    assert " s; 2 new digests" in line


def test_the_example_config_gives_no_warnings(workspace: Workspace, feeds_cli: Cli) -> None:
    feeds_cli(workspace.root, "run", *workspace.cli_args())
    r = feeds_cli(
        workspace.root, "check", "--subscriptions", str(workspace.subscriptions),
        "--state", str(workspace.state),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stdout + r.stderr, r.stdout


def test_long_titles_are_cut_at_a_word() -> None:
    title = (
        "SpecPrune-VLA: Accelerating Vision-Language-Action Models via Action-Aware "
        "Self-Speculative Pruning"
    )
    assert shorten(title, 90) == (
        "SpecPrune-VLA: Accelerating Vision-Language-Action Models via Action-Aware …"
    )
    assert shorten("Short title", 90) == "Short title"
    assert shorten("x" * 100, 10) == "xxxxxxxxx…"


# --- schedules run when the user said ------------------------------------------------------

NOW = datetime(2026, 12, 4, 16, 30, tzinfo=UTC)  # a Friday


@pytest.mark.parametrize(
    ("cron", "days"),
    [
        ("0 7 * * 1-5", ["Mon", "Tue", "Wed", "Thu", "Fri", "Mon", "Tue"]),
        ("0 7 * * mon-fri", ["Mon", "Tue", "Wed", "Thu", "Fri", "Mon", "Tue"]),
        ("0 7 * * 0", ["Sun"] * 7),
        ("0 7 * * 7", ["Sun"] * 7),
        ("0 7 * * 5-7", ["Sat", "Sun", "Fri", "Sat", "Sun", "Fri", "Sat"]),
        ("0 7 * * 0-2", ["Sun", "Mon", "Tue", "Sun", "Mon", "Tue", "Sun"]),
        ("0 7 * * */2", ["Sat", "Sun", "Tue", "Thu", "Sat", "Sun", "Tue"]),
        ("0 7 * * 1,3,SAT", ["Sat", "Mon", "Wed", "Sat", "Mon", "Wed", "Sat"]),
    ],
)
def test_cron_weekdays_are_crontab_weekdays(cron: str, days: list[str]) -> None:
    times = next_times(Settings(schedule_cron=cron), NOW, 7)
    assert [t.strftime("%a") for t in times] == days
    assert all(t.hour == 7 and t.minute == 0 for t in times)


def test_cron_day_and_weekday_run_on_either_as_cron_does() -> None:
    times = next_times(Settings(schedule_cron="0 7 13 * 5"), NOW, 4)
    assert [t.strftime("%d %a") for t in times] == ["11 Fri", "13 Sun", "18 Fri", "25 Fri"]


@pytest.mark.parametrize(
    ("cron", "said"),
    [
        ("0 7 * * 8", "'8' is not a weekday"),
        ("0 7 * * fri-mon", "a range of weekdays goes forward"),
        ("61 7 * * *", "higher than the maximum value (59)"),
        ("0 7 * *", "needs 5 fields"),
    ],
)
def test_a_bad_cron_line_is_told_by_the_scheduler(cron: str, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        crontab(cron)


def test_check_shows_the_next_three_times(workspace: Workspace, feeds_cli: Cli) -> None:
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text('schedule:\n  cron: "0 7 * * 1-5"\n')
    r = feeds_cli(
        workspace.root, "check", "--subscriptions", str(workspace.subscriptions),
        "--settings", str(settings), "--state", str(workspace.state),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith("next: ")]
    assert len(lines) == 3
    days = [x.split("(")[1].rstrip(")") for x in lines]
    assert set(days) <= {"Mon", "Tue", "Wed", "Thu", "Fri"}
    assert all(" 07:00 UTC (" in x for x in lines)


# --- a missing inbox folder ------------------------------------------------------------------


def test_a_missing_inbox_folder_is_a_usage_error(workspace: Workspace, feeds_cli: Cli) -> None:
    args = [a if a != str(workspace.inbox) else "nodir" for a in workspace.cli_args()]
    r = feeds_cli(workspace.root, "run", *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "error: inbox folder nodir does not exist (given with --inbox)"
    assert not workspace.public.exists()


def test_watch_says_once_that_an_inbox_folder_is_missing_and_reads_it_when_back(
    workspace: Workspace, tmp_path: Path
) -> None:
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text("schedule:\n  every: 1s\nsettle: 0s\n")
    gone = workspace.root / "later"
    args = [a if a != str(workspace.inbox) else str(gone) for a in workspace.cli_args()]
    err = (tmp_path / "watch.err").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "feeds", "watch", *args, "--settings", str(settings)],
        cwd=workspace.root, stdout=subprocess.DEVNULL, stderr=err,
    )  # fmt: skip
    try:
        log = tmp_path / "watch.err"
        _wait(lambda: log.read_text().count("next cycle: ") >= 3)
        gone.mkdir()
        shutil.copy(next(workspace.inbox.iterdir()), gone / "digest.txt")
        _wait(lambda: "is back" in log.read_text() and (workspace.public / "papers").is_dir())
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        err.close()
    text = log.read_text()
    assert text.count("does not exist") == 1, text
    assert "a cycle now, then " in text


def _wait(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


# --- an empty folder: feeds init -------------------------------------------------------------


def test_init_writes_an_example_that_runs_and_never_overwrites(
    tmp_path: Path, feeds_cli: Cli
) -> None:
    empty = feeds_cli(tmp_path, "run", "--offline")
    assert empty.returncode == 2
    assert "feeds init" in empty.stderr  # the way out is named
    r = feeds_cli(tmp_path, "init")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "config" / "subscriptions.yaml").is_file()
    assert (tmp_path / "seeds").is_dir()
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds", dirs_exist_ok=True)
    ran = feeds_cli(tmp_path, "run", "--offline")
    assert ran.returncode == 0, ran.stderr
    check = feeds_cli(tmp_path, "check")
    assert check.returncode == 0, check.stderr
    assert "warning" not in check.stdout
    # Edited files are never overwritten.
    (tmp_path / "config" / "settings.yaml").write_text("site:\n  title: Mine\n")
    again = feeds_cli(tmp_path, "init")
    assert again.returncode == 0
    assert "exists, left as it is" in again.stdout
    assert (tmp_path / "config" / "settings.yaml").read_text() == "site:\n  title: Mine\n"


def test_the_packaged_example_is_the_project_example() -> None:
    packaged = ROOT / "feeds" / "examples" / "subscriptions.yaml"
    assert packaged.read_bytes() == (ROOT / "config" / "subscriptions.yaml").read_bytes()


def test_help_lists_only_options_a_command_uses(feeds_cli: Cli, tmp_path: Path) -> None:
    for command in ("check", "status"):
        shown = feeds_cli(tmp_path, command, "--help").stdout
        for unused in ("--inbox", "--public", "--offline"):
            assert unused not in shown, (command, unused)
    refused = feeds_cli(tmp_path, "status", "--quiet")
    assert refused.returncode == 2
    assert "No such option '--quiet'" in refused.stderr


# --- feeds serve and the feeds' base URL ---------------------------------------------------


def test_serve_on_another_port_than_the_feeds_says_so(workspace: Workspace) -> None:
    from tests.test_serve import start_serve, stop

    run(workspace.config(), now=lambda: T0)
    proc, port = start_serve(workspace.public, workspace.root)  # --port 0: not 8000
    stop(proc)
    _out, err = proc.communicate(timeout=10)
    assert "note: the feeds' links point to http://localhost:8000/ (site.base_url)" in err
    assert f"http://localhost:{port}/" in err


def test_serve_listens_where_a_local_base_url_points(workspace: Workspace) -> None:
    from tests.test_serve import request, stop

    settings = workspace.root / "config" / "settings.yaml"
    with socket.socket() as probe:  # a port free now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.write_text(f"site:\n  base_url: http://localhost:{port}/\n")
    run(workspace.config(settings=settings), now=lambda: T0)
    proc = serve(workspace, settings)
    try:
        assert proc.stdout is not None
        assert f"at http://localhost:{port}/" in proc.stdout.readline()
        status, _headers, body = request(port, "/feeds/all.atom.xml")
        assert status == 200
        assert f"http://localhost:{port}/papers/".encode() in body
    finally:
        stop(proc)
    _out, err = proc.communicate(timeout=10)
    assert "note:" not in err


# --- config messages ------------------------------------------------------------------------


def test_a_long_topic_id_is_told_the_limit(tmp_path: Path, feeds_cli: Cli) -> None:
    subs = tmp_path / "s.yaml"
    subs.write_text(f"topics:\n  - id: {'a' * 70}\n    title: X\n    any: [x]\n")
    r = feeds_cli(tmp_path, "check", "--subscriptions", str(subs))
    assert r.returncode == 2
    assert "is 70 characters long; at most 63" in r.stderr
    assert "lowercase" not in r.stderr


@pytest.mark.parametrize("value", ["no", "1.5", "ten"])
def test_a_count_that_is_not_a_whole_number_says_so(
    tmp_path: Path, feeds_cli: Cli, value: str
) -> None:
    subs = tmp_path / "s.yaml"
    subs.write_text(f"topics:\n  - id: t\n    title: X\n    any: [x]\n    max_items: {value}\n")
    r = feeds_cli(tmp_path, "check", "--subscriptions", str(subs))
    assert r.returncode == 2
    assert ":5: max_items must be a whole number, not " in r.stderr


def test_a_run_says_why_search_was_not_updated(workspace: Workspace, feeds_cli: Cli) -> None:
    # The suite runs as on a machine without Pagefind (see conftest): the run publishes,
    # and says why the site has no search, but not with --quiet (it is no input problem).
    r = feeds_cli(workspace.root, "run", *workspace.cli_args())
    assert r.returncode == 0, r.stderr
    assert "search: Pagefind was not found" in r.stdout
    quiet = feeds_cli(workspace.root, "run", "--quiet", "--repair", *workspace.cli_args())
    assert quiet.stdout == ""
    assert quiet.stderr == ""
