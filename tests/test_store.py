"""The state database's bookkeeping against a real SQLite file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from feeds.model import Hit, Paper
from feeds.store import Store
from feeds.text import paper_id

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _paper(title: str) -> Paper:
    return Paper(paper_id=paper_id(title), title=title, authors=("A B",))


def test_the_paper_count_survives_rolled_back_ingests(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3", NOW)
    assert store.paper_count() == 0
    with store.transaction():
        for n in range(3):
            store.put_paper(_paper(f"Paper {n}"), "d1", n + 1, NOW)

    def crash_halfway() -> None:  # a digest that fails after inserting a paper
        with store.transaction():
            store.put_paper(_paper("Lost paper"), "d2", 1, NOW)
            raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        crash_halfway()
    with store.transaction():
        store.put_paper(_paper("Paper 1"), "d3", 1, NOW)  # seen before: not a new paper
        store.put_paper(_paper("Paper 9"), "d3", 2, NOW)
    counted = store.db.execute("SELECT count(*) FROM papers").fetchone()[0]
    assert store.paper_count() == counted == 4
    store.close()
    assert Store(tmp_path / "state.sqlite3", NOW).paper_count() == 4


def test_known_files_are_read_once_and_compared_by_size_and_time(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3", NOW)
    with store.transaction():
        store.put_file("inbox/a.txt", 10, 111, "h1")
    assert store.known_file("inbox/a.txt", 10, 111)
    assert not store.known_file("inbox/a.txt", 10, 112)  # touched
    assert not store.known_file("inbox/a.txt", 11, 111)  # grew
    assert not store.known_file("inbox/b.txt", 10, 111)  # never seen


def test_topic_sizes_count_only_memberships_really_inserted(tmp_path: Path) -> None:
    store = Store(tmp_path / "state.sqlite3", NOW)
    a, b = _paper("Paper A"), _paper("Paper B")
    hits = (Hit("paper", "title"),)
    with store.transaction():
        store.put_paper(a, "d1", 1, NOW)
        store.put_paper(b, "d1", 2, NOW)
        store.add_members([("t1", a.paper_id, hits), ("t2", a.paper_id, hits)], NOW)
        # One already there, one whose paper is unknown: neither is inserted or counted.
        store.add_members(
            [("t1", a.paper_id, hits), ("t1", b.paper_id, hits), ("t2", "no-such-paper", hits)],
            NOW,
        )

    def counted(topic: str) -> int:
        sql = "SELECT count(*) FROM members WHERE topic_id = ?"
        return int(store.db.execute(sql, (topic,)).fetchone()[0])

    assert store.member_counts() == {"t1": 2, "t2": 1} == {t: counted(t) for t in ("t1", "t2")}
    store.close()
