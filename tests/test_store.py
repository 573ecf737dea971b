"""The state database's bookkeeping, on each engine: a real SQLite file, and a real
PostgreSQL server (tests/postgres.py)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from feeds.errors import StateError
from feeds.model import Hit, Paper
from feeds.state import Store, encode_hits
from feeds.text import paper_id

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _paper(title: str) -> Paper:
    return Paper(paper_id=paper_id(title), title=title, authors=("A B",))


def _put(store: Store, paper: Paper, digest: str, line: int, now: datetime) -> str:
    """Store one paper as a digest's only one; return 'new', 'changed' or 'same'."""
    counts = store.put_papers([(line, paper)], digest, now).counts
    return next(status for status, n in counts.items() if n)


def _stored(path: Path, papers: list[Paper]) -> Store:
    """A state holding these papers (from digest d1), with nothing marked to publish."""
    store = Store(path, NOW)
    with store.transaction():
        for n, paper in enumerate(papers):
            _put(store, paper, "d1", n + 1, NOW)
        store.clear_dirty()
    return store


def test_the_paper_count_survives_rolled_back_ingests(state_place: Path | str) -> None:
    store = Store(state_place, NOW)
    assert store.paper_count() == 0
    with store.transaction():
        for n in range(3):
            _put(store, _paper(f"Paper {n}"), "d1", n + 1, NOW)

    def crash_halfway() -> None:  # a digest that fails after inserting a paper
        with store.transaction():
            _put(store, _paper("Lost paper"), "d2", 1, NOW)
            raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        crash_halfway()
    with store.transaction():
        _put(store, _paper("Paper 1"), "d3", 1, NOW)  # seen before: not a new paper
        _put(store, _paper("Paper 9"), "d3", 2, NOW)
    counted = store.db.execute("SELECT count(*) FROM papers").fetchone()[0]
    assert store.paper_count() == counted == 4
    store.close()
    assert Store(state_place, NOW).paper_count() == 4


def test_known_files_are_read_once_and_compared_by_size_and_time(state_place: Path | str) -> None:
    store = Store(state_place, NOW)
    with store.transaction():
        store.put_file("inbox/a.txt", 10, 111, "h1")
    assert store.known_file("inbox/a.txt", 10, 111)
    assert not store.known_file("inbox/a.txt", 10, 112)  # touched
    assert not store.known_file("inbox/a.txt", 11, 111)  # grew
    assert not store.known_file("inbox/b.txt", 10, 111)  # never seen


def test_topic_sizes_count_only_memberships_really_inserted(state_place: Path | str) -> None:
    store = Store(state_place, NOW)
    a, b = _paper("Paper A"), _paper("Paper B")
    hits = encode_hits((Hit("paper", "title"),))
    with store.transaction():
        _put(store, a, "d1", 1, NOW)
        _put(store, b, "d1", 2, NOW)
        store.add_members([("t1", a.paper_id, 1, hits), ("t2", a.paper_id, 1, hits)], NOW)
        # One already there: not inserted again, not counted again.
        store.add_members([("t1", a.paper_id, 1, hits), ("t1", b.paper_id, 2, hits)], NOW)

    def counted(topic: str) -> int:
        sql = "SELECT count(*) FROM members WHERE topic_id = ?"
        return int(store.db.execute(sql, (topic,)).fetchone()[0])

    assert store.member_counts() == {"t1": 2, "t2": 1} == {t: counted(t) for t in ("t1", "t2")}
    store.close()


def _titles(place: Path | str) -> list[str]:
    """The papers in the state as another connection sees them: what was committed."""
    other = Store.reader(place)
    try:
        return [str(t) for (t,) in other.db.execute("SELECT title FROM papers ORDER BY seq")]
    finally:
        other.close()


def test_a_batch_commits_by_weight_and_keeps_whole_transactions_when_it_fails(
    state_place: Path | str,
) -> None:
    path = state_place
    store = Store(path, NOW)

    def digest(name: str, *, fail: bool = False) -> None:  # a digest of two papers
        with store.transaction():
            _put(store, _paper(f"{name} one"), name, 1, NOW)
            if fail:
                raise RuntimeError("crash in the middle of a digest")
            _put(store, _paper(f"{name} two"), name, 2, NOW)

    def batch_that_fails() -> None:
        with store.batched(4) as batch:
            digest("A")
            batch.done(2)
            # Two papers of four: not committed yet. (PostgreSQL commits each whole
            # transaction at once: a failed statement there undoes all since the commit.)
            assert _titles(path) == ([] if isinstance(path, Path) else ["A one", "A two"])
            digest("B")
            batch.done(2)
            assert _titles(path) == ["A one", "A two", "B one", "B two"]  # four: committed
            digest("C")
            batch.done(2)
            digest("D", fail=True)  # undone alone; C, whole before it, is kept

    with pytest.raises(RuntimeError):
        batch_that_fails()
    assert _titles(path) == ["A one", "A two", "B one", "B two", "C one", "C two"]
    assert store.paper_count() == 6
    with store.transaction():  # the connection is usable again, out of any batch
        _put(store, _paper("E one"), "E", 1, NOW)
    assert _titles(path)[-1] == "E one"
    store.close()


def test_memberships_of_a_first_build_are_the_same_as_added_one_by_one(
    new_state: Callable[[], Path | str],
) -> None:
    """A first build gathers memberships aside and inserts them at the end, sorted, with
    the indexes made after: the table, its indexes, the sizes and the marks are the same."""
    papers = [_paper(f"Paper {n}") for n in range(40)]
    rows = [
        (f"t{n % 7}", p.paper_id, n + 1, encode_hits((Hit(f"term {n % 3}", "title"),)))
        for n, p in enumerate(papers)
    ]
    venue = encode_hits((Hit("V", "venue"),))
    rows += [(f"t{n % 5 + 7}", p.paper_id, n * 3 + 1, venue) for n, p in enumerate(papers[::3])]

    def state(bulk: bool) -> tuple[Any, ...]:
        store = _stored(new_state(), papers)
        with store.transaction(), store.bulk_members() if bulk else contextlib.nullcontext():
            for start in range(0, len(rows), 9):  # in several batches, as a run adds them
                store.add_members(rows[start : start + 9], NOW)
        members = store.db.execute("SELECT * FROM members ORDER BY topic_id, paper_id").fetchall()
        indexes = store.db.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'members'"
            " ORDER BY indexname"
            if store.postgres
            else "SELECT name, sql FROM sqlite_master"
            " WHERE type = 'index' AND tbl_name = 'members' ORDER BY name"
        ).fetchall()
        temp = store.db.execute(
            "SELECT relname FROM pg_class WHERE relpersistence = 't'"
            if store.postgres
            else "SELECT name FROM sqlite_temp_master"
        ).fetchall()
        result = (members, indexes, temp, store.member_counts(), store.dirty())
        store.close()
        return result

    bulk, one_by_one = state(True), state(False)
    assert bulk == one_by_one
    members, indexes, temp, _counts, _dirty = bulk
    assert len(members) == len(rows)
    assert [name for name, _sql in indexes][:2] == ["members_order", "members_paper"]
    assert len(indexes) == 3  # and the primary key's
    assert temp == []  # the table they were gathered in is gone


def test_ranges_of_papers_cover_each_paper_once_with_exact_counts(state_place: Path | str) -> None:
    store = Store(state_place, NOW)
    with store.transaction():
        for n in range(23):
            _put(store, _paper(f"Paper {n}"), "d1", n + 1, NOW)
        store.mark_matched()
        for n in range(23, 30):  # seven more, waiting to be matched
            _put(store, _paper(f"Paper {n}"), "d2", n + 1, NOW)

    def read(ranges: list[tuple[int, int, int]], unmatched_only: bool) -> list[str]:
        titles = []
        for first, end, count in ranges:
            got = [
                p.title
                for _seq, p in store.papers_between(first, end, unmatched_only=unmatched_only)
            ]
            assert len(got) == count
            titles += got
        return titles

    everything = store.seq_ranges(5)
    assert [count for _first, _end, count in everything] == [5, 5, 5, 5, 5, 5]
    assert read(everything, False) == [f"Paper {n}" for n in range(30)]
    waiting = store.seq_ranges(5, unmatched_only=True)
    assert [count for _first, _end, count in waiting] == [5, 2]
    assert read(waiting, True) == [f"Paper {n}" for n in range(23, 30)]
    whole = store.papers_between(0, 10**9, unmatched_only=True)  # matched ones left out
    assert [(seq, p.title) for seq, p in whole] == [(n + 1, f"Paper {n}") for n in range(23, 30)]
    with store.transaction():
        store.mark_matched()
    assert store.seq_ranges(5, unmatched_only=True) == []


def test_a_digests_papers_stored_at_once_are_stored_as_one_by_one(
    new_state: Callable[[], Path | str],
) -> None:
    from dataclasses import replace

    before = [_paper(f"Paper {n}") for n in range(4)]
    digest = [
        (10, _paper("New A")),
        (12, replace(before[1], summary="Now with a summary")),  # known: changed
        (14, _paper("New B")),
        (16, before[2]),  # known: the same
        (18, replace(_paper("New A"), comments="Code: https://x.org")),  # twice: merged
        (20, _paper("New A")),  # a third time, nothing new
        (22, _paper("New C")),
    ]

    def state(at_once: bool) -> tuple[Any, ...]:
        store = _stored(new_state(), before)
        with store.transaction():
            if at_once:
                counts = store.put_papers(digest, "d2", NOW).counts
            else:
                counts = {"new": 0, "changed": 0, "same": 0}
                for line, paper in digest:
                    counts[_put(store, paper, "d2", line, NOW)] += 1
        tables = [
            store.db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("papers", "sightings", "dirty")
        ]
        store.close()
        return counts, tables

    at_once, one_by_one = state(True), state(False)
    assert at_once == one_by_one
    assert at_once[0] == {"new": 3, "changed": 2, "same": 2}


def test_big_batches_store_the_same_as_small_ones(state_place: Path | str) -> None:
    """Thousands of rows at once (PostgreSQL takes them through COPY): papers in arrival
    order, memberships counted as really inserted (some already there), diagnostics in
    their order."""
    from feeds.model import Diagnostic

    papers = [_paper(f"Paper {n}") for n in range(1500)]
    store = Store(state_place, NOW)
    hits = encode_hits((Hit("paper", "title"),))
    diagnostics = [Diagnostic("inbox/d1.txt", 3000 - n, f"problem {n}") for n in range(1200)]
    with store.transaction():
        store.add_digest("d1", "inbox/d1.txt", NOW, status="ok", diagnostics=diagnostics)
        stored = store.put_papers([(n + 1, p) for n, p in enumerate(papers)], "d1", NOW)
        assert stored.counts == {"new": 1500, "changed": 0, "same": 0}
        store.add_members([("t1", p.paper_id, n + 1, hits) for n, p in enumerate(papers[:10])], NOW)
        rows = [(f"t{n % 2 + 1}", p.paper_id, n + 1, hits) for n, p in enumerate(papers)]
        store.add_members(rows, NOW)  # five of t1's ten are in it again: not counted twice
    assert [p.title for p in store.papers()] == [p.title for p in papers]
    assert store.seqs_of([papers[0].paper_id, papers[-1].paper_id]) == {
        papers[0].paper_id: 1, papers[-1].paper_id: 1500,
    }  # fmt: skip
    assert store.member_counts() == {"t1": 755, "t2": 750}
    assert [d.message for d in store.diagnostics()] == [d.message for d in diagnostics]
    store.close()


def test_empty_lists_of_links_and_topics_are_queries_too(state_place: Path | str) -> None:
    """`IN ()` is SQL that SQLite takes and PostgreSQL refuses: a paper read again with
    no links left, and an alert destination that follows no topic."""
    from feeds.model import Link

    paper = _paper("Paper A")
    store = _stored(state_place, [paper])
    with store.transaction():
        store.add_links(paper.paper_id, [Link("https://github.com/a/b", "code")])
        assert store.add_links(paper.paper_id, [], only=True) == 0
    assert store.links_of([paper.paper_id]) == {paper.paper_id: ()}
    assert store.alert_counts([], NOW) == ({}, 0)
    store.close()


def test_a_failed_statement_in_a_batch_keeps_the_transactions_done_before_it(
    state_place: Path | str,
) -> None:
    store = Store(state_place, NOW)
    failed = StateError if isinstance(state_place, str) else sqlite3.Error
    with pytest.raises(failed), store.batched(100) as batch:  # noqa: PT012
        with store.transaction():
            _put(store, _paper("Kept"), "d1", 1, NOW)
        batch.done(1)
        store.db.execute("SELECT no_such_column FROM papers")
    assert _titles(state_place) == ["Kept"]
    store.close()
