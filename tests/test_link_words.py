"""What a researcher reads about links and matches, and what cron mails without network.

Link statuses in words on pages and in feed items (never a raw exception); a network that is
down said once, lookups and checks backing off until it is back, `feeds status` telling
when; the matched line without terms inside longer ones; Atom without a subtitle that
repeats the title. Real parts: a local HTTP server, name lookups that fail as without
network (tests/conftest.py), the CLI in a subprocess, feedparser reading the feeds.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import feedparser
import pytest

from feeds.cli.report import gather, render_text
from feeds.config import Config, load
from feeds.links.check import Checker
from feeds.links.policy import Outage, network_after
from feeds.match.hits import matched_text
from feeds.model import Hit, Item, Link, Paper
from feeds.net import AddressPolicy, guarded_client
from feeds.net.pacing import backoff
from feeds.pipeline import run
from feeds.publish.render import content_html, item_html, render_feed, render_json_feed
from feeds.publish.view import FeedView, Site, link_words
from tests.arxivserver import EMPTY_ANSWER
from tests.linkserver import LinkServer, json_reply, redirect, reply

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
SITE = Site("Lab papers", "https://example.org/papers/")
PAPER = Paper("p1", "MineDraft: Batch Parallel Speculative Decoding", venue="ICML")
Cli = Callable[..., subprocess.CompletedProcess[str]]
# What must never reach a page or a feed item: exceptions, errnos, resolver text.
RAW = re.compile(r"Errno|Error|Exception|errno|name not resolved|service not known|HTTP \d")


# --- link statuses in words -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("link", "words"),
    [
        (Link("https://github.com/o/r", "code"), "not checked yet"),
        (Link("https://github.com/o/r", "code", status="ok", http_status=200), "works"),
        (
            Link("https://github.com/o/r", "code", status="ok", note="archived"),
            "works, archived (read-only)",
        ),
        (
            Link(
                "https://github.com/o/r",
                "code",
                status="redirected",
                final_url="https://github.com/o/r2",
                note="renamed",
            ),
            "renamed (now at https://github.com/o/r2)",
        ),
        (
            Link(
                "https://o.github.io/r",
                "project",
                status="redirected",
                final_url="javascript:alert(1)",
            ),
            "moved",  # where it leads is not a web address: not said
        ),
        (
            Link("https://x.org/a", "other", status="dead", http_status=404, note="HTTP 404"),
            "broken (404)",
        ),
        (
            Link(
                "https://github.com/o/r",
                "code",
                status="dead",
                http_status=404,
                note="no such GitHub repository",
            ),
            "broken: no such GitHub repository",
        ),
        (
            Link(
                "https://gone.example/p",
                "project",
                status="dead",
                note="name not resolved: gone.example: [Errno -2] Name or service not known",
            ),
            "broken: gone.example no longer exists",
        ),
        (
            Link(
                "https://github.com/o/r",
                "code",
                status="error",
                note="name not resolved: api.github.com: [Errno -2] Name or service not known",
            ),
            "could not be checked: github.com was not found (no network?); will retry",
        ),
        (
            Link("https://x.org/a", "other", status="error", note="timed out"),
            "could not be checked: x.org did not answer in time; will retry",
        ),
        (
            Link(
                "https://x.org/a",
                "other",
                status="error",
                note="ConnectError: [Errno 111] Connection refused",
            ),
            "could not be checked: x.org did not answer; will retry",
        ),
        (
            Link("https://x.org/a", "other", status="error", http_status=503, note="HTTP 503"),
            "could not be checked: x.org had a server error (503); will retry",
        ),
        (
            Link("https://x.org/a", "other", status="error", http_status=403, note="HTTP 403"),
            "could not be checked: x.org refused access (403); will retry",
        ),
        (
            Link(
                "https://github.com/o/r",
                "code",
                status="error",
                http_status=403,
                note="GitHub rate limit",
            ),
            "could not be checked: GitHub asked us to wait; will retry",
        ),
        (
            Link(
                "https://x.org/a",
                "other",
                status="error",
                note="RemoteProtocolError: Server disconnected without sending a response.",
            ),
            "could not be checked: x.org gave no usable answer; will retry",
        ),
        (
            Link(
                "http://10.0.0.1/", "other", status="blocked", note="address 10.0.0.1 is not public"
            ),
            "blocked: not a public address",
        ),
        (
            Link(
                "https://x.org/a",
                "other",
                status="blocked",
                http_status=302,
                note="redirect to host intranet.local is local",
            ),
            "blocked: it leads to a private address",
        ),
        (Link("data:text/html,<b>3</b>", "paper", status="blocked"), "blocked: not a web address"),
    ],
)
def test_link_words(link: Link, words: str) -> None:
    assert link_words(link) == words


@pytest.fixture
def site(loopback: Callable[..., LinkServer]) -> LinkServer:
    return loopback("127.0.0.2")


def test_every_note_a_real_check_writes_reads_as_words(site: LinkServer) -> None:
    """The notes come from real checks (the checker's wording, whatever it becomes), and
    each reads as words naming the link's host, never the note itself."""
    site.route("/gone", reply(404))
    site.route("/busy", reply(503))
    site.route("/private", reply(403))
    site.route("/slow-down", reply(429, {"Retry-After": "3600"}))
    site.route("/loop", redirect("/loop"))
    site.route("/inside", redirect("http://10.1.2.3/"))
    for n in range(8):
        site.route(f"/hop{n}", redirect(f"/hop{n + 1}"))
    site.route("/api/repos/o/gone", json_reply(404, {}))
    site.route("/api/repos/o/limited", json_reply(403, {}, {"x-ratelimit-remaining": "0"}))
    policy = AddressPolicy.from_settings(["127.0.0.2"])
    client = guarded_client(policy, timeout=5)
    checker = Checker(client, policy, total_timeout=5, github_api=site.url("/api"))
    closed = socket.socket()
    closed.bind(("127.0.0.2", 0))  # a port nobody listens on: the connection is refused
    urls = [
        *(site.url(p) for p in ("/gone", "/busy", "/private", "/slow-down", "/loop", "/inside",
                                "/hop0")),
        f"http://127.0.0.2:{closed.getsockname()[1]}/",
        "https://no-such-host.example/paper",  # no name resolves in the tests
        "https://github.com/o/gone", "https://github.com/o/limited",
    ]  # fmt: skip
    with client:
        results = [checker.check(url) for url in urls]
    closed.close()
    said = {}
    for r in results:
        assert r.note, r
        words = link_words(Link(r.url, "other", "digest", r.status, r.final_url,
                                r.http_status, r.note))  # fmt: skip
        assert not RAW.search(words), (r.note, words)
        assert "gave no usable answer" not in words, (r.note, words)  # a note known to words
        said[r.url] = words
    assert said[site.url("/gone")] == "broken (404)"
    assert said[site.url("/inside")] == "blocked: it leads to a private address"
    assert said[site.url("/hop0")] == "could not be checked: too many redirects; will retry"
    assert said["https://no-such-host.example/paper"].startswith(
        "could not be checked: no-such-host.example was not found"
    )
    assert said["https://github.com/o/gone"] == "broken: no such GitHub repository"
    assert said["https://github.com/o/limited"].startswith("could not be checked: GitHub")
    assert all("127.0.0.2" in w for u, w in said.items() if "127.0.0.2" in u and "error" in w)


def test_pages_and_feed_items_say_words_and_the_json_feed_keeps_the_status(
    tmp_path: Path,
) -> None:
    """A github.com link checked without network: the page and every feed format say what
    happened to github.com in words; the JSON Feed's data keeps status and note."""
    config = _project(tmp_path, "Comments Code: https://github.com/o/minedraft\n", links=True)
    run(config, now=lambda: T0)
    page = _paper_page(tmp_path / "public")
    said = "could not be checked: github.com was not found (no network?); will retry"
    assert said in page
    texts = [page]
    for fmt in ("rss", "atom"):
        parsed = feedparser.parse((tmp_path / f"public/feeds/spec.{fmt}.xml").read_bytes())
        assert not parsed.bozo, parsed.bozo_exception
        (entry,) = parsed.entries
        texts.append(entry.content[0].value)
    feed = json.loads((tmp_path / "public/feeds/spec.json").read_bytes())
    (item,) = feed["items"]
    texts.append(item["content_html"])
    for text in texts:
        assert said in text
        assert not RAW.search(text), RAW.search(text)
        assert "api.github.com" not in text
    (link,) = item["_paperfeeds"]["links"]
    assert link["status"] == "error"
    assert link["note"].startswith("name not resolved: api.github.com")


def _paper_page(public: Path) -> str:
    """Return MineDraft's page."""
    pages = [p.read_text("utf-8") for p in (public / "papers").glob("*.html")]
    (page,) = [p for p in pages if "<h1>MineDraft" in p]
    return page


# --- a network that is down: said once, tried again with backoff -------------------------------


def test_one_backoff_for_links_lookups_and_the_network() -> None:
    waits = [backoff(n) for n in range(40)]  # once, 2**35 hours overflowed timedelta
    assert waits[:3] == [timedelta(hours=1), timedelta(hours=2), timedelta(hours=4)]
    assert waits[-1] == timedelta(days=2)
    assert backoff(0, retry_after=7200) == timedelta(hours=2)
    down = Outage().failed(T0, "names do not resolve")
    assert (down.down, down.since, down.retry_at) == (True, T0, T0 + backoff(0))
    assert not down.due(T0 + timedelta(minutes=59))
    again = down.failed(T0 + timedelta(hours=1), "names do not resolve")
    assert again.retry_at == T0 + timedelta(hours=1) + backoff(1)
    assert Outage.from_text(again.to_text()) == again
    assert Outage.from_text("{not json") == Outage()
    back = again.worked(T0 + timedelta(hours=5))
    assert (back.down, back.since, back.ended) == (False, T0, T0 + timedelta(hours=5))


def test_one_host_alone_is_not_the_network() -> None:
    up = Outage()
    assert network_after(up, T0, False, {"gone.example"}, "names do not resolve") == up
    assert network_after(up, T0, False, set(), "") == up
    assert network_after(up, T0, False, {"a.example", "b.example"}, "x").down
    assert not network_after(Outage().failed(T0, "x"), T0, True, {"a.example"}, "x").down


def _project(tmp_path: Path, comments: str, *, links: bool, settings: str = "") -> Config:
    """Return the config of a project with one speculative-decoding paper (`comments` its
    comments record) and one other paper without links, in tmp_path."""
    inbox = tmp_path / "inbox"
    inbox.mkdir(exist_ok=True)
    (inbox / "d.txt").write_text(
        f"ICML\n\n{PAPER.title}\n\nMineDraft: 批量并行推测解码框架\n\nZhenwei Tang\n\n"
        f"AI总结 推测解码。\n\n{comments}\n"
        "Another Paper Without Links\n\n另一篇\n\nAnn Lee\n\nAI总结 无。\n",
        encoding="utf-8",
    )
    (tmp_path / "subs.yaml").write_text(
        "topics:\n  - id: spec\n    title: Spec\n    any: [speculative decoding]\n",
        encoding="utf-8",
    )
    (tmp_path / "settings.yaml").write_text(
        f"links:\n  check: {str(links).lower()}\n  arxiv_delay: 0s\n  timeout: 5s\n{settings}",
        encoding="utf-8",
    )
    config = load(tmp_path / "subs.yaml", tmp_path / "settings.yaml")
    s = replace(config.settings, inbox=(inbox,), public_dir=tmp_path / "public",
                state=tmp_path / "state.sqlite3")  # fmt: skip
    return replace(config, settings=s)


class _Dns:
    """Name lookups as the guard makes them: none resolves (no network), or every name
    resolves to the local server (the network is back). Counts the lookups."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, server: LinkServer) -> None:
        self.up = False
        self.asked: list[str] = []
        real = socket.getaddrinfo

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else str(host)
            self.asked.append(name)
            if name.endswith(".lab.test"):
                if not self.up:
                    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
                return real(server.host, port, *args, **kwargs)
            return real(host, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_a_network_that_is_down_is_said_once_and_tried_again_with_backoff(
    tmp_path: Path, site: LinkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = site.port
    dns = _Dns(monkeypatch, site)
    site.route("/api/query", reply(200, {"Content-Type": "application/atom+xml"}, EMPTY_ANSWER))
    site.route("/code/minedraft", reply(200))
    site.route("/page/minedraft", reply(200))
    config = _project(
        tmp_path,
        f"Comments Code: http://code.lab.test:{port}/code/minedraft Project page: "
        f"http://page.lab.test:{port}/page/minedraft\n",
        links=True,
        settings=(
            "  allow_hosts: [127.0.0.2]\n"
            f"  arxiv_api: http://api.lab.test:{port}/api/query\n"
            f"  huggingface_api: http://api.lab.test:{port}/hf\n"
        ),
    )

    first = run(config, now=lambda: T0)
    (said,) = first.warnings
    assert said.startswith("network down since 2026-07-01 08:00 UTC (names do not resolve: ")
    assert "tried again after 2026-07-01 09:00 UTC" in said
    assert "Errno" not in said
    assert first.exit_code == 0
    status = render_text(gather(config))
    assert "network: down since 2026-07-01 08:00 UTC (names do not resolve" in status

    # Cron, 15 minutes later: nothing new, nothing tried, nothing said.
    dns.asked.clear()
    later = run(config, now=lambda: T0 + timedelta(minutes=15))
    assert (later.warnings, later.lookups, later.links_checked) == ((), 0, 0)
    assert dns.asked == []
    assert later.files.written == 0

    # Its time comes: tried again (the same paper, the links), still down, nothing said.
    probe = run(config, now=lambda: T0 + timedelta(hours=1))
    assert probe.warnings == ()
    assert (probe.lookups, probe.links_checked) == (1, 2)
    assert any(n.endswith(".lab.test") for n in dns.asked)
    assert "tried again after 2026-07-01 11:00 UTC" in render_text(gather(config))  # 2 h
    assert site.requests == []

    # The network is back: at the next try everything is looked up and checked.
    dns.up = True
    assert run(config, now=lambda: T0 + timedelta(hours=2)).links_checked == 0  # not yet
    back = run(config, now=lambda: T0 + timedelta(hours=3))
    assert back.warnings == ()
    assert back.lookups == 2
    assert back.link_statuses == {"ok": 2}
    status = render_text(gather(config))
    assert "network: up since 2026-07-01 11:00 UTC (down from 2026-07-01 08:00 UTC)" in status
    page = _paper_page(tmp_path / "public")
    assert f"http://code.lab.test:{port}/code/minedraft</a> — works" in page


def test_a_failing_lookup_api_is_said_once_and_backs_off(
    tmp_path: Path, site: LinkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The network works (links answer), arXiv's API does not: lookups wait, said once."""
    _Dns(monkeypatch, site).up = True
    site.route("/api/query", reply(503))
    site.route("/code/minedraft", reply(200))
    config = _project(
        tmp_path, f"Comments Code: http://code.lab.test:{site.port}/code/minedraft\n",
        links=True,
        settings=(
            "  allow_hosts: [127.0.0.2]\n"
            f"  arxiv_api: http://api.lab.test:{site.port}/api/query\n"
        ),
    )  # fmt: skip
    first = run(config, now=lambda: T0)
    (said,) = first.warnings
    assert said.startswith("lookups down since 2026-07-01 08:00 UTC (api.lab.test answered HTTP")
    assert first.lookups == 1
    for minutes in (15, 30, 45):
        again = run(config, now=lambda m=minutes: T0 + timedelta(minutes=m))  # type: ignore[misc]
        assert (again.warnings, again.lookups) == ((), 0)
    assert run(config, now=lambda: T0 + timedelta(hours=1)).lookups == 1  # tried again
    assert "lookup APIs: down since" in render_text(gather(config))


def _invalid_workspace(root: Path) -> Path:
    """A project whose every host is under .invalid, which never resolves (RFC 6761): no
    network, on any machine."""
    (root / "seeds").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "seeds" / "d.txt").write_text(
        f"ICML\n\n{PAPER.title}\n\nZhenwei Tang\n\nAI总结 推测解码。\n\n"
        "Comments Code: https://code.paperfeeds.invalid/o/minedraft ; project page: "
        "https://page.paperfeeds.invalid/minedraft\n\n"
        "Another Paper Without Links\n\nAnn Lee\n\nAI总结 无。\n",
        encoding="utf-8",
    )
    (root / "config" / "subscriptions.yaml").write_text(
        "topics:\n  - id: spec\n    title: Spec\n    any: [speculative decoding]\n",
        encoding="utf-8",
    )
    (root / "config" / "settings.yaml").write_text(
        "links:\n"
        "  arxiv_api: https://export.arxiv.invalid/api/query\n"
        "  huggingface_api: https://huggingface.invalid/api\n"
        "  github_api: https://api.github.invalid\n",
        encoding="utf-8",
    )
    return root


def test_cron_without_network_mails_once(tmp_path: Path, feeds_cli: Cli) -> None:
    """Two `feeds run --quiet` in a row, the real command, without network: the first says
    once that the network is down; the second, with nothing new, prints nothing at all."""
    root = _invalid_workspace(tmp_path / "project")
    first = feeds_cli(root, "run", "--quiet")
    assert (first.returncode, first.stdout) == (0, ""), first.stderr
    (line,) = first.stderr.splitlines()
    assert line.startswith("warning: network down since ")
    assert "names do not resolve" in line
    second = feeds_cli(root, "run", "--quiet")
    assert (second.returncode, second.stdout, second.stderr) == (0, "", "")

    status = feeds_cli(root, "status")
    assert "network: down since " in status.stdout
    assert "name not resolved" not in status.stdout  # raw notes: --verbose only
    verbose = feeds_cli(root, "status", "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert "links in error: 2" in verbose.stdout
    assert "  code.paperfeeds.invalid: https://code.paperfeeds.invalid/o/minedraft" in (
        verbose.stdout
    )
    assert "name not resolved: code.paperfeeds.invalid" in verbose.stdout
    data = json.loads(feeds_cli(root, "status", "--json", "-v").stdout)
    assert data["network"]["down"] is True
    assert {x["host"] for x in data["links_in_error"]} == {
        "code.paperfeeds.invalid", "page.paperfeeds.invalid",
    }  # fmt: skip


# --- the matched line ---------------------------------------------------------------------------


def _hits(*pairs: str) -> tuple[Hit, ...]:
    return tuple(Hit(*pair.split("@")) for pair in pairs)


@pytest.mark.parametrize(
    ("hits", "line"),
    [
        (
            _hits(
                "speculative decoding@title",
                "speculative@title",
                "推测解码@title",
                "推测解码@summary",
                "推测@title",
                "推测@summary",
            ),
            "speculative decoding in title; 推测解码 in title, summary",
        ),
        (  # a hit of its own, in a field the longer term is not in: kept, with all its fields
            _hits("speculative decoding@title", "speculative@title", "speculative@summary"),
            "speculative decoding in title; speculative in title, summary",
        ),
        (  # a prefix, and space, hyphen and underscore alike, as the matcher has them
            _hits(
                "self-speculative@title",
                "speculative@title",
                "LLM*@summary",
                "diffusion LLMs@summary",
            ),
            "self-speculative in title; diffusion LLMs in summary",
        ),
        (  # a word inside a word is not the term; a regex stands for no text of its own
            _hits("draft@title", "drafting model@title", "/spec\\w+/@title", "speculative@title"),
            "draft in title; drafting model in title; speculative in title",
        ),
        (_hits("ICML@venue", "Ann Lee@authors"), "ICML in venue; Ann Lee in authors"),
    ],
)
def test_matched_shows_the_longest_terms(hits: tuple[Hit, ...], line: str) -> None:
    assert matched_text(hits) == line


def test_the_json_feed_keeps_every_hit() -> None:
    hits = _hits("speculative decoding@title", "speculative@title")
    item = Item(PAPER, T0, (), hits)
    assert "<p>matched: speculative decoding in title</p>" in item_html(item)
    feed = FeedView("spec", "Spec", "", T0, (item,), 10)
    (data,) = json.loads(render_json_feed(SITE, feed))["items"]
    assert data["_paperfeeds"]["matched"] == [
        {"term": "speculative decoding", "field": "title"},
        {"term": "speculative", "field": "title"},
    ]
    assert "matched: speculative decoding in title<" in data["content_html"]


# --- feed headers -----------------------------------------------------------------------------


def test_atom_has_no_subtitle_that_repeats_the_title() -> None:
    item = Item(PAPER, T0, (Link("https://github.com/o/r", "code"),))
    bare = FeedView("spec", "Speculative decoding", "", T0, (item,), 10)
    atom = render_feed(SITE, bare, "atom")
    assert b"<subtitle" not in atom
    parsed = feedparser.parse(atom)
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.feed.title == "Speculative decoding"
    assert "subtitle" not in parsed.feed
    rss = feedparser.parse(render_feed(SITE, bare, "rss"))  # RSS 2.0 requires a description
    assert not rss.bozo, rss.bozo_exception
    assert rss.feed.description == "Speculative decoding"

    described = replace(bare, description="Faster LLM inference")
    parsed = feedparser.parse(render_feed(SITE, described, "atom"))
    assert not parsed.bozo
    assert parsed.feed.subtitle == "Faster LLM inference"


def test_links_render_as_words_in_content() -> None:
    links = (
        Link("https://github.com/o/r", "code", "huggingface", "ok", note="archived"),
        Link("https://arxiv.org/abs/1", "paper", "arxiv"),
    )
    html = content_html(PAPER, links)
    assert "https://arxiv.org/abs/1</a> — not checked yet; found via arxiv</li>" in html
    assert "https://github.com/o/r</a> — works, archived (read-only); found via huggingface" in (
        html
    )
