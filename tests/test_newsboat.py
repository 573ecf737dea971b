"""A real newsboat (Debian's package) imports the published OPML, served by `feeds serve` on
127.0.0.1, and reloads: each feed then has as many articles in newsboat's cache as its RSS
file has items. newsboat keeps one article per id across all its feeds, so this holds only
when a paper's item has an id of its own in each feed (SPEC.md, "Output").

Skipped, with the reason, where newsboat is missing; PAPERFEEDS_BROWSER_TESTS=required (as
.ci/run sets) makes that a failure instead.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from feeds.pipeline import run
from tests.conftest import Workspace
from tests.test_serve import start_serve, stop

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _need(reason: str) -> None:
    if os.environ.get("PAPERFEEDS_BROWSER_TESTS") == "required":
        pytest.fail(f"PAPERFEEDS_BROWSER_TESTS=required: real readers must run, but {reason}")
    pytest.skip(reason)


@pytest.fixture
def newsboat() -> str:
    found = shutil.which("newsboat")
    if found is None:
        _need("newsboat is not installed (apt-get install newsboat)")
    assert found is not None
    return found


@pytest.fixture
def served(workspace: Workspace) -> Iterator[tuple[Workspace, str]]:
    """The seeds published, and served by `feeds serve`, with site.base_url pointing at it."""
    config = workspace.config()
    assert run(config, now=lambda: T0).exit_code == 0  # `feeds serve` wants a site to serve
    proc, port = start_serve(workspace.public, workspace.root)
    try:
        base_url = f"http://127.0.0.1:{port}/"
        settings = workspace.root / "config" / "settings.yaml"
        settings.write_text(f"site:\n  title: Lab papers\n  base_url: {base_url}\n", "utf-8")
        summary = run(workspace.config(settings=settings), now=lambda: T0)
        assert summary.exit_code == 0, summary
        yield workspace, base_url
    finally:
        stop(proc)


def _newsboat(program: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Its own HOME (newsboat keeps a lock file and history there), and no proxy: the server
    # is on this machine.
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"), "TERM": "dumb"}  # fmt: skip
    files = ["-u", str(home / "urls"), "-c", str(home / "cache.db"), "-C", str(home / "config")]
    done = subprocess.run(
        [program, *files, *args],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"newsboat {args}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _rss_items(path: Path) -> int:
    return len(ET.parse(path).getroot().findall("channel/item"))


def test_newsboat_shows_every_item_of_every_imported_feed(
    newsboat: str, served: tuple[Workspace, str], tmp_path: Path
) -> None:
    ws, base_url = served
    home = tmp_path / "home"
    home.mkdir()
    (home / "urls").touch()
    (home / "config").write_text("reload-threads 4\ndownload-retries 2\n", "utf-8")
    _newsboat(newsboat, home, "-i", str(ws.public / "feeds.opml"))
    urls = [line.split()[0] for line in (home / "urls").read_text("utf-8").splitlines() if line]
    feeds = sorted(ws.public.glob("feeds/*.rss.xml"))
    assert sorted(urls) == sorted(f"{base_url}feeds/{p.name}" for p in feeds)

    _newsboat(newsboat, home, "-x", "reload")
    with closing(sqlite3.connect(home / "cache.db")) as db:
        counts = dict(db.execute("SELECT feedurl, COUNT(*) FROM rss_item GROUP BY feedurl"))
        authors = dict(db.execute("SELECT title, author FROM rss_item"))
    expected = {f"{base_url}feeds/{p.name}": _rss_items(p) for p in feeds}
    assert sum(expected.values()) > expected[f"{base_url}feeds/all.rss.xml"]  # papers repeat
    assert counts == expected
    # Every author in the one article newsboat keeps (RSS: dc:creator).
    assert authors["MineDraft: A Framework for Batch Parallel Speculative Decoding"] == (
        "Zhenwei Tang, Arun Verma, Zijian Zhou, Zhaoxuan Wu, Alok Prakash, Daniela Rus, "
        "Bryan Kian Hsiang Low"
    )
