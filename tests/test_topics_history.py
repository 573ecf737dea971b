"""Config changes take effect on the history: new topics backfill, removed ones go."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feeds.config import Config
from feeds.pipeline import run
from tests.conftest import project_config

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)

BEFORE = """
topics:
  - id: speculative-decoding
    title: Speculative decoding
    any: [speculative decoding]
  - id: hallucination
    title: Hallucination
    any: [hallucination*]
  - id: graphs
    title: Graphs
    any: [graph*]
"""
AFTER = """
topics:
  - id: speculative-decoding
    title: Speculative decoding
    any: [speculative decoding]
  - id: hallucination
    title: Hallucination
    any: [hallucination*]
  - id: position-papers
    title: Position papers
    any: ["/^position:/"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "seeds", tmp_path / "seeds")
    return tmp_path


def _config(project: Path, subscriptions: str) -> Config:
    path = project / "subscriptions.yaml"
    path.write_text(subscriptions, encoding="utf-8")
    return project_config(project, path)


def _files(public: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(public)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(public.rglob("*"))
        if p.is_file()
    }


def test_editing_subscriptions_between_runs(project: Path) -> None:
    public = project / "public"
    run(_config(project, BEFORE), now=lambda: T0)
    before = _files(public)
    assert "feeds/graphs.rss.xml" in before

    later = T0 + timedelta(days=3)
    summary = run(_config(project, AFTER), now=lambda: later)
    after = _files(public)

    # The new topic is backfilled from the history, dated when it entered the feed.
    assert summary.new_matches["position-papers"] == 4
    feed = json.loads(after["feeds/position-papers.json"][0])
    assert [i["date_published"] for i in feed["items"]] == ["2026-07-04T08:00:00Z"] * 4
    assert all(i["title"].startswith("Position:") for i in feed["items"])
    # The removed topic is gone: feeds, page, OPML entry and index link.
    assert not any(name.startswith(("feeds/graphs.", "topics/graphs.")) for name in after)
    assert b"graphs" not in after["feeds.opml"][0]
    assert b"position-papers.rss.xml" in after["feeds.opml"][0]
    assert b"topics/graphs.html" not in after["index.html"][0]
    # The topics that stay are untouched, to the byte and the modification time.
    for topic in ("speculative-decoding", "hallucination"):
        for suffix in ("rss.xml", "atom.xml", "json"):
            name = f"feeds/{topic}.{suffix}"
            assert after[name] == before[name]


def test_an_edited_topic_keeps_the_dates_of_items_that_stay(project: Path) -> None:
    narrow = BEFORE.replace("any: [hallucination*]", "any: [hallucination]")
    run(_config(project, narrow), now=lambda: T0)
    first = json.loads((project / "public/feeds/hallucination.json").read_bytes())
    assert [i["title"][:13] for i in first["items"]] == ["Hallucination"]

    summary = run(_config(project, BEFORE), now=lambda: T0 + timedelta(days=1))
    assert summary.new_matches["hallucination"] == 1
    items = json.loads((project / "public/feeds/hallucination.json").read_bytes())["items"]
    dates = {i["title"][:13]: i["date_published"] for i in items}
    assert dates == {
        "Mitigating Ha": "2026-07-02T08:00:00Z",
        "Hallucination": "2026-07-01T08:00:00Z",
    }
    assert items[0]["id"] != items[1]["id"]
    assert first["items"][0]["id"] in {i["id"] for i in items}  # same id as before

    # Narrowing it again drops the item that no longer matches.
    run(_config(project, narrow), now=lambda: T0 + timedelta(days=2))
    items = json.loads((project / "public/feeds/hallucination.json").read_bytes())["items"]
    assert [i["date_published"] for i in items] == ["2026-07-01T08:00:00Z"]


def test_feeds_check_reports_matches_and_warnings(project: Path) -> None:
    subs = BEFORE + (
        "  - id: nothing\n    title: Nothing\n    any: [quantum chromodynamics]\n"
        "  - id: everything\n    title: Everything\n    any: [icml]\n    fields: [comments]\n"
    )
    (project / "subscriptions.yaml").write_text(subs, encoding="utf-8")
    args = [sys.executable, "-m", "feeds", "check", "--subscriptions", "subscriptions.yaml"]
    args += ["--state", "state.sqlite3", "--inbox", "seeds"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def check(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*args, *extra], cwd=project, capture_output=True, text=True, env=env, timeout=60
        )

    empty = check()
    assert empty.returncode == 0, empty.stderr
    assert "no stored papers yet" in empty.stdout

    run(_config(project, subs), now=lambda: T0)
    r = check("--json")
    assert r.returncode == 0, r.stderr
    report = {t["id"]: t for t in json.loads(r.stdout)["topics"]}
    assert report["speculative-decoding"]["matches"] == 2
    assert report["speculative-decoding"]["examples"][0].startswith(("MineDraft", "LK Losses"))
    assert report["nothing"]["warnings"] == [
        "matches none of the stored papers",
        "terms that match no stored paper: quantum chromodynamics",
    ]
    assert report["everything"]["matches"] > 50
    assert "too broad" in report["everything"]["warnings"][0]
    text = check().stdout
    assert "nothing: 0 papers" in text
    assert "warning: matches none of the stored papers" in text


def test_feeds_check_words_a_count_of_one_in_the_singular(project: Path) -> None:
    """A newcomer's first config often has one topic, matching one paper so far."""
    subs = "topics:\n  - id: lk\n    title: LK losses\n    any: [LK losses]\n"
    (project / "subscriptions.yaml").write_text(subs, encoding="utf-8")
    run(_config(project, subs), now=lambda: T0)
    args = [sys.executable, "-m", "feeds", "check", "--subscriptions", "subscriptions.yaml"]
    args += ["--state", "state.sqlite3", "--inbox", "seeds"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(args, cwd=project, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()  # (`-q` prints problems only: here, none)
    assert lines[0] == "subscriptions.yaml: ok, 1 topic"
    assert lines[lines.index("against 60 stored papers:") + 1] == "  lk: 1 paper"


def _sizes_are_exact(project: Path) -> None:
    import sqlite3

    from feeds.state import SCHEMA_VERSION, Store

    store = Store(project / "state.sqlite3", T0)
    counted = dict(
        store.db.execute("SELECT topic_id, count(*) FROM members GROUP BY topic_id").fetchall()
    )
    assert store.member_counts() == counted
    store.close()
    assert sqlite3.connect(project / "state.sqlite3").execute(
        "SELECT value FROM meta WHERE key = 'schema_version'"
    ).fetchone() == (str(SCHEMA_VERSION),)


def test_topic_sizes_follow_every_change(project: Path) -> None:
    run(_config(project, BEFORE), now=lambda: T0)
    _sizes_are_exact(project)
    # Edited (narrowed) and removed topics, a new one backfilled.
    narrowed = AFTER.replace("[hallucination*]", "[hallucination]")
    run(_config(project, narrowed), now=lambda: T0 + timedelta(days=1))
    _sizes_are_exact(project)
    run(_config(project, BEFORE), now=lambda: T0 + timedelta(days=2))
    _sizes_are_exact(project)


def test_a_state_from_before_topic_sizes_is_migrated(project: Path) -> None:
    import sqlite3

    run(_config(project, BEFORE), now=lambda: T0)
    db = sqlite3.connect(project / "state.sqlite3", isolation_level=None)
    db.execute("DROP TABLE topic_sizes")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.close()
    run(_config(project, BEFORE), now=lambda: T0 + timedelta(days=1))
    _sizes_are_exact(project)


def test_a_state_from_before_the_covering_order_index_is_migrated(project: Path) -> None:
    import sqlite3

    from feeds.state import MEMBER_INDEXES as _MEMBER_INDEXES

    run(_config(project, BEFORE), now=lambda: T0)
    db = sqlite3.connect(project / "state.sqlite3", isolation_level=None)
    db.execute("DROP INDEX members_order")
    db.execute("CREATE INDEX members_order ON members (topic_id, entered DESC, seq)")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.close()
    said: list[str] = []
    run(_config(project, AFTER), now=lambda: T0 + timedelta(days=1), progress=said.append)
    assert said[0] == "upgrading the state: rebuilding the index of topic memberships"
    run(_config(project, AFTER), now=lambda: T0 + timedelta(days=2), progress=said.append)
    assert said.count(said[0]) == 1  # once
    _sizes_are_exact(project)
    db = sqlite3.connect(project / "state.sqlite3")
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'members_order'").fetchone()
    assert sql == _MEMBER_INDEXES["members_order"]
    # A topic's newest papers are read from the index alone.
    plan = " ".join(
        row[-1]
        for row in db.execute(
            "EXPLAIN QUERY PLAN SELECT paper_id, entered FROM members WHERE topic_id = ?"
            " ORDER BY entered DESC, seq LIMIT 5",
            ("x",),
        )
    )
    db.close()
    assert "COVERING INDEX members_order" in plan
