"""The connection to the state: opening it, transactions, batches of them, the meta table,
and how values are written in its rows (timestamps, id lists)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Self, cast

from feeds.errors import StateError
from feeds.state._rows import parse_ts
from feeds.state._schema import create_or_migrate


def in_list(ids: Sequence[str], postgres: bool) -> tuple[str, Sequence[Any]]:
    """Return the right side of an IN clause for these ids, and its parameters: `(?,?,...)`
    and the ids; on PostgreSQL, the ids as one array (a query of one shape whatever their
    number, parsed and planned once: 500 placeholders cost ~3 ms a query to prepare)."""
    if postgres:
        return "(SELECT unnest(?::text[]))", (list(ids),)
    return f"({','.join('?' * len(ids))})", ids


# Where a state is: a SQLite file, or a PostgreSQL URL (postgresql://user@host:port/db).
Place = Path | str


def upsert(table: str, *columns: str, key: int = 1) -> str:
    """Return the statement that writes a whole row of `table` (its first `key` columns
    are its primary key), replacing the row of the same key: SQLite's INSERT OR REPLACE,
    in the words SQLite and PostgreSQL share."""
    marks = ", ".join("?" * len(columns))
    update = ", ".join(f"{c} = excluded.{c}" for c in columns[key:])
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
        f" ON CONFLICT ({', '.join(columns[:key])}) DO UPDATE SET {update}"
    )


def exists(place: Place) -> bool:
    """Return True when there is a state to read: a SQLite file that exists, or any
    PostgreSQL URL (its database is asked when opened; its tables are made then)."""
    return not isinstance(place, Path) or place.exists()


def place_shown(place: Place) -> str:
    """Return where a state is as output shows it (a URL without its password)."""
    if isinstance(place, Path):
        return str(place)
    from feeds.state._pg import shown as shown_url

    return shown_url(place)


class StoreBase:
    """A connection to the state database; one writer at a time (see feeds.state.lock)."""

    path: Place
    db: sqlite3.Connection
    postgres: bool
    _files: dict[str | bytes, tuple[int, int, str]] | None
    _into: str

    def __init__(
        self, path: Place, now: datetime, progress: Callable[[str], None] = lambda _m: None
    ) -> None:
        """Open (or create) the state; `progress` hears of a long upgrade of an old one."""
        self.path = path
        self._files = None  # see known_file
        self._into = "members"  # where add_members inserts (see bulk_members)
        self.postgres = isinstance(path, str)
        if isinstance(path, str):
            self.db = _postgres(path)
            with self.transaction():
                create_or_migrate(self.db, place_shown(path), now, progress, postgres=True)
            return
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
            with self.transaction():
                create_or_migrate(self.db, str(path), now, progress, postgres=False)
        except sqlite3.DatabaseError as e:
            raise StateError(f"cannot open the state database: {e}", file=str(path)) from e

    @classmethod
    def reader(cls, path: Place) -> Self:
        """Open an existing state to read only: a helper process reads what its parent
        wrote (and, in WAL mode, does not stop it writing)."""
        store = cls.__new__(cls)
        store.path = path
        store._files = None
        store.postgres = isinstance(path, str)
        if isinstance(path, str):
            store.db = _postgres(path, read_only=True)
            return store
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
        self.db.execute(self._begin)
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
        # PostgreSQL aborts a whole transaction at a failed statement (SQLite fails the
        # statement alone): there each transaction is committed as it is done, so that
        # those whole before a failure are kept, as promised.
        batch = Batch(self.db, 0 if self.postgres else size, self._begin)
        self.db.execute(self._begin)
        try:
            yield batch
        finally:
            if self.db.in_transaction:  # not if a failure (a full disk) rolled it back
                self.db.execute("COMMIT")

    @property
    def _begin(self) -> str:
        # SQLite: BEGIN IMMEDIATE takes the write lock up front; a read that later upgrades
        # to a write in WAL mode would otherwise fail at once with "database is locked".
        # PostgreSQL locks rows as they are written (and one run writes: feeds.state.lock).
        return "BEGIN" if self.postgres else "BEGIN IMMEDIATE"

    def _stream(self, query: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run a query whose rows may be many, to read as they come: SQLite's cursors do;
        PostgreSQL's would hold them all in memory at once (see PgConnection.stream)."""
        if self.postgres:
            return cast(sqlite3.Cursor, cast(Any, self.db).stream(query, params))
        return self.db.execute(query, params)

    def chunks(self, ids: Sequence[str]) -> Iterator[tuple[Sequence[Any], str]]:
        """Yield the ids 500 at a time: each chunk's parameters, and the right side of its
        IN clause (see in_list; one query a chunk, not one an id)."""
        for start in range(0, len(ids), 500):
            sql, params = in_list(ids[start : start + 500], self.postgres)
            yield params, sql

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(upsert("meta", "key", "value"), (key, value))

    def created(self) -> datetime:
        return parse_ts(self.meta("created") or "1970-01-01T00:00:00+00:00")


def _postgres(url: str, *, read_only: bool = False) -> sqlite3.Connection:
    """Connect to a PostgreSQL state; typed as the SQLite connection whose API it has."""
    from feeds.state._pg import PgConnection

    return cast(sqlite3.Connection, PgConnection(url, read_only=read_only))


class Batch:
    """The transaction of StoreBase.batched, committed as its weight grows."""

    def __init__(self, db: sqlite3.Connection, size: int, begin: str) -> None:
        self._db, self._size, self._weight, self._begin = db, size, 0, begin

    def done(self, weight: int) -> None:
        """Count a finished transaction's weight (say, its papers); commit if it is time."""
        self._weight += weight
        if self._weight >= self._size:
            self._db.execute("COMMIT")
            self._db.execute(self._begin)
            self._weight = 0
