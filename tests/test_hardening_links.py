"""Hardening of links: no `javascript:` (or any non-http(s)) URL is ever published as a link,
and no IPv6 spelling of a private IPv4 address (NAT64, SIIT, IPv4-compatible, 6to4, Teredo)
gets past the address guard.

Real parts where they matter: local HTTP servers on 127.0.0.1 (tests/linkserver.py) answer
with hostile redirects and API answers, a full run publishes, and feedparser and an HTML
parser read what was published. No test needs the internet.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from xml.etree import ElementTree as ET

import feedparser
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from feeds.config import Config, load
from feeds.links.check import Checker
from feeds.links.enrich import Enricher, LookupFailed, parse_huggingface
from feeds.model import Item, Link, Paper, SourceState
from feeds.net import AddressPolicy, BlockedAddress, public_address
from feeds.net.guard import GuardedBackend
from feeds.net.pacing import Throttle
from feeds.pipeline import run
from feeds.publish.pages import render_topic
from feeds.publish.render import content_html, render_feed, render_json_feed
from feeds.publish.view import FeedView, Site, best_link, safe_href, web_url
from feeds.sources.arxiv.lookup import parse_arxiv
from feeds.sources.remote import SourceFailed, fetch
from feeds.state.records import ListRow
from feeds.text import paper_id
from feeds.urls import http_url_problem
from tests.conftest import Guarded
from tests.linkserver import LinkServer, json_reply, redirect, reply

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
NAT64_LOOPBACK = "64:ff9b::7f00:1"  # 127.0.0.1 behind the well-known NAT64 prefix
HOSTILE_TARGETS = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
]


def _checker(guarded: Guarded, **kwargs: Any) -> Checker:
    """A checker that may fetch from 127.0.0.1 (the test servers) and nowhere private else."""
    policy = AddressPolicy.from_settings(["127.0.0.1"])
    return Checker(guarded(policy), policy, total_timeout=2.0, **kwargs)


# --- the address guard: IPv6 addresses that carry an IPv4 one --------------------------------

NOT_PUBLIC = [
    # NAT64, well-known prefix (RFC 6052): the IPv4 address in the last 32 bits decides
    "64:ff9b::7f00:1",
    "64:ff9b::127.0.0.1",
    "64:FF9B::7F00:1",
    "0064:ff9b:0000:0000:0000:0000:7f00:0001",
    "64:ff9b::a00:1",  # 10.0.0.1
    "64:ff9b::a9fe:a9fe",  # 169.254.169.254, the cloud metadata service
    "64:ff9b::192.168.1.1",
    "64:ff9b::100.64.0.1",
    "64:ff9b::",  # 0.0.0.0
    # NAT64 for local use (RFC 8215): whatever it embeds, the operator's network decides
    "64:ff9b:1::808:808",
    "64:ff9b:1::7f00:1",
    "64:ff9b:1:ffff::1",
    # IPv4-compatible (deprecated, RFC 4291) and SIIT's IPv4-translated form
    "::127.0.0.1",
    "::7f00:1",
    "::10.1.2.3",
    "::169.254.169.254",
    "::ffff:0:127.0.0.1",
    "::ffff:0:a00:1",
    "::ffff:0:169.254.169.254",
    # IPv4-mapped
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    # site-local (deprecated, RFC 3879)
    "fec0::1",
    "fec0::7f00:1",
    "feff:ffff::1",
    # 6to4 of private addresses
    "2002:7f00:1::1",
    "2002:a00:1::1",
    "2002:c0a8:101::1",
    "2002:a9fe:a9fe::1",
    # Teredo: private client (127.0.0.1, obfuscated) or private server (10.0.0.1)
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "2001:0:a00:1:8000:63bf:f7f7:f7f7",
    # the rest of what is not public
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "2001:db8::1",
    "ff02::1",
    "127.0.0.1",
    "10.0.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
]
PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "2001:4860:4860::8888",
    "2606:4700:4700::1111",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8: a public address, reached through the gateway
    "64:ff9b::1.1.1.1",
]


@pytest.mark.parametrize("spelling", NOT_PUBLIC)
def test_addresses_that_are_not_public(spelling: str) -> None:
    ip = ipaddress.ip_address(spelling)
    assert not public_address(ip), spelling
    assert not AddressPolicy().allows(spelling, ip)
    host = f"[{spelling}]" if ":" in spelling else spelling
    assert "is not public" in (AddressPolicy().url_problem(f"http://{host}:8080/x") or "")


@pytest.mark.parametrize("spelling", PUBLIC)
def test_public_addresses_stay_allowed(spelling: str) -> None:
    ip = ipaddress.ip_address(spelling)
    assert public_address(ip), spelling
    host = f"[{spelling}]" if ":" in spelling else spelling
    assert AddressPolicy().url_problem(f"https://{host}/") is None


def test_allowing_an_ipv4_address_does_not_allow_its_ipv6_spellings() -> None:
    # `allow_hosts: [127.0.0.1]` lets a test server be checked; a NAT64 gateway in front of
    # it is another way in, not the one that was allowed.
    policy = AddressPolicy.from_settings(["127.0.0.1", "127.0.0.0/8"])
    assert policy.allows("127.0.0.1", ipaddress.ip_address("127.0.0.1"))
    for spelling in (NAT64_LOOPBACK, "::ffff:0:127.0.0.1", "::127.0.0.1", "2002:7f00:1::1"):
        assert not policy.allows(spelling, ipaddress.ip_address(spelling)), spelling


def test_the_backend_never_connects_to_nat64_of_loopback(
    connects: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = GuardedBackend(AddressPolicy.from_settings(["127.0.0.1"]))
    with pytest.raises(BlockedAddress):
        backend.connect_tcp(NAT64_LOOPBACK, 80, timeout=1)
    # The same address behind a name (DNS64 answers like this).
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda *_a, **_k: [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (NAT64_LOOPBACK, 80, 0, 0))
        ],
    )
    with pytest.raises(BlockedAddress, match="not public"):
        backend.connect_tcp("dns64.example", 80, timeout=1)
    assert connects == []


# --- every fetching path refuses NAT64 without connecting -------------------------------------


def test_checker_redirect_to_nat64_is_blocked_without_connecting(
    site: LinkServer, connects: list[tuple[str, int]], guarded: Guarded
) -> None:
    target = f"http://[{NAT64_LOOPBACK}]/"
    site.route("/nat64", redirect(target))
    site.route("/nat64-port", redirect(f"http://[{NAT64_LOOPBACK}]:{site.port}/"))
    checker = _checker(guarded)
    for path in ("/nat64", "/nat64-port"):
        result = checker.check(site.url(path))
        assert result.status == "blocked", result
        assert result.http_status == 302
        assert "not public" in (result.note or "")
    assert {host for host, _port in connects} == {"127.0.0.1"}
    assert site.methods() == [("HEAD", "/nat64"), ("HEAD", "/nat64-port")]


def test_checker_url_and_name_resolving_to_nat64_are_blocked(
    site: LinkServer,
    connects: list[tuple[str, int]],
    guarded: Guarded,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checker = _checker(guarded)
    direct = checker.check(f"http://[{NAT64_LOOPBACK}]:{site.port}/")
    assert direct.status == "blocked", direct
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda _h, port, *_a, **_k: [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (NAT64_LOOPBACK, port, 0, 0))
        ],
    )
    named = checker.check(f"http://dns64.example:{site.port}/")
    assert named.status == "blocked", named
    assert connects == []
    assert site.connections == 0


def test_github_api_redirect_to_nat64_is_blocked(
    site: LinkServer, connects: list[tuple[str, int]], guarded: Guarded
) -> None:
    site.route("/repos/o/r", redirect(f"http://[{NAT64_LOOPBACK}]/repositories/1", 301))
    result = _checker(guarded, github_api=site.base).check("https://github.com/o/r")
    assert result.status == "blocked", result
    assert {host for host, _port in connects} == {"127.0.0.1"}


def test_source_redirect_to_nat64_is_refused_without_connecting(
    site: LinkServer, connects: list[tuple[str, int]], guarded: Guarded
) -> None:
    site.route("/digest.txt", redirect(f"http://[{NAT64_LOOPBACK}]/digest.txt"))
    policy = AddressPolicy.from_settings(["127.0.0.1"])
    client = guarded(policy)
    for url in (site.url("/digest.txt"), f"http://[{NAT64_LOOPBACK}]:{site.port}/digest.txt"):
        with pytest.raises(SourceFailed, match="not public"):
            fetch(client, policy, SourceState(url), timeout=2, sleep=lambda _s: None)
    assert {host for host, _port in connects} == {"127.0.0.1"}


@pytest.mark.parametrize("target", HOSTILE_TARGETS)
def test_source_redirect_to_a_non_http_url_is_refused(
    site: LinkServer, guarded: Guarded, target: str
) -> None:
    site.route("/digest.txt", redirect(target))
    policy = AddressPolicy.from_settings(["127.0.0.1"])
    state = SourceState(site.url("/digest.txt"))
    with pytest.raises(SourceFailed, match=r"redirect to not an http\(s\) URL") as failed:
        fetch(guarded(policy), policy, state, timeout=2, retries=0)
    assert target.split(":", 1)[1] not in str(failed.value)


def _enricher(guarded: Guarded, api: str) -> Enricher:
    policy = AddressPolicy.from_settings(["127.0.0.1"])
    return Enricher(
        guarded(policy), policy,
        arxiv_api=f"{api}/query", huggingface_api=api, arxiv_throttle=Throttle(0),
        read_arxiv=parse_arxiv,
    )  # fmt: skip


def test_lookups_never_connect_to_nat64(
    site: LinkServer, connects: list[tuple[str, int]], guarded: Guarded
) -> None:
    nat64 = _enricher(guarded, f"http://[{NAT64_LOOPBACK}]:{site.port}/api")
    with pytest.raises(LookupFailed, match="not public"):
        nat64.arxiv("A Title")
    with pytest.raises(LookupFailed, match="not public"):
        nat64.huggingface("A Title", "2601.00001")
    assert connects == []
    # An API answering with a redirect there: lookups follow no redirects at all.
    site.route("/api/papers/2601.00001", redirect(f"http://[{NAT64_LOOPBACK}]/api/papers/x"))
    with pytest.raises(LookupFailed, match="HTTP 302"):
        _enricher(guarded, site.url("/api")).huggingface("A Title", "2601.00001")
    assert {host for host, _port in connects} == {"127.0.0.1"}


@pytest.mark.parametrize("target", HOSTILE_TARGETS)
def test_lookup_redirected_to_a_non_http_url_fails_cleanly(
    site: LinkServer, guarded: Guarded, target: str
) -> None:
    # httpx itself raised InvalidURL here, which no caller expected: the run crashed.
    site.route("/api/papers/2601.00001", redirect(target))
    with pytest.raises(LookupFailed, match=r"redirect to not an http\(s\) URL"):
        _enricher(guarded, site.url("/api")).huggingface("A Title", "2601.00001")


# --- a redirect to javascript: is never recorded as where a link leads ------------------------


@pytest.mark.parametrize("target", [*HOSTILE_TARGETS, " javascript:alert(1)"])
def test_redirect_to_a_non_http_url_records_no_final_url(
    site: LinkServer, guarded: Guarded, target: str
) -> None:
    site.route("/go", redirect(target))
    result = _checker(guarded).check(site.url("/go"))
    assert (result.status, result.http_status, result.final_url) == ("blocked", 302, None)
    scheme = target.strip().split(":", 1)[0].lower()
    assert result.note == f"redirect to not an http(s) URL ({scheme})"
    assert len(site.requests) == 1


def test_redirect_to_an_http_url_without_a_host_records_no_final_url(
    site: LinkServer, guarded: Guarded
) -> None:
    site.route("/go", redirect("https:///javascript:alert(1)"))
    result = _checker(guarded).check(site.url("/go"))
    assert (result.status, result.final_url, result.note) == (
        "blocked", None, "redirect to no host in the URL"
    )  # fmt: skip


@pytest.mark.parametrize(
    "html_url", ["javascript:alert(1)//", "data:text/html,x", "//evil.example/o/r", "https://", 7]
)
def test_github_api_html_url_that_is_not_http_is_not_a_rename(
    site: LinkServer, guarded: Guarded, html_url: object
) -> None:
    site.route("/repos/o/r", json_reply(200, {"html_url": html_url, "archived": False}))
    result = _checker(guarded, github_api=site.base).check("https://github.com/o/r/tree/main")
    assert (result.status, result.final_url) == ("ok", None), result


def test_hugging_face_values_that_are_not_http_urls_are_ignored() -> None:
    hostile = [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "data:text/html,x",
        "http://",
        "https:///javascript:alert(1)",
        "http://[::1",
        ["https://github.com/o/r"],
    ]
    for value in hostile:
        answer = {"title": "T", "githubRepo": value, "projectPage": value}
        (found,) = parse_huggingface(json.dumps(answer).encode())
        assert found.links == (), value
    ok = {"title": "T", "githubRepo": "https://github.com/o/r", "projectPage": "http://p.example/"}
    (found,) = parse_huggingface(json.dumps(ok).encode())
    assert [(x.url, x.kind) for x in found.links] == [
        ("https://github.com/o/r", "code"),
        ("http://p.example/", "project"),
    ]


# --- the renderer links only to http(s) URLs, whatever the state says -------------------------

SITE = Site("Hardening", "https://feeds.example/")
TITLE = "Hostile Links in Paper Digests"
PAPER = Paper(paper_id(TITLE), TITLE, authors=("Ann Lee",), venue="ICML")


@pytest.mark.parametrize(
    ("url", "safe"),
    [
        ("https://example.org/x", True),
        ("http://127.0.0.1:8080/", True),
        ("HTTPS://EXAMPLE.ORG/", True),
        ("https://[2001:db8::1]/", True),
        ("javascript:alert(1)", False),
        ("JavaScript:alert(1)", False),
        (" javascript:alert(1)", False),
        ("java\tscript:alert(1)", False),
        ("\x01javascript:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("vbscript:msgbox(1)", False),
        ("file:///etc/passwd", False),
        ("ftp://example.org/", False),
        ("http:///nohost", False),
        ("https://", False),
        ("//evil.example/x", False),
        ("/papers/x.html", False),
        ("http://[::1", False),
        ("", False),
    ],
)
def test_safe_href(url: str, safe: bool) -> None:
    assert safe_href(Link(url, "code")) == (url if safe else None)
    behind = Link("https://ok.example/", "code", final_url=url)
    assert safe_href(behind) == (url if safe else "https://ok.example/")


def _web_url_reference(url: str) -> str | None:
    """web_url the slow, obvious way (the rule alone), to hold its fast path to."""
    return url if url and http_url_problem(url) is None else None


# URL-like texts from parts, so that both the fast path and urlsplit's answers come up often.
_URLISH = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(["", "", "", "", " ", "\t", "\x01"]),
        st.sampled_from(["http", "https", "http", "https", "HTTPS", "javascript", "data", ""]),
        st.sampled_from(["://", "://", "://", ":", ":/", ":///", "//"]),
        st.sampled_from(["", "", "", "", "user@", "@", "[::1]", "[::1", "a b"]),
        st.from_regex(r"\A[a-zA-Z0-9.\-]{0,10}\Z", fullmatch=True),
        st.sampled_from(["", "", "", ":", ":80", ":x", ":99999"]),
        st.sampled_from(["/", "/", "/", "", "?", "#", "\\", "/p?q#f", " "]),
        st.text(max_size=6),
    ),
)


_PLAIN_URLS = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(["http://", "https://"]),
        st.from_regex(r"\A[a-zA-Z0-9.\-]{1,10}\Z", fullmatch=True),
        st.sampled_from(["", ":", ":8080"]),
        st.sampled_from(["", "/", "?q", "#f", "/p"]),
        st.text(max_size=6),
    ),
)


@given(st.one_of(_PLAIN_URLS, _URLISH, st.text(max_size=30)))
@settings(max_examples=500)
@example("https://@/x")  # userinfo, then no host
@example("https://user@/x")
@example("https://:80/")
@example("http://[::1")
@example("https://[::1]/")
@example("HTTPS://EXAMPLE.ORG/")
@example("https://a b/")
@example("https://example.org\\@evil.example/")
def test_web_url_fast_path_agrees_with_urlsplit(url: str) -> None:
    assert web_url(url) == _web_url_reference(url)


HOSTILE_LINKS = (
    Link("https://code.example/o/r", "code", status="redirected", final_url="javascript:alert(1)"),
    Link("javascript:alert(2)", "project", status="unchecked"),
    Link("data:text/html,<b>3</b>", "paper", status="blocked", final_url="vbscript:msgbox(4)"),
)


class _Refs(HTMLParser):
    """Every href and src in an HTML text, and the text inside anchors."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.anchor_text: list[str] = []
        self._in_a = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.refs += [v or "" for k, v in attrs if k in ("href", "src")]
        if tag == "a":
            self._in_a += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._in_a:
            self._in_a -= 1

    def handle_data(self, data: str) -> None:
        if self._in_a:
            self.anchor_text.append(data)


def _web(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _page_ref_ok(url: str) -> bool:
    """A page may link within the site (relative) or to an http(s) URL, nothing else."""
    parts = urlsplit(url)
    return _web(url) or (not parts.scheme and not parts.netloc)


def test_renderer_links_only_to_http_urls_whatever_the_state_says() -> None:
    assert best_link(SITE, PAPER, HOSTILE_LINKS) == "https://code.example/o/r"
    page = SITE.url(f"papers/{PAPER.paper_id}.html")
    assert best_link(SITE, PAPER, HOSTILE_LINKS[1:]) == page

    body = _Refs(content_html(PAPER, HOSTILE_LINKS))
    assert body.refs == ["https://code.example/o/r"]
    assert body.anchor_text == ["https://code.example/o/r"]
    text = content_html(PAPER, HOSTILE_LINKS)
    assert "<li>project: javascript:alert(2) — not checked yet</li>" in text  # shown, not linked

    feed = FeedView("t", "T", "", T0, (Item(PAPER, T0, HOSTILE_LINKS[1:]),), 10)
    rows = [ListRow(PAPER.paper_id, TITLE, None, "ICML", T0.isoformat(), ())]
    topic = b"".join(render_topic(SITE, feed, rows, {PAPER.paper_id: HOSTILE_LINKS}))
    assert all(_page_ref_ok(r) for r in _Refs(topic.decode()).refs)
    # The code link is linked; the project and paper links, which have no safe URL, are named.
    assert '<a href="https://code.example/o/r">code</a> · project · paper</span>' in topic.decode()

    for fmt in ("rss", "atom"):
        parsed = feedparser.parse(render_feed(SITE, feed, fmt), sanitize_html=False)
        (entry,) = parsed.entries
        assert entry.link == page
        assert all(_web(x.href) for x in entry.links), entry.links
        assert all(_web(r) for r in _Refs(entry.content[0].value).refs)
    (item,) = json.loads(render_json_feed(SITE, feed))["items"]
    assert item["url"] == page
    links = item["_paperfeeds"]["links"]
    assert [(x["url"], x["final_url"]) for x in links] == [(None, None), (None, None)]
    assert [x["kind"] for x in links] == ["project", "paper"]


def test_renderer_keeps_ordinary_links_as_they_were() -> None:
    links = (
        Link("https://github.com/o/r", "code", status="ok"),
        Link("https://o.github.io/r", "project", status="redirected", final_url="https://r.dev/"),
    )
    assert content_html(PAPER, links).endswith(
        '<ul>\n<li>project: <a href="https://r.dev/">https://o.github.io/r</a>'
        " — moved (now at https://r.dev/)</li>\n"
        '<li>code: <a href="https://github.com/o/r">https://github.com/o/r</a> — works</li>\n</ul>'
    )
    assert best_link(SITE, PAPER, links) == "https://r.dev/"


# --- end to end: hostile servers, a full run, every published file read back -------------------


def _published_urls(public: Path) -> tuple[list[str], list[str]]:
    """Return (links in pages and item bodies, item links and link URLs in feeds) of every
    file under public/, read as a browser and a feed reader would."""
    in_pages: list[str] = []
    in_feeds: list[str] = []
    for path in sorted(public.rglob("*")):
        if path.suffix == ".html":
            in_pages += _Refs(path.read_text("utf-8")).refs
        elif path.name.endswith((".rss.xml", ".atom.xml")):
            parsed = feedparser.parse(path.read_bytes(), sanitize_html=False)
            assert not parsed.bozo, (path, parsed.bozo_exception)
            for entry in parsed.entries:
                in_feeds += [entry.link, *(x.href for x in entry.links)]
                for part in (*entry.get("content", ()), entry.get("summary_detail")):
                    if part is not None:
                        in_pages += _Refs(part.value).refs
        elif path.suffix == ".json":
            data = json.loads(path.read_bytes())
            for item in data.get("items", ()) if isinstance(data, dict) else ():
                in_feeds.append(item["url"])
                in_pages += _Refs(item["content_html"]).refs
                for link in item["_paperfeeds"]["links"]:
                    in_feeds += [u for u in (link["url"], link["final_url"]) if u is not None]
        elif path.suffix == ".opml":
            for outline in ET.parse(path).iter("outline"):
                in_feeds += [v for k, v in outline.attrib.items() if k in ("xmlUrl", "htmlUrl")]
    return in_pages, in_feeds


def _project(tmp_path: Path, digest: str, settings: str) -> Config:
    """Return the config of a project in tmp_path: one digest in its inbox, a topic on
    推测解码, these settings (links checked unless they say otherwise)."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "d.txt").write_text(digest, encoding="utf-8")
    (tmp_path / "subs.yaml").write_text(
        "topics:\n  - id: spec\n    title: Spec\n    any: [推测解码]\n", encoding="utf-8"
    )
    (tmp_path / "settings.yaml").write_text(settings, encoding="utf-8")
    config = load(tmp_path / "subs.yaml", tmp_path / "settings.yaml")
    s = replace(
        config.settings,
        inbox=(inbox,),
        public_dir=tmp_path / "public",
        state=tmp_path / "state.sqlite3",
    )
    return replace(config, settings=s)


def test_a_source_redirecting_to_javascript_is_a_failing_source_not_a_crash(
    site: LinkServer, tmp_path: Path
) -> None:
    site.route("/digest.txt", redirect("javascript:alert(1)"))
    settings = (
        f"sources:\n  - {site.url('/digest.txt')}\n"
        "links:\n  check: false\n  allow_hosts: [127.0.0.1]\n"
    )
    digest = f"ICML\n\n{TITLE}\n\n论文\n\nAnn Lee\n\nAI总结 推测解码。\n"
    summary = run(_project(tmp_path, digest, settings), now=lambda: T0)
    assert summary.stale == ()  # failing since this run: said as down, stale only later
    (down,) = summary.warnings
    assert "redirect to not an http(s) URL (javascript)" in down
    assert "alert" not in down
    assert summary.papers_total == 1  # the inbox is published all the same


def test_a_run_against_hostile_servers_publishes_no_script_links(
    site: LinkServer, tmp_path: Path
) -> None:
    site.route("/js", redirect("javascript:alert(1)"))
    site.route("/data.pdf", redirect("data:text/html,<script>alert(1)</script>"))
    site.route("/vb", redirect("vbscript:msgbox(1)", 301))
    site.route("/ok", reply(200))
    site.route("/repos/evil/repo", json_reply(200, {"html_url": "javascript:alert(1)//"}))
    hf = {"title": "A Paper Without Links", "githubRepo": "http://", "projectPage": "data:,x"}
    site.route("/api/papers/search", json_reply(200, [{"paper": hf}]))
    digest = (
        f"ICML\n\n{TITLE}\n\n论文摘要中的恶意链接\n\nAnn Lee\n\nAI总结 推测解码。\n\n"
        f"Comments Project page: {site.url('/js')} . Paper: {site.url('/data.pdf')} . "
        f"Code: https://github.com/evil/repo . Video: {site.url('/vb')} . "
        f"Also {site.url('/ok')}\n\n"
        "A Paper Without Links\n\n无链接的论文\n\nBo Li\n\nAI总结 推测解码。\n"
    )
    settings = (
        "links:\n"
        "  allow_hosts: [127.0.0.1]\n"
        "  arxiv: false\n"
        f"  huggingface_api: {site.base}/api\n"
        f"  github_api: {site.base}\n"
        "  timeout: 5s\n"
    )
    config = _project(tmp_path, digest, settings)
    summary = run(config, now=lambda: T0)
    assert {r.path for r in site.requests} >= {"/js", "/data.pdf", "/vb", "/repos/evil/repo"}

    in_pages, in_feeds = _published_urls(tmp_path / "public")
    assert in_pages
    assert in_feeds
    assert [u for u in in_pages if not _page_ref_ok(u)] == []
    assert [u for u in in_feeds if not _web(u)] == []
    for path in (tmp_path / "public").rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            assert b"alert(1)" not in data, path
            assert b"msgbox" not in data, path

    # The three redirects are blocked (not errors retried forever); GitHub's odd answer and
    # /ok are fine; Hugging Face's values were no URLs, so no link came of them.
    assert summary.link_statuses == {"blocked": 3, "ok": 2}, summary.link_statuses
    items = json.loads((tmp_path / "public/feeds/spec.json").read_bytes())["items"]
    item = next(i for i in items if i["title"] == TITLE)
    assert item["url"] == site.url("/data.pdf")  # the paper link, as the digest gave it
    by_url = {x["url"]: x for x in item["_paperfeeds"]["links"]}
    js = by_url[site.url("/js")]
    assert (js["status"], js["final_url"]) == ("blocked", None)
    assert js["note"] == "redirect to not an http(s) URL (javascript)"
    assert by_url["https://github.com/evil/repo"]["final_url"] is None
