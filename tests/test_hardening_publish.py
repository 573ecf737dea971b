"""What a careless operator cannot break for good: published files deleted or damaged are
written again, and a state that cannot be written is one clear error."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from feeds.errors import StateError
from feeds.pipeline import run
from tests.conftest import Workspace

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
Cli = Callable[..., CompletedProcess[str]]


def _files(public: Path) -> dict[str, bytes]:
    return {str(p.relative_to(public)): p.read_bytes() for p in public.rglob("*") if p.is_file()}


@pytest.fixture
def published(workspace: Workspace) -> dict[str, bytes]:
    run(workspace.config(), now=lambda: T0)
    return _files(workspace.public)


def test_deleted_feeds_and_reading_lists_are_written_again(
    workspace: Workspace, published: dict[str, bytes]
) -> None:
    shutil.rmtree(workspace.public / "feeds")
    (workspace.public / "topics" / "hallucination.html").unlink()
    (workspace.public / "feeds.opml").unlink()
    summary = run(workspace.config(), now=lambda: T0 + timedelta(hours=1))
    assert summary.files.written >= 3 * 8 + 2  # 7 topics and `all`, the page, the OPML
    assert _files(workspace.public) == published
    # ... and the next run has nothing to do again.
    assert run(workspace.config(), now=lambda: T0 + timedelta(hours=2)).files.written == 0


def test_an_emptied_feed_is_written_again(
    workspace: Workspace, published: dict[str, bytes]
) -> None:
    (workspace.public / "feeds" / "all.atom.xml").write_bytes(b"")
    run(workspace.config(), now=lambda: T0 + timedelta(hours=1))
    assert _files(workspace.public) == published


def test_repair_writes_every_damaged_file_again(
    workspace: Workspace, published: dict[str, bytes], feeds_cli: Cli
) -> None:
    page = next((workspace.public / "papers").iterdir())
    page.write_text("<html>defaced</html>")
    feed = workspace.public / "feeds" / "speculative-decoding.rss.xml"
    feed.write_bytes(feed.read_bytes()[:-40])  # cut short, not empty
    plain = run(workspace.config(), now=lambda: T0 + timedelta(hours=1))
    assert plain.files.written == 0  # a plain run looks only for missing files
    r = feeds_cli(workspace.root, "run", "--repair", *workspace.cli_args())
    assert r.returncode == 0, r.stderr
    assert "2 files written" in r.stdout, r.stdout
    assert _files(workspace.public) == published


def test_a_state_that_cannot_be_written_is_one_clear_error(
    workspace: Workspace, published: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read-only state file as SQLite itself meets it (root, who runs the tests, may
    # write any file: the connection is opened read-only instead).
    connect = sqlite3.connect

    def read_only(path: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        uri = f"{Path(str(path)).resolve().as_uri()}?mode=ro"
        return connect(uri, *args, uri=True, **{k: v for k, v in kwargs.items() if k != "uri"})  # type: ignore[arg-type]

    monkeypatch.setattr("feeds.state._db.sqlite3.connect", read_only)
    with pytest.raises(StateError) as error:
        run(workspace.config(), now=lambda: T0 + timedelta(hours=1))
    assert "cannot write the state database" in str(error.value)
    assert "readonly" in str(error.value)
    assert str(workspace.state) in str(error.value)
    assert _files(workspace.public) == published  # what was published stays


def test_a_state_folder_that_cannot_be_made_is_one_clear_line(
    workspace: Workspace, feeds_cli: Cli, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    args = [a if a != str(workspace.state) else str(blocker / "s.sqlite3")
            for a in workspace.cli_args()]  # fmt: skip
    r = feeds_cli(workspace.root, "run", *args)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1
    assert "cannot create its lock file" in r.stderr
