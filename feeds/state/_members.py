"""Topics and memberships: which papers are in which topic, since when and why (the
hits), and the reading-list rows and feed items read from them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from feeds.state._dirty import DirtyMixin
from feeds.state._rows import PAPER_COLS, hits_from, paper_from, parse_ts, ts
from feeds.state._schema import MEMBER_INDEXES
from feeds.state._touch import TOUCH

if TYPE_CHECKING:
    from feeds.state.records import ListRow, MemberItem


# From a topic's memberships and their papers: what a reading-list row shows (ListRow),
# and what a feed item is made of (the paper, its entry date and hits).
MEMBERS_SQL = " FROM members m JOIN papers p ON p.paper_id = m.paper_id"
ROWS_SQL = "SELECT p.paper_id, p.title, p.title_zh, p.venue, m.entered, m.matched" + MEMBERS_SQL
ITEMS_SQL = (
    "SELECT "
    + ", ".join(f"p.{c.strip()}" for c in PAPER_COLS.split(","))
    + ", m.entered, m.matched"
    + MEMBERS_SQL
)
_RESIZE = (
    "INSERT INTO topic_sizes VALUES (?, ?)"
    " ON CONFLICT (topic_id) DO UPDATE SET n = topic_sizes.n + excluded.n"
)


class MembersMixin(DirtyMixin):
    def topic_fingerprints(self) -> dict[str, str]:
        rows = self.db.execute("SELECT topic_id, fingerprint FROM topics")
        return {str(t): str(f) for t, f in rows}

    def set_topic(self, topic_id: str, fingerprint: str) -> None:
        self.db.execute(
            "INSERT INTO topics (topic_id, fingerprint) VALUES (?, ?) ON CONFLICT (topic_id)"
            " DO UPDATE SET fingerprint = excluded.fingerprint",
            (topic_id, fingerprint),
        )
        self.touch("topic", topic_id)

    def drop_topic(self, topic_id: str) -> None:
        for (pid,) in self.db.execute(
            "SELECT paper_id FROM members WHERE topic_id = ?", (topic_id,)
        ):
            self.touch("paper", str(pid))  # its page lists the topic
        self.touch("dropped", topic_id)
        self.db.execute("DELETE FROM topics WHERE topic_id = ?", (topic_id,))
        self.db.execute("DELETE FROM members WHERE topic_id = ?", (topic_id,))
        self.db.execute("DELETE FROM topic_sizes WHERE topic_id = ?", (topic_id,))

    def set_hits(self, topic_id: str, paper_id: str, matched: str) -> None:
        """Record a kept membership's hits (see encode_hits), if they changed; its entry
        date stays."""
        cursor = self.db.execute(
            "UPDATE members SET matched = ? WHERE topic_id = ? AND paper_id = ? AND matched != ?",
            (matched, topic_id, paper_id, matched),
        )
        if cursor.rowcount:
            self.touch("paper", paper_id)
            self.touch("topic", topic_id)

    @contextmanager
    def bulk_members(self) -> Iterator[None]:
        """Insert many memberships into an empty members table (a first build): its
        secondary indexes are dropped and built once after, by sorting, instead of being
        kept up to date row by row with writes all over indexes far larger than the page
        cache. Within the caller's transaction: a run that dies keeps them."""
        if self.db.execute("SELECT 1 FROM members LIMIT 1").fetchone() is not None:
            yield
            return
        # On PostgreSQL the indexes stay: DROP INDEX would lock the table against every
        # reader (`feeds status` on another machine) until the whole build commits.
        keep_indexes = self.postgres
        for name in () if keep_indexes else MEMBER_INDEXES:
            self.db.execute(f"DROP INDEX {name}")
        # The primary key's index too is larger than the cache from a few hundred thousand
        # papers on, and each batch of memberships lands all over it: they are gathered in
        # a table of the connection's own, without index, and go into members at the end
        # in its order (matching in one process: 1.6 s less at 100,000 papers, 2.9 s at
        # 300,000; the index is several times the cache at a million).
        self.db.execute("DROP TABLE IF EXISTS members_bulk")  # a temporary table
        self.db.execute("CREATE TEMP TABLE members_bulk AS SELECT * FROM members LIMIT 0")
        self._into = "members_bulk"
        try:
            yield
        finally:
            self._into = "members"
        self.db.execute(
            "INSERT INTO members SELECT * FROM members_bulk ORDER BY topic_id, paper_id"
        )
        self.db.execute("DROP TABLE members_bulk")
        for sql in () if keep_indexes else MEMBER_INDEXES.values():
            self.db.execute(sql)

    def members_of(self, topic_ids: set[str], unmatched_only: bool) -> set[tuple[str, str]]:
        """Return (topic id, paper id) memberships of these topics: all of them, or those
        of the papers waiting to be matched."""
        if not unmatched_only:
            out: set[tuple[str, str]] = set()
            for tid in topic_ids:
                rows = self.db.execute("SELECT paper_id FROM members WHERE topic_id = ?", (tid,))
                out.update((tid, str(r[0])) for r in rows)
            return out
        rows = self.db.execute(  # few papers wait: look their memberships up by index
            "SELECT topic_id, paper_id FROM members"
            " WHERE paper_id IN (SELECT paper_id FROM papers WHERE unmatched)"
        )
        return {(str(t), str(p)) for t, p in rows if t in topic_ids}

    def add_members(self, rows: Sequence[tuple[str, str, int, str]], now: datetime) -> None:
        """Insert memberships known to be new (papers that had none), in bulk: (topic id,
        paper id, the paper's seq, its hits as encode_hits gives them) each."""
        when = ts(now)
        by_topic: dict[str, list[tuple[str, str, str, int, str]]] = {}
        for tid, pid, seq, matched in rows:
            by_topic.setdefault(tid, []).append((tid, pid, when, seq, matched))
        # One statement for the whole batch, in key order (topic, paper: the primary key's),
        # rather than one per topic: a batch spans a thousand topics.
        ordered = [row for tid in sorted(by_topic) for row in sorted(by_topic[tid])]
        cursor = self.db.executemany(
            f"INSERT INTO {self._into} VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", ordered
        )
        if cursor.rowcount == len(ordered):
            self.db.executemany(_RESIZE, [(tid, len(group)) for tid, group in by_topic.items()])
        else:  # some were there already: count those topics again
            self.db.executemany(
                "INSERT INTO topic_sizes SELECT ?, count(*) FROM members WHERE topic_id = ?"
                " ON CONFLICT (topic_id) DO UPDATE SET n = excluded.n",
                [(tid, tid) for tid in by_topic],
            )
        self.db.executemany(
            TOUCH,
            [("topic", t) for t in by_topic]
            + [("paper", p) for p in {pid for _tid, pid, _seq, _m in rows}],
        )

    def _resize(self, topic_id: str, delta: int) -> None:
        self.db.execute(_RESIZE, (topic_id, delta))

    def remove_member(self, topic_id: str, paper_id: str) -> None:
        cursor = self.db.execute(
            "DELETE FROM members WHERE topic_id = ? AND paper_id = ?", (topic_id, paper_id)
        )
        self._resize(topic_id, -cursor.rowcount)
        self.touch("paper", paper_id)
        self.touch("topic", topic_id)
        self.touch("archive", topic_id)  # later papers move down: every archive page shifts

    def topic_order(self, topic_id: str) -> Iterator[str]:
        """Yield a topic's paper ids oldest first: the order archive pages are cut in."""
        rows = self.db.execute(
            "SELECT paper_id FROM members WHERE topic_id = ? ORDER BY entered, seq DESC",
            (topic_id,),
        )
        for (pid,) in rows:
            yield str(pid)

    def topics_of(self, paper_ids: Iterable[str]) -> dict[str, set[str]]:
        """Return the topics of these papers: {topic id: those of the papers in it}."""
        ids = list(paper_ids)
        found: dict[str, set[str]] = {}
        for chunk, among in self.chunks(ids):
            rows = self.db.execute(
                f"SELECT topic_id, paper_id FROM members WHERE paper_id IN {among}", chunk
            )
            for tid, pid in rows:
                found.setdefault(str(tid), set()).add(str(pid))
        return found

    def ranks(self, topic_id: str, paper_ids: set[str]) -> set[int]:
        """Return the oldest-first positions in a topic of those of these papers that are
        in it. Each costs a count up to its position: for the few changed papers that are
        not on a topic's front page (the caller knows which are)."""
        ranks = set()
        for pid in paper_ids:
            row = self.db.execute(
                "SELECT entered, seq FROM members WHERE topic_id = ? AND paper_id = ?",
                (topic_id, pid),
            ).fetchone()
            if row is None:
                continue  # not in the topic
            older = self.db.execute(
                "SELECT count(*) FROM members WHERE topic_id = ?"
                " AND (entered < ? OR (entered = ? AND seq > ?))",
                (topic_id, row[0], row[0], row[1]),
            ).fetchone()[0]
            ranks.add(int(older))
        return ranks

    def topic_rows(
        self, topic_id: str, limit: int, offset: int | None = None, count: int | None = None
    ) -> list[ListRow]:
        """Return the reading-list rows of a topic, newest first: the newest `limit`, or
        (with `offset`) the `limit` at oldest-first positions offset... Only what a row
        shows is read: a full build lists every membership, millions of rows.

        With the topic's `count`, a slice nearer the newest end is skipped to from there:
        OFFSET walks every row it skips, and the parts a run rewrites are the newest ones.
        """
        sql = ROWS_SQL + " WHERE m.topic_id = ?"
        newest_first = sql + " ORDER BY m.entered DESC, m.seq LIMIT ? OFFSET ?"
        if offset is None:
            return _list_rows(self.db.execute(newest_first, (topic_id, limit, 0)))
        if count is not None and 0 <= count - offset - limit < offset:
            rows = self.db.execute(newest_first, (topic_id, limit, count - offset - limit))
            return _list_rows(rows)
        sql += " ORDER BY m.entered, m.seq DESC LIMIT ? OFFSET ?"
        return _list_rows(self.db.execute(sql, (topic_id, limit, offset)))[::-1]

    def topic_ids(self, topic_id: str, limit: int) -> list[str]:
        """Return the ids of a topic's newest `limit` papers, newest first (the order of
        topic_rows), from the index alone."""
        rows = self.db.execute(
            "SELECT paper_id FROM members WHERE topic_id = ? ORDER BY entered DESC, seq LIMIT ?",
            (topic_id, limit),
        )
        return [str(r[0]) for r in rows]

    def member_rows(self, topic_id: str, paper_ids: Sequence[str]) -> dict[str, ListRow]:
        """Return the reading-list rows of some of a topic's papers, by paper id."""
        found: dict[str, ListRow] = {}
        for chunk, among in self.chunks(paper_ids):
            rows = self.db.execute(
                ROWS_SQL + f" WHERE m.topic_id = ? AND m.paper_id IN {among}", (topic_id, *chunk)
            )
            found.update((row.paper_id, row) for row in _list_rows(rows))
        return found

    def topic_parts(
        self, topic_id: str, size: int, parts: int
    ) -> Iterator[tuple[int, list[ListRow]]]:
        """Yield the first `parts` archive parts of a topic's reading list: (k, the rows at
        oldest-first positions (k-1)*size.., newest first), from one pass over the topic
        (an OFFSET per part would scan the topic again for each: quadratic in its size)."""
        sql = ROWS_SQL + " WHERE m.topic_id = ? ORDER BY m.entered, m.seq DESC"
        with closing(self._stream(sql, (topic_id,))) as cursor:
            for k in range(1, parts + 1):
                rows = cursor.fetchmany(size)
                if not rows:
                    break
                yield k, _list_rows(rows)[::-1]

    def topic_items(self, topic_id: str, limit: int | None = None) -> Iterator[MemberItem]:
        """Yield a topic's papers newest first (digest order among equals), with entry
        dates and hits; read as they are used, so a huge topic does not fill memory."""
        sql = ITEMS_SQL + " WHERE m.topic_id = ? ORDER BY m.entered DESC, m.seq"
        args: tuple[Any, ...] = (topic_id,)
        if limit is not None:
            sql += " LIMIT ?"
            args += (limit,)
        from feeds.state.records import MemberItem

        with closing(self._stream(sql, args)) as rows:
            for row in rows:
                yield MemberItem(paper_from(row[:-2]), parse_ts(row[-2]), hits_from(row[-1]))

    def topic_heads(self, topic_id: str, limit: int) -> list[tuple[str, datetime]]:
        """Return (paper id, entry date) of a topic's newest `limit` papers, newest first:
        what says which feed items a topic has, from the index alone."""
        rows = self.db.execute(
            "SELECT paper_id, entered FROM members WHERE topic_id = ?"
            " ORDER BY entered DESC, seq LIMIT ?",
            (topic_id, limit),
        )
        return [(str(pid), parse_ts(entered)) for pid, entered in rows]

    def topic_items_of(self, topic_id: str, paper_ids: Sequence[str]) -> dict[str, MemberItem]:
        """Return some of a topic's papers with their entry dates and hits, by paper id."""
        from feeds.state.records import MemberItem

        found = {}
        for chunk, among in self.chunks(paper_ids):
            rows = self.db.execute(
                ITEMS_SQL + f" WHERE m.topic_id = ? AND m.paper_id IN {among}", (topic_id, *chunk)
            )
            for row in rows:
                paper, entered, hits = paper_from(row[:-2]), parse_ts(row[-2]), hits_from(row[-1])
                found[row[0]] = MemberItem(paper, entered, hits)
        return found

    def member_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT topic_id, n FROM topic_sizes WHERE n > 0")
        return {str(t): int(n) for t, n in rows}


def _list_rows(rows: Iterable[Any]) -> list[ListRow]:
    """Return rows of ROWS_SQL as ListRows, their hits decoded (memberships mostly share
    them: see hits_from)."""
    from feeds.state.records import ListRow

    return [ListRow(pid, title, zh, venue, entered, hits_from(hits))
            for pid, title, zh, venue, entered, hits in rows]  # fmt: skip
