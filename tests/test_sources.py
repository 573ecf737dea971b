"""Remote sources against a real local HTTP server: conditional GET, changes, failures and
backoff, stale reports, and the address guard (a private address not allowed is never
connected to)."""

from __future__ import annotations

import email.utils
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from feeds.config import Config
from feeds.pipeline import RunSummary, run
from feeds.state import Store
from tests.conftest import ROOT, Workspace, make_workspace, run_feeds

SEEDS = sorted((ROOT / "seeds").glob("*.txt"))
T0 = datetime.now(UTC).replace(microsecond=0)
NEW_RECORD = (
    "\n\nSpeculative Drafting With Tiny Verifiers for Remote Digests\n\n"
    "用微型验证器进行推测草拟\n\nAda Lovelace, Alan Turing\n\n"
    "AI总结 一篇只出现在远程摘要更新中的新论文。\n"
).encode()


@dataclass
class Seen:
    path: str
    headers: dict[str, str]  # lower-cased names


@dataclass
class DigestServer:
    """A digest at /digest.txt with ETag and Last-Modified, answering conditional GETs."""

    host: str = "127.0.0.5"
    port: int = 0
    body: bytes = b""
    etag: bool = True
    last_modified: bool = True
    status: int = 200  # anything else: answer this, with no digest
    redirect_to: str | None = None  # where /redirect points
    requests: list[Seen] = field(default_factory=list)
    connections: int = 0
    version: int = 0

    def __post_init__(self) -> None:
        owner = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def process_request(self, request: Any, client_address: Any) -> None:
                owner.connections += 1
                super().process_request(request, client_address)

        self._server = Server((self.host, self.port), Handler)
        self._server.owner = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def url(self, path: str = "/digest.txt") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def serve(self, body: bytes) -> None:
        self.body = body
        self.version += 1

    @property
    def current_etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'

    @property
    def current_last_modified(self) -> str:
        when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=self.version)
        return email.utils.format_datetime(when, usegmt=True)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        s: DigestServer = self.server.owner  # type: ignore[attr-defined]
        s.requests.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.path == "/redirect" and s.redirect_to:
            self._send(302, {"Location": s.redirect_to})
            return
        if self.path != "/digest.txt":
            self._send(404, body=b"no such file")
            return
        if s.status != 200:
            self._send(s.status, body=b"<html><body>Internal Server Error</body></html>")
            return
        validators = {}
        if s.etag:
            validators["ETag"] = s.current_etag
        if s.last_modified:
            validators["Last-Modified"] = s.current_last_modified
        inm, ims = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        if (inm and s.etag and inm == s.current_etag) or (
            not inm and ims and s.last_modified and ims == s.current_last_modified
        ):
            self._send(304, validators)
            return
        self._send(200, {"Content-Type": "text/plain; charset=utf-8", **validators}, s.body)

    def _send(self, status: int, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and status != 304:
            self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[DigestServer]:
    s = DigestServer()
    s.serve(SEEDS[0].read_bytes())
    yield s
    s.close()


def workspace(root: Path, sources: list[str], extra: str = "", inbox: bool = False) -> Workspace:
    """A workspace with these sources; its inbox holds the second seed or nothing."""
    ws = make_workspace(root)
    for path in ws.inbox.iterdir():
        if not (inbox and path.name == SEEDS[1].name):
            path.unlink()
    text = "sources:\n" + "".join(f"  - {url}\n" for url in sources)
    text += "links:\n  allow_hosts: [127.0.0.5]\n  check: false\n" + extra
    (root / "config" / "settings.yaml").write_text(text)
    return ws


def config(ws: Workspace) -> Config:
    return ws.config(settings=ws.root / "config" / "settings.yaml")


def cycle(ws: Workspace, after: timedelta = timedelta(0)) -> RunSummary:
    """One run, `after` past T0, with the network (sources) on."""
    return run(config(ws), now=lambda: T0 + after, lock_wait=5)


def status(ws: Workspace) -> dict[str, Any]:
    r = run_feeds(
        ws.root, "status", "--json", "--settings", str(ws.root / "config" / "settings.yaml"),
        "--subscriptions", str(ws.subscriptions), "--state", str(ws.state),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def feed_count(ws: Workspace) -> int:
    return len(json.loads((ws.public / "feeds" / "all.json").read_bytes())["items"])


@pytest.mark.parametrize(
    ("etag", "last_modified"),
    [(True, True), (True, False), (False, True)],
    ids=["etag+last-modified", "etag-only", "last-modified-only"],
)
def test_fetched_then_not_modified_then_changed(
    tmp_path: Path, server: DigestServer, etag: bool, last_modified: bool
) -> None:
    server.etag, server.last_modified = etag, last_modified
    ws = workspace(tmp_path / "ws", [server.url()])

    # links.check is false: links are not checked, but the source is still fetched.
    first = cycle(ws)
    assert (first.digests, first.papers_new, first.papers_total) == (1, 30, 30)
    assert first.stale == ()
    assert len(server.requests) == 1
    sent = server.requests[0].headers
    assert "if-none-match" not in sent
    assert "if-modified-since" not in sent
    assert sent["user-agent"].startswith("paperfeeds")
    assert feed_count(ws) == 30

    second = cycle(ws, timedelta(minutes=1))
    assert len(server.requests) == 2
    sent = server.requests[1].headers
    if etag:
        assert sent.get("if-none-match") == server.current_etag
    if last_modified:
        assert sent.get("if-modified-since") == server.current_last_modified
    assert (second.digests, second.known, second.papers_total) == (0, 0, 30)
    assert second.stale == ()

    old_etag, old_date = server.current_etag, server.current_last_modified
    server.serve(SEEDS[0].read_bytes() + NEW_RECORD)  # a new record appended
    third = cycle(ws, timedelta(minutes=2))
    sent = server.requests[2].headers
    if etag:
        assert sent.get("if-none-match") == old_etag
    if last_modified:
        assert sent.get("if-modified-since") == old_date
    assert (third.digests, third.papers_new, third.papers_total) == (1, 1, 31)
    assert feed_count(ws) == 31

    fourth = cycle(ws, timedelta(minutes=3))  # the new validators were remembered
    assert len(server.requests) == 4
    assert (fourth.digests, fourth.papers_total) == (0, 31)
    if etag:
        assert server.requests[3].headers.get("if-none-match") == server.current_etag

    if not (etag and last_modified):
        return
    (src,) = status(ws)["sources"]
    assert src["url"] == server.url()
    assert src["stale"] is None
    assert src["failures"] == 0
    assert src["last_ok"] is not None


def test_a_failing_source_is_said_once_backs_off_and_the_inbox_is_published(
    tmp_path: Path, server: DigestServer
) -> None:
    ws = workspace(tmp_path / "ws", [server.url()], inbox=True)
    server.status = 500

    first = cycle(ws)
    assert first.digests == 1  # the inbox's digest
    assert feed_count(ws) == 30  # published although the source failed
    assert first.stale == ()  # a first failure is not stale: said once, in words
    retry = f"{T0 + timedelta(minutes=5):%Y-%m-%d %H:%M} UTC"
    assert first.warnings == (f"source {server.url()} down (HTTP 500); tried again after {retry}",)
    assert first.rejected == ()  # a failing source is not a rejected digest
    asked = len(server.requests)
    assert asked >= 1

    (src,) = status(ws)["sources"]
    assert src["stale"] is None  # failing since this run: not stale before stale_after
    assert "500" in src["error"]
    assert src["failures"] == 1

    store = Store(ws.state, T0)
    try:
        next_try = store.source(server.url()).next_try
    finally:
        store.close()
    assert next_try is not None
    assert next_try > T0 + timedelta(seconds=1)

    again = cycle(ws, timedelta(seconds=1))  # backing off: not asked again yet
    assert len(server.requests) == asked
    assert (again.stale, again.warnings) == ((), ())  # said once per outage
    assert feed_count(ws) == 30

    port = server.port
    server.close()  # connection refused from now on
    later = cycle(ws, timedelta(minutes=6))  # past the first backoff: tried, refused
    assert (later.stale, later.warnings) == ((), ())  # the same outage
    assert feed_count(ws) == 30
    store = Store(ws.state, T0)
    try:
        state = store.source(server.url())
    finally:
        store.close()
    assert state.failures == 2
    assert state.next_try is not None
    assert state.next_try > T0 + timedelta(minutes=6) + timedelta(minutes=5)  # longer wait

    healthy = DigestServer(port=port)
    healthy.serve(SEEDS[0].read_bytes())
    try:
        recovered = cycle(ws, timedelta(minutes=30))
    finally:
        healthy.close()
    assert len(healthy.requests) == 1
    assert (recovered.digests, recovered.papers_total) == (1, 60)
    assert recovered.stale == ()
    (src,) = status(ws)["sources"]
    assert (src["stale"], src["failures"]) == (None, 0)


def test_a_source_unchanged_for_longer_than_stale_after_is_stale(
    tmp_path: Path, server: DigestServer
) -> None:
    ws = workspace(tmp_path / "ws", [server.url()], extra="stale_after: 1m\n")
    assert cycle(ws).digests == 1
    assert cycle(ws, timedelta(seconds=30)).stale == ()  # not yet
    summary = cycle(ws, timedelta(minutes=2))
    assert summary.digests == 0
    (stale,) = summary.stale
    assert server.url() in stale
    assert "unchanged for" in stale
    server.serve(SEEDS[0].read_bytes() + NEW_RECORD)
    assert cycle(ws, timedelta(minutes=3)).stale == ()  # it changed: fresh again


def test_unchanged_for_says_how_long(tmp_path: Path, server: DigestServer) -> None:
    """With `stale_after` in minutes or hours the report must still say something true."""
    ws = workspace(tmp_path / "ws", [server.url()], extra="stale_after: 1m\n")
    cycle(ws)
    (stale,) = cycle(ws, timedelta(minutes=2)).stale
    assert "unchanged for 0 days" not in stale, stale


def test_a_private_address_not_allowed_is_never_connected_to(
    tmp_path: Path, server: DigestServer
) -> None:
    private = DigestServer(host="127.0.0.6")
    private.serve(SEEDS[0].read_bytes())
    try:
        server.redirect_to = private.url()
        sources = [
            private.url(),
            f"http://2130706438:{private.port}/digest.txt",  # 127.0.0.6, spelled as a number
            f"http://[::ffff:127.0.0.6]:{private.port}/digest.txt",  # IPv4-mapped IPv6
            server.url("/redirect"),  # an allowed host redirecting to it
        ]
        ws = workspace(tmp_path / "ws", sources, inbox=True)
        summary = cycle(ws)
        assert private.connections == 0
        assert private.requests == []
        assert {r.path for r in server.requests} == {"/redirect"}  # only the allowed host
        assert summary.digests == 1  # only the inbox
        assert summary.papers_total == 30
        assert summary.stale == ()  # first failures: said as such, not stale
        said = " ".join(summary.warnings)
        assert all(url in said for url in sources), said
        assert feed_count(ws) == 30
        assert len(status(ws)["sources"]) == len(sources)
    finally:
        private.close()


def test_offline_fetches_no_source(tmp_path: Path, server: DigestServer) -> None:
    ws = workspace(tmp_path / "ws", [server.url()], inbox=True)
    summary = run(config(ws), now=lambda: T0, offline=True)
    assert server.connections == 0
    assert (summary.digests, summary.papers_total, summary.stale) == (1, 30, ())


def test_a_source_answering_an_error_page_is_rejected_by_its_url(
    tmp_path: Path, server: DigestServer
) -> None:
    server.serve(b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>")
    ws = workspace(tmp_path / "ws", [server.url()], inbox=True)
    summary = cycle(ws)
    assert [r.name for r in summary.rejected] == [server.url()]
    assert summary.exit_code == 3
    assert feed_count(ws) == 30  # the inbox is published all the same
    again = cycle(ws, timedelta(minutes=1))  # not modified: not reported again
    assert again.rejected == ()
    assert again.digests == 0
