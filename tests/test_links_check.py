"""Link checks against real HTTP servers on loopback: statuses, redirects, limits and the guard.

The server under check listens on 127.0.0.2, the only address the checker's policy allows; a
second ("inner") server listens on 127.0.0.1 and stands for everything that must never be
reached: it must see zero connections. Times are bounded loosely, only so nothing hangs.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from feeds.links.check import (
    MAX_REDIRECTS,
    PEEK_BYTES,
    Checker,
    CheckResult,
    check_many,
    status_for,
)
from feeds.links.policy import schedule
from feeds.net import USER_AGENT, AddressPolicy, guard
from feeds.net.pacing import retry_after_seconds
from tests.conftest import Guarded
from tests.linkserver import LinkServer, json_reply, redirect, reply, send, sequence

SLACK = 3.0  # seconds beyond a check's total timeout that a test tolerates before "hanging"

MakeChecker = Callable[..., Checker]


@pytest.fixture
def site(loopback: Callable[..., LinkServer]) -> LinkServer:
    """The server links point at: 127.0.0.2, allowed by the checker's policy."""
    return loopback("127.0.0.2")


@pytest.fixture
def inner(loopback: Callable[..., LinkServer]) -> LinkServer:
    """A server on 127.0.0.1 that the checker must never reach."""
    server = loopback("127.0.0.1")
    server.route("/", reply(200, body=b"secret"))
    return server


@pytest.fixture
def make_checker(guarded: Guarded) -> MakeChecker:
    """Return a factory of checkers on guarded clients (closed after the test)."""

    def make(
        allow: tuple[str, ...] = ("127.0.0.2",),
        *,
        total_timeout: float = 5.0,
        timeout: float = 3.0,
        github_api: str | None = None,
        **kwargs: Any,
    ) -> Checker:
        policy = AddressPolicy.from_settings(list(allow))
        client = guarded(policy, timeout=timeout)
        return Checker(client, policy, total_timeout=total_timeout, github_api=github_api, **kwargs)

    return make


def fake_dns(
    monkeypatch: pytest.MonkeyPatch, answers: dict[str, str | list[str] | None]
) -> list[str]:
    """Make getaddrinfo answer `answers` (None: no such name; ".x": any name ending in .x).

    Other names resolve as the test suite lets them (literal addresses and localhost only).
    Returns the names asked for, in order.
    """
    asked: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        asked.append(name)
        for pattern, answer in answers.items():
            if name == pattern or (pattern.startswith(".") and name.endswith(pattern)):
                if answer is None:
                    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
                addresses = [answer] if isinstance(answer, str) else answer
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(guard.socket, "getaddrinfo", getaddrinfo)
    return asked


def timed(check: Callable[[str], CheckResult], url: str) -> tuple[CheckResult, float]:
    start = time.monotonic()
    result = check(url)
    return result, time.monotonic() - start


# --- statuses from the final HTTP status ---------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [(200, "ok"), (204, "ok"), (404, "dead"), (410, "dead"), (500, "error"), (503, "error")],
)
def test_status_codes(site: LinkServer, make_checker: MakeChecker, code: int, status: str) -> None:
    site.route("/p", reply(code))
    result, took = timed(make_checker().check, site.url("/p"))
    assert (result.status, result.http_status, result.final_url) == (status, code, None)
    assert result.responded
    if code >= 400:
        assert result.note == f"HTTP {code}"
    assert site.methods() == [("HEAD", "/p")]
    assert took < 5 + SLACK


@pytest.mark.parametrize("code", [401, 403])
def test_refused_on_head_and_get_is_an_error(
    site: LinkServer, make_checker: MakeChecker, code: int
) -> None:
    site.route("/private", reply(code))
    result = make_checker().check(site.url("/private"))
    assert (result.status, result.http_status) == ("error", code)
    assert result.status != "dead"  # maybe only for us, maybe only today: checked again later
    assert site.methods()[-1][1] == "/private"


@pytest.mark.parametrize("head", [405, 501, 403])
def test_head_refused_then_get(site: LinkServer, make_checker: MakeChecker, head: int) -> None:
    site.route("/no-head", reply(200, body=b"hello", head=head))
    result = make_checker().check(site.url("/no-head"))
    assert (result.status, result.http_status, result.note) == ("ok", 200, None)
    assert site.methods() == [("HEAD", "/no-head"), ("GET", "/no-head")]


def test_status_for_and_retry_after_helpers() -> None:
    assert status_for(200, 0) == "ok"
    assert status_for(200, 2) == "redirected"
    assert status_for(404, 1) == "dead"
    assert status_for(429, 0) == "error"
    now = time.time()
    assert retry_after_seconds("120", now) == 120
    assert retry_after_seconds(None, now) is None
    assert retry_after_seconds("soon", now) is None
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    then = datetime(2015, 10, 21, 7, 28, tzinfo=UTC).timestamp()
    assert retry_after_seconds(date, then - 60) == pytest.approx(60)
    assert retry_after_seconds(date, then + 60) == 0.0  # a date in the past: no wait


# --- redirects ---------------------------------------------------------------------------


def test_redirect_chain(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/a", redirect(site.url("/b"), 301))
    site.route("/b", redirect(site.url("/c"), 302))
    site.route("/c", reply(200))
    result = make_checker().check(site.url("/a"))
    assert result.status == "redirected"
    assert (result.http_status, result.final_url) == (200, site.url("/c"))
    assert result.url == site.url("/a")
    assert [p for _m, p in site.methods()] == ["/a", "/b", "/c"]


@pytest.mark.parametrize(
    ("start", "location", "final"),
    [
        ("/dir/a", "/top", "/top"),
        ("/dir/a", "b", "/dir/b"),
        ("/dir/sub/a", "../up", "/dir/up"),
        ("/dir/a", "?page=2", "/dir/a?page=2"),
        ("/dir/a", "//127.0.0.2:{port}/scheme-relative", "/scheme-relative"),
    ],
)
def test_relative_locations(
    site: LinkServer, make_checker: MakeChecker, start: str, location: str, final: str
) -> None:
    site.route(start, redirect(location.format(port=site.port), 301))
    site.route(final, reply(200))
    result = make_checker().check(site.url(start))
    assert (result.status, result.final_url) == ("redirected", site.url(final))
    assert site.methods()[-1] == ("HEAD", final)


def test_redirect_loop(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/a", redirect("/b"))
    site.route("/b", redirect("/a"))
    result, took = timed(make_checker().check, site.url("/a"))
    assert (result.status, result.note) == ("error", "redirect loop")
    assert result.status != "dead"
    assert len(site.requests) == 2  # noticed at once, not after MAX_REDIRECTS hops
    assert took < 5 + SLACK


def test_redirect_to_itself(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/self", redirect("/self", 308))
    result = make_checker().check(site.url("/self"))
    assert (result.status, result.note) == ("error", "redirect loop")
    assert len(site.requests) == 1


def chain(site: LinkServer, hops: int) -> None:
    for i in range(hops):
        site.route(f"/hop{i}", redirect(f"/hop{i + 1}"))
    site.route(f"/hop{hops}", reply(200))


def test_longest_allowed_chain(site: LinkServer, make_checker: MakeChecker) -> None:
    chain(site, MAX_REDIRECTS)
    result = make_checker().check(site.url("/hop0"))
    assert (result.status, result.final_url) == ("redirected", site.url(f"/hop{MAX_REDIRECTS}"))


def test_too_many_redirects(site: LinkServer, make_checker: MakeChecker) -> None:
    chain(site, MAX_REDIRECTS + 3)
    result, took = timed(make_checker().check, site.url("/hop0"))
    assert result.status == "error"
    assert result.note is not None
    assert "redirects" in result.note
    assert len(site.requests) == MAX_REDIRECTS + 1  # gave up, did not walk the whole chain
    assert took < 5 + SLACK


def test_redirect_without_location_is_an_error(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/r", reply(302))
    result = make_checker().check(site.url("/r"))
    assert (result.status, result.http_status) == ("error", 302)


def test_redirect_to_a_dead_page(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/moved", redirect("/gone", 301))
    site.route("/gone", reply(410))
    result = make_checker().check(site.url("/moved"))
    assert (result.status, result.http_status, result.final_url) == ("dead", 410, site.url("/gone"))


# --- bounded time and bytes --------------------------------------------------------------


def drip_body(site: LinkServer, done: threading.Event, step: float = 0.5) -> Callable[..., None]:
    """Answer HEAD with 405; on GET send the headers, then one byte per `step` forever."""

    def handler(req: Any) -> None:
        if req.command == "HEAD":
            send(req, 405)
            return
        try:
            req.send_response(200)
            req.send_header("Content-Length", "1000000")
            req.end_headers()
            while not site.stop.is_set():
                req.wfile.write(b"x")
                site.stop.wait(step)
            site.stats["drip"] = "stopped by the test"
        except OSError as e:  # BrokenPipe / ConnectionReset: the checker hung up
            site.stats["drip"] = type(e).__name__
        finally:
            done.set()

    return handler


def drip_head(site: LinkServer, done: threading.Event, step: float = 0.1) -> Callable[..., None]:
    """Send the status line and an endless header one byte at a time, to any method."""

    def handler(req: Any) -> None:
        try:
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: ":
                req.wfile.write(bytes([byte]))
                site.stop.wait(step)
            while not site.stop.is_set():
                req.wfile.write(b"a")
                site.stop.wait(step)
            site.stats["drip"] = "stopped by the test"
        except OSError as e:
            site.stats["drip"] = type(e).__name__
        finally:
            done.set()

    return handler


@pytest.mark.parametrize("drip", [drip_body, drip_head])
def test_slow_drip_times_out(
    site: LinkServer, make_checker: MakeChecker, drip: Callable[..., Callable[..., None]]
) -> None:
    done = threading.Event()
    site.route("/drip", drip(site, done))
    result, took = timed(make_checker(total_timeout=2, timeout=10).check, site.url("/drip"))
    assert result.status == "error"
    assert result.note == "timed out"
    assert took < 2 + SLACK
    # the checker hung up: the server's next writes fail and its thread ends
    assert done.wait(5), "the dripping handler is still writing"
    assert site.stats["drip"] in ("BrokenPipeError", "ConnectionResetError")


def test_huge_body_is_only_peeked(site: LinkServer, make_checker: MakeChecker) -> None:
    total = 100 * 1024 * 1024
    done = threading.Event()

    def huge(req: Any) -> None:
        if req.command == "HEAD":
            send(req, 405)
            return
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
    result, took = timed(make_checker(total_timeout=10).check, site.url("/huge"))
    assert (result.status, result.http_status) == ("ok", 200)
    assert took < 10 + SLACK
    assert done.wait(5), "the server is still writing the body"
    # what the checker did not read sits in socket buffers (a few MB on loopback at most)
    assert site.stats["written"] <= PEEK_BYTES + 8 * 1024 * 1024
    assert site.stats["written"] < total


# --- 429 and the schedule ----------------------------------------------------------------


def test_short_retry_after_is_waited_for(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/busy", sequence(reply(429, {"Retry-After": "1"}), reply(200)))
    slept: list[float] = []
    result = make_checker(sleep=slept.append).check(site.url("/busy"))
    assert (result.status, result.http_status) == ("ok", 200)
    assert slept == [1.0]
    assert site.methods() == [("HEAD", "/busy"), ("HEAD", "/busy")]


def test_long_retry_after_is_not_waited_for(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/busy", reply(429, {"Retry-After": "3600"}))
    slept: list[float] = []
    result = make_checker(sleep=slept.append).check(site.url("/busy"))
    assert (result.status, result.http_status, result.retry_after) == ("error", 429, 3600)
    assert slept == []
    assert len(site.requests) == 1  # no retry now

    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    status, due, failures, since = schedule(result, now, 0, None, True)
    assert status == "error"
    assert due >= now + timedelta(hours=1)
    assert (failures, since) == (1, None)
    status, due, failures, _ = schedule(result, now, 5, None, True)
    assert (status, failures) == ("error", 6)
    assert due >= now + timedelta(hours=1)


def test_error_backoff_grows_and_is_capped() -> None:
    result = CheckResult("http://x.example/", "error", 503, note="HTTP 503")
    now = datetime(2026, 3, 1, tzinfo=UTC)
    waits = [schedule(result, now, n, None, True)[1] - now for n in range(8)]
    assert waits[0] == timedelta(hours=1)
    assert waits == sorted(waits)
    assert waits[-1] == timedelta(days=2)
    ok = CheckResult("http://x.example/", "ok", 200)
    assert schedule(ok, now, 7, None, True)[2:] == (0, None)


@pytest.fixture
def dns_failure(make_checker: MakeChecker, monkeypatch: pytest.MonkeyPatch) -> CheckResult:
    """A real check of a name that does not resolve."""
    fake_dns(monkeypatch, {"gone.example": None})
    result = make_checker().check("https://gone.example/paper")
    assert (result.status, result.dns_failure, result.http_status) == ("error", True, None)
    assert not result.responded
    return result


def test_dns_failure_without_network_is_never_dead(dns_failure: CheckResult) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    failures, since = 0, None
    for day in range(31):
        status, _due, failures, since = schedule(
            dns_failure, start + timedelta(days=day), failures, since, False
        )
        assert status == "error", f"dead after {day} days without network"
    assert since is None  # days without network do not count towards "dead"
    # the network comes back: the count starts now, not 30 days ago
    back = start + timedelta(days=31)
    status, _due, failures, since = schedule(dns_failure, back, failures, since, True)
    assert (status, since) == ("error", back)


def test_dns_failure_with_network_is_dead_after_a_week(dns_failure: CheckResult) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    status, due, failures, since = schedule(dns_failure, start, 0, None, True)
    assert (status, failures, since) == ("error", 1, start)
    for day in range(1, 7):
        status, due, failures, since = schedule(
            dns_failure, start + timedelta(days=day), failures, since, True
        )
        assert status == "error"
        assert since == start
    later = start + timedelta(days=7)
    status, due, _failures, since = schedule(dns_failure, later, failures, since, True)
    assert status == "dead"
    assert due > later


# --- what the server sees ----------------------------------------------------------------


def test_user_agent_names_the_tool(site: LinkServer, make_checker: MakeChecker) -> None:
    site.route("/ua", reply(200))
    make_checker().check(site.url("/ua"))
    make_checker().check(site.url("/ua"))
    agents = [r.headers.get("user-agent", "") for r in site.requests]
    assert len(agents) == 2
    assert all("paperfeeds" in ua for ua in agents)
    assert agents == [USER_AGENT] * 2  # the one User-Agent of every request
    assert not any("python-httpx" in ua for ua in agents)


@pytest.mark.parametrize("name", ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy"])
def test_proxy_variables_are_ignored(
    site: LinkServer,
    make_checker: MakeChecker,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    # the proxy answers anything with 200: were it used, the check would come back "ok"
    site.route("/", reply(200))
    site.route("http://paperfeeds-test.invalid/", reply(200))
    site.route("paperfeeds-test.invalid:443", reply(200))
    monkeypatch.setenv(name, site.base)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    fake_dns(monkeypatch, {".invalid": None})  # deterministic, whatever the machine's DNS
    checker = make_checker()  # made with the variables set
    for url in ("http://paperfeeds-test.invalid/", "https://paperfeeds-test.invalid/"):
        result = checker.check(url)
        assert (result.status, result.dns_failure) == ("error", True), url
    assert site.connections == 0


def test_proxy_variables_do_not_divert_an_allowed_host(
    site: LinkServer, make_checker: MakeChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = LinkServer("127.0.0.2")
    try:
        proxy.route("/", reply(200))
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(var, proxy.base)
        site.route("/direct", reply(200))
        result = make_checker().check(site.url("/direct"))
        assert result.status == "ok"
        assert (site.connections, proxy.connections) == (1, 0)
    finally:
        proxy.close()


# --- the address guard -------------------------------------------------------------------

INNER_SPELLINGS = [
    "http://localhost:{port}/",
    "http://LOCALHOST:{port}/",
    "http://localhost.:{port}/",
    "http://app.localhost:{port}/",
    "http://127.0.0.1:{port}/",
    "http://2130706433:{port}/",
    "http://0x7f000001:{port}/",
    "http://0177.0.0.1:{port}/",
    "http://127.1:{port}/",
    "http://user:pw@127.0.0.1:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://[::ffff:7f00:1]:{port}/",
    "http://0.0.0.0:{port}/",
    "http://0:{port}/",
    "https://127.0.0.1:{port}/",
]


@pytest.mark.parametrize("spelling", INNER_SPELLINGS)
def test_inner_spellings_are_blocked(
    inner: LinkServer,
    make_checker: MakeChecker,
    connects: list[tuple[str, int]],
    spelling: str,
) -> None:
    url = spelling.format(port=inner.port)
    result, took = timed(make_checker().check, url)
    assert result.status == "blocked", result
    assert result.http_status is None
    assert inner.connections == 0
    assert connects == []
    assert took < 5 + SLACK


def test_ipv6_loopback_is_blocked(
    make_checker: MakeChecker, connects: list[tuple[str, int]]
) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        server = LinkServer("::1")
    except OSError:
        pytest.skip("no IPv6 loopback")
    try:
        server.route("/", reply(200))
        for url in (server.url("/"), f"http://[0:0:0:0:0:0:0:1]:{server.port}/"):
            result = make_checker().check(url)
            assert result.status == "blocked", url
        assert server.connections == 0
        assert connects == []
    finally:
        server.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://172.16.0.1/",
        "http://100.64.0.1/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[::]/",
        "ftp://127.0.0.2/file",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,hi",
        "gopher://127.0.0.2:70/",
        "http:///nohost",
        "http://127.0.0.2:99999/",
    ],
)
def test_blocked_before_connecting(
    make_checker: MakeChecker, connects: list[tuple[str, int]], url: str
) -> None:
    result, took = timed(make_checker(total_timeout=2).check, url)
    assert result.status == "blocked", result
    assert result.note
    assert connects == []
    assert took < 2 + SLACK


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("inward.example", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),  # a resolver that takes the trailing dot as a name
        ("metadata.example", "169.254.169.254"),
        ("split.example", ["127.0.0.1", "10.1.2.3"]),
    ],
)
def test_name_resolving_inward_is_blocked_at_connect(
    inner: LinkServer,
    make_checker: MakeChecker,
    connects: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    answer: str | list[str],
) -> None:
    asked = fake_dns(monkeypatch, {name: answer})
    checker = make_checker()
    url = f"http://{name}:{inner.port}/"
    assert checker.policy.url_problem(url) is None  # the URL itself looks public
    result = checker.check(url)
    assert result.status == "blocked", result
    assert (answer if isinstance(answer, str) else answer[0]) in (result.note or "")
    assert name in asked  # judged on the resolved address
    assert inner.connections == 0
    assert connects == []


def test_name_with_one_inward_address_uses_only_the_allowed_one(
    site: LinkServer,
    inner: LinkServer,
    make_checker: MakeChecker,
    connects: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_dns(monkeypatch, {"mixed.example": ["127.0.0.1", "127.0.0.2"]})
    site.route("/", reply(200))
    result = make_checker().check(f"http://mixed.example:{site.port}/")
    assert result.status == "ok", result
    assert connects == [("127.0.0.2", site.port)]
    assert inner.connections == 0


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/",
        "http://localhost:{port}/",
        "http://2130706433:{port}/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
    ],
)
def test_redirect_inward_is_blocked(
    site: LinkServer,
    inner: LinkServer,
    make_checker: MakeChecker,
    connects: list[tuple[str, int]],
    target: str,
) -> None:
    location = target.format(port=inner.port)
    site.route("/out", redirect(location, 302))
    result = make_checker().check(site.url("/out"))
    assert result.status == "blocked"
    expected = None if location.startswith("file:") else location  # never a non-http(s) URL
    assert (result.http_status, result.final_url) == (302, expected)
    assert inner.connections == 0
    assert all(host == "127.0.0.2" for host, _port in connects)
    assert len(site.requests) == 1


def test_redirect_to_a_name_resolving_inward_is_blocked(
    site: LinkServer,
    inner: LinkServer,
    make_checker: MakeChecker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_dns(monkeypatch, {"rebind.example": "127.0.0.1"})
    site.route("/out", redirect(f"http://rebind.example:{inner.port}/", 307))
    result = make_checker().check(site.url("/out"))
    assert result.status == "blocked"
    assert inner.connections == 0


def test_allow_hosts_by_name(inner: LinkServer, make_checker: MakeChecker) -> None:
    result = make_checker(("localhost",)).check(f"http://localhost:{inner.port}/")
    assert (result.status, result.http_status) == ("ok", 200)
    assert inner.connections >= 1
    # the name is allowed, not the address behind it
    other = make_checker(("localhost",)).check(inner.url("/"))
    assert other.status == "blocked"


def test_allow_hosts_by_network(inner: LinkServer, make_checker: MakeChecker) -> None:
    result = make_checker(("127.0.0.0/8",)).check(inner.url("/"))
    assert (result.status, result.http_status) == ("ok", 200)
    assert inner.connections == 1


# --- malformed URLs: a result, never an exception ------------------------------------------

MALFORMED = [
    "http://exa\tmple.com/",  # a control character
    "http://ex\u00e4mple..com/",  # an empty label: not a valid IDNA name
    "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",  # fullwidth "localhost"
    "http://xn--a.example/",  # a broken punycode label
]


@pytest.mark.parametrize("url", MALFORMED)
def test_malformed_url_gives_a_result(
    make_checker: MakeChecker, connects: list[tuple[str, int]], url: str
) -> None:
    result = make_checker().check(url)  # "never raises for network trouble"
    assert result.status in ("error", "blocked")
    assert connects == []


def test_redirect_to_a_malformed_url_gives_a_result(
    site: LinkServer, make_checker: MakeChecker
) -> None:
    site.route("/bad", redirect("http://ex\u00e4mple..com/"))
    result = make_checker().check(site.url("/bad"))
    assert result.status in ("error", "blocked")
    assert len(site.requests) == 1


def test_one_malformed_url_does_not_sink_a_batch(
    site: LinkServer, make_checker: MakeChecker
) -> None:
    site.route("/", reply(200))
    urls = [site.url("/"), "http://ex\u00e4mple..com/", site.url("/?again")]
    results = list(check_many(make_checker(), urls, concurrency=2))
    assert [r.url for r in results] == urls
    assert [r.status for r in results][::2] == ["ok", "ok"]


# --- many URLs ---------------------------------------------------------------------------


def test_check_many_is_polite_per_host(site: LinkServer, make_checker: MakeChecker) -> None:
    # Requests are counted while the server works on them, before it answers: counting
    # until the handler returns would race with the client's next request.
    lock = threading.Lock()
    load = {"now": 0, "max": 0}

    def working(req: Any) -> None:
        with lock:
            load["now"] += 1
            load["max"] = max(load["max"], load["now"])
        time.sleep(0.1)
        with lock:
            load["now"] -= 1
        reply(200)(req)

    for i in range(20):
        site.route(f"/p{i}", working)
    urls = [site.url(f"/p{i}") for i in range(20)]
    seen: list[tuple[int, int]] = []
    start = time.monotonic()
    results = list(
        check_many(
            make_checker(), urls, concurrency=8, per_host=2, progress=lambda *a: seen.append(a)
        )
    )
    assert time.monotonic() - start < 20
    assert [r.url for r in results] == urls
    assert all(r.status == "ok" for r in results)
    assert load["max"] == 2  # two at a time: polite, and still concurrent
    assert len(site.requests) == 20
    assert seen[-1] == (20, 20)


def test_check_many_limits_per_host_name_not_per_port(
    site: LinkServer, make_checker: MakeChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dns(monkeypatch, {"side.example": "127.0.0.2"})
    lock = threading.Lock()
    load = {"now": 0, "max": 0}

    def counted(req: Any) -> None:
        with lock:
            load["now"] += 1
            load["max"] = max(load["max"], load["now"])
        time.sleep(0.2)
        with lock:
            load["now"] -= 1
        send(req, 200)

    other = LinkServer("127.0.0.2")
    try:
        for server in (site, other):
            server.route("/x", counted)
        # two ports of one host: one check at a time in all
        urls = [site.url("/x"), other.url("/x")] * 3
        results = list(check_many(make_checker(), urls, concurrency=8, per_host=1))
        assert [r.status for r in results] == ["ok"] * 6
        assert load["max"] == 1
        # two host names (the same address): one at a time each, side by side
        load["max"] = 0
        urls = [site.url("/x"), f"http://side.example:{site.port}/x"] * 3
        results = list(check_many(make_checker(), urls, concurrency=8, per_host=1))
        assert [r.status for r in results] == ["ok"] * 6
        assert load["max"] == 2
    finally:
        other.close()


def test_check_many_gives_up_without_network(
    make_checker: MakeChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = fake_dns(monkeypatch, {".invalid": None})
    urls = [f"http://host{i}.paperfeeds-test.invalid/" for i in range(12)]
    start = time.monotonic()
    results = list(check_many(make_checker(), urls, give_up_after=4))
    assert time.monotonic() - start < 10
    assert 4 <= len(results) < 12  # the rest stays due for the next run
    assert all(r.status == "error" and r.dns_failure for r in results)
    assert len(asked) == len(results)

    asked.clear()
    serial = list(check_many(make_checker(), urls, concurrency=1, give_up_after=4))
    assert len(serial) == 4
    assert len(asked) == 4


def test_check_many_does_not_give_up_while_servers_answer(
    site: LinkServer, make_checker: MakeChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dns(monkeypatch, {".invalid": None})
    site.route("/", reply(200))
    urls = [site.url("/")] + [f"http://h{i}.paperfeeds-test.invalid/" for i in range(10)]
    results = list(check_many(make_checker(), urls, concurrency=1, give_up_after=4))
    assert len(results) == 11


# --- GitHub ------------------------------------------------------------------------------


@pytest.fixture
def api() -> Iterator[LinkServer]:
    """A fake GitHub API on 127.0.0.2."""
    server = LinkServer("127.0.0.2")
    yield server
    server.close()


def github_checker(make_checker: MakeChecker, api: LinkServer, **kwargs: Any) -> Checker:
    return make_checker(github_api=api.base, github_token="tok", **kwargs)


def test_github_repo_ok(api: LinkServer, make_checker: MakeChecker) -> None:
    api.route(
        "/repos/o/r", json_reply(200, {"html_url": "https://github.com/o/r", "archived": False})
    )
    checker = github_checker(make_checker, api)
    for url in (
        "https://github.com/o/r",
        "https://github.com/o/r.git",
        "https://github.com/o/r/tree/main/src",
    ):
        result = checker.check(url)
        assert (result.status, result.http_status, result.final_url, result.note) == (
            "ok", 200, None, None
        ), url  # fmt: skip
    assert {r.path for r in api.requests} == {"/repos/o/r"}
    for seen in api.requests:
        assert seen.headers.get("authorization") == "Bearer tok"
        assert "paperfeeds" in seen.headers.get("user-agent", "")


def test_github_archived(api: LinkServer, make_checker: MakeChecker) -> None:
    api.route(
        "/repos/o/old", json_reply(200, {"html_url": "https://github.com/o/old", "archived": True})
    )
    result = github_checker(make_checker, api).check("https://github.com/o/old")
    assert (result.status, result.note) == ("ok", "archived")


def test_github_renamed(api: LinkServer, make_checker: MakeChecker) -> None:
    api.route("/repos/old/name", redirect("/repositories/42", 301))
    api.route("/repositories/42", json_reply(200, {"html_url": "https://github.com/new/name"}))
    checker = github_checker(make_checker, api)
    result = checker.check("https://github.com/old/name")
    assert (result.status, result.final_url) == ("redirected", "https://github.com/new/name")
    deep = checker.check("https://github.com/old/name/blob/main/README.md")
    assert deep.final_url == "https://github.com/new/name/blob/main/README.md"
    assert [r.path for r in api.requests][:2] == ["/repos/old/name", "/repositories/42"]
    assert all(r.headers.get("authorization") == "Bearer tok" for r in api.requests)


def test_github_missing_repo_is_dead(api: LinkServer, make_checker: MakeChecker) -> None:
    api.route("/repos/o/nope", json_reply(404, {"message": "Not Found"}))
    result = github_checker(make_checker, api).check("https://github.com/o/nope")
    assert (result.status, result.http_status) == ("dead", 404)


def test_github_rate_limit_is_an_error(api: LinkServer, make_checker: MakeChecker) -> None:
    reset = int(time.time()) + 600
    api.route(
        "/repos/o/r",
        json_reply(
            403,
            {"message": "API rate limit exceeded"},
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
        ),
    )
    result = github_checker(make_checker, api).check("https://github.com/o/r")
    assert (result.status, result.http_status) == ("error", 403)
    assert result.retry_after is not None
    assert 500 <= result.retry_after <= 700
    now = datetime.now(UTC)
    _status, due, _failures, _since = schedule(result, now, 0, None, True)
    assert due >= now + timedelta(seconds=500)


def test_github_non_repo_pages_are_checked_directly(
    api: LinkServer, make_checker: MakeChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_dns(monkeypatch, {"github.com": None})
    result = github_checker(make_checker, api).check("https://github.com/orgs/someorg")
    assert result.dns_failure  # went to the page itself, not the API
    assert api.requests == []


def test_github_token_never_sent_to_link_hosts(
    site: LinkServer, api: LinkServer, make_checker: MakeChecker
) -> None:
    site.route("/page", reply(200, head=405))
    site.route("/go", redirect("/page"))
    checker = github_checker(make_checker, api)
    assert checker.check(site.url("/go")).status == "redirected"
    assert len(site.requests) == 3
    assert all("authorization" not in r.headers for r in site.requests)


def test_github_api_redirect_elsewhere_gets_no_token(
    site: LinkServer, api: LinkServer, make_checker: MakeChecker
) -> None:
    # a redirect from the API to another host must not carry the token along
    api.route("/repos/o/r", redirect(site.url("/repositories/42"), 301))
    site.route("/repositories/42", json_reply(200, {"html_url": "https://github.com/o/r"}))
    github_checker(make_checker, api).check("https://github.com/o/r")
    assert len(site.requests) <= 1
    assert all("authorization" not in r.headers for r in site.requests)


def test_github_api_redirect_inward_is_blocked(
    api: LinkServer, inner: LinkServer, make_checker: MakeChecker
) -> None:
    api.route("/repos/o/r", redirect(inner.url("/"), 301))
    result = github_checker(make_checker, api).check("https://github.com/o/r")
    assert result.status == "blocked"
    assert inner.connections == 0


def test_github_api_garbage_is_an_error_not_a_crash(
    api: LinkServer, make_checker: MakeChecker
) -> None:
    api.route(
        "/repos/o/html", reply(200, {"Content-Type": "text/html"}, b"<html>maintenance</html>")
    )
    api.route("/repos/o/list", json_reply(200, [1, 2, 3]))
    checker = github_checker(make_checker, api)
    for url in ("https://github.com/o/html", "https://github.com/o/list"):
        result = checker.check(url)  # "never raises for network trouble"
        assert result.status == "error", url
