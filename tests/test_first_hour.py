"""What a new user meets in the first hour: settings that take effect, status that tells the
truth, an example config without warnings, messages that read well."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

from feeds.pipeline import run
from feeds.say import shorten
from tests.conftest import Workspace

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
