"""Shared fixtures: a scratch copy of the seeds and the example subscriptions, and the CLI."""

from __future__ import annotations

import atexit
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from feeds.clock import NOW_VARIABLE
from feeds.config import Config, load
from tests.linkserver import LinkServer
from tests.mailserver import MailServer
from tests.postgres import PostgresServer, running

if TYPE_CHECKING:
    from feeds.net import AddressPolicy
    from feeds.net.client import Client

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


# The config cache goes to a scratch folder, never the user's ~/.cache (child processes
# of the CLI tests inherit it), removed when the test session ends.
os.environ["XDG_CACHE_HOME"] = _CACHE = tempfile.mkdtemp(prefix="paperfeeds-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

# The suite publishes as on a machine without Pagefind (its binary "is" /dev/null, which
# does not run): no search index is built, and the site says search is not available. The
# tests of search itself (test_search.py, test_browser.py) point it back, with
# `pagefind_env` below: Pagefind's Chinese dictionary alone costs a publish ~0.2 s.
# What it was before the tests, kept in the environment: pytest -n's workers inherit the
# controller's environment, where it is /dev/null already.
_REAL = "PAPERFEEDS_TESTS_REAL_PAGEFIND_BINARY_PATH"
os.environ.setdefault(_REAL, os.environ.get("PAGEFIND_BINARY_PATH", ""))
PAGEFIND_BINARY_PATH = os.environ[_REAL] or None
os.environ["PAGEFIND_BINARY_PATH"] = os.devnull


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "browser: drives Debian's chromium through Playwright; skipped with the reason where"
        " either is missing (set PAPERFEEDS_BROWSER_TESTS=required to fail instead)",
    )


def pagefind_env() -> dict[str, str]:
    """Return the environment with Pagefind found as it would be outside the tests."""
    env = dict(os.environ)
    if PAGEFIND_BINARY_PATH is None:
        env.pop("PAGEFIND_BINARY_PATH", None)
    else:
        env["PAGEFIND_BINARY_PATH"] = PAGEFIND_BINARY_PATH
    return env


@pytest.fixture
def with_pagefind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Publish with Pagefind (in this process and the commands it starts)."""
    if PAGEFIND_BINARY_PATH is None:
        monkeypatch.delenv("PAGEFIND_BINARY_PATH", raising=False)
    else:
        monkeypatch.setenv("PAGEFIND_BINARY_PATH", PAGEFIND_BINARY_PATH)


_real_getaddrinfo = socket.getaddrinfo


def _local_getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
    """Resolve only loopback names and literal addresses: no test may reach the internet."""
    name = host.decode() if isinstance(host, bytes) else str(host or "")
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        if name != "localhost" and not name.endswith(".localhost"):
            raise socket.gaierror(socket.EAI_NONAME, f"tests run offline: {name}") from None
    return _real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _no_internet(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process code cannot resolve internet names (tests marked `network` excepted)."""
    if request.node.get_closest_marker("network") is None:
        monkeypatch.setattr(socket, "getaddrinfo", _local_getaddrinfo)


def offline(config: Config) -> Config:
    """Return the config with link checks and lookups off: tests never need the internet."""
    links = replace(config.settings.links, check=False)
    return replace(config, settings=replace(config.settings, links=links))


def project_config(
    root: Path,
    subscriptions: Path,
    settings: Path | None = None,
    *,
    inbox: str = "seeds",
    state: str = "state.sqlite3",
) -> Config:
    """Return the config of a project folder: inbox, public/ and state inside it, offline."""
    config = load(subscriptions, settings)
    s = replace(
        config.settings, inbox=(root / inbox,), public_dir=root / "public", state=root / state
    )
    return offline(replace(config, settings=s))


@dataclass(frozen=True)
class Workspace:
    """A scratch project folder: inbox (a copy of seeds/), config, and where output goes."""

    root: Path
    inbox: Path
    subscriptions: Path
    public: Path
    state: Path

    def config(self, subscriptions: Path | None = None, settings: Path | None = None) -> Config:
        """Return the loaded config pointed at this workspace, as the CLI options would."""
        config = load(subscriptions or self.subscriptions, settings)
        s = replace(config.settings, inbox=(self.inbox,), public_dir=self.public, state=self.state)
        return offline(replace(config, settings=s))

    def cli_args(self) -> list[str]:
        """Return the `feeds run` options that point at this workspace."""
        return [
            "--subscriptions", str(self.subscriptions), "--inbox", str(self.inbox),
            "--public", str(self.public), "--state", str(self.state), "--offline",
        ]  # fmt: skip


def make_workspace(root: Path) -> Workspace:
    """Copy seeds/ and config/subscriptions.yaml into root and return the paths."""
    root.mkdir(parents=True, exist_ok=True)
    inbox = root / "inbox"
    shutil.copytree(ROOT / "seeds", inbox)
    (root / "config").mkdir(exist_ok=True)
    subscriptions = root / "config" / "subscriptions.yaml"
    shutil.copyfile(ROOT / "config" / "subscriptions.yaml", subscriptions)
    return Workspace(root, inbox, subscriptions, root / "public", root / "state" / "state.sqlite3")


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A fresh workspace in tmp_path."""
    return make_workspace(tmp_path)


@pytest.fixture(scope="session")
def new_workspace(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Workspace]:
    """Return a factory of fresh workspaces, for module-scoped fixtures."""
    return lambda name: make_workspace(tmp_path_factory.mktemp(name))


def serve(ws: Workspace, settings: Path) -> subprocess.Popen[str]:
    """Start `feeds serve` on the workspace's public/ with these settings (its address is
    the settings' base_url); the caller stops it."""
    return subprocess.Popen(
        [sys.executable, "-m", "feeds", "serve", "--public", str(ws.public),
         "--settings", str(settings)],
        cwd=ws.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def run_feeds(
    cwd: Path, *args: str, timeout: float = 60, now: datetime | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python -m feeds ARGS` in cwd and return the finished process (never raises);
    `now` is the command's clock (a test that runs the library at a fixed time hands the
    command the same time, not today's)."""
    env = dict(os.environ)
    if now is not None:
        env[NOW_VARIABLE] = now.isoformat()
    return subprocess.run(
        [sys.executable, "-m", "feeds", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def feeds_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """The `feeds` command: feeds_cli(cwd, "run", ...) -> CompletedProcess."""
    return run_feeds


_SLOW_FEEDS = """\
import os
import sys
import time

import feeds.publish.write as write


class SlowOs:
    # os as feeds/publish/write.py sees it: each file waits between temp file and rename.
    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def replace(src, dst):
        time.sleep({delay})
        os.replace(src, dst)


write.os = SlowOs()
if {helped}:  # every publish shares its parts with a helper process, slowed down too
    from feeds import parallel as helper
    from feeds.publish import parts

    helper.HELP_FROM = 0
    parts.PAGES_PER_PART = 5
    if sys.argv[1:2] == ["--helper"]:
        open(sys.argv[2] + ".helper-started", "a").close()
        helper._main(int(sys.argv[3]), int(sys.argv[4]))
        sys.exit()
    helper.COMMAND = [sys.executable, __file__, "--helper", __file__]
from feeds.cli import main

sys.argv[0] = "feeds"
main()
"""


def slow_feeds(folder: Path, delay: float, *, helped: bool = False) -> Path:
    """Write a script that is `feeds` with publishing slowed down: each file waits `delay`
    seconds between its temp file being written and its rename (so a signal lands while
    temp files exist and some, not all, files are published). Return its path.

    `helped`: every publish takes a helper process (see feeds.parallel), started
    through the script too, which then leaves a file `<script>.helper-started`."""
    script = folder / "slow_feeds.py"
    script.write_text(_SLOW_FEEDS.format(delay=delay, helped=helped))
    return script


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Record every address a socket is opened to (the guarded backend connects with
    socket.create_connection): tests assert what was never connected to."""
    calls: list[tuple[str, int]] = []
    real = socket.create_connection

    def recording(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        calls.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", recording)
    return calls


@pytest.fixture
def mail() -> Iterator[MailServer]:
    """A real SMTP server on 127.0.0.1 that keeps what it receives (see mailserver.py)."""
    server = MailServer()
    yield server
    server.close()


@pytest.fixture
def loopback() -> Iterator[Callable[..., LinkServer]]:
    """Return a starter of real HTTP servers on loopback addresses (`loopback("127.0.0.2")`;
    routes set by the test); every server started is closed after the test."""
    started: list[LinkServer] = []

    def start(host: str = "127.0.0.1") -> LinkServer:
        started.append(LinkServer(host))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def site(loopback: Callable[..., LinkServer]) -> LinkServer:
    """The server that links, sources and APIs point at, on 127.0.0.1."""
    return loopback()


@pytest.fixture
def web(site: LinkServer) -> LinkServer:
    """A real HTTP server on 127.0.0.1 for alert webhooks (routes set by the test)."""
    return site


Guarded = Callable[..., "Client"]


@pytest.fixture
def guarded() -> Iterator[Guarded]:
    """Return a maker of guarded clients (`guarded(policy, timeout=2.0)`), the network's
    own, closed after the test."""
    from feeds.net import guarded_client

    made: list[Client] = []

    def make(policy: AddressPolicy, timeout: float = 2.0) -> Client:
        made.append(guarded_client(policy, timeout=timeout))
        return made[-1]

    yield make
    for client in made:
        client.close()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server on 127.0.0.1, one per test process (see tests/postgres.py)."""
    with running() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def new_state(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Path | str]:
    """Return a maker of new, empty states on each engine: SQLite files, or new databases
    of a real PostgreSQL server."""
    names = iter(range(1_000_000))
    if request.param == "sqlite":
        return lambda: tmp_path / f"state-{next(names)}.sqlite3"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database


@pytest.fixture
def state_place(new_state: Callable[[], Path | str]) -> Path | str:
    """Where a new state is, on each engine (see new_state)."""
    return new_state()
