"""The state's tables, and the migrations that bring an older state up to date.

A migration is a function of the database, one per schema version, listed in MIGRATIONS
(as lemon24/reader keeps them): an old state runs those after its version, in order, in
the transaction that opens it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime

from feeds.errors import StateError
from feeds.state._rows import ts

SCHEMA_VERSION = 6

# The secondary indexes of memberships, by name: part of the schema, and dropped and made
# again around a first build's inserts (see Store.bulk_members).
MEMBER_INDEXES = {
    # paper_id last: the newest ids of a topic (a feed's items, a front page's rows) are
    # read from this index alone, not from table rows all over the file.
    "members_order": (
        "CREATE INDEX members_order ON members (topic_id, entered DESC, seq, paper_id)"
    ),
    "members_paper": "CREATE INDEX members_paper ON members (paper_id)",
}

SCHEMA = """
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
    abstract TEXT,                  -- English, from arXiv
    categories TEXT NOT NULL DEFAULT '[]',   -- arXiv's, JSON
    arxiv_id TEXT,
    first_seen TEXT NOT NULL, changed TEXT NOT NULL,
    unmatched INTEGER NOT NULL DEFAULT 1  -- new or changed since topics were last matched
);
CREATE INDEX papers_order ON papers (first_seen DESC, seq);
CREATE INDEX papers_unmatched ON papers (unmatched) WHERE unmatched;
CREATE INDEX papers_arxiv ON papers (arxiv_id) WHERE arxiv_id IS NOT NULL;
CREATE INDEX papers_title_zh ON papers (title_zh) WHERE title_zh IS NOT NULL;
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
-- its other indexes: MEMBER_INDEXES, below
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
CREATE TABLE harvests (            -- arXiv categories: where harvesting stands (arxiv.Cursor)
    category TEXT PRIMARY KEY, cursor TEXT NOT NULL
);
CREATE TABLE alerts (               -- alert destinations: what they were last sent
    key TEXT PRIMARY KEY,           -- a hash of the destination as configured (never the URL)
    shown TEXT NOT NULL,            -- service and host, as output shows it
    watermark TEXT NOT NULL,        -- papers that entered its topics after this are pending
    last_sent TEXT, failures INTEGER NOT NULL DEFAULT 0, next_try TEXT, error TEXT
);
CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT,
    summary TEXT);
CREATE TABLE citation_keys (        -- given once, kept for good (see _keys)
    paper_id TEXT PRIMARY KEY, key TEXT NOT NULL UNIQUE
);
CREATE TABLE published (            -- files a publish builds on, as written (see _published)
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL
);
"""
SCHEMA += "".join(f"{sql};\n" for sql in MEMBER_INDEXES.values())

# The same tables in PostgreSQL's words. Papers' seqs are given by the store (see
# put_papers: a sequence's numbers are lost with a transaction that rolls back, and seqs
# come without gaps); `unmatched` is a boolean (SQLite keeps TRUE and FALSE as 1 and 0);
# diagnostics keep their order in a column SQLite has of itself (rowid); text compares
# and sorts by code point, as in SQLite, whatever the database's locale.
_POSTGRES = (
    ("seq INTEGER PRIMARY KEY AUTOINCREMENT", "seq BIGINT PRIMARY KEY"),
    ("id INTEGER PRIMARY KEY", "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    ("unmatched INTEGER NOT NULL DEFAULT 1", "unmatched BOOLEAN NOT NULL DEFAULT TRUE"),
    (
        "message TEXT NOT NULL\n",
        "message TEXT NOT NULL, rowid INTEGER GENERATED ALWAYS AS IDENTITY\n",
    ),
    (" WITHOUT ROWID", ""),
    ("INTEGER", "BIGINT"),  # sizes and nanosecond times outgrow 32 bits
    ("TEXT", 'TEXT COLLATE "C"'),
)


def postgres_schema() -> str:
    schema = SCHEMA
    for sqlite, postgres in _POSTGRES:
        if sqlite not in schema:  # the SQLite schema changed: say how to write it here
            raise RuntimeError(f"the PostgreSQL schema's words for {sqlite!r} are not used")
        schema = schema.replace(sqlite, postgres)
    return schema


# A transaction's advisory lock while a PostgreSQL state is created or upgraded (two
# commands starting at once on a new database); the pair of keys is arbitrary.
_SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(2081, 2)"


def create_or_migrate(
    db: sqlite3.Connection,
    where: str,
    now: datetime,
    progress: Callable[[str], None],
    *,
    postgres: bool,
) -> None:
    """Create the tables of a new state, or run the migrations an older one needs; within
    the caller's transaction. `where`: the state as messages name it."""
    if postgres:
        db.execute(_SCHEMA_LOCK)
        exists = db.execute("SELECT to_regclass('meta')").fetchone()[0] is not None
    else:
        exists = (
            db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
            is not None
        )
    if not exists:
        # Statement by statement: executescript() would commit the caller's transaction.
        for statement in (postgres_schema() if postgres else SCHEMA).split(";\n"):
            if statement.strip():
                db.execute(statement)
        db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("schema_version", str(SCHEMA_VERSION)), ("created", ts(now))],
        )
        return
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StateError(
            f"the state was written by a newer paperfeeds (schema {version}, "
            f"this one knows {SCHEMA_VERSION}); upgrade paperfeeds",
            file=where,
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[target](db, progress)
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(target),))


def _to_2(db: sqlite3.Connection, progress: Callable[[str], None]) -> None:
    """Members per topic, kept as they change (counting them grew with the history)."""
    db.execute("CREATE TABLE topic_sizes (topic_id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    db.execute("INSERT INTO topic_sizes SELECT topic_id, count(*) FROM members GROUP BY topic_id")


def _to_3(db: sqlite3.Connection, progress: Callable[[str], None]) -> None:
    """members_order covers paper_id (a few seconds a million rows)."""
    progress("upgrading the state: rebuilding the index of topic memberships")
    db.execute("DROP INDEX members_order")
    db.execute(MEMBER_INDEXES["members_order"])


def _to_4(db: sqlite3.Connection, progress: Callable[[str], None]) -> None:
    """Give the papers whose titles hold a title symbol (`≥`, `≠`, `+`, `#`...) the ids
    their titles have now that the symbols tell titles apart (see text.title_key); the ids
    of all other papers are unchanged. Their pages and feeds are rendered again."""
    from feeds.state._touch import touch_paper
    from feeds.text import has_title_symbol, paper_id

    progress("upgrading the state: papers whose titles hold symbols such as ≥ or +")
    moved = []
    for old, title in db.execute("SELECT paper_id, title FROM papers"):
        if has_title_symbol(title) and (new := paper_id(title)) != old:
            moved.append((new, old))
    for new, old in moved:
        if db.execute("SELECT 1 FROM papers WHERE paper_id = ?", (new,)).fetchone():
            continue  # cannot happen: no stored key held a symbol
        for table in ("papers", "sightings", "links", "lookups", "members"):
            db.execute(f"UPDATE {table} SET paper_id = ? WHERE paper_id = ?", (new, old))
        db.execute("DELETE FROM dirty WHERE kind = 'paper' AND id = ?", (old,))
        touch_paper(db, new)


def _to_5(db: sqlite3.Connection, progress: Callable[[str], None]) -> None:
    """Papers from arXiv (an English abstract, categories, the arXiv id), arXiv harvests
    and alert destinations."""
    # Each step only if not done: a state told it is older than it is loses nothing.
    have = {row[1] for row in db.execute("PRAGMA table_info(papers)")}
    for column in ("abstract TEXT", "categories TEXT NOT NULL DEFAULT '[]'", "arxiv_id TEXT"):
        if column.split()[0] not in have:
            db.execute(f"ALTER TABLE papers ADD COLUMN {column}")
    db.execute(
        "CREATE INDEX IF NOT EXISTS papers_arxiv ON papers (arxiv_id) WHERE arxiv_id IS NOT NULL"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS harvests (category TEXT PRIMARY KEY, cursor TEXT NOT NULL)"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS alerts (key TEXT PRIMARY KEY, shown TEXT NOT NULL,"
        " watermark TEXT NOT NULL, last_sent TEXT, failures INTEGER NOT NULL DEFAULT 0,"
        " next_try TEXT, error TEXT)"
    )


def _to_6(db: sqlite3.Connection, progress: Callable[[str], None]) -> None:
    """Citation keys kept in the state (until now each reading list gave its own, so a key
    could name another paper after a rebuild: every paper's page and lists are written
    again once, under the keys the state gives from now on); papers found by their Chinese
    title (a revised English title is the same paper); the stamps of the files a publish
    builds on (none yet: each is rendered anew once)."""
    from feeds.state._touch import TOUCH

    # Keys compare by code point on both engines, as a new state's do (see _POSTGRES):
    # feeds.state._keys finds a base key's suffixed keys as a range.
    text = "TEXT" if isinstance(db, sqlite3.Connection) else 'TEXT COLLATE "C"'
    db.execute(
        f"CREATE TABLE IF NOT EXISTS citation_keys (paper_id {text} PRIMARY KEY,"
        f" key {text} NOT NULL UNIQUE)"
    )
    big = "INTEGER" if isinstance(db, sqlite3.Connection) else "BIGINT"  # nanoseconds
    db.execute(
        f"CREATE TABLE IF NOT EXISTS published (path {text} PRIMARY KEY,"
        f" size {big} NOT NULL, mtime_ns {big} NOT NULL)"
    )
    # A paper under a revised English title is found by its Chinese title (see _papers).
    db.execute(
        "CREATE INDEX IF NOT EXISTS papers_title_zh ON papers (title_zh) WHERE title_zh IS NOT NULL"
    )
    db.executemany(
        TOUCH, [("paper", str(pid)) for (pid,) in db.execute("SELECT paper_id FROM papers")]
    )
    db.executemany(TOUCH, [("topic", str(t)) for (t,) in db.execute("SELECT topic_id FROM topics")])
    db.execute(TOUCH, ("topic", "all"))


# The migration to each version from the one before it. A PostgreSQL state is created at
# version 5 or later: a migration to 6 and on runs on both engines, so it is written in the
# SQL both share and with PostgreSQL's types where it adds columns (see _POSTGRES).
MIGRATIONS: dict[int, Callable[[sqlite3.Connection, Callable[[str], None]], None]] = {
    2: _to_2,
    3: _to_3,
    4: _to_4,
    5: _to_5,
    6: _to_6,
}
