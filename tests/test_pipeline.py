"""A whole cycle over real files and a real SQLite state: idempotence, rejections, merging."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feeds.config import Config
from feeds.errors import StateError
from feeds.pipeline import run
from feeds.state.lock import exclusive
from tests.conftest import project_config

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with the seeds and the example subscriptions."""
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds")
    (tmp_path / "config").mkdir()
    shutil.copy(ROOT / "config" / "subscriptions.yaml", tmp_path / "config")
    return tmp_path


def _config(project: Path, *, inbox: str = "seeds") -> Config:
    subscriptions = project / "config" / "subscriptions.yaml"
    return project_config(project, subscriptions, inbox=inbox, state=".paperfeeds/state.sqlite3")


def _snapshot(public: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(public)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(public.rglob("*"))
        if p.is_file()
    }


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "feeds", *args, "--offline"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


def test_first_run_publishes_everything(project: Path) -> None:
    summary = run(_config(project), now=lambda: T0)
    assert (summary.digests, summary.papers_new, summary.papers_total) == (2, 60, 60)
    assert summary.exit_code == 0
    public = project / "public"
    assert len(list((public / "papers").glob("*.html"))) == 60
    assert summary.new_matches["icml-2026"] == 60
    assert summary.links_found == 6


def _publishing(messages: list[str]) -> list[str]:
    return [m for m in messages if m.startswith("publishing: ")]


def _topics_progress(count: int) -> list[str]:
    # Each topic's feeds and reading list, the paper pages, each topic's BibTeX and RIS.
    feeds = "publishing: feeds and reading lists, topic {} of {}"
    lists = "publishing: BibTeX and RIS files, topic {} of {}"
    return [
        *(feeds.format(n, count) for n in range(1, count + 1)),
        "publishing: paper pages, 1 of 30",
        *(lists.format(n, count) for n in range(1, count + 1)),
    ]


def test_progress_counts_the_topics_and_paper_pages_it_publishes(project: Path) -> None:
    config = _config(project)
    later = sorted((project / "seeds").glob("*.txt"))[1]
    held = later.rename(project / later.name)
    seen: list[str] = []
    run(config, now=lambda: T0, progress=seen.append)
    feeds = len(config.topics) + 1  # and `all`
    assert _publishing(seen) == _topics_progress(feeds)

    # A new digest: only the topics that gained papers, and only its papers' pages.
    held.rename(later)
    seen.clear()
    summary = run(config, now=lambda: T0 + timedelta(hours=1), progress=seen.append)
    gained = 1 + sum(1 for n in summary.new_matches.values() if n)  # and `all`
    assert 1 < gained < feeds
    assert _publishing(seen) == _topics_progress(gained)


def test_second_run_and_renaming_change_nothing(project: Path) -> None:
    run(_config(project), now=lambda: T0)
    before = _snapshot(project / "public")
    later = T0 + timedelta(days=1)
    summary = run(_config(project), now=lambda: later)
    assert (summary.digests, summary.known, summary.papers_new) == (0, 2, 0)
    assert summary.files.written == 0
    assert _snapshot(project / "public") == before
    # The same content under another name is the same digest.
    seeds = sorted((project / "seeds").iterdir())
    seeds[0].rename(seeds[0].with_name("renamed-digest.txt"))
    shutil.copy(seeds[1], project / "seeds" / "copy-of-second.txt")
    summary = run(_config(project), now=lambda: later + timedelta(days=1))
    # Contents are counted, not files: the copy holds what the second digest holds.
    assert (summary.digests, summary.known, summary.papers_new) == (0, 2, 0)
    assert _snapshot(project / "public") == before


def test_public_is_rebuilt_byte_identical_from_the_state(project: Path) -> None:
    run(_config(project), now=lambda: T0)
    before = {k: v[0] for k, v in _snapshot(project / "public").items()}
    shutil.rmtree(project / "public")
    run(_config(project), now=lambda: T0 + timedelta(hours=5))
    assert {k: v[0] for k, v in _snapshot(project / "public").items()} == before


def test_a_later_digest_adds_a_link_without_a_second_paper(project: Path) -> None:
    run(_config(project), now=lambda: T0)
    (project / "seeds" / "003_update.txt").write_text(
        "ICML\n\nMineDraft: a framework for batch-parallel speculative decoding\n\n"
        "MineDraft: 批量并行推测解码框架\n\nZhenwei Tang\n\n"
        "Comments Code: github.com/example/minedraft.git。\n",
        encoding="utf-8",
    )
    summary = run(_config(project), now=lambda: T0 + timedelta(days=1))
    assert (summary.papers_new, summary.papers_updated, summary.papers_total) == (0, 1, 60)
    assert summary.new_matches["speculative-decoding"] == 0  # already there: same item
    feed = json.loads((project / "public/feeds/speculative-decoding.json").read_text("utf-8"))
    item = next(i for i in feed["items"] if i["title"].startswith("MineDraft"))
    assert item["date_published"] == "2026-07-01T08:00:00Z"  # entry date never changes
    urls = [link["url"] for link in item["_paperfeeds"]["links"]]
    assert urls == ["https://github.com/example/minedraft"]
    assert item["url"] == "https://github.com/example/minedraft"  # the best link now
    # Nothing known was lost: the original comment is still there, with the new one.
    assert item["_paperfeeds"]["comments"].startswith("Accepted at ICML 2026")
    assert item["_paperfeeds"]["authors"][-1] == "Bryan Kian Hsiang Low"


BAD_DIGESTS = {
    "error-page.txt": (
        b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>",
        "HTML",
    ),
    "binary.txt": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary"),
    "latin1.txt": ("ICML\n\nCaf\xe9 Models\n\nA B\n".encode("latin-1"), "not UTF-8"),
}


def test_bad_digests_are_reported_and_the_good_ones_published(project: Path) -> None:
    for name, (content, _) in BAD_DIGESTS.items():
        (project / "seeds" / name).write_bytes(content)
    (project / "seeds" / "truncated.txt").write_text(
        "ICML\n\nA Complete Paper About Graphs\n\n图论文\n\nAnn Lee, Bob Ray\n\n"
        "AI总结 图。\n\nA Paper Cut Off Here\n\n被截断的论文\n",
        encoding="utf-8",
    )
    r = _cli(project, "run")
    assert r.returncode == 3, r.stderr
    for name, (_, reason) in BAD_DIGESTS.items():
        assert f"rejected: seeds/{name}: " in r.stderr
        line = next(x for x in r.stderr.splitlines() if f"seeds/{name}" in x)
        assert reason in line
    assert "seeds/truncated.txt:11: " in r.stderr  # the cut-off record, by file and line
    assert "61 in total" in r.stdout  # 60 seed papers + the complete one
    assert len(list((project / "public" / "papers").glob("*.html"))) == 61

    status = _cli(project, "status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert {r["name"] for r in report["rejected_digests"]} == {f"seeds/{n}" for n in BAD_DIGESTS}
    expected = "seeds/truncated.txt:11: paper 'A Paper Cut Off Here' has neither authors nor"
    expected += " summary (truncated?); record skipped"
    assert report["skipped_records"] == [expected]
    text = _cli(project, "status").stdout
    assert "rejected seeds/error-page.txt" in text


def test_json_summary(project: Path) -> None:
    r = _cli(project, "run", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["papers_new"] == 60
    assert summary["exit_code"] == 0
    assert summary["rejected"] == []


def test_config_error_writes_nothing(project: Path) -> None:
    assert _cli(project, "run", "--quiet").returncode == 0
    before = _snapshot(project / "public")
    (project / "config" / "subscriptions.yaml").write_text(
        "topics:\n  - id: x\n    title: X\n    any: [a]\n    nnone: [b]\n", encoding="utf-8"
    )
    (project / "seeds" / "new.txt").write_text(
        "ICML\n\nBrand New Paper\n\nAnn Lee\n", encoding="utf-8"
    )
    r = _cli(project, "run")
    assert r.returncode == 2
    assert "config/subscriptions.yaml:5: unknown key 'nnone' in a topic" in r.stderr
    assert "did you mean 'none'?" in r.stderr
    assert _snapshot(project / "public") == before


def test_missing_inbox_folder_is_a_usage_error(project: Path) -> None:
    r = _cli(project, "run", "--inbox", "seeds", "--inbox", "no-such-folder")
    assert r.returncode == 2
    assert "inbox folder no-such-folder does not exist" in r.stderr
    # In the library (feeds watch), the other folders are read and the missing one said.
    config = _config(project)
    config = replace(config, settings=replace(config.settings,
                     inbox=(project / "seeds", project / "no-such-folder")))  # fmt: skip
    summary = run(config, now=lambda: T0)
    assert summary.papers_new == 60
    assert summary.missing == (str(project / "no-such-folder"),)
    assert summary.exit_code == 0


def test_one_publisher_at_a_time(project: Path) -> None:
    state = project / ".paperfeeds" / "state.sqlite3"
    busy = pytest.raises(StateError, match=r"another paperfeeds process \(pid")
    with exclusive(state), busy, exclusive(state, wait=0.3):
        pass
    with exclusive(state, wait=0.3):  # released when its holder is done
        pass


def test_state_from_a_newer_version_is_refused(project: Path) -> None:
    run(_config(project), now=lambda: T0)
    db = sqlite3.connect(project / ".paperfeeds" / "state.sqlite3")
    db.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    r = _cli(project, "run")
    assert r.returncode == 1
    assert "newer paperfeeds" in r.stderr


def test_papers_ingested_by_a_run_that_died_are_matched_by_the_next(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from feeds import pipeline

    def die(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # the process is stopped between ingest and matching

    with monkeypatch.context() as m:
        m.setattr(pipeline, "update_members", die)
        with pytest.raises(KeyboardInterrupt):
            run(_config(project), now=lambda: T0)
    summary = run(_config(project), now=lambda: T0 + timedelta(hours=1))
    assert (summary.digests, summary.known) == (0, 2)  # already ingested...
    assert summary.new_matches["icml-2026"] == 60  # ...and matched now
    assert summary.new_matches["speculative-decoding"] == 3


def test_a_run_that_dies_while_ingesting_keeps_the_digests_read_whole(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Digests are committed many at a time, each whole: a run stopped in the middle of one
    keeps those before it, and nothing of that one, which the next run ingests."""
    from feeds.model import Link
    from feeds.state import Store

    (project / "seeds" / "000_ffe79e0d7d0ca876.txt").rename(project / "seeds" / "a.txt")
    (project / "seeds" / "002_891ef091818cbb33.txt").rename(project / "seeds" / "b.txt")
    original = Store.add_links
    papers_seen: list[str] = []

    def dies_in_the_second_digest(
        self: Store, paper_id: str, links: Sequence[Link], *, only: bool = False
    ) -> int:
        papers_seen.append(paper_id)
        if len(papers_seen) == 33:  # a.txt has 30 papers: the third of b.txt, after the
            raise KeyboardInterrupt  # papers of b.txt were stored, before its links were
        return original(self, paper_id, links, only=only)

    with monkeypatch.context() as patched:
        patched.setattr(Store, "add_links", dies_in_the_second_digest)
        with pytest.raises(KeyboardInterrupt):
            run(_config(project), now=lambda: T0)
    db = sqlite3.connect(project / ".paperfeeds" / "state.sqlite3")
    digests = db.execute("SELECT name, papers FROM digests").fetchall()
    papers = db.execute("SELECT count(*) FROM papers").fetchone()[0]
    sightings = db.execute("SELECT DISTINCT digest FROM sightings").fetchall()
    db.close()
    assert [name.rsplit("/", 1)[-1] for name, _n in digests] == ["a.txt"]
    assert papers == digests[0][1]
    assert len(sightings) == 1  # nothing of b.txt
    summary = run(_config(project), now=lambda: T0 + timedelta(hours=1))
    assert (summary.digests, summary.known, summary.papers_total) == (1, 1, 60)


def test_the_memberships_stored_are_those_the_matcher_gives(project: Path) -> None:
    """Hits are encoded where the papers are matched, and most encodings are reused: every
    stored membership must still carry its own paper's hits."""
    from feeds.match.fast import Matcher
    from feeds.state import Store, encode_hits

    config = _config(project)
    run(config, now=lambda: T0)
    matcher = Matcher([(t.id, t.criteria) for t in config.topics])
    store = Store(project / ".paperfeeds" / "state.sqlite3", T0)
    expected = {
        (topic_id, paper.paper_id, encode_hits(hits))
        for paper in store.papers()
        for topic_id, hits in matcher.match(paper)
    }
    stored = set(store.db.execute("SELECT topic_id, paper_id, matched FROM members"))
    store.close()
    assert len(expected) > 20
    assert stored == expected


def test_hits_made_afresh_for_each_paper_are_encoded_for_each(tmp_path: Path) -> None:
    # Encodings are found by the identity of the hits' tuple: a tuple made for one paper
    # and let go must not lend its encoding to the next one's.
    from feeds.match.step import Matching
    from feeds.model import Hit, Paper
    from feeds.state import Store, encode_hits
    from feeds.text import paper_id

    class Fresh:
        def match(self, paper: Paper) -> list[tuple[str, tuple[Hit, ...]]]:
            return [("t", (Hit(paper.title, "title"),))]

    titles = [f"Paper {n}" for n in range(200)]
    store = Store(tmp_path / "state.sqlite3", T0)
    with store.transaction():
        store.put_papers([(n, Paper(paper_id(t), t)) for n, t in enumerate(titles)], "d", T0)
    job = Matching((), unmatched_only=False)
    job._matcher = Fresh()  # type: ignore[assignment]
    out = job.run(store, (1, 201, 200))
    store.close()
    assert [row for _pid, _seq, row in out] == [
        [("t", encode_hits((Hit(t, "title"),)))] for t in titles
    ]
