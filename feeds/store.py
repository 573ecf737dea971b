"""The state: what has been ingested, the papers, their links and topic memberships (SQLite).

`public/` can always be rebuilt from this database; the database is the record.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from feeds.errors import StateError

# The model's classes are imported where papers, links and sources are made: a run with
# nothing to do makes none, and creating the classes costs it several milliseconds.
if TYPE_CHECKING:
    from feeds.model import Diagnostic, Hit, Link, Paper, SourceState, Stored

# A reading-list row: (paper_id, title, title_zh, venue, entered timestamp, hits as JSON).
ListRow = tuple[str, str, str | None, str | None, str, str]

SCHEMA_VERSION = 4

# The secondary indexes of memberships, by name: part of the schema, and dropped and made
# again around a first build's inserts (see Store.bulk_members).
_MEMBER_INDEXES = {
    # paper_id last: the newest ids of a topic (a feed's items, a front page's rows) are
    # read from this index alone, not from table rows all over the file.
    "members_order": (
        "CREATE INDEX members_order ON members (topic_id, entered DESC, seq, paper_id)"
    ),
    "members_paper": "CREATE INDEX members_paper ON members (paper_id)",
}

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE digests (
    hash TEXT PRIMARY KEY,          -- sha256 of the content: the same bytes are ingested once
    name TEXT NOT NULL,             -- the file name or URL it was first seen under
    seen TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'rejected')),
    reason TEXT,
    venue TEXT,
    papers INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE diagnostics (
    digest TEXT NOT NULL REFERENCES digests(hash),
    file TEXT NOT NULL, line INTEGER NOT NULL, message TEXT NOT NULL
);
CREATE TABLE papers (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,   -- arrival order: ties in time keep digest order
    paper_id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL, title_zh TEXT,
    authors TEXT NOT NULL, institutions TEXT NOT NULL,
    summary TEXT, comments TEXT, journal_ref TEXT, venue TEXT,
    first_seen TEXT NOT NULL, changed TEXT NOT NULL,
    unmatched INTEGER NOT NULL DEFAULT 1  -- new or changed since topics were last matched
);
CREATE INDEX papers_order ON papers (first_seen DESC, seq);
CREATE INDEX papers_unmatched ON papers (unmatched) WHERE unmatched;
CREATE TABLE sightings (paper_id TEXT NOT NULL, digest TEXT NOT NULL, line INTEGER NOT NULL,
    PRIMARY KEY (paper_id, digest));
CREATE TABLE links (
    paper_id TEXT NOT NULL, url TEXT NOT NULL, kind TEXT NOT NULL,
    source TEXT NOT NULL,           -- digest, arxiv, huggingface
    position INTEGER NOT NULL,
    PRIMARY KEY (paper_id, url)
);
CREATE INDEX links_url ON links (url);
CREATE TABLE url_checks (           -- one check per URL, whatever papers share it
    url TEXT PRIMARY KEY,
    status TEXT NOT NULL, http_status INTEGER, final_url TEXT, note TEXT,
    checked TEXT NOT NULL, due TEXT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0,
    dns_failing_since TEXT
);
CREATE TABLE lookups (              -- enrichment: which paper was looked up where, and when
    paper_id TEXT NOT NULL, source TEXT NOT NULL,
    checked TEXT NOT NULL, due TEXT, found INTEGER NOT NULL, note TEXT,
    PRIMARY KEY (paper_id, source)
);
CREATE TABLE topics (
    topic_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,      -- of what decides membership: a change re-matches
    looks TEXT NOT NULL DEFAULT ''  -- of title, description, feed length: a change re-renders
);
CREATE TABLE topic_sizes (          -- members per topic, kept as they change: counting
    topic_id TEXT PRIMARY KEY,      -- a big topic's members on every run grows with history
    n INTEGER NOT NULL
);
CREATE TABLE members (
    topic_id TEXT NOT NULL, paper_id TEXT NOT NULL,
    entered TEXT NOT NULL,          -- when the paper entered this feed; never changes
    seq INTEGER NOT NULL,           -- the paper's arrival order: ties keep digest order
    matched TEXT NOT NULL,          -- JSON [[term, field], ...]
    PRIMARY KEY (topic_id, paper_id)
);
-- its other indexes: _MEMBER_INDEXES, below
CREATE TABLE sources (              -- remote digests: conditional GET state and health
    url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT, last_ok TEXT, last_change TEXT,
    failures INTEGER NOT NULL DEFAULT 0, next_try TEXT, error TEXT
);
CREATE TABLE dirty (                -- what the next publish must render again
    kind TEXT NOT NULL CHECK (kind IN ('paper', 'topic', 'dropped', 'archive')),
    id TEXT NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE TABLE files (                -- inbox files already read: unchanged ones are not re-read
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT,
    summary TEXT);
"""
_SCHEMA += "".join(f"{sql};\n" for sql in _MEMBER_INDEXES.values())


# json.dumps(x, ensure_ascii=False), without making an encoder for every call.
_json = json.JSONEncoder(ensure_ascii=False).encode


@lru_cache(maxsize=64)  # mostly the run's `now`: twice for every paper ingested
def _ts(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="seconds")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _dt(text: str | None) -> datetime | None:
    return parse_ts(text) if text else None


def _opt_ts(dt: datetime | None) -> str | None:
    return _ts(dt) if dt else None


_PAPER_COLS = "paper_id, title, title_zh, authors, institutions, summary, comments,"
_PAPER_COLS += " journal_ref, venue"
# From a topic's memberships and their papers: what a reading-list row shows (ListRow),
# and what a feed item is made of (the paper, its entry date and hits).
_MEMBERS = " FROM members m JOIN papers p ON p.paper_id = m.paper_id"
_ROWS = "SELECT p.paper_id, p.title, p.title_zh, p.venue, m.entered, m.matched" + _MEMBERS
_ITEMS = (
    "SELECT "
    + ", ".join(f"p.{c.strip()}" for c in _PAPER_COLS.split(","))
    + ", m.entered, m.matched"
    + _MEMBERS
)
_INSERT_PAPER = (
    "INSERT INTO papers (paper_id, title, title_zh, authors, institutions, summary, comments,"
    " journal_ref, venue, first_seen, changed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_TOUCH = "INSERT OR IGNORE INTO dirty VALUES (?, ?)"
_RESIZE = (
    "INSERT INTO topic_sizes VALUES (?, ?) ON CONFLICT (topic_id) DO UPDATE SET n = n + excluded.n"
)


def _file_key(path: str) -> str | bytes:
    """Return how the files table knows a path: as text, or, for a name that is not UTF-8
    (lone surrogates, see os.fsdecode), as its bytes: a blob, which equals no text."""
    if path.isascii():
        return path
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


def _chunks(ids: Sequence[str]) -> Iterator[tuple[Sequence[str], str]]:
    """Yield the ids 500 at a time, each chunk with the `(?,?,...)` of its IN clause (SQLite's
    limit on parameters is generous; one query a chunk, not one an id)."""
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        yield chunk, f"({','.join('?' * len(chunk))})"


class Store:
    """A connection to the state database; one writer at a time (see feeds.lock)."""

    def __init__(
        self, path: Path, now: datetime, progress: Callable[[str], None] = lambda _m: None
    ) -> None:
        """Open (or create) the state; `progress` hears of a long upgrade of an old one."""
        self.path = path
        self._files: dict[str | bytes, tuple[int, int]] | None = None  # see known_file
        self._into = "members"  # where add_members inserts (see bulk_members)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            # 64 MB of page cache instead of SQLite's 2 MB: ingesting inserts into indexes
            # keyed by paper id (random order), which at a million papers are far larger
            # than 2 MB and would be read from disk again and again.
            self.db.execute("PRAGMA cache_size=-65536")
            self._migrate(now, progress)
        except sqlite3.DatabaseError as e:
            raise StateError(f"cannot open the state database: {e}", file=str(path)) from e

    @classmethod
    def reader(cls, path: Path) -> Store:
        """Open an existing state to read only: a helper process reads what its parent
        wrote (and, in WAL mode, does not stop it writing)."""
        store = cls.__new__(cls)
        store.path = path
        store._files = None
        try:
            store.db = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=30
            )
            store.db.execute("PRAGMA cache_size=-16384")  # 16 MB: it reads each page once
        except sqlite3.DatabaseError as e:
            raise StateError(f"cannot open the state database: {e}", file=str(path)) from e
        return store

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All of what is written within, or (on an exception) none of it.

        Within a batch (see batched) it is a savepoint of the batch's transaction: undone
        alone if it fails, committed with the batch."""
        if self.db.in_transaction:
            self.db.execute("SAVEPOINT nested")
            try:
                yield
            except BaseException:
                if self.db.in_transaction:  # not if a failure (a full disk) undid it all
                    self.db.execute("ROLLBACK TO nested")
                    self.db.execute("RELEASE nested")
                raise
            self.db.execute("RELEASE nested")
            return
        # BEGIN IMMEDIATE takes the write lock up front: a read that later upgrades to a
        # write in WAL mode would otherwise fail at once with "database is locked".
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @contextmanager
    def batched(self, size: int) -> Iterator[Batch]:
        """Commit the transactions within together, once their weight (batch.done) comes to
        `size`, and at the end, also when an exception ends it: each stays whole, and those
        that were whole before it are kept.

        A commit writes every page its transaction changed: a digest's papers change pages
        all over the indexes keyed by paper id, and twenty digests change many of the same
        ones. Ingesting 100,000 papers took ~30% less in commits of 10,000 papers than
        digest by digest."""
        batch = Batch(self.db, size)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield batch
        finally:
            if self.db.in_transaction:  # not if a failure (a full disk) rolled it back
                self.db.execute("COMMIT")

    def _migrate(self, now: datetime, progress: Callable[[str], None]) -> None:
        with self.transaction():
            exists = self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            if not exists:
                # Statement by statement: executescript() would commit our transaction.
                for statement in _SCHEMA.split(";\n"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("schema_version", str(SCHEMA_VERSION)), ("created", _ts(now))],
                )
                return
            version = int(self.meta("schema_version") or 0)
            if version > SCHEMA_VERSION:
                raise StateError(
                    f"the state was written by a newer paperfeeds (schema {version}, "
                    f"this one knows {SCHEMA_VERSION}); upgrade paperfeeds",
                    file=str(self.path),
                )
            # Migrations, each bumping schema_version.
            if version < 2:
                self.db.execute(
                    "CREATE TABLE topic_sizes (topic_id TEXT PRIMARY KEY, n INTEGER NOT NULL)"
                )
                self.db.execute(
                    "INSERT INTO topic_sizes SELECT topic_id, count(*) FROM members"
                    " GROUP BY topic_id"
                )
                self.set_meta("schema_version", "2")
            if version < 3:  # members_order covers paper_id (a few seconds a million rows)
                progress("upgrading the state: rebuilding the index of topic memberships")
                self.db.execute("DROP INDEX members_order")
                self.db.execute(_MEMBER_INDEXES["members_order"])
                self.set_meta("schema_version", "3")
            if version < 4:
                progress("upgrading the state: papers whose titles hold symbols such as ≥ or +")
                self._rekey_symbol_titles()
                self.set_meta("schema_version", "4")

    def _rekey_symbol_titles(self) -> None:
        """Give the papers whose titles hold a title symbol (`≥`, `≠`, `+`, `#`...) the ids
        their titles have now that the symbols tell titles apart (see text.title_key); the
        ids of all other papers are unchanged. Their pages and feeds are rendered again."""
        from feeds.text import has_title_symbol, paper_id

        moved = []
        for old, title in self.db.execute("SELECT paper_id, title FROM papers"):
            if has_title_symbol(title) and (new := paper_id(title)) != old:
                moved.append((new, old))
        for new, old in moved:
            if self.db.execute("SELECT 1 FROM papers WHERE paper_id = ?", (new,)).fetchone():
                continue  # cannot happen: no stored key held a symbol
            for table in ("papers", "sightings", "links", "lookups", "members"):
                self.db.execute(f"UPDATE {table} SET paper_id = ? WHERE paper_id = ?", (new, old))
            self.db.execute("DELETE FROM dirty WHERE kind = 'paper' AND id = ?", (old,))
            self._touch_paper(new)

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def created(self) -> datetime:
        return parse_ts(self.meta("created") or "1970-01-01T00:00:00+00:00")

    # -- digests ------------------------------------------------------------------------

    def digest_status(self, digest_hash: str) -> str | None:
        row = self.db.execute(
            "SELECT status FROM digests WHERE hash = ?", (digest_hash,)
        ).fetchone()
        return None if row is None else str(row[0])

    def add_digest(
        self,
        digest_hash: str,
        name: str,
        now: datetime,
        *,
        status: str,
        reason: str | None = None,
        venue: str | None = None,
        papers: int = 0,
        diagnostics: Sequence[Diagnostic] = (),
    ) -> None:
        self.db.execute(
            "INSERT INTO digests VALUES (?, ?, ?, ?, ?, ?, ?)",
            (digest_hash, name, _ts(now), status, reason, venue, papers),
        )
        self.db.executemany(
            "INSERT INTO diagnostics VALUES (?, ?, ?, ?)",
            [(digest_hash, d.file, d.line, d.message) for d in diagnostics],
        )

    def rejected(self) -> list[tuple[str, str, str]]:
        """Return (name, when, reason) of every rejected digest, newest first."""
        rows = self.db.execute(
            "SELECT name, seen, reason FROM digests WHERE status = 'rejected' ORDER BY seen DESC"
        )
        return [(str(n), str(s), str(r)) for n, s, r in rows]

    def diagnostics(self) -> list[Diagnostic]:
        from feeds.model import Diagnostic

        rows = self.db.execute("SELECT file, line, message FROM diagnostics ORDER BY rowid")
        return [Diagnostic(str(f), int(n), str(m)) for f, n, m in rows]

    # -- papers -------------------------------------------------------------------------

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
        ids = [paper.paper_id for _line, paper in papers]
        known: set[str] = set()
        for chunk, among in _chunks(ids):
            rows = self.db.execute(f"SELECT paper_id FROM papers WHERE paper_id IN {among}", chunk)
            known.update(pid for (pid,) in rows)
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
            "INSERT OR IGNORE INTO sightings VALUES (?, ?, ?)",
            [(paper.paper_id, digest_hash, line) for line, paper in papers],
        )
        if new:
            when = _ts(now)
            self.db.executemany(_INSERT_PAPER, [(*_paper_row(p), when, when) for p in new])
            # Their pages and the `all` feed; a new paper is in no topic yet (see _touch_paper).
            self.db.executemany(_TOUCH, [("paper", p.paper_id) for p in new])
            self.touch("topic", "all")
            counts["new"] = len(new)
        from feeds.model import Stored, other_authors

        collisions: list[tuple[int, Paper, Paper]] = []
        for line, paper in later:
            only_there = reread.pop(paper.paper_id, None)
            result, old = self._merge(paper, now, only_there)
            counts[result] += 1
            if only_there is None and other_authors(old, paper):
                collisions.append((line, old, paper))
        return Stored(counts, tuple(collisions), alone)

    def _reread(self, ids: Sequence[str], replaces: str, digest_hash: str) -> dict[str, bool]:
        """Return, for the papers of `ids` that the replaced reading held, whether no other
        digest holds them; that reading gives way to this one."""
        held: dict[str, bool] = {}
        for chunk, among in _chunks(ids):
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

    def _merge(self, paper: Paper, now: datetime, only_there: bool | None) -> tuple[str, Paper]:
        """Merge what a digest says of a known paper into it (`only_there`: a new reading of
        the file it came from, see put_papers); return 'changed' or 'same', and the paper
        as it was before."""
        from feeds.model import merge, reread

        old = self.paper(paper.paper_id)
        assert old is not None  # known: put_papers looked
        if only_there is None:
            merged = merge(old, paper)
        else:
            merged = reread(old, paper, only_there=only_there)
        if merged == old:
            return "same", old
        self.db.execute(
            "UPDATE papers SET title = ?, title_zh = ?, authors = ?, institutions = ?,"
            " summary = ?, comments = ?, journal_ref = ?, venue = ?, changed = ?, unmatched = 1"
            " WHERE paper_id = ?",
            (*_paper_row(merged)[1:], _ts(now), paper.paper_id),
        )
        self._touch_paper(paper.paper_id)
        return "changed", old

    def paper(self, paper_id: str) -> Paper | None:
        row = self.db.execute(
            f"SELECT {_PAPER_COLS} FROM papers WHERE paper_id = ?", (paper_id,)
        ).fetchone()
        return None if row is None else _paper_from(row)

    def papers(self, paper_ids: Iterable[str] | None = None) -> Iterator[Paper]:
        """Yield papers in arrival order: all of them, or those with the given ids."""
        if paper_ids is None:
            rows = self.db.execute(f"SELECT {_PAPER_COLS} FROM papers ORDER BY seq")
            for row in rows:
                yield _paper_from(row)
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
            f"SELECT seq, {_PAPER_COLS} FROM papers WHERE seq >= ? AND seq < ?{which} ORDER BY seq",
            (first, end),
        )
        for row in rows:
            yield row[0], _paper_from(row[1:])

    def has_unmatched(self) -> bool:
        """Return True when papers wait to be matched against the topics.

        Kept in the database rather than in memory, so that papers ingested by a run that
        died before matching are matched by the next run.
        """
        return (
            self.db.execute("SELECT 1 FROM papers WHERE unmatched LIMIT 1").fetchone() is not None
        )

    def mark_matched(self) -> None:
        self.db.execute("UPDATE papers SET unmatched = 0 WHERE unmatched")

    def paper_count(self) -> int:
        # Papers are never removed and seq is AUTOINCREMENT (a rolled-back insert gives its
        # number back), so the last seq is the count: one index lookup, not a table scan.
        return int(self.db.execute("SELECT coalesce(max(seq), 0) FROM papers").fetchone()[0])

    def add_links(self, paper_id: str, links: Sequence[Link], *, only: bool = False) -> int:
        """Add links not yet known for a paper; return how many.

        Never removing any, unless `only`: then the paper's links found in digests are
        these alone (its digest was read again; the first reading may have cut a URL)."""
        if only:
            urls = [link.url for link in links]
            gone = self.db.execute(
                f"DELETE FROM links WHERE paper_id = ? AND source = 'digest'"
                f" AND url NOT IN ({','.join('?' * len(urls))})",
                (paper_id, *urls),
            )
            if gone.rowcount:
                self._touch_paper(paper_id)
        if not links:
            return 0
        start = self.db.execute(
            "SELECT coalesce(max(position) + 1, 0) FROM links WHERE paper_id = ?", (paper_id,)
        ).fetchone()[0]
        added = 0
        for link in links:
            cur = self.db.execute(
                "INSERT OR IGNORE INTO links (paper_id, url, kind, source, position)"
                " VALUES (?, ?, ?, ?, ?)",
                (paper_id, link.url, link.kind, link.source, start + added),
            )
            added += cur.rowcount
        if added:
            self._touch_paper(paper_id)
        return added

    def due_urls(self, now: datetime) -> list[str]:
        """Return the URLs never checked or due again, never-checked first."""
        rows = self.db.execute(
            "SELECT DISTINCT l.url, c.due FROM links l LEFT JOIN url_checks c ON c.url = l.url"
            " WHERE c.due IS NULL OR c.due <= ? ORDER BY c.due IS NOT NULL, c.due, l.url",
            (_ts(now),),
        )
        return [str(r[0]) for r in rows]

    def url_check(self, url: str) -> tuple[int, datetime | None]:
        """Return (failures so far, since when the name has not resolved) for a URL."""
        row = self.db.execute(
            "SELECT failures, dns_failing_since FROM url_checks WHERE url = ?", (url,)
        ).fetchone()
        if row is None:
            return 0, None
        return int(row[0]), parse_ts(row[1]) if row[1] else None

    def put_check(
        self,
        url: str,
        status: str,
        http_status: int | None,
        final_url: str | None,
        note: str | None,
        now: datetime,
        due: datetime,
        failures: int,
        dns_failing_since: datetime | None,
    ) -> bool:
        """Record a check; return True when what a reader sees (status, target) changed."""
        old = self.db.execute(
            "SELECT status, final_url, note FROM url_checks WHERE url = ?", (url,)
        ).fetchone()
        self.db.execute(
            "INSERT OR REPLACE INTO url_checks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (url, status, http_status, final_url, note, _ts(now), _ts(due), failures,
             _ts(dns_failing_since) if dns_failing_since else None),
        )  # fmt: skip
        changed = old is None or tuple(old) != (status, final_url, note)
        if changed:
            for (pid,) in self.db.execute("SELECT paper_id FROM links WHERE url = ?", (url,)):
                self._touch_paper(str(pid))
        return changed

    def link_health(self, now: datetime | None = None) -> dict[str, int]:
        """Return the number of links per status (and `due`: to check on the next run)."""
        rows = self.db.execute(
            "SELECT coalesce(c.status, 'unchecked'), count(*) FROM links l"
            " LEFT JOIN url_checks c ON c.url = l.url GROUP BY 1 ORDER BY 1"
        )
        health = {str(s): int(n) for s, n in rows}
        if now is not None:
            health["due"] = len(self.due_urls(now))
        return health

    def papers_to_look_up(self, source: str, now: datetime, limit: int) -> list[str]:
        """Return ids of papers without a code link that `source` has not been asked about
        (or is due to be asked again), newest first."""
        rows = self.db.execute(
            "SELECT p.paper_id FROM papers p"
            " LEFT JOIN lookups k ON k.paper_id = p.paper_id AND k.source = ?"
            " WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.paper_id = p.paper_id"
            "                   AND l.kind = 'code')"
            " AND (k.paper_id IS NULL OR (k.due IS NOT NULL AND k.due <= ?))"
            " ORDER BY k.paper_id IS NOT NULL, p.seq DESC LIMIT ?",
            (source, _ts(now), limit),
        )
        return [str(r[0]) for r in rows]

    def put_lookup(
        self, paper_id: str, source: str, now: datetime, due: datetime | None, found: bool,
        note: str | None = None,
    ) -> None:  # fmt: skip
        self.db.execute(
            "INSERT OR REPLACE INTO lookups VALUES (?, ?, ?, ?, ?, ?)",
            (paper_id, source, _ts(now), _ts(due) if due else None, int(found), note),
        )

    def lookup_counts(self) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT source || ' ' || CASE WHEN found THEN 'found' WHEN note IS NOT NULL"
            " THEN 'failed' ELSE 'not found' END,"
            " count(*) FROM lookups GROUP BY 1 ORDER BY 1"
        )
        return {str(k): int(n) for k, n in rows}

    # -- topics and memberships ---------------------------------------------------------

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

    def set_member(self, topic_id: str, paper_id: str, matched: str, now: datetime) -> bool:
        """Record that a paper is in a topic with these hits (see encode_hits), keeping its
        entry date; True if it is new."""
        row = self.db.execute(
            "SELECT matched FROM members WHERE topic_id = ? AND paper_id = ?", (topic_id, paper_id)
        ).fetchone()
        if row is None:
            cursor = self.db.execute(
                "INSERT INTO members SELECT ?, ?, ?, seq, ? FROM papers WHERE paper_id = ?",
                (topic_id, paper_id, _ts(now), matched, paper_id),
            )
            self._resize(topic_id, cursor.rowcount)
            self.touch("paper", paper_id)
            self.touch("topic", topic_id)
            return True
        if row[0] != matched:
            self.db.execute(
                "UPDATE members SET matched = ? WHERE topic_id = ? AND paper_id = ?",
                (matched, topic_id, paper_id),
            )
            self.touch("paper", paper_id)
            self.touch("topic", topic_id)
        return False

    @contextmanager
    def bulk_members(self) -> Iterator[None]:
        """Insert many memberships into an empty members table (a first build): its
        secondary indexes are dropped and built once after, by sorting, instead of being
        kept up to date row by row with writes all over indexes far larger than the page
        cache. Within the caller's transaction: a run that dies keeps them."""
        if self.db.execute("SELECT 1 FROM members LIMIT 1").fetchone() is not None:
            yield
            return
        for name in _MEMBER_INDEXES:
            self.db.execute(f"DROP INDEX {name}")
        # The primary key's index too is larger than the cache from a few hundred thousand
        # papers on, and each batch of memberships lands all over it: they are gathered in
        # a table of the connection's own, without index, and go into members at the end
        # in its order (matching in one process: 1.6 s less at 100,000 papers, 2.9 s at
        # 300,000; the index is several times the cache at a million).
        self.db.execute("DROP TABLE IF EXISTS temp.members_bulk")
        self.db.execute("CREATE TEMP TABLE members_bulk AS SELECT * FROM members WHERE 0")
        self._into = "temp.members_bulk"
        try:
            yield
        finally:
            self._into = "members"
        self.db.execute(
            "INSERT INTO members SELECT * FROM temp.members_bulk ORDER BY topic_id, paper_id"
        )
        self.db.execute("DROP TABLE temp.members_bulk")
        for sql in _MEMBER_INDEXES.values():
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
        when = _ts(now)
        by_topic: dict[str, list[tuple[str, str, str, int, str]]] = {}
        for tid, pid, seq, matched in rows:
            by_topic.setdefault(tid, []).append((tid, pid, when, seq, matched))
        # One statement for the whole batch, in key order (topic, paper: the primary key's),
        # rather than one per topic: a batch spans a thousand topics.
        ordered = [row for tid in sorted(by_topic) for row in sorted(by_topic[tid])]
        cursor = self.db.executemany(
            f"INSERT OR IGNORE INTO {self._into} VALUES (?, ?, ?, ?, ?)", ordered
        )
        if cursor.rowcount == len(ordered):
            self.db.executemany(_RESIZE, [(tid, len(group)) for tid, group in by_topic.items()])
        else:  # some were there already: count those topics again
            self.db.executemany(
                "INSERT OR REPLACE INTO topic_sizes"
                " SELECT ?, count(*) FROM members WHERE topic_id = ?",
                [(tid, tid) for tid in by_topic],
            )
        self.db.executemany(
            _TOUCH,
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
        for chunk, among in _chunks(ids):
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
        sql = _ROWS + " WHERE m.topic_id = ?"
        newest_first = sql + " ORDER BY m.entered DESC, m.seq LIMIT ? OFFSET ?"
        if offset is None:
            return self.db.execute(newest_first, (topic_id, limit, 0)).fetchall()
        if count is not None and 0 <= count - offset - limit < offset:
            return self.db.execute(
                newest_first, (topic_id, limit, count - offset - limit)
            ).fetchall()
        sql += " ORDER BY m.entered, m.seq DESC LIMIT ? OFFSET ?"
        return self.db.execute(sql, (topic_id, limit, offset)).fetchall()[::-1]

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
        for chunk, among in _chunks(paper_ids):
            rows = self.db.execute(
                _ROWS + f" WHERE m.topic_id = ? AND m.paper_id IN {among}", (topic_id, *chunk)
            )
            found.update((row[0], row) for row in rows)
        return found

    def topic_parts(
        self, topic_id: str, size: int, parts: int
    ) -> Iterator[tuple[int, list[ListRow]]]:
        """Yield the first `parts` archive parts of a topic's reading list: (k, the rows at
        oldest-first positions (k-1)*size.., newest first), from one pass over the topic
        (an OFFSET per part would scan the topic again for each: quadratic in its size)."""
        cursor = self.db.execute(
            _ROWS + " WHERE m.topic_id = ? ORDER BY m.entered, m.seq DESC",
            (topic_id,),
        )
        for k in range(1, parts + 1):
            rows = cursor.fetchmany(size)
            if not rows:
                break
            yield k, rows[::-1]
        cursor.close()

    def topic_items(
        self, topic_id: str, limit: int | None = None
    ) -> Iterator[tuple[Paper, datetime, tuple[Hit, ...]]]:
        """Yield a topic's papers newest first (digest order among equals), with entry
        dates and hits; read as they are used, so a huge topic does not fill memory."""
        sql = _ITEMS + " WHERE m.topic_id = ? ORDER BY m.entered DESC, m.seq"
        args: tuple[Any, ...] = (topic_id,)
        if limit is not None:
            sql += " LIMIT ?"
            args += (limit,)
        for row in self.db.execute(sql, args):
            yield _paper_from(row[:-2]), parse_ts(row[-2]), _hits(row[-1])

    def topic_heads(self, topic_id: str, limit: int) -> list[tuple[str, datetime]]:
        """Return (paper id, entry date) of a topic's newest `limit` papers, newest first:
        what says which feed items a topic has, from the index alone."""
        rows = self.db.execute(
            "SELECT paper_id, entered FROM members WHERE topic_id = ?"
            " ORDER BY entered DESC, seq LIMIT ?",
            (topic_id, limit),
        )
        return [(str(pid), parse_ts(entered)) for pid, entered in rows]

    def topic_items_of(
        self, topic_id: str, paper_ids: Sequence[str]
    ) -> dict[str, tuple[Paper, datetime, tuple[Hit, ...]]]:
        """Return some of a topic's papers with their entry dates and hits, by paper id."""
        found = {}
        for chunk, among in _chunks(paper_ids):
            rows = self.db.execute(
                _ITEMS + f" WHERE m.topic_id = ? AND m.paper_id IN {among}", (topic_id, *chunk)
            )
            for row in rows:
                found[row[0]] = (_paper_from(row[:-2]), parse_ts(row[-2]), _hits(row[-1]))
        return found

    def all_items(self, limit: int | None = None) -> Iterator[tuple[Paper, datetime]]:
        """Yield every paper newest first, with when it was first seen."""
        sql = f"SELECT {_PAPER_COLS}, first_seen FROM papers ORDER BY first_seen DESC, seq"
        rows = self.db.execute(sql + " LIMIT ?", (limit,)) if limit else self.db.execute(sql)
        for row in rows:
            yield _paper_from(row[:-1]), parse_ts(row[-1])

    def links_of(self, paper_ids: Iterable[str]) -> dict[str, tuple[Link, ...]]:
        """Return the links (with their latest check) of some papers."""
        from feeds.model import Link

        ids = list(paper_ids)
        found: dict[str, list[Link]] = {pid: [] for pid in ids}
        for chunk, among in _chunks(ids):
            rows = self.db.execute(
                "SELECT l.paper_id, l.url, l.kind, l.source, coalesce(c.status, 'unchecked'),"
                " c.final_url, c.http_status, c.note FROM links l"
                " LEFT JOIN url_checks c ON c.url = l.url"
                f" WHERE l.paper_id IN {among} ORDER BY l.paper_id, l.position",
                chunk,
            )
            for pid, *link in rows:
                found[pid].append(Link(*link))
        return {pid: tuple(links) for pid, links in found.items()}

    def seq_ranges(self, size: int, *, unmatched_only: bool = False) -> list[tuple[int, int, int]]:
        """Split the papers (all, or those waiting to be matched), in arrival order, into
        ranges of `size`: (first seq, the seq after the last, how many papers) each."""
        which = "WHERE unmatched" if unmatched_only else ""
        rows = self.db.execute(
            "SELECT seq, n FROM (SELECT seq, row_number() OVER (ORDER BY seq) - 1 AS n,"
            f" count(*) OVER () AS total FROM papers {which})"
            " WHERE n % ? = 0 OR n = total - 1",
            (size,),
        ).fetchall()
        if not rows:
            return []
        last_seq, last_n = rows[-1]
        starts = [(int(seq), int(n)) for seq, n in rows if n % size == 0]
        ends = [(seq, n) for seq, n in starts[1:]] + [(int(last_seq) + 1, int(last_n) + 1)]
        return [(a, b, m - n) for (a, n), (b, m) in zip(starts, ends, strict=True)]

    def paper_pages(
        self,
        paper_ids: Sequence[str] = (),
        *,
        seqs: tuple[int, int] | None = None,
        chunk: int = 500,
    ) -> Iterator[tuple[Paper, datetime, tuple[Link, ...], list[tuple[str, tuple[Hit, ...]]]]]:
        """Yield what a paper's page shows: the paper, when first seen, its links and its
        topics with hits; for the given papers, or those whose arrival order is in the
        range `seqs` [first, last) (in that order). Read a chunk at a time: three queries
        per chunk instead of four per paper."""
        cols = _PAPER_COLS + ", first_seen"
        if seqs is not None:
            cursor = self.db.execute(
                f"SELECT {cols} FROM papers WHERE seq >= ? AND seq < ? ORDER BY seq", seqs
            )
            batches: Iterator[list[Any]] = iter(lambda: cursor.fetchmany(chunk), [])
        else:
            batches = (
                self.db.execute(
                    f"SELECT {cols} FROM papers WHERE paper_id IN ({','.join('?' * len(ids))})"
                    " ORDER BY paper_id",
                    ids,
                ).fetchall()
                for ids in (paper_ids[i : i + chunk] for i in range(0, len(paper_ids), chunk))
            )
        for rows in batches:
            ids = [row[0] for row in rows]
            links = self.links_of(ids)
            topics: dict[str, list[tuple[str, tuple[Hit, ...]]]] = {pid: [] for pid in ids}
            members = self.db.execute(
                "SELECT paper_id, topic_id, matched FROM members"
                f" WHERE paper_id IN ({','.join('?' * len(ids))}) ORDER BY paper_id, topic_id",
                ids,
            )
            for pid, topic_id, matched in members:
                topics[pid].append((topic_id, _hits(matched)))
            for row in rows:
                pid = row[0]
                yield _paper_from(row[:-1]), parse_ts(row[-1]), links[pid], topics[pid]

    # -- what to publish again ------------------------------------------------------------

    def touch(self, kind: str, item_id: str) -> None:
        """Mark a paper page or a topic's files (`all` too) to be rendered again."""
        self.db.execute(_TOUCH, (kind, item_id))

    def _touch_paper(self, paper_id: str) -> None:
        """A paper's content changed: its page, the `all` feed and its topics' feeds."""
        self.touch("paper", paper_id)
        self.touch("topic", "all")
        for (tid,) in self.db.execute(
            "SELECT topic_id FROM members WHERE paper_id = ?", (paper_id,)
        ):
            self.touch("topic", str(tid))

    DIRTY_KINDS = ("paper", "topic", "dropped", "archive")

    def dirty(self) -> dict[str, set[str]]:
        """Return what must be rendered again, by kind: {"paper": ids, "topic": ids, ...}."""
        out: dict[str, set[str]] = {kind: set() for kind in self.DIRTY_KINDS}
        for kind, item_id in self.db.execute("SELECT kind, id FROM dirty"):
            out[str(kind)].add(str(item_id))
        return out

    def clear_dirty(self) -> None:
        self.db.execute("DELETE FROM dirty")

    def topic_looks(self) -> dict[str, str]:
        rows = self.db.execute("SELECT topic_id, looks FROM topics")
        return {str(t): str(x) for t, x in rows}

    def set_topic_looks(self, topic_id: str, looks: str) -> None:
        self.db.execute("UPDATE topics SET looks = ? WHERE topic_id = ?", (looks, topic_id))
        self.touch("topic", topic_id)
        self.db.execute(  # its papers' pages name the topic
            "INSERT OR IGNORE INTO dirty SELECT 'paper', paper_id FROM members WHERE topic_id = ?",
            (topic_id,),
        )

    # -- inbox files --------------------------------------------------------------------

    def known_file(self, path: str, size: int, mtime_ns: int) -> bool:
        """Return True when this file was read before and has not changed since."""
        if self._files is None:  # one query for a whole inbox, not one per file
            rows = self.db.execute("SELECT path, size, mtime_ns FROM files")
            self._files = {p: (int(n), int(t)) for p, n, t in rows}
        return self._files.get(_file_key(path)) == (size, mtime_ns)

    def file_digest(self, path: str) -> str | None:
        """Return the hash of the content this file had when it was last read, or None."""
        row = self.db.execute("SELECT hash FROM files WHERE path = ?", (_file_key(path),))
        found = row.fetchone()
        return None if found is None else str(found[0])

    def put_file(self, path: str, size: int, mtime_ns: int, digest_hash: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?)",
            (_file_key(path), size, mtime_ns, digest_hash),
        )

    def member_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT topic_id, n FROM topic_sizes WHERE n > 0")
        return {str(t): int(n) for t, n in rows}

    # -- remote sources -----------------------------------------------------------------

    def source(self, url: str) -> SourceState:
        from feeds.model import SourceState

        row = self.db.execute(
            "SELECT etag, last_modified, last_ok, last_change, failures, next_try, error"
            " FROM sources WHERE url = ?",
            (url,),
        ).fetchone()
        if row is None:
            return SourceState(url)
        etag, modified, ok, change, failures, next_try, error = row
        return SourceState(
            url, etag, modified, _dt(ok), _dt(change), int(failures), _dt(next_try), error
        )

    def put_source(self, s: SourceState) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (s.url, s.etag, s.last_modified, _opt_ts(s.last_ok), _opt_ts(s.last_change),
             s.failures, _opt_ts(s.next_try), s.error),
        )  # fmt: skip

    def sources(self) -> list[SourceState]:
        rows = self.db.execute("SELECT url FROM sources ORDER BY url")
        return [self.source(str(r[0])) for r in rows]

    # -- runs ---------------------------------------------------------------------------

    def start_run(self, now: datetime) -> int:
        cur = self.db.execute("INSERT INTO runs (started) VALUES (?)", (_ts(now),))
        return int(cur.lastrowid or 0)

    def finish_run(self, run_id: int, now: datetime, summary: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE runs SET finished = ?, summary = ? WHERE id = ?",
            (_ts(now), json.dumps(summary, ensure_ascii=False, sort_keys=True), run_id),
        )

    def last_run(self) -> tuple[str, str | None, dict[str, Any]] | None:
        row = self.db.execute(
            "SELECT started, finished, summary FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        return str(row[0]), row[1], json.loads(row[2]) if row[2] else {}

    def counts(self) -> dict[str, int]:
        q = {
            "digests": "SELECT count(*) FROM digests WHERE status = 'ok'",
            "rejected": "SELECT count(*) FROM digests WHERE status = 'rejected'",
            "papers": "SELECT count(*) FROM papers",
            "links": "SELECT count(*) FROM links",
            "record_problems": "SELECT count(*) FROM diagnostics",
        }
        return {k: int(self.db.execute(sql).fetchone()[0]) for k, sql in q.items()}


class Batch:
    """The transaction of Store.batched, committed as its weight grows."""

    def __init__(self, db: sqlite3.Connection, size: int) -> None:
        self._db, self._size, self._weight = db, size, 0

    def done(self, weight: int) -> None:
        """Count a finished transaction's weight (say, its papers); commit if it is time."""
        self._weight += weight
        if self._weight >= self._size:
            self._db.execute("COMMIT")
            self._db.execute("BEGIN IMMEDIATE")
            self._weight = 0


def _paper_row(p: Paper) -> tuple[Any, ...]:
    # Institutions field by field: asdict's deep copy costs more than the rest of the row.
    institutions = [{"name": i.name, "name_zh": i.name_zh} for i in p.institutions]
    return (
        p.paper_id, p.title, p.title_zh,
        _json(list(p.authors)),
        _json(institutions),
        p.summary, p.comments, p.journal_ref, p.venue,
    )  # fmt: skip


def encode_hits(hits: Sequence[Hit]) -> str:
    """Return a membership's hits as the state stores them: JSON [[term, field], ...]."""
    return _json([[h.term, h.field] for h in hits])


@lru_cache(maxsize=65536)
def _hits(matched: str) -> tuple[Hit, ...]:
    """Decode a membership's hits; memberships mostly share them (a venue's, say)."""
    from feeds.model import Hit

    return tuple(Hit(t, f) for t, f in json.loads(matched))


def _paper_from(row: Sequence[Any]) -> Paper:
    from feeds.model import Institution, Paper  # ~1 us a row: <1% of reading one

    pid, title, title_zh, authors, institutions, summary, comments, journal_ref, venue = row
    return Paper(
        paper_id=pid,
        title=title,
        title_zh=title_zh,
        authors=tuple(json.loads(authors)),
        institutions=tuple(Institution(**i) for i in json.loads(institutions)),
        summary=summary,
        comments=comments,
        journal_ref=journal_ref,
        venue=venue,
    )
