"""arXiv as a source in whole cycles: a fake arXiv API on 127.0.0.1 (tests/arxivserver.py)
harvested by `run`, its papers stored, matched on their abstracts and categories, merged
with the same paper from a digest, and its health in `feeds status`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from feeds.config import Config
from feeds.pipeline import RunSummary, run
from feeds.text import paper_id
from tests.arxivserver import ArxivServer, FakePaper
from tests.conftest import Workspace

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
Cli = Callable[..., CompletedProcess[str]]
MINEDRAFT = "MineDraft: A Framework for Batch Parallel Speculative Decoding"


@pytest.fixture
def api() -> Iterator[ArxivServer]:
    server = ArxivServer()
    yield server
    server.close()


def _settings(ws: Workspace, api: ArxivServer, extra: str = "") -> Path:
    path = ws.root / "config" / "settings.yaml"
    path.write_text(
        "sources:\n  - arxiv: [cs.CL, cs.LG]\n"
        "links:\n  check: false\n  allow_hosts: [127.0.0.1]\n"
        f"  arxiv_api: {api.url}\n  arxiv_delay: 0s\n" + extra,
        encoding="utf-8",
    )
    return path


def _topics(ws: Workspace) -> None:
    with ws.subscriptions.open("a", encoding="utf-8") as f:
        f.write(
            "\n  - id: efficient-attention\n    title: Efficient attention\n"
            "    any: [quasilinear attention]\n"  # in an abstract: the summary field
            "\n  - id: machine-learning\n    title: cs.LG\n"
            "    any: [cs.LG]\n    fields: [categories]\n"
        )


def _run(config: Config, when: datetime) -> RunSummary:
    return run(config, now=lambda: when)


def _paper(ws: Workspace, title: str) -> dict[str, object]:
    db = sqlite3.connect(ws.state)
    db.row_factory = sqlite3.Row
    row = db.execute("SELECT * FROM papers WHERE paper_id = ?", (paper_id(title),)).fetchone()
    db.close()
    assert row is not None, title
    return dict(row)


def _links(ws: Workspace, title: str) -> dict[str, str]:
    db = sqlite3.connect(ws.state)
    rows = db.execute(
        "SELECT url, source FROM links WHERE paper_id = ?", (paper_id(title),)
    ).fetchall()
    db.close()
    return dict(rows)


def test_a_harvest_adds_papers_that_topics_match_on_abstracts_and_categories(
    workspace: Workspace, api: ArxivServer
) -> None:
    _topics(workspace)
    api.add(
        FakePaper("2612.00001", "Faster Transformers with Kernels", NOW - timedelta(days=1),
                  ("cs.LG", "cs.CL"), abstract="We propose a quasilinear attention kernel.",
                  authors=(("Ann Bell", ("KAIST",)), ("Bo Chen", ("Tsinghua University",))),
                  comment="Code: https://github.com/lab/faster"),
        FakePaper("2612.00002", "A Survey of Parsing", NOW - timedelta(days=2), ("cs.CL",)),
        FakePaper("2611.00003", "Too Old for the Backfill", NOW - timedelta(days=30), ("cs.CL",)),
    )  # fmt: skip
    config = workspace.config(settings=_settings(workspace, api))
    summary = _run(config, NOW)
    assert summary.harvested == {"cs.CL": 2, "cs.LG": 0}  # the cross-list came with cs.CL
    assert summary.papers_new == 60 + 2
    paper = _paper(workspace, "Faster Transformers with Kernels")
    assert paper["abstract"] == "We propose a quasilinear attention kernel."
    assert json.loads(str(paper["categories"])) == ["cs.LG", "cs.CL"]
    assert paper["arxiv_id"] == "2612.00001"
    assert paper["venue"] == "arXiv"
    assert json.loads(str(paper["institutions"]))[0]["name"] == "KAIST"
    links = _links(workspace, "Faster Transformers with Kernels")
    assert links["https://arxiv.org/abs/2612.00001"] == "arxiv"
    assert links["https://arxiv.org/pdf/2612.00001"] == "arxiv"
    assert "https://github.com/lab/faster" in links
    assert summary.new_matches["efficient-attention"] == 1  # the abstract is `summary`
    assert summary.new_matches["machine-learning"] == 1  # the categories field
    feed = json.loads((workspace.public / "feeds" / "machine-learning.json").read_text())
    assert [i["title"] for i in feed["items"]] == ["Faster Transformers with Kernels"]

    again = _run(config, NOW + timedelta(hours=1))  # nothing new on arXiv: nothing added
    assert again.papers_new == 0
    api.add(FakePaper("2612.00009", "A New Submission", NOW + timedelta(minutes=30)))
    later = _run(config, NOW + timedelta(hours=2))
    assert later.harvested["cs.CL"] == 1
    assert later.papers_new == 1


def test_a_digest_paper_and_its_arxiv_entry_are_one_paper(
    workspace: Workspace, api: ArxivServer
) -> None:
    api.add(
        FakePaper("2612.00077", MINEDRAFT, NOW - timedelta(days=1), ("cs.LG",),
                  abstract="Speculative decoding drafts tokens in parallel batches.",
                  authors=(("Zhenwei Tang", ()), ("Arun Verma", ()))),
    )  # fmt: skip
    config = workspace.config(settings=_settings(workspace, api))
    summary = _run(config, NOW)
    assert summary.papers_new == 60  # the arXiv entry is the digest's MineDraft
    paper = _paper(workspace, MINEDRAFT)
    assert paper["venue"] == "ICML"  # the digest's venue stays
    assert paper["title_zh"] == "MineDraft: 批量并行推测解码框架"  # and its Chinese fields
    assert paper["summary"]
    assert paper["abstract"] == "Speculative decoding drafts tokens in parallel batches."
    assert paper["arxiv_id"] == "2612.00077"
    assert _links(workspace, MINEDRAFT)["https://arxiv.org/abs/2612.00077"] == "arxiv"
    feed = json.loads((workspace.public / "feeds" / "all.json").read_text())
    ids = [i["_paperfeeds"]["paper_id"] for i in feed["items"]]
    assert ids.count(paper_id(MINEDRAFT)) == 1  # readers see it once


def test_a_rate_limited_api_is_a_stale_source_retried_later(
    workspace: Workspace, api: ArxivServer, feeds_cli: Cli
) -> None:
    api.add(FakePaper("2612.00001", "A Paper", NOW - timedelta(days=1)))
    api.fail(429, retry_after=3600, count=5)
    settings = _settings(workspace, api, "stale_after: 1h\n")
    config = workspace.config(settings=settings)
    first = _run(config, NOW)
    assert not any(first.harvested.values())
    assert len(api.requests) == 1  # one request, no loop, the next category not asked
    waiting = _run(config, NOW + timedelta(minutes=30))
    assert len(api.requests) == 1  # the wait it asked for is kept
    assert not waiting.harvested  # not asked: backing off
    late = _run(config, NOW + timedelta(hours=3))  # past the wait: asked again, still 429
    assert len(api.requests) == 2
    assert any(s.startswith("arXiv cs.CL: failing") for s in late.stale), late.stale
    status = feeds_cli(workspace.root, "status", "--state", str(workspace.state),
                       "--settings", str(settings))  # fmt: skip
    assert "source arxiv:cs.CL" in status.stdout, status.stdout


def test_offline_asks_arxiv_nothing(workspace: Workspace, api: ArxivServer) -> None:
    api.add(FakePaper("2612.00001", "A Paper", NOW - timedelta(days=1)))
    config = workspace.config(settings=_settings(workspace, api))
    run(config, now=lambda: NOW, offline=True)
    assert api.requests == []


def test_without_network_a_source_says_it_once_in_words_and_is_stale_only_later(
    workspace: Workspace,
) -> None:
    """No network: arXiv's name does not resolve (the tests resolve no internet name)."""
    settings = workspace.root / "config" / "settings.yaml"
    settings.write_text(
        "sources:\n  - arxiv: [cs.CL, cs.LG]\nstale_after: 6h\n"
        "links:\n  check: false\n  arxiv_api: http://export.arxiv.org/api/query\n"
        "  arxiv_delay: 0s\n",
        encoding="utf-8",
    )
    config = workspace.config(settings=settings)
    first = _run(config, NOW)
    assert first.harvested == {}  # no `arXiv: cs.CL +0`: nothing was harvested
    assert first.stale == ()  # a first try that fails is not stale
    [down] = first.warnings  # one line for both categories: one cause
    assert down == (
        "sources arXiv cs.CL, arXiv cs.LG down (export.arxiv.org: its name does not resolve"
        " (no network, or no such host)); tried again after 2026-12-07 13:00 UTC"
    )
    later = [_run(config, NOW + timedelta(hours=h)) for h in (2, 4)]  # tried again, in vain
    assert [(r.warnings, r.stale, r.harvested) for r in later] == [((), (), {})] * 2
    stale = _run(config, NOW + timedelta(hours=7))
    assert stale.warnings == ()
    assert stale.stale == tuple(
        f"arXiv {c}: failing for 7 hours (export.arxiv.org: its name does not resolve"
        " (no network, or no such host)); never fetched"
        for c in ("cs.CL", "cs.LG")
    )
    assert _run(config, NOW + timedelta(hours=8)).stale == ()  # said once


def test_an_api_failing_after_a_good_harvest_is_said_once_and_not_stale_at_once(
    workspace: Workspace, api: ArxivServer
) -> None:
    api.add(FakePaper("2612.00001", "A Paper", NOW - timedelta(days=1)))
    settings = _settings(workspace, api, "stale_after: 1h\n")
    config = workspace.config(settings=settings)
    assert _run(config, NOW).harvested == {"cs.CL": 1, "cs.LG": 0}
    api.fail(503, count=5)
    failing = _run(config, NOW + timedelta(hours=2))
    [down] = failing.warnings
    assert down.startswith("sources arXiv cs.CL, arXiv cs.LG down (127.0.0.1 answered HTTP 503")
    assert failing.stale == ()
    stale = _run(config, NOW + timedelta(hours=4))  # failing for stale_after: said once
    assert stale.stale[0] == (
        "arXiv cs.CL: failing for 2 hours (127.0.0.1 answered HTTP 503);"
        " last fetched 2026-12-07 12:00 UTC"
    )
    again = _run(config, NOW + timedelta(hours=5))
    assert (again.warnings, again.stale, again.harvested) == ((), (), {})


def test_a_count_of_five_thousand_digits_is_a_bad_answer_not_a_crash(
    workspace: Workspace, api: ArxivServer
) -> None:
    from tests.arxivserver import feed_xml
    from tests.linkserver import send

    hostile = feed_xml([], query="cat:cs.CL", start=0, max_results=10, total=7).replace(
        b">7</opensearch:totalResults>", b">" + b"9" * 5000 + b"</opensearch:totalResults>"
    )
    api.http.route("/api/query", lambda req: send(req, 200, {}, hostile))
    config = workspace.config(settings=_settings(workspace, api))
    first = _run(config, NOW)
    assert first.papers_total == 60  # the inbox is published all the same
    assert not any(first.harvested.values())
    (down,) = first.warnings
    assert "opensearch:totalResults is no count of arXiv's (5,000 digits)" in down
    asked = len(api.requests)
    _run(config, NOW + timedelta(minutes=1))
    assert len(api.requests) == asked  # the source backs off: not asked again at once

    from feeds.links.enrich import LookupFailed
    from feeds.sources.arxiv.lookup import parse_arxiv

    with pytest.raises(LookupFailed, match="5,000 digits"):  # the title lookup too
        parse_arxiv(hostile)
