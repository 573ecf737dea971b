"""What came in and what ran: digests (with their record problems), the inbox files read
and remote sources fetched, and the runs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from feeds.state._db import StoreBase, upsert
from feeds.state._rows import opt_dt, opt_ts, parse_ts, ts

if TYPE_CHECKING:
    from feeds.model import Diagnostic, SourceState
    from feeds.state.records import LastRun, Rejected


# PostgreSQL's text holds UTF-8 only: there a file name that is not UTF-8 is kept as this
# mark (which no path of an inbox begins with) and its bytes in hex.
_PG_BYTES = "\x01bytes:"


def _file_key(path: str, postgres: bool) -> str | bytes:
    """Return how the files table knows a path: as text, or, for a name that is not UTF-8
    (lone surrogates, see os.fsdecode), as its bytes: a blob, which equals no text (on
    PostgreSQL, _PG_BYTES and the hex of the bytes)."""
    if path.isascii():
        return path
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return _PG_BYTES + os.fsencode(path).hex() if postgres else os.fsencode(path)
    return path


def _file_path(key: str | bytes) -> str | bytes:
    """Return the path (text, or the bytes of a name that is not UTF-8) a file key keeps."""
    if isinstance(key, str) and key.startswith(_PG_BYTES):
        return bytes.fromhex(key[len(_PG_BYTES) :])
    return key


def _name(name: str) -> str:
    """Return a name as the state's text can hold it: a name that is not UTF-8 with its
    undecodable bytes written `\\udcXX` (for PostgreSQL; SQLite keeps any string)."""
    return name.encode("utf-8", "backslashreplace").decode("utf-8")


class InputsMixin(StoreBase):
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
            (digest_hash, name, ts(now), status, reason, venue, papers),
        )
        # A name that is not UTF-8 made PostgreSQL-safe here: execute() does it alone (see
        # PgConnection.execute), but many rows at once cannot be sent again.
        self.db.executemany(
            "INSERT INTO diagnostics VALUES (?, ?, ?, ?)",
            [(digest_hash, _name(d.file) if self.postgres else d.file, d.line, d.message)
             for d in diagnostics],
        )  # fmt: skip

    def rejected(self, exists: Callable[[str | bytes], bool] | None = None) -> list[Rejected]:
        """Return the rejected digests that still stand, newest first.

        Not those of an inbox file read again since with other content (a file rejected
        while it was being written and ingested whole later, or rejected again: that reading
        is listed); with `exists` (the file system's, given by the caller), not those whose
        files are all gone. A rejected URL, or content no file is known to hold, stands."""
        from feeds.state.records import Rejected

        rows = self.db.execute(
            "SELECT name, seen, reason, hash FROM digests WHERE status = 'rejected'"
            " ORDER BY seen DESC"
        ).fetchall()
        if not rows:
            return []
        holders: dict[str, list[str | bytes]] = {}  # content -> the files that hold it now
        for path, h in self.db.execute(
            "SELECT path, hash FROM files WHERE hash IN"
            " (SELECT hash FROM digests WHERE status = 'rejected')"
        ):
            holders.setdefault(str(h), []).append(_file_path(path))
        out = []
        for name, seen, reason, h in rows:
            paths = holders.get(str(h))
            if paths:
                if exists is not None and not any(exists(p) for p in paths):
                    continue  # deleted
            elif self.file_digest(str(name)) is not None:
                continue  # the file was read again since, with other content
            out.append(Rejected(str(name), parse_ts(seen), str(reason)))
        return out

    def diagnostics(self) -> list[Diagnostic]:
        from feeds.model import Diagnostic

        rows = self.db.execute("SELECT file, line, message FROM diagnostics ORDER BY rowid")
        return [Diagnostic(str(f), int(n), str(m)) for f, n, m in rows]

    def known_file(self, path: str, size: int, mtime_ns: int) -> str | None:
        """Return the hash of this file's content when it was read before and has not
        changed since, else None."""
        if self._files is None:  # one query for a whole inbox, not one per file
            rows = self.db.execute("SELECT path, size, mtime_ns, hash FROM files")
            self._files = {p: (int(n), int(t), str(h)) for p, n, t, h in rows}
        found = self._files.get(_file_key(path, self.postgres))
        return found[2] if found is not None and found[:2] == (size, mtime_ns) else None

    def digest_statuses(self, hashes: Iterable[str]) -> dict[str, str]:
        """Return the status ('ok' or 'rejected') of each of these contents ingested."""
        found: dict[str, str] = {}
        for chunk, among in self.chunks(list(hashes)):
            rows = self.db.execute(f"SELECT hash, status FROM digests WHERE hash IN {among}", chunk)
            found.update((str(h), str(s)) for h, s in rows)
        return found

    def file_digest(self, path: str) -> str | None:
        """Return the hash of the content this file had when it was last read, or None."""
        key = _file_key(path, self.postgres)
        row = self.db.execute("SELECT hash FROM files WHERE path = ?", (key,))
        found = row.fetchone()
        return None if found is None else str(found[0])

    def put_file(self, path: str, size: int, mtime_ns: int, digest_hash: str) -> None:
        self.db.execute(
            upsert("files", "path", "size", "mtime_ns", "hash"),
            (_file_key(path, self.postgres), size, mtime_ns, digest_hash),
        )

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
            url, etag, modified, opt_dt(ok), opt_dt(change), int(failures), opt_dt(next_try), error
        )

    def put_source(self, s: SourceState) -> None:
        self.db.execute(
            upsert("sources", "url", "etag", "last_modified", "last_ok", "last_change", "failures",
                   "next_try", "error"),
            (s.url, s.etag, s.last_modified, opt_ts(s.last_ok), opt_ts(s.last_change),
             s.failures, opt_ts(s.next_try), s.error),
        )  # fmt: skip

    def sources(self) -> list[SourceState]:
        rows = self.db.execute("SELECT url FROM sources ORDER BY url")
        return [self.source(str(r[0])) for r in rows]

    def start_run(self, now: datetime) -> int:
        cur = self.db.execute("INSERT INTO runs (started) VALUES (?) RETURNING id", (ts(now),))
        return int(cur.fetchone()[0])

    def finish_run(self, run_id: int, now: datetime, summary: dict[str, Any]) -> None:
        self.db.execute(
            "UPDATE runs SET finished = ?, summary = ? WHERE id = ?",
            (ts(now), json.dumps(summary, ensure_ascii=False, sort_keys=True), run_id),
        )

    def last_started(self) -> datetime | None:
        """Return when the last run started (read on every run: no record is made)."""
        row = self.db.execute("SELECT started FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else parse_ts(row[0])

    def last_run(self) -> LastRun | None:
        from feeds.state.records import LastRun

        row = self.db.execute(
            "SELECT started, finished, summary FROM runs ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        summary = json.loads(row[2]) if row[2] else {}
        return LastRun(parse_ts(row[0]), opt_dt(row[1]), summary)

    def counts(self) -> dict[str, int]:
        q = {
            "digests": "SELECT count(*) FROM digests WHERE status = 'ok'",
            "rejected": "SELECT count(*) FROM digests WHERE status = 'rejected'",
            "papers": "SELECT count(*) FROM papers",
            "links": "SELECT count(*) FROM links",
            "record_problems": "SELECT count(*) FROM diagnostics",
        }
        return {k: int(self.db.execute(sql).fetchone()[0]) for k, sql in q.items()}
