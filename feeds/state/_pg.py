"""The state on PostgreSQL (`state: postgresql://user@host:port/db`), through psycopg 3.

The store speaks to SQLite's connection API (execute, executemany, in_transaction); this
is that API on a PostgreSQL connection, so that one set of queries serves both. The
queries are written in the SQL both engines share (ON CONFLICT upserts, TRUE/FALSE,
RETURNING); the one difference left is the placeholder, SQLite's `?` for psycopg's `%s`,
which is swapped here (our queries hold no `?` and no `%` inside string literals).

Transactions are the store's own (BEGIN, SAVEPOINT, COMMIT as statements), as with
sqlite3's `isolation_level=None`: the connection is in autocommit mode outside them.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from feeds.errors import StateError
from feeds.urls import shown_url, userinfo_unclear

if TYPE_CHECKING:
    import psycopg

# What a PostgreSQL state's session shows in pg_stat_activity (and `feeds status` tells of
# the lock's holder): the machine and the process.
APPLICATION = "paperfeeds on {host} (pid {pid})"


_SECRET = re.compile(r"(?i)([?&](?:ssl)?password=)([^&#]*)")  # libpq's parameters


def shown(url: str) -> str:
    """Return the URL as output shows it: without its password (in its user part, or a
    `password=` or `sslpassword=` parameter); one whose user information cannot be told
    apart, or read at all, as its scheme alone (see feeds.urls.shown_url)."""
    said = shown_url(url)
    if said.endswith("://…"):
        return said
    parts = urlsplit(said)
    query = _SECRET.sub(r"\1***", "?" + parts.query)[1:] if parts.query else ""
    return urlunsplit(parts._replace(query=query))


def secrets(url: str) -> list[str]:
    """Return what of a URL must not be shown: its passwords as written and decoded, and
    the URL itself (libpq repeats parts of what it could not read in its messages)."""
    found = [url]
    userinfo = re.match(r"[^:/]+://([^@/?#]*)@", url)
    if userinfo and ":" in userinfo.group(1):
        found.append(userinfo.group(1).partition(":")[2])
    if userinfo_unclear(url):  # all that may be user information, and each piece of it
        span = url.partition("://")[2].rpartition("@")[0]
        found += [span, *(p for p in re.split(r"[@:/?#&]", span) if len(p) >= 3)]
    found += [m.group(2) for m in _SECRET.finditer(url)]
    found += [unquote(x) for x in found[1:]]
    return sorted({x for x in found if x}, key=len, reverse=True)


def redact(text: str, url: str) -> str:
    """Return a message with every secret of the URL (see secrets) replaced."""
    for secret in secrets(url):
        text = text.replace(secret, shown(url) if secret == url else "***")
    return text


# executemany of this many rows or more of a plain INSERT (or one that ignores conflicts)
# goes through COPY: 200,000 memberships of a first build took 3.8 s as prepared
# statements in a pipeline, one a row.
COPY_FROM = 1000
_INSERT = re.compile(
    r"INSERT INTO (\w+)(?: \(([\w, ]+)\))? VALUES \((\?(?:, \?)*)\)( ON CONFLICT DO NOTHING)?"
)


@lru_cache(maxsize=512)
def _sql(query: str) -> str:
    """Return a query with psycopg's placeholders: `%` doubled (a literal for psycopg),
    then each `?` as `%s`."""
    return query.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """A psycopg connection behind the part of sqlite3.Connection the store uses."""

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        try:
            import psycopg
        except ImportError as e:  # pragma: no cover - a dependency; a broken install
            raise StateError(f"a PostgreSQL state needs psycopg: {e}", file=shown(url)) from e
        self._errors: type[Exception] = psycopg.Error
        self._url = url
        self._cursors = 0  # server-side cursors made (their names)
        name = APPLICATION.format(host=socket.gethostname(), pid=os.getpid())
        try:
            self._conn: psycopg.Connection[Any] = psycopg.connect(
                url, autocommit=True, application_name=name[:63], connect_timeout=30
            )
            if read_only:
                self._conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        except psycopg.Error as e:
            said = redact(_said(e), url)
            raise StateError(f"cannot open the state database: {said}", file=shown(url)) from None

    def execute(self, query: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        cursor = self._conn.cursor()
        try:
            try:
                cursor.execute(_sql(query), params)
            except UnicodeEncodeError:  # a lone surrogate (from a name not in UTF-8)
                cursor.execute(_sql(query), [_utf8(p) for p in params])
        except self._errors as e:
            raise _state_error(e, self._url) from None
        return cursor

    def executemany(self, query: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor[Any]:
        cursor = self._conn.cursor()
        rows = list(rows)
        insert = _INSERT.fullmatch(query) if len(rows) >= COPY_FROM else None
        try:
            if insert is not None:
                self._copy(cursor, insert, rows)
            elif rows:  # psycopg refuses none; sqlite3 does nothing
                cursor.executemany(_sql(query), rows)
        except self._errors as e:
            raise _state_error(e, self._url) from None
        return cursor

    def _copy(self, cursor: psycopg.Cursor[Any], insert: re.Match[str], rows: list[Any]) -> None:
        """Insert many rows through COPY: into a temporary table of the target's columns,
        then all at once into the target (where ON CONFLICT DO NOTHING applies, and the
        cursor's rowcount is the rows inserted, as executemany's)."""
        table, columns, marks, conflict = insert.groups()
        if columns is None:  # the first columns, as many as the values
            cursor.execute(f"SELECT * FROM {table} LIMIT 0")
            assert cursor.description is not None
            columns = ", ".join(c.name for c in cursor.description[: marks.count("?")])
        cursor.execute("DROP TABLE IF EXISTS pg_temp.paperfeeds_copy")
        cursor.execute(
            f"CREATE TEMP TABLE paperfeeds_copy AS SELECT {columns} FROM {table} LIMIT 0"
        )
        with cursor.copy(f"COPY paperfeeds_copy ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM paperfeeds_copy{conflict or ''}"
        )
        self._conn.execute("DROP TABLE paperfeeds_copy")  # on another cursor: the rowcount stays

    def stream(self, query: str, params: Sequence[Any] = ()) -> psycopg.ServerCursor[Any]:
        """Run a query whose rows are read a batch at a time (a server-side cursor), not
        all at once as execute's are: a whole topic, or every paper, does not fill this
        process's memory. WITH HOLD: it may be read on after the transaction it began in
        (or, outside one, after its own statement), while other queries run."""
        self._cursors += 1
        cursor = self._conn.cursor(f"paperfeeds_{self._cursors}", withhold=True)
        cursor.itersize = 2000
        try:
            cursor.execute(_sql(query), params)
        except self._errors as e:
            raise _state_error(e, self._url) from None
        return cursor

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self._conn.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self._conn.close()


def _utf8(value: Any) -> Any:
    """Return text as PostgreSQL's text can hold it: what is not UTF-8 written `\\udcXX`
    (SQLite keeps any string; the statement was not sent, so it is sent again so)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


class DatabaseError(StateError):
    """PostgreSQL refused a statement, or the connection was lost."""


def _said(e: Exception) -> str:
    """Return an error's message on one line, in words (without an `[Errno -2]`)."""
    said = re.sub(r"\[Errno -?\d+\] ", "", " ".join(str(e).split()))
    return said or type(e).__name__


def _state_error(e: Exception, url: str) -> DatabaseError:
    # Not chained (`from None`): a traceback printed of it would show the cause's text.
    return DatabaseError(f"the state database: {redact(_said(e), url)}")
