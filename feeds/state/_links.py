"""Links: a paper's links, one check per URL whatever papers share it, and the lookups
that enrichment made."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from feeds.state._db import in_list, upsert
from feeds.state._dirty import DirtyMixin
from feeds.state._rows import opt_ts, parse_ts, ts

if TYPE_CHECKING:
    from feeds.model import Link
    from feeds.state.records import UrlCheck, UrlHistory


class LinksMixin(DirtyMixin):
    def add_links(self, paper_id: str, links: Sequence[Link], *, only: bool = False) -> int:
        """Add links not yet known for a paper; return how many.

        Never removing any, unless `only`: then the paper's links found in digests are
        these alone (its digest was read again; the first reading may have cut a URL)."""
        if only:
            # None kept is `NOT IN ()`: SQLite takes it, PostgreSQL takes an empty array.
            sql, urls = in_list([link.url for link in links], self.postgres)
            gone = self.db.execute(
                f"DELETE FROM links WHERE paper_id = ? AND source = 'digest' AND url NOT IN {sql}",
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
                "INSERT INTO links (paper_id, url, kind, source, position)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (paper_id, link.url, link.kind, link.source, start + added),
            )
            added += cur.rowcount
        if added:
            self._touch_paper(paper_id)
        return added

    def due_urls(self, now: datetime) -> list[str]:
        """Return the URLs never checked or due again, never-checked first."""
        rows = self.db.execute(
            "SELECT url FROM (SELECT DISTINCT l.url, c.due FROM links l"
            " LEFT JOIN url_checks c ON c.url = l.url WHERE c.due IS NULL OR c.due <= ?) AS d"
            " ORDER BY due IS NOT NULL, due, url",
            (ts(now),),
        )
        return [str(r[0]) for r in rows]

    def url_history(self, url: str) -> UrlHistory:
        """Return what the next check of a URL builds on (failures in a row, since when its
        name has not resolved)."""
        from feeds.state.records import UrlHistory

        row = self.db.execute(
            "SELECT failures, dns_failing_since FROM url_checks WHERE url = ?", (url,)
        ).fetchone()
        if row is None:
            return UrlHistory()
        return UrlHistory(int(row[0]), parse_ts(row[1]) if row[1] else None)

    def put_check(self, c: UrlCheck) -> bool:
        """Record a check; return True when what a reader sees (status, target) changed."""
        old = self.db.execute(
            "SELECT status, final_url, note FROM url_checks WHERE url = ?", (c.url,)
        ).fetchone()
        self.db.execute(
            upsert("url_checks", "url", "status", "http_status", "final_url", "note", "checked",
                   "due", "failures", "dns_failing_since"),
            (c.url, c.status, c.http_status, c.final_url, c.note, ts(c.checked), ts(c.due),
             c.failures, opt_ts(c.dns_failing_since)),
        )  # fmt: skip
        changed = old is None or tuple(old) != (c.status, c.final_url, c.note)
        if changed:
            for (pid,) in self.db.execute("SELECT paper_id FROM links WHERE url = ?", (c.url,)):
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

    def links_of(self, paper_ids: Iterable[str]) -> dict[str, tuple[Link, ...]]:
        """Return the links (with their latest check) of some papers."""
        from feeds.model import Link

        ids = list(paper_ids)
        found: dict[str, list[Link]] = {pid: [] for pid in ids}
        for chunk, among in self.chunks(ids):
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

    def paper_with_doi(self, doi: str) -> str | None:
        """Return the id of the paper that has a doi.org link to this DOI (lower case), if
        any: DOIs are case-insensitive, and only the DOI links are compared (a range of the
        URL index)."""
        for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/",
                       "http://dx.doi.org/"):  # fmt: skip
            row = self.db.execute(
                "SELECT paper_id FROM links WHERE url >= ? AND url < ? AND lower(url) = ?"
                " ORDER BY paper_id LIMIT 1",
                (prefix, prefix[:-1] + "0", prefix + doi),
            ).fetchone()
            if row is not None:
                return str(row[0])
        return None

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
            (source, ts(now), limit),
        )
        return [str(r[0]) for r in rows]

    def put_lookup(
        self, paper_id: str, source: str, now: datetime, due: datetime | None, found: bool,
        note: str | None = None,
    ) -> None:  # fmt: skip
        self.db.execute(
            upsert("lookups", "paper_id", "source", "checked", "due", "found", "note", key=2),
            (paper_id, source, ts(now), ts(due) if due else None, int(found), note),
        )

    def lookup_counts(self) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT source || ' ' || CASE WHEN found = 1 THEN 'found' WHEN note IS NOT NULL"
            " THEN 'failed' ELSE 'not found' END,"
            " count(*) FROM lookups GROUP BY 1 ORDER BY 1"
        )
        return {str(k): int(n) for k, n in rows}
