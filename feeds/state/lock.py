"""One publisher at a time, released if the process dies: an OS file lock next to a SQLite
state; a session-level advisory lock of a PostgreSQL state (watchers on several machines
take turns; the lock ends with the session, so with a process that dies or a machine that
is cut off, once the server sees the connection gone)."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING

from feeds.errors import LockHeld, StateError

if TYPE_CHECKING:
    from feeds.state._pg import PgConnection

# paperfeeds' lock in a PostgreSQL database: an arbitrary pair of keys (advisory locks are
# per database; the schema's own is (2081, 2), see feeds.state._schema).
_KEYS = (2081, 1)
_HOLDER = (
    "SELECT a.application_name, host(a.client_addr), a.backend_start FROM pg_locks l"
    " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND l.classid = ? AND l.objid = ? AND l.objsubid = 2"
)


@contextmanager
def exclusive(state: Path | str, wait: float = 30.0) -> Iterator[None]:
    """Hold the lock of a state (a SQLite file, or a PostgreSQL URL); wait up to `wait`
    seconds, then say who holds it."""
    if isinstance(state, str):
        with _advisory(state, wait):
            yield
        return
    path = state.with_name(state.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        message = f"cannot create its lock file {path}: {e.strerror}"
        raise StateError(message, file=str(state)) from e

    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                    raise LockHeld(
                        f"another paperfeeds process (pid {holder}) is publishing with this "
                        f"state; waited {wait:.0f}s",
                        file=str(state),
                    ) from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def _advisory(url: str, wait: float) -> Iterator[None]:
    """Hold paperfeeds' advisory lock in a PostgreSQL state, on a connection of its own
    (named for this machine and process: see feeds.state._pg.APPLICATION)."""
    from feeds.state._pg import PgConnection, shown

    conn = PgConnection(url)
    try:
        # The lock lives as long as this idle session: a server's idle_session_timeout
        # (PostgreSQL 14 on) would end it, and another machine would publish meanwhile.
        with suppress(StateError):
            conn.execute("SET idle_session_timeout = 0")
        deadline = time.monotonic() + wait
        while not _took(conn):
            if time.monotonic() >= deadline:
                raise LockHeld(
                    f"another paperfeeds process ({_holder_of(conn) or 'gone meanwhile'}) is"
                    f" publishing with this state; waited {wait:.0f}s",
                    file=shown(url),
                )
            time.sleep(0.2)
        yield
    finally:
        conn.close()  # the session ends: its lock is released


def holder(state: Path | str) -> str | None:
    """Return who holds the lock of a state now ("paperfeeds on HOST (pid N) from ADDRESS
    since ..."), or None when nobody does."""
    if isinstance(state, str):
        from feeds.state._pg import PgConnection

        conn = PgConnection(state)
        try:
            return _holder_of(conn)
        finally:
            conn.close()
    path = state.with_name(state.name + ".lock")
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None  # never locked
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        pid = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        return f"paperfeeds (pid {pid}) on this machine"
    finally:
        os.close(fd)


def _took(conn: PgConnection) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(?, ?)", _KEYS).fetchone()
    return bool(row and row[0])


def _holder_of(conn: PgConnection) -> str | None:
    row = conn.execute(_HOLDER, _KEYS).fetchone()
    if row is None:
        return None
    # Another role's session shows no address or start to a role without the right to
    # see them (pg_read_all_stats): said without them.
    name, address, since = row
    where = f" from {address}" if address else ""
    when = f", since {since.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if since else ""
    return f"{name or 'a session of another database role'}{where}{when}"
