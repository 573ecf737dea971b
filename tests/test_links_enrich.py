"""Looking papers up on arXiv and Hugging Face, against a local server speaking their formats."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from feeds.config import load
from feeds.links.enrich import (
    Enricher,
    LookupFailed,
    parse_huggingface,
    same_title,
)
from feeds.net import AddressPolicy, guarded_client
from feeds.net.pacing import Throttle
from feeds.pipeline import run
from feeds.sources.arxiv.lookup import parse_arxiv
from tests.arxivserver import EMPTY_ANSWER

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
TITLE = "MineDraft: A Framework for Batch Parallel Speculative Decoding"

# The arXiv API answers in Atom (https://info.arxiv.org/help/api/user-manual.html).
ARXIV_FEED = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=ti:MineDraft</title>
  <id>http://arxiv.org/api/query</id>
  <updated>2026-07-01T00:00:00-04:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">2</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">5</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/abs/2601.09999v1</id>
    <updated>2026-05-01T00:00:00Z</updated>
    <published>2026-05-01T00:00:00Z</published>
    <title>MineDraft: Something Else Entirely About Mining</title>
    <summary>  Mining, not drafting.
</summary>
    <author><name>Someone Else</name></author>
    <category term="cs.DB" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
  <entry>
    <id>http://arxiv.org/abs/2601.01234v2</id>
    <updated>2026-06-01T00:00:00Z</updated>
    <published>2026-05-20T00:00:00Z</published>
    <title>MineDraft: A Framework for Batch Parallel
      Speculative Decoding</title>
    <summary>  Speculative decoding drafts tokens; MineDraft overlaps drafting and
verification in parallel batches.
</summary>
    <author><name>Zhenwei Tang</name></author>
    <link href="http://arxiv.org/abs/2601.01234v2" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/2601.01234v2" rel="related"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
</feed>
"""
EMPTY_FEED = EMPTY_ANSWER.decode()


class Server:
    """arXiv, Hugging Face and GitHub APIs, and a project page, on one local port."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.times: list[float] = []
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.3", 0), handler)
        self.base = f"http://127.0.0.3:{self.httpd.server_address[1]}"
        self.hf_paper = {
            "id": "2601.01234",
            "title": TITLE,
            "githubRepo": "https://github.com/example/MineDraft.git",
            "projectPage": f"{self.base}/project/minedraft",
        }
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                import time

                server.requests.append(f"{self.command} {self.path}")
                server.times.append(time.monotonic())
                url = urlsplit(self.path)
                if url.path == "/api/query":
                    query = parse_qs(url.query)["search_query"][0]
                    body = ARXIV_FEED if "minedraft" in query.lower() else EMPTY_FEED
                    self._send(200, body.encode(), "application/atom+xml")
                elif url.path == "/api/papers/2601.01234":
                    self._send(200, json.dumps(server.hf_paper).encode())
                elif url.path == "/api/papers/search":
                    self._send(200, json.dumps([{"paper": server.hf_paper}]).encode())
                elif url.path.startswith("/api/papers/"):
                    self._send(404, b'{"error": "not found"}')
                elif url.path == "/repos/example/MineDraft":
                    repo = {"html_url": "https://github.com/example/MineDraft", "archived": True}
                    self._send(200, json.dumps(repo).encode())
                elif url.path == "/project/minedraft":
                    self._send(200, b"<html>project</html>", "text/html")
                elif url.path == "/huge":
                    self._send(200, b"[" + b" " * (3 * 1024 * 1024) + b"]")
                else:
                    self._send(404, b"{}")

        return Handler

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


def test_parse_arxiv_reads_the_documented_atom_format() -> None:
    entries = parse_arxiv(ARXIV_FEED.encode())
    assert [e.arxiv_id for e in entries] == ["2601.09999", "2601.01234"]
    assert entries[1].title == TITLE  # whitespace of the wrapped title folded
    assert [link.url for link in entries[1].links] == [
        "https://arxiv.org/abs/2601.01234",
        "https://arxiv.org/pdf/2601.01234",
    ]
    assert {link.kind for link in entries[1].links} == {"paper"}
    assert {link.source for link in entries[1].links} == {"arxiv"}
    paper = entries[1].paper
    assert paper is not None
    assert paper.abstract is not None
    assert paper.abstract.startswith("Speculative decoding drafts tokens; MineDraft overlaps")
    assert paper.categories == ("cs.CL", "cs.LG")
    with pytest.raises(LookupFailed):
        parse_arxiv(b"<html>rate limited")


def test_parse_huggingface_paper_and_search_answers() -> None:
    paper = {"id": "2601.01234", "title": TITLE, "githubRepo": "https://github.com/o/r"}
    (one,) = parse_huggingface(json.dumps(paper).encode())
    assert (one.arxiv_id, one.title) == ("2601.01234", TITLE)
    assert [(x.url, x.kind, x.source) for x in one.links] == [
        ("https://github.com/o/r", "code", "huggingface")
    ]
    found = parse_huggingface(json.dumps([{"paper": paper}, {"paper": {}}]).encode())
    assert [f.title for f in found] == [TITLE]
    no_links = {"id": "1", "title": "T", "githubRepo": None, "projectPage": "javascript:x"}
    assert parse_huggingface(json.dumps(no_links).encode())[0].links == ()


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (TITLE, "minedraft a framework for batch-parallel speculative decoding", True),
        (TITLE, "MineDraft: A Framework for Batch Parallel Speculative Decoding.", True),
        (TITLE, "MineDraft: A Framework for Batch Speculative Decoding", False),
        ("Attention Is All You Need", "Attention Is Not All You Need", False),
    ],
)
def test_titles_must_match_near_exactly(a: str, b: str, same: bool) -> None:
    assert same_title(a, b) is same


def test_throttle_spaces_requests() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    throttle = Throttle(3.0, clock=lambda: now[0], sleep=sleep)
    throttle.wait()
    now[0] += 1.0
    throttle.wait()
    now[0] += 5.0
    throttle.wait()
    assert slept == [2.0]


def _enricher(server: Server, **kwargs: object) -> Enricher:
    policy = AddressPolicy.from_settings(["127.0.0.3"])
    client = guarded_client(policy, timeout=5)
    return Enricher(
        client,
        policy,
        arxiv_api=f"{server.base}/api/query",
        huggingface_api=f"{server.base}/api",
        arxiv_throttle=Throttle(0),
        read_arxiv=parse_arxiv,
        **kwargs,  # type: ignore[arg-type]
    )


def test_lookups_against_a_local_server(server: Server) -> None:
    e = _enricher(server)
    found = e.arxiv(TITLE.upper())
    assert found is not None
    assert found.arxiv_id == "2601.01234"
    assert e.arxiv("A Paper Nobody Wrote") is None
    hf = e.huggingface(TITLE, "2601.01234")
    assert hf is not None
    assert [(x.url, x.kind) for x in hf.links] == [
        ("https://github.com/example/MineDraft", "code"),
        (f"{server.base}/project/minedraft", "project"),
    ]
    assert e.huggingface(TITLE, "2601.00000") is None  # 404: not on Hugging Face
    assert e.huggingface(TITLE, None) is not None  # found by a title search instead
    assert any(r.startswith("GET /api/papers/search?q=MineDraft") for r in server.requests)


def test_lookups_are_guarded_and_capped(server: Server) -> None:
    blocked = _enricher(server)
    blocked.policy = AddressPolicy()  # 127.0.0.3 no longer allowed
    with pytest.raises(LookupFailed, match="not public"):
        blocked.arxiv(TITLE)
    assert server.requests == []
    huge = _enricher(server)
    huge.huggingface_api = f"{server.base}/huge#"
    with pytest.raises(LookupFailed, match="larger than"):
        huge.huggingface(TITLE, "x")


def test_a_run_finds_code_and_project_links_for_papers_without_one(
    server: Server, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "d.txt").write_text(
        f"ICML\n\n{TITLE}\n\nMineDraft: 批量并行推测解码框架\n\nZhenwei Tang\n\n"
        "AI总结 推测解码。\n\nComments Accepted at ICML 2026\n\n"
        "Another Paper Without Links\n\n另一篇\n\nAnn Lee\n\nAI总结 无。\n",
        encoding="utf-8",
    )
    (tmp_path / "subs.yaml").write_text(
        "topics:\n  - id: spec\n    title: Spec\n    any: [speculative decoding]\n",
        encoding="utf-8",
    )
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "links:\n"
        "  allow_hosts: [127.0.0.3]\n"
        f"  arxiv_api: {server.base}/api/query\n"
        f"  huggingface_api: {server.base}/api\n"
        f"  github_api: {server.base}\n"
        "  arxiv_delay: 0s\n"
        "  timeout: 5s\n",
        encoding="utf-8",
    )
    config = load(tmp_path / "subs.yaml", settings)
    config = replace(
        config,
        settings=replace(
            config.settings,
            inbox=(inbox,),
            public_dir=tmp_path / "public",
            state=tmp_path / "state.sqlite3",
        ),
    )
    summary = run(config, now=lambda: T0)
    assert summary.lookups == 2
    assert summary.links_looked_up == 4  # abs, pdf, code, project for MineDraft
    # GitHub (its API here) and the project page answer; arxiv.org cannot be resolved offline.
    assert summary.link_statuses == {"ok": 2, "error": 2}
    feed = json.loads((tmp_path / "public/feeds/spec.json").read_bytes())
    links = feed["items"][0]["_paperfeeds"]["links"]
    by_url = {x["url"]: x for x in links}
    assert by_url["https://github.com/example/MineDraft"]["source"] == "huggingface"
    assert by_url["https://github.com/example/MineDraft"]["note"] == "archived"
    assert by_url["https://arxiv.org/abs/2601.01234"]["source"] == "arxiv"
    assert feed["items"][0]["url"] == "https://arxiv.org/abs/2601.01234"  # the best link
    # The lookup also kept arXiv's abstract, categories and id; the digest's fields stay.
    db = sqlite3.connect(tmp_path / "state.sqlite3")
    abstract, categories, arxiv_id, venue, summary_zh = db.execute(
        "SELECT abstract, categories, arxiv_id, venue, summary FROM papers WHERE title = ?",
        (TITLE,),
    ).fetchone()
    db.close()
    assert abstract.startswith("Speculative decoding drafts tokens; MineDraft overlaps")
    assert json.loads(categories) == ["cs.CL", "cs.LG"]
    assert arxiv_id == "2601.01234"
    assert venue == "ICML"
    assert summary_zh == "推测解码。"
    html = (tmp_path / "public/papers").glob("*.html")
    assert any("via huggingface" in p.read_text("utf-8") for p in html)

    # Cached: the next run asks nobody about MineDraft again (it has a code link now).
    server.requests.clear()
    again = run(config, now=lambda: T0 + timedelta(hours=1))
    assert again.lookups == 0
    assert not any("MineDraft" in r for r in server.requests)
