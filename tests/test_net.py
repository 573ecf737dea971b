"""feeds.net against real servers on loopback: `follow` (every hop judged by the policy, and by
the guard where it connects; a bound on hops; loops), the transport on httpcore's public
interface (streamed bodies, kept-alive connections, TLS, errors as FeedsErrors) and the one
User-Agent of every kind of request.

The servers the policies allow listen on 127.0.0.1; the one standing for everything that must
never be reached listens on 127.0.0.3 and must see no connection.
"""

from __future__ import annotations

import ast
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from feeds.errors import FeedsError
from feeds.links.check import Checker
from feeds.links.enrich import Enricher
from feeds.model import SourceState
from feeds.net import (
    USER_AGENT,
    AddressPolicy,
    BlockedAddress,
    ConnectionFailed,
    InvalidURL,
    NameNotResolved,
    ProtocolFailed,
    RedirectRefused,
    TimedOut,
    Unreachable,
    deadline,
    follow,
    guard,
    guarded_client,
)
from feeds.net.client import Client, Response
from feeds.net.pacing import Throttle
from feeds.sources.arxiv.client import fetch_page
from feeds.sources.arxiv.harvest import Request
from feeds.sources.arxiv.lookup import parse_arxiv
from feeds.sources.remote import fetch
from tests.arxivserver import EMPTY_ANSWER, ArxivServer
from tests.linkserver import LinkServer, json_reply, redirect, reply

PACKAGE = Path(__file__).resolve().parent.parent / "feeds"
LOOPBACK = AddressPolicy.from_settings(["127.0.0.1"])


@pytest.fixture
def inner(loopback: Callable[..., LinkServer]) -> LinkServer:
    """A server on 127.0.0.3 that must never be reached."""
    server = loopback("127.0.0.3")
    server.route("/", reply(200, body=b"secret"))
    return server


@pytest.fixture
def client() -> Iterator[Client]:
    """A client that connects to 127.0.0.1 only."""
    with guarded_client(LOOPBACK, timeout=3) as c:
        yield c


def get(client: Client) -> Callable[[str], Response]:
    """Return how `follow` asks a URL: a plain GET."""
    return lambda url: client.open("GET", url)


# --- follow: hop by hop -----------------------------------------------------------------------


def test_follow_walks_a_chain_hop_by_hop(site: LinkServer, client: Client) -> None:
    site.route("/dir/a", redirect("b", 302))  # relative to the hop, not to the start
    site.route("/dir/b", redirect("/c", 301))
    site.route("/c", reply(200, body=b"the end"))
    with follow(get(client), site.url("/dir/a"), LOOPBACK, max_redirects=5) as chain:
        assert chain.stop == "answered"
        assert [r.url for r in chain.answers] == [site.url(p) for p in ("/dir/a", "/dir/b", "/c")]
        assert [r.status for r in chain.answers] == [302, 301, 200]
        assert chain.final is chain.answers[-1]
        assert chain.final.read_capped(100) == b"the end"  # the last answer is left open
    assert site.methods() == [("GET", "/dir/a"), ("GET", "/dir/b"), ("GET", "/c")]


def test_each_hop_is_judged_by_the_policy_before_it_is_asked(
    site: LinkServer, inner: LinkServer, client: Client, connects: list[tuple[str, int]]
) -> None:
    site.route("/out", redirect(inner.url("/"), 307))
    chain = follow(get(client), site.url("/out"), LOOPBACK, max_redirects=5)
    assert (chain.stop, chain.target) == ("refused", inner.url("/"))
    assert chain.problem == "address 127.0.0.3 is not public"
    assert [r.status for r in chain.answers] == [307]
    first = follow(get(client), inner.url("/"), LOOPBACK, max_redirects=5)
    assert (first.stop, first.answers, first.final) == ("refused", (), None)
    assert first.target == inner.url("/")
    assert inner.connections == 0
    assert {host for host, _port in connects} == {"127.0.0.1"}


def test_the_guard_refuses_each_hop_where_it_connects(
    site: LinkServer,
    inner: LinkServer,
    client: Client,
    connects: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `follow` is told every loopback address is fine; the client connects to 127.0.0.1 only.
    lenient = AddressPolicy.from_settings(["127.0.0.0/8", "inward.example"])
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "inward.example":  # a public-looking name for the inner server
            return real("127.0.0.3", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(guard.socket, "getaddrinfo", resolve)
    site.route("/direct", redirect(inner.url("/")))
    site.route("/named", redirect(f"http://inward.example:{inner.port}/"))
    with pytest.raises(BlockedAddress, match=r"127\.0\.0\.3, which is not public") as direct:
        follow(get(client), site.url("/direct"), lenient, max_redirects=5)
    with pytest.raises(BlockedAddress, match=r"inward\.example resolves to 127\.0\.0\.3"):
        follow(get(client), site.url("/named"), lenient, max_redirects=5)
    with pytest.raises(BlockedAddress):  # no policy of the caller's at all: the guard alone
        client.open("GET", inner.url("/"))
    assert isinstance(direct.value, FeedsError)
    assert direct.value.url == inner.url("/")
    assert inner.connections == 0
    assert {host for host, _port in connects} == {"127.0.0.1"}
    assert site.methods() == [("GET", "/direct"), ("GET", "/named")]


def test_the_hops_are_bounded(site: LinkServer, client: Client) -> None:
    for i in range(4):
        site.route(f"/hop{i}", redirect(f"/hop{i + 1}"))
    site.route("/hop4", reply(200))
    chain = follow(get(client), site.url("/hop0"), LOOPBACK, max_redirects=3)
    assert (chain.stop, chain.target) == ("too many", site.url("/hop4"))
    assert len(chain.answers) == 4  # the fifth URL is never asked
    assert [p for _m, p in site.methods()] == ["/hop0", "/hop1", "/hop2", "/hop3"]
    with follow(get(client), site.url("/hop0"), LOOPBACK, max_redirects=4) as enough:
        assert (enough.stop, len(enough.answers)) == ("answered", 5)
    once = follow(get(client), site.url("/hop0"), LOOPBACK, max_redirects=0)
    assert (once.stop, [r.status for r in once.answers]) == ("too many", [302])


def test_a_loop_is_noticed_at_once(site: LinkServer, client: Client) -> None:
    site.route("/a", redirect("/b"))
    site.route("/b", redirect("/a"))
    site.route("/self", redirect("/self", 308))
    chain = follow(get(client), site.url("/a"), LOOPBACK, max_redirects=10)
    assert (chain.stop, chain.target, len(chain.answers)) == ("loop", site.url("/a"), 2)
    itself = follow(get(client), site.url("/self"), LOOPBACK, max_redirects=10)
    assert (itself.stop, itself.target, len(itself.answers)) == ("loop", site.url("/self"), 1)
    assert len(site.requests) == 3


def test_which_answers_are_redirects(site: LinkServer, client: Client) -> None:
    site.route("/choices", reply(300, {"Location": "/ok"}))
    site.route("/nowhere", reply(302))  # no Location: nothing to follow
    site.route("/ok", reply(200))
    with follow(get(client), site.url("/choices"), LOOPBACK, max_redirects=5) as chain:
        assert (chain.stop, [r.status for r in chain.answers]) == ("answered", [300])
    any_3xx = range(300, 400)
    with follow(get(client), site.url("/choices"), LOOPBACK, max_redirects=5, codes=any_3xx) as c:
        assert (c.stop, [r.status for r in c.answers]) == ("answered", [300, 200])
    with follow(get(client), site.url("/nowhere"), LOOPBACK, max_redirects=5) as none:
        assert (none.stop, [r.status for r in none.answers]) == ("answered", [302])


def test_a_redirect_to_no_url_is_an_error_not_a_crash(site: LinkServer, client: Client) -> None:
    site.route("/js", redirect("javascript:alert(1)"))
    site.route("/bad", redirect("http://[::1"))
    site.route("/3xx", reply(300, {"Location": "http://[::1"}))  # not judged by httpx
    with pytest.raises(RedirectRefused, match=r"redirect to not an http\(s\) URL") as js:
        follow(get(client), site.url("/js"), LOOPBACK, max_redirects=5)
    assert js.value.status == 302
    with pytest.raises(InvalidURL, match="Invalid IPv6 URL"):
        follow(get(client), site.url("/bad"), LOOPBACK, max_redirects=5)
    with pytest.raises(InvalidURL, match="Invalid IPv6 URL"):
        follow(get(client), site.url("/3xx"), LOOPBACK, max_redirects=5, codes=range(300, 400))


# --- the transport --------------------------------------------------------------------------


def test_a_body_streams_and_is_read_no_further_than_asked(site: LinkServer, client: Client) -> None:
    total = 100 * 1024 * 1024
    done = threading.Event()

    def huge(req: Any) -> None:
        written = 0
        try:
            req.send_response(200)
            req.send_header("Content-Length", str(total))
            req.end_headers()
            chunk = bytes(64 * 1024)
            while written < total and not site.stop.is_set():
                req.wfile.write(chunk)
                written += len(chunk)
        except OSError:
            pass
        finally:
            site.stats["written"] = written
            done.set()

    site.route("/huge", huge)
    with client.open("GET", site.url("/huge")) as response:
        assert response.status == 200
        assert response.headers["content-length"] == str(total)  # before any body
        assert response.read_capped(1024 * 1024) is None
    assert done.wait(5), "the server is still writing the body"
    assert site.stats["written"] < total  # what was not read sits in socket buffers at most


class _Handler11(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; /once closes the connection after answering, unannounced."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = b"over " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if self.path == "/once":
            self.close_connection = True


class _Server11(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler11)
        self.tls = tls
        self.connections = 0
        self.hung_up = threading.Event()  # the server closed a connection
        self.thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        self.connections += 1
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.hung_up.set()

    def url(self, path: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.server_address[1]}{path}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def _read(client: Client, url: str) -> bytes | None:
    with client.open("GET", url) as response:
        return response.read_capped(1000)


def test_connections_are_kept_alive_until_the_server_closes_them(client: Client) -> None:
    server = _Server11()
    try:
        assert _read(client, server.url("/a")) == b"over /a"
        assert _read(client, server.url("/b")) == b"over /b"
        assert server.connections == 1  # the body was read: the connection went back to the pool
        assert _read(client, server.url("/once")) == b"over /once"
        assert server.hung_up.wait(5)
        # The idle connection reads as closed (the stream's is_readable): a new one is made.
        assert _read(client, server.url("/c")) == b"over /c"
        assert server.connections == 2
    finally:
        server.close()


@pytest.fixture
def certificate(tmp_path: Path) -> Path:
    """A self-signed certificate (and its key) for 127.0.0.1, made by openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a test certificate")
    pem = tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(tmp_path / "key.pem"), "-out", str(pem)],
        check=True, capture_output=True,
    )  # fmt: skip
    return pem


def test_https_through_the_guarded_stream(
    certificate: Path, connects: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certificate, certificate.parent / "key.pem")
    server = _Server11(tls)
    try:
        with guarded_client(LOOPBACK, timeout=3) as untrusting:
            with pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED") as failed:
                untrusting.open("GET", server.url("/x", "https"))
            assert failed.value.kind == "ConnectError"
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate))  # trusted from now on
        with guarded_client(LOOPBACK, timeout=3) as trusting:
            assert _read(trusting, server.url("/secure", "https")) == b"over /secure"
            assert _read(trusting, server.url("/again", "https")) == b"over /again"
        assert server.connections == 2  # one refused, one kept alive for both requests
        assert connects == [("127.0.0.1", server.server_address[1])] * 2
    finally:
        server.close()


def test_errors_leave_as_feeds_errors_with_the_cause_chained(
    site: LinkServer, client: Client
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # a port nobody listens on
    refused = f"http://127.0.0.1:{closed.getsockname()[1]}/"
    try:
        with pytest.raises(ConnectionFailed, match="Connection refused") as e1:
            client.open("GET", refused)
    finally:
        closed.close()
    assert (e1.value.kind, e1.value.url) == ("ConnectError", refused)
    assert e1.value.described.startswith("ConnectError: [Errno")
    assert isinstance(e1.value.__cause__, httpx.ConnectError)
    assert isinstance(e1.value, Unreachable)

    def garbage(req: Any) -> None:
        req.wfile.write(b"NOT HTTP\r\n\r\n")

    site.route("/garbage", garbage)
    with pytest.raises(ProtocolFailed) as e2:
        client.open("GET", site.url("/garbage"))
    assert e2.value.kind == "RemoteProtocolError"
    assert isinstance(e2.value.__cause__, httpx.RemoteProtocolError)

    with pytest.raises(NameNotResolved, match=r"no-such-host\.example"):
        client.open("GET", "http://no-such-host.example/")  # no name resolves in the tests
    with pytest.raises(InvalidURL) as e3:
        client.open("GET", "http://exa\tmple.com/")
    assert isinstance(e3.value.__cause__, httpx.InvalidURL)

    def drip(req: Any) -> None:
        req.send_response(200)
        req.send_header("Content-Length", "1000")
        req.end_headers()
        while not site.stop.is_set():
            req.wfile.write(b"x")
            site.stop.wait(0.2)

    site.route("/drip", drip)
    with (
        deadline(1),  # a byte every 0.2 s: only the deadline ends it
        client.open("GET", site.url("/drip")) as response,
        pytest.raises(TimedOut) as e4,
    ):
        response.read_capped(10_000)
    assert e4.value.kind == "ReadTimeout"
    for e in (e1, e2, e3, e4):
        assert isinstance(e.value, FeedsError)


# --- one User-Agent -------------------------------------------------------------------------


def test_every_kind_of_request_sends_the_one_user_agent(site: LinkServer, client: Client) -> None:
    assert USER_AGENT.startswith("paperfeeds/")
    site.route("/page", reply(200, head=405))  # HEAD refused: GET
    site.route("/moved", redirect("/page"))
    site.route("/repos/o/r", json_reply(200, {"html_url": "https://github.com/o/r"}))
    site.route("/digest.txt", reply(200, body=b"a digest"))
    site.route("/api/query", reply(200, body=EMPTY_ANSWER))
    checker = Checker(client, LOOPBACK, github_api=site.base, github_token="tok")
    assert checker.check(site.url("/moved")).status == "redirected"
    assert checker.check("https://github.com/o/r").status == "ok"
    fetched = fetch(client, LOOPBACK, SourceState(site.url("/digest.txt")), timeout=3)
    assert fetched.content == b"a digest"
    enricher = Enricher(
        client, LOOPBACK, arxiv_api=site.url("/api/query"), huggingface_api=site.url("/hf"),
        arxiv_throttle=Throttle(0), read_arxiv=parse_arxiv,
    )  # fmt: skip
    assert enricher.arxiv("A Title") is None
    assert enricher.huggingface("A Title", "2601.00001") is None  # 404: not there
    arxiv = ArxivServer()
    try:
        fetch_page(client, arxiv.url, "cs.CL", Request(0, 10, datetime(2026, 7, 1, tzinfo=UTC)))
        seen = [*site.requests, *arxiv.requests]
    finally:
        arxiv.close()
    assert {(r.method, r.path.split("?")[0]) for r in seen} == {
        ("HEAD", "/moved"), ("HEAD", "/page"), ("GET", "/page"), ("GET", "/repos/o/r"),
        ("GET", "/digest.txt"), ("GET", "/api/query"), ("GET", "/hf/papers/2601.00001"),
    }  # fmt: skip
    assert {r.headers.get("user-agent") for r in seen} == {USER_AGENT}


# --- the edge itself ------------------------------------------------------------------------


def _imported(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module)
    return modules


def test_httpx_and_httpcore_are_used_in_feeds_net_only_and_publicly() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        http = {m for m in _imported(path) if m.split(".")[0] in ("httpx", "httpcore")}
        where = path.relative_to(PACKAGE.parent)
        if path.parent.name != "net":
            assert not http, f"{where} imports {sorted(http)}"
        assert http <= {"httpx", "httpcore"}, f"{where} imports private {sorted(http)}"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        private = {
            ast.unparse(n)
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            if n.value.id in ("httpx", "httpcore") and n.attr.startswith("_")
        }
        assert not private, f"{where} uses {sorted(private)}"
        # httpx's own transport with its private pool swapped for one on our backend: no more.
        bases = {
            ast.unparse(b) for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases
        }
        assert "httpx.HTTPTransport" not in bases, where


def test_importing_feeds_net_loads_no_http_library() -> None:
    probe = (
        "import sys, feeds.net, feeds.sources.remote, feeds.links.check\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'httpcore', 'ssl')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
