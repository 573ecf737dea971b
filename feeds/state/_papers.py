"""Papers: storing a digest's papers (merged with what is known of them), and reading them
back in arrival order, by id, or as the pages that show them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from feeds.state._db import in_list
from feeds.state._links import LinksMixin
from feeds.state._members import MembersMixin
from feeds.state._rows import PAPER_COLS, hits_from, paper_from, paper_row, parse_ts, ts
from feeds.state._touch import TOUCH

if TYPE_CHECKING:
    from feeds.model import Hit, Paper
    from feeds.state.records import ListRow, PaperPage, SeqRange, Stored

_INSERT_PAPER = (
    "INSERT INTO papers (seq, paper_id, title, title_zh, authors, institutions, summary,"
    " comments, journal_ref, venue, abstract, categories, arxiv_id, first_seen, changed)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class PapersMixin(LinksMixin, MembersMixin):
    def put_papers(
        self,
        papers: Sequence[tuple[int, Paper]],
        digest_hash: str,
        now: datetime,
        *,
        replaces: str | None = None,
    ) -> Stored:
        """Store a digest's (line, paper)s, each merged with what is known of it; return how
        many were new, changed and the same, and the records that collided with another
        paper of the same title.

        Papers not known before are inserted with a statement for all of them: a first run
        over a big inbox is nearly all new papers, and one statement a paper is a third of
        ingesting them. The others (known, or seen twice in this digest) go one by one after,
        in digest order: each merges with what was stored before it, as it would have.

        `replaces`: the digest this one is a new reading of (the same inbox file, changed
        since): its papers' fields from that reading are replaced by this one's (see
        model.reread), and that reading's record problems are dropped."""
        counts = {"new": 0, "changed": 0, "same": 0}
        known = self._known([paper.paper_id for _line, paper in papers])
        retitled = self._retitled([paper for _line, paper in papers if paper.paper_id not in known])
        if retitled:  # a stored paper under a revised title: that paper, under its id
            papers = [(line, replace(p, paper_id=retitled[p.paper_id]) if p.paper_id in retitled
                       else p) for line, p in papers]  # fmt: skip
            known |= set(retitled.values())
        ids = [paper.paper_id for _line, paper in papers]
        reread = self._reread(ids, replaces, digest_hash) if replaces else {}
        alone = frozenset(pid for pid, only_there in reread.items() if only_there)
        new: list[Paper] = []
        later: list[tuple[int, Paper]] = []
        for line, paper in papers:
            if paper.paper_id in known:
                later.append((line, paper))
            else:
                known.add(paper.paper_id)  # a second time in this digest: merged, later
                new.append(paper)
        self.db.executemany(
            "INSERT INTO sightings VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(paper.paper_id, digest_hash, line) for line, paper in papers],
        )
        if new:
            # Seqs given here, the next ones after the last (one writer at a time): the
            # arrival order without gaps, on either engine (see seqs_of).
            when, last = ts(now), self.paper_count()
            added = [(last + i, *paper_row(p), when, when) for i, p in enumerate(new, 1)]
            self.db.executemany(_INSERT_PAPER, added)
            # Their pages and the `all` feed; a new paper is in no topic yet (see _touch_paper).
            self.db.executemany(TOUCH, [("paper", p.paper_id) for p in new])
            self.touch("topic", "all")
            counts["new"] = len(new)
        from feeds.model import other_authors
        from feeds.state.records import Stored

        collisions: list[tuple[int, Paper, Paper]] = []
        revised = frozenset(retitled.values())
        for line, paper in later:
            only_there = reread.pop(paper.paper_id, None)
            result, old = self._merge(paper, now, only_there, paper.paper_id in revised)
            counts[result] += 1
            if only_there is None and other_authors(old, paper):
                collisions.append((line, old, paper))
        return Stored(counts, tuple(collisions), alone)

    def _reread(self, ids: Sequence[str], replaces: str, digest_hash: str) -> dict[str, bool]:
        """Return, for the papers of `ids` that the replaced reading held, whether no other
        digest holds them; that reading gives way to this one."""
        held: dict[str, bool] = {}
        for chunk, among in self.chunks(ids):
            rows = self.db.execute(
                f"SELECT s.paper_id, NOT EXISTS (SELECT 1 FROM sightings o"
                f" WHERE o.paper_id = s.paper_id AND o.digest NOT IN (?, ?))"
                f" FROM sightings s WHERE s.digest = ? AND s.paper_id IN {among}",
                (replaces, digest_hash, replaces, *chunk),
            )
            held.update((str(pid), bool(alone)) for pid, alone in rows)
        # The papers read again are held by the new reading now (those it no longer holds
        # keep the old one's sightings: nothing is lost); the old problems are gone with it.
        self.db.executemany(
            "DELETE FROM sightings WHERE digest = ? AND paper_id = ?",
            [(replaces, pid) for pid in held],
        )
        self.db.execute("DELETE FROM diagnostics WHERE digest = ?", (replaces,))
        return held

    def _known(self, ids: Sequence[str]) -> set[str]:
        """Return which of these paper ids are stored."""
        known: set[str] = set()
        for chunk, among in self.chunks(ids):
            rows = self.db.execute(f"SELECT paper_id FROM papers WHERE paper_id IN {among}", chunk)
            known.update(pid for (pid,) in rows)
        return known

    def _retitled(self, papers: Sequence[Paper]) -> dict[str, str]:
        """Return, for papers under an English title the state does not know, the stored
        paper each one is under a revised title: the one with its arXiv id, or else with its
        Chinese title and the same authors (SPEC "The digest format")."""
        from feeds.model import same_authors

        found: dict[str, str] = {}
        arxiv = [p.arxiv_id for p in papers if p.arxiv_id]
        stored: dict[str, str] = {}
        for chunk, among in self.chunks(arxiv):
            rows = self.db.execute(
                f"SELECT arxiv_id, paper_id FROM papers WHERE arxiv_id IN {among}"
                " ORDER BY seq DESC",
                chunk,
            )
            stored.update((str(a), str(pid)) for a, pid in rows)  # the oldest last: it wins
        zh = [p.title_zh for p in papers if p.title_zh and p.authors and p.arxiv_id not in stored]
        by_zh: dict[str, list[Paper]] = {}
        for chunk, among in self.chunks(zh):
            rows = self.db.execute(
                f"SELECT {PAPER_COLS} FROM papers WHERE title_zh IN {among} ORDER BY seq", chunk
            )
            for row in rows:
                old = paper_from(row)
                by_zh.setdefault(old.title_zh or "", []).append(old)
        for p in papers:
            if p.arxiv_id and p.arxiv_id in stored:
                found[p.paper_id] = stored[p.arxiv_id]
            elif p.title_zh:
                same = next((o for o in by_zh.get(p.title_zh, ()) if same_authors(o, p)), None)
                if same is not None:
                    found[p.paper_id] = same.paper_id
        return found

    def _merge(
        self, paper: Paper, now: datetime, only_there: bool | None, retitled: bool = False
    ) -> tuple[str, Paper]:
        """Merge what a digest says of a known paper into it (`only_there`: a new reading of
        the file it came from, see put_papers; `retitled`: it is the paper under a revised
        English title, which it takes); return 'changed' or 'same', and the paper as it was
        before."""
        from feeds.model import merge, reread

        old = self.paper(paper.paper_id)
        assert old is not None  # known: put_papers looked
        if only_there is None:
            merged = merge(old, paper)
        else:
            merged = reread(old, paper, only_there=only_there)
        if retitled:
            merged = replace(merged, title=paper.title)
        if merged == old:
            return "same", old
        self.db.execute(
            "UPDATE papers SET title = ?, title_zh = ?, authors = ?, institutions = ?,"
            " summary = ?, comments = ?, journal_ref = ?, venue = ?, abstract = ?,"
            " categories = ?, arxiv_id = ?, changed = ?, unmatched = TRUE"
            " WHERE paper_id = ?",
            (*paper_row(merged)[1:], ts(now), paper.paper_id),
        )
        self._touch_paper(paper.paper_id)
        return "changed", old

    def paper(self, paper_id: str) -> Paper | None:
        row = self.db.execute(
            f"SELECT {PAPER_COLS} FROM papers WHERE paper_id = ?", (paper_id,)
        ).fetchone()
        return None if row is None else paper_from(row)

    def paper_of_arxiv(self, arxiv_id: str) -> Paper | None:
        """Return the stored paper with this arXiv id (without version), if any."""
        row = self.db.execute(
            f"SELECT {PAPER_COLS} FROM papers WHERE arxiv_id = ? ORDER BY seq LIMIT 1", (arxiv_id,)
        ).fetchone()
        return None if row is None else paper_from(row)

    def titles(self) -> Iterator[str]:
        """Yield every stored paper's English title (for suggestions)."""
        with closing(self._stream("SELECT title FROM papers ORDER BY seq")) as rows:
            for (title,) in rows:
                yield str(title)

    def names(self, kind: str) -> Iterator[tuple[str, str]]:
        """Yield (name, title) for every stored paper that has a name of this kind:
        "paper id", "arXiv id", or "DOI" (of its doi.org links): what an unknown name is
        held against, to say which stored paper was likely meant."""
        queries = {
            "paper id": "SELECT paper_id, title FROM papers",
            "arXiv id": "SELECT arxiv_id, title FROM papers WHERE arxiv_id IS NOT NULL",
            "DOI": "SELECT substr(l.url, 17), p.title FROM links l JOIN papers p"
            " ON p.paper_id = l.paper_id WHERE l.url >= 'https://doi.org/'"
            " AND l.url < 'https://doi.org0'",
        }
        with closing(self._stream(queries[kind])) as rows:
            for name, title in rows:
                yield str(name), str(title)

    def papers(self, paper_ids: Iterable[str] | None = None) -> Iterator[Paper]:
        """Yield papers in arrival order: all of them, or those with the given ids."""
        if paper_ids is None:
            with closing(self._stream(f"SELECT {PAPER_COLS} FROM papers ORDER BY seq")) as rows:
                for row in rows:
                    yield paper_from(row)
            return
        for pid in paper_ids:
            paper = self.paper(pid)
            if paper is not None:
                yield paper

    def papers_between(
        self, first: int, end: int, *, unmatched_only: bool
    ) -> Iterator[tuple[int, Paper]]:
        """Yield (seq, paper) for the papers whose arrival order (seq) is in [first, end), in
        that order: all, or those waiting to be matched."""
        # A range of the table itself, not of the index of unmatched papers: after a big
        # ingest that index holds them all, and each range would scan it whole.
        which = " AND unmatched" if unmatched_only else ""
        rows = self.db.execute(
            f"SELECT seq, {PAPER_COLS} FROM papers WHERE seq >= ? AND seq < ?{which} ORDER BY seq",
            (first, end),
        )
        for row in rows:
            yield row[0], paper_from(row[1:])

    def has_unmatched(self) -> bool:
        """Return True when papers wait to be matched against the topics.

        Kept in the database rather than in memory, so that papers ingested by a run that
        died before matching are matched by the next run.
        """
        return (
            self.db.execute("SELECT 1 FROM papers WHERE unmatched LIMIT 1").fetchone() is not None
        )

    def mark_matched(self) -> None:
        self.db.execute("UPDATE papers SET unmatched = FALSE WHERE unmatched")

    def paper_count(self) -> int:
        # Papers are never removed and seq is AUTOINCREMENT (a rolled-back insert gives its
        # number back), so the last seq is the count: one index lookup, not a table scan.
        return int(self.db.execute("SELECT coalesce(max(seq), 0) FROM papers").fetchone()[0])

    def all_items(self, limit: int | None = None) -> Iterator[tuple[Paper, datetime]]:
        """Yield every paper newest first, with when it was first seen."""
        sql = f"SELECT {PAPER_COLS}, first_seen FROM papers ORDER BY first_seen DESC, seq"
        args: tuple[int, ...] = (limit,) if limit else ()
        with closing(self._stream(sql + " LIMIT ?" if limit else sql, args)) as rows:
            for row in rows:
                yield paper_from(row[:-1]), parse_ts(row[-1])

    def all_ids(self) -> list[str]:
        """Return every paper's id, newest first (the order of all_items)."""
        rows = self.db.execute("SELECT paper_id FROM papers ORDER BY first_seen DESC, seq")
        return [str(pid) for (pid,) in rows]

    def papers_seen(self, paper_ids: Sequence[str]) -> Iterator[tuple[Paper, datetime]]:
        """Yield these papers (those stored, in no set order) with when each was first
        seen: what a paper's citation is made of, besides its links."""
        for chunk, among in self.chunks(paper_ids):
            rows = self.db.execute(
                f"SELECT {PAPER_COLS}, first_seen FROM papers WHERE paper_id IN {among}", chunk
            )
            for row in rows:
                yield paper_from(row[:-1]), parse_ts(row[-1])

    def seq_ranges(self, size: int, *, unmatched_only: bool = False) -> list[SeqRange]:
        """Split the papers (all, or those waiting to be matched), in arrival order, into
        ranges of `size`: (first seq, the seq after the last, how many papers) each."""
        which = "WHERE unmatched" if unmatched_only else ""
        rows = self.db.execute(
            "SELECT seq, n FROM (SELECT seq, row_number() OVER (ORDER BY seq) - 1 AS n,"
            f" count(*) OVER () AS total FROM papers {which}) AS r"
            " WHERE n % ? = 0 OR n = total - 1",
            (size,),
        ).fetchall()
        if not rows:
            return []
        last_seq, last_n = rows[-1]
        starts = [(int(seq), int(n)) for seq, n in rows if n % size == 0]
        ends = [(seq, n) for seq, n in starts[1:]] + [(int(last_seq) + 1, int(last_n) + 1)]
        from feeds.state.records import SeqRange

        return [SeqRange(a, b, m - n) for (a, n), (b, m) in zip(starts, ends, strict=True)]

    def paper_pages(
        self,
        paper_ids: Sequence[str] = (),
        *,
        seqs: tuple[int, int] | None = None,
        chunk: int = 500,
    ) -> Iterator[PaperPage]:
        """Yield what a paper's page shows: the paper, when first seen, its links and its
        topics with hits; for the given papers, or those whose arrival order is in the
        range `seqs` [first, last) (in that order). Read a chunk at a time: three queries
        per chunk instead of four per paper."""
        cols = PAPER_COLS + ", first_seen"
        if seqs is not None:
            query = f"SELECT {cols} FROM papers WHERE seq >= ? AND seq < ? ORDER BY seq"
            with closing(self._stream(query, seqs)) as cursor:
                yield from self._pages(iter(lambda: cursor.fetchmany(chunk), []))
            return
        yield from self._pages(
            self.db.execute(
                f"SELECT {cols} FROM papers WHERE paper_id IN {sql} ORDER BY paper_id", params
            ).fetchall()
            for sql, params in (
                in_list(paper_ids[i : i + chunk], self.postgres)
                for i in range(0, len(paper_ids), chunk)
            )
        )

    def _pages(self, batches: Iterable[list[Any]]) -> Iterator[PaperPage]:
        """Yield the pages of batches of paper rows (see paper_pages)."""
        from feeds.state.records import PaperPage

        for rows in batches:
            ids = [row[0] for row in rows]
            links = self.links_of(ids)
            topics: dict[str, list[tuple[str, tuple[Hit, ...]]]] = {pid: [] for pid in ids}
            sql, params = in_list(ids, self.postgres)
            members = self.db.execute(
                "SELECT paper_id, topic_id, matched FROM members"
                f" WHERE paper_id IN {sql} ORDER BY paper_id, topic_id",
                params,
            )
            for pid, topic_id, matched in members:
                topics[pid].append((topic_id, hits_from(matched)))
            for row in rows:
                pid = row[0]
                yield PaperPage(paper_from(row[:-1]), parse_ts(row[-1]), links[pid], topics[pid])

    def seqs_of(self, paper_ids: Iterable[str]) -> dict[str, int]:
        """Return the arrival position (seq) of each of these papers that is stored.

        Papers are never removed and seqs come without gaps (see paper_count), so a range
        of seqs is a fixed slice of the history: the all-papers list is paged by it and the
        search index sharded by it."""
        ids = list(paper_ids)
        found: dict[str, int] = {}
        for chunk, among in self.chunks(ids):
            rows = self.db.execute(
                f"SELECT paper_id, seq FROM papers WHERE paper_id IN {among}", chunk
            )
            found.update((str(pid), int(seq)) for pid, seq in rows)
        return found

    def rows_between(self, first: int, end: int) -> list[ListRow]:
        """Return the all-papers list's rows of the papers whose arrival order (seq) is in
        [first, end), newest first (digest order among equals), each entered when the
        paper was first seen."""
        from feeds.state.records import ListRow

        rows = self.db.execute(
            "SELECT paper_id, title, title_zh, venue, first_seen FROM papers"
            " WHERE seq >= ? AND seq < ? ORDER BY seq",
            (first, end),
        )
        got = [(parse_ts(seen), pid, title, zh, venue) for pid, title, zh, venue, seen in rows]
        got.sort(key=lambda row: row[0], reverse=True)  # stable: arrival order among equals
        return [ListRow(pid, title, zh, venue, seen.isoformat(), ())
                for seen, pid, title, zh, venue in got]  # fmt: skip

    def row_texts(self, paper_ids: Iterable[str]) -> dict[str, tuple[str, str | None, str | None]]:
        """Return what a reading-list row shows of each paper beyond its ListRow: its
        authors (as kept, JSON), AI summary and abstract.

        Only these columns, left undecoded: a full build reads one per topic membership
        (millions), and a whole Paper (every list decoded) costs several times more."""
        ids = list(paper_ids)
        found: dict[str, tuple[str, str | None, str | None]] = {}
        for chunk, among in self.chunks(ids):
            rows = self.db.execute(
                "SELECT paper_id, authors, summary, abstract FROM papers"
                f" WHERE paper_id IN {among}",
                chunk,
            )
            found.update((pid, (authors, summary, abstract)) for pid, authors, summary, abstract
                         in rows)  # fmt: skip
        return found
