"""Work proportional to what is new: a run rewrites only the files whose content changed,
and renders only what the state marked as changed."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feeds.config import Config
from feeds.pipeline import run
from tests.conftest import project_config

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)

NEW_DIGEST = """ICML

Tree Speculative Decoding with Learned Drafts

基于学习草稿的树形推测解码

Ann Lee, Bob Ray

AI总结 提出一种树形推测解码方法。

Comments Accepted at ICML 2026

Another Speculative Decoding Paper for Long Contexts

面向长上下文的推测解码

Chen Wei

AI总结 长上下文推测解码。
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds")
    shutil.copy(ROOT / "config" / "subscriptions.yaml", tmp_path / "subscriptions.yaml")
    return tmp_path


def _config(project: Path) -> Config:
    return project_config(project, project / "subscriptions.yaml")


def _stamps(public: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(public)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(public.rglob("*"))
        if p.is_file()
    }


def _rewritten(
    before: dict[str, tuple[int, bytes]], after: dict[str, tuple[int, bytes]]
) -> set[str]:
    return {name for name, stamp in after.items() if before.get(name) != stamp}


def test_a_new_digest_rewrites_only_the_feeds_of_topics_that_gained_items(project: Path) -> None:
    run(_config(project), now=lambda: T0)
    before = _stamps(project / "public")
    (project / "seeds" / "003_new.txt").write_text(NEW_DIGEST, encoding="utf-8")
    summary = run(_config(project), now=lambda: T0 + timedelta(days=1))
    after = _stamps(project / "public")

    assert summary.papers_new == 2
    gained = {t for t, n in summary.new_matches.items() if n}
    assert gained == {"speculative-decoding", "icml-2026"}
    new_pages = set(after) - set(before)
    assert len(new_pages) == 2
    assert all(name.startswith("papers/") for name in new_pages)
    feeds = {f"feeds/{t}.{x}" for t in [*gained, "all"] for x in ("rss.xml", "atom.xml", "json")}
    pages = {f"topics/{t}.{x}" for t in [*gained, "all"] for x in ("html", "bib", "ris")}
    assert _rewritten(before, after) == feeds | pages | new_pages | {"index.html"}
    assert summary.files.written == len(feeds | pages | new_pages | {"index.html"})


def test_a_run_with_nothing_new_renders_and_writes_nothing(project: Path) -> None:
    run(_config(project), now=lambda: T0)
    before = _stamps(project / "public")
    from feeds.publish import render

    calls = []
    original = render.render_feed
    render.render_feed = lambda *a, **k: calls.append(a) or original(*a, **k)  # type: ignore[assignment]
    try:
        summary = run(_config(project), now=lambda: T0 + timedelta(days=1))
    finally:
        render.render_feed = original
    assert calls == []  # nothing was even rendered
    assert (summary.files.written, summary.files.removed) == (0, 0)
    assert _stamps(project / "public") == before


def test_a_new_topic_title_rewrites_that_topic_only(project: Path) -> None:
    run(_config(project), now=lambda: T0)
    before = _stamps(project / "public")
    subs = project / "subscriptions.yaml"
    subs.write_text(
        subs.read_text("utf-8").replace("title: Hallucination", "title: Hallucinations in LLMs"),
        encoding="utf-8",
    )
    run(_config(project), now=lambda: T0 + timedelta(days=1))
    after = _stamps(project / "public")
    changed = _rewritten(before, after)
    hallucination = {f"feeds/hallucination.{x}" for x in ("rss.xml", "atom.xml", "json")}
    assert hallucination | {"topics/hallucination.html", "index.html", "feeds.opml"} <= changed
    # The two papers of that topic name it on their pages; nothing else changes.
    assert len([n for n in changed if n.startswith("papers/")]) == 2
    assert {n for n in changed if not n.startswith("papers/")} == hallucination | {
        "topics/hallucination.html",
        "index.html",
        "feeds.opml",
    }


def _paged_config(project: Path) -> Config:
    (project / "settings.yaml").write_text("site:\n  page_size: 2\n", encoding="utf-8")
    return project_config(project, project / "subscriptions.yaml", project / "settings.yaml")


def _listed(page: Path) -> list[str]:
    import re

    return re.findall(r'href="(?:\.\./)+papers/([0-9a-f]+)\.html"', page.read_text("utf-8"))


def test_reading_lists_are_paged_and_old_pages_stay_put(project: Path) -> None:
    public = project / "public"
    run(_paged_config(project), now=lambda: T0)
    topics = public / "topics"
    # 3 speculative-decoding papers: the newest on the front page, the oldest two on part 1.
    assert len(_listed(topics / "speculative-decoding.html")) == 1
    assert len(_listed(topics / "speculative-decoding" / "1.html")) == 2
    assert not (topics / "speculative-decoding" / "2.html").exists()
    # Every paper of a topic is listed exactly once across its pages.
    icml = [*_listed(topics / "icml-2026.html")]
    for page in sorted((topics / "icml-2026").glob("*.html")):
        icml += _listed(page)
    assert len(icml) == len(set(icml)) == 60
    part1 = _listed(topics / "speculative-decoding" / "1.html")
    assert '<a href="../speculative-decoding.html">Newer</a>' in (
        topics / "speculative-decoding" / "1.html"
    ).read_text("utf-8")

    (project / "seeds" / "003_new.txt").write_text(NEW_DIGEST, encoding="utf-8")
    run(_paged_config(project), now=lambda: T0 + timedelta(days=1))
    spec = [*_listed(topics / "speculative-decoding.html")]
    for page in sorted((topics / "speculative-decoding").glob("*.html")):
        spec += _listed(page)
    assert len(spec) == len(set(spec)) == 5
    assert len(_listed(topics / "speculative-decoding" / "2.html")) == 2  # a new part
    # The oldest part lists the same papers; only its "newer" neighbour is now part 2.
    assert _listed(topics / "speculative-decoding" / "1.html") == part1
    assert '<a href="2.html">Newer</a>' in (topics / "speculative-decoding" / "1.html").read_text(
        "utf-8"
    )

    # A link found later for a paper on part 1 rewrites part 1 only.
    part2 = (topics / "speculative-decoding" / "2.html").stat().st_mtime_ns
    (project / "seeds" / "004_update.txt").write_text(
        "ICML\n\nLK Losses: Direct Acceptance Rate Optimization for Speculative Decoding\n\n"
        "Alexander Samarin\n\nComments Code: https://github.com/example/lk-losses\n",
        encoding="utf-8",
    )
    run(_paged_config(project), now=lambda: T0 + timedelta(days=2))
    assert "github.com/example/lk-losses" in (topics / "speculative-decoding" / "1.html").read_text(
        "utf-8"
    )
    assert (topics / "speculative-decoding" / "2.html").stat().st_mtime_ns == part2


def test_the_front_page_links_every_archive_part_newest_first(project: Path) -> None:
    import re

    public = project / "public"
    run(_paged_config(project), now=lambda: T0)
    page = (public / "topics" / "icml-2026.html").read_text("utf-8")
    nav = re.search(
        r'<nav class="parts" aria-label="Older papers"><h2>Older papers</h2>(.*)</nav>', page
    )
    assert nav is not None
    parts = sorted(int(p.stem) for p in (public / "topics" / "icml-2026").glob("*.html"))
    assert parts == list(range(1, 30))  # 60 papers, two a page: 29 parts + the front page
    newest_first = "".join(f'<a href="icml-2026/{k}.html">part {k}</a>' for k in parts[::-1])
    assert nav[1] == newest_first


def test_a_topic_looks_up_the_places_of_its_own_changed_papers_only(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding the archive parts a changed paper is on costs a lookup or two per paper: a
    topic must not ask about the new digest's papers that are not in it (a new digest's
    ten papers in a hundred topics would be a thousand lookups)."""
    from feeds.state import Store

    run(_paged_config(project), now=lambda: T0)
    asked: list[tuple[str, set[str]]] = []
    ranks = Store.ranks

    def spy(self: Store, topic_id: str, paper_ids: set[str]) -> set[int]:
        asked.append((topic_id, set(paper_ids)))
        return ranks(self, topic_id, paper_ids)

    monkeypatch.setattr(Store, "ranks", spy)
    # Two new papers of speculative decoding, one of hallucination only (but for ICML).
    other = "\nFewer Hallucinations by Abstaining\n\n学会弃权以减少幻觉\n\nDana Wu\n"
    (project / "seeds" / "003_new.txt").write_text(NEW_DIGEST + other, encoding="utf-8")
    (project / "seeds" / "004_update.txt").write_text(
        "ICML\n\nLK Losses: Direct Acceptance Rate Optimization for Speculative Decoding\n\n"
        "Alexander Samarin\n\nComments Code: https://github.com/example/lk-losses\n",
        encoding="utf-8",
    )
    run(_paged_config(project), now=lambda: T0 + timedelta(days=1))
    with closing(sqlite3.connect(project / "state.sqlite3")) as db:
        members = set(db.execute("SELECT topic_id, paper_id FROM members"))
    assert asked  # topics with archive parts were told of changed papers
    for topic_id, ids in asked:
        assert {(topic_id, pid) for pid in ids} <= members, topic_id
    # The updated paper is an old one of speculative-decoding: its part was looked up.
    assert any(topic == "speculative-decoding" and ids for topic, ids in asked)
    assert "hallucination" in {topic for topic, _ids in asked}  # it has parts, and changed


def test_a_run_with_nothing_new_loads_only_what_it_needs(project: Path) -> None:
    """Start-up is most of a no-op run: it must not import the renderers, the feed writer,
    the YAML reader, the parser or the matcher (their imports cost more than the run), nor
    make the paper classes or load OpenSSL (hashlib) and the archive modules (shutil)."""
    import subprocess
    import sys

    probe = (  # what the run loads: not what the interpreter had before (a sitecustomize)
        "import sys\n"
        "before = set(sys.modules)\n"
        "from feeds.cli import cli\n"
        "try:\n"
        "    cli(['run', '--offline', '-q', '--subscriptions', 'subscriptions.yaml'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('feedgen', 'jinja2', 'yaml', 'ahocorasick', 'httpx', 'lxml')\n"
        "ours = ('feeds.match.fast', 'feeds.sources.digest', 'feeds.config.read',\n"
        "        'feeds.publish.render', 'feeds.publish.parts', 'feeds.parallel', 'feeds.model',\n"
        "        'hashlib',\n"
        "        'shutil')\n"
        "loaded = set(sys.modules) - before\n"
        "print(sorted(m for m in loaded if m.split('.')[0] in heavy or m in ours))\n"
    )

    def loaded() -> str:
        return subprocess.run(
            [sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, check=True
        ).stdout.strip()

    first = loaded()  # the first run does everything: the probe sees those imports
    for module in (
        "feedgen",
        "feeds.match.fast",
        "yaml",
        "feeds.model",
        "hashlib",
        "feeds.publish.parts",
    ):
        assert f"'{module}'" in first
    assert loaded() == "[]"


def test_archive_parts_in_one_pass_equal_parts_read_one_by_one(project: Path) -> None:
    from feeds.state import Store

    run(_paged_config(project), now=lambda: T0)
    store = Store(project / "state.sqlite3", T0)
    for topic_id, n in store.member_counts().items():
        parts = (n - 1) // 2
        one_pass = list(store.topic_parts(topic_id, 2, parts))
        assert len(one_pass) == parts
        for k, rows in one_pass:
            assert rows == store.topic_rows(topic_id, 2, offset=(k - 1) * 2), (topic_id, k)
            # Skipping from the newest end (what a run does for the newest parts).
            assert rows == store.topic_rows(topic_id, 2, (k - 1) * 2, n), (topic_id, k)
    store.close()
