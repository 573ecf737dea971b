"""Alert destinations: when each last got a message, and which memberships are pending for
it (those that entered its topics after its watermark; nothing else is stored)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from feeds.state._db import StoreBase, in_list, upsert
from feeds.state._rows import hits_from, opt_dt, opt_ts, parse_ts, ts

if TYPE_CHECKING:
    from feeds.state.records import AlertEntry, AlertRecord

_COLUMNS = "key, shown, watermark, last_sent, failures, next_try, error"


def _topics_clause(topic_ids: Sequence[str] | None, postgres: bool) -> tuple[str, tuple[Any, ...]]:
    if topic_ids is None:
        return "", ()
    sql, params = in_list(topic_ids, postgres)  # none: `IN ()`, which PostgreSQL refuses
    return f" AND topic_id IN {sql}", tuple(params)


class AlertsMixin(StoreBase):
    def alert_records(self) -> list[AlertRecord]:
        rows = self.db.execute(f"SELECT {_COLUMNS} FROM alerts ORDER BY shown, key")
        return [_record(row) for row in rows]

    def alert_record(
        self, key: str, shown: str, now: datetime, *, refresh: bool = True
    ) -> AlertRecord:
        """Return a destination's record; a destination seen for the first time starts
        with the cycle at `now`: what entered its topics in that cycle is sent to it, what
        entered before is not (no flood of history). `refresh`: how it is shown is `shown`
        from now on (a stand-in, when its URL cannot be read, is not)."""
        # A cycle's papers entered at its time, to the second, and each cycle's time is a
        # second or more after the one before (pipeline._cycle): a second before `now` is
        # after every earlier cycle's papers and before this one's.
        start = now - timedelta(seconds=1)
        self.db.execute(
            "INSERT INTO alerts (key, shown, watermark) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (key, shown, ts(start)),
        )
        if refresh:
            self.db.execute("UPDATE alerts SET shown = ? WHERE key = ?", (shown, key))
        row = self.db.execute(f"SELECT {_COLUMNS} FROM alerts WHERE key = ?", (key,)).fetchone()
        return _record(row)

    def put_alert(self, r: AlertRecord) -> None:
        self.db.execute(
            upsert("alerts", *_COLUMNS.split(", ")),
            (r.key, r.shown, ts(r.watermark), opt_ts(r.last_sent), r.failures,
             opt_ts(r.next_try), r.error),
        )  # fmt: skip

    def alert_counts(
        self, topic_ids: Sequence[str] | None, after: datetime, until: datetime | None = None
    ) -> tuple[dict[str, int], int]:
        """Return the memberships pending for a destination (entered after `after`, and up
        to `until`, a cycle's time, if given): per topic, and the papers in all (a paper
        new in two topics counts once)."""
        where, args = _topics_clause(topic_ids, self.postgres)
        if until is not None:
            where = " AND entered <= ?" + where
            args = (ts(until), *args)
        span = (ts(after), *args)
        rows = self.db.execute(
            f"SELECT topic_id, count(*) FROM members WHERE entered > ?{where} GROUP BY topic_id",
            span,
        )
        per_topic = {str(t): int(n) for t, n in rows}
        (papers,) = self.db.execute(
            f"SELECT count(DISTINCT paper_id) FROM members WHERE entered > ?{where}", span
        ).fetchone()
        return per_topic, int(papers)

    def alert_entries(
        self, topic_ids: Sequence[str], after: datetime, until: datetime, per_topic: int
    ) -> list[AlertEntry]:
        """Return the newest `per_topic` memberships pending in each of these topics."""
        from feeds.state.records import AlertEntry

        out: list[AlertEntry] = []
        for topic_id in topic_ids:
            rows = self.db.execute(
                "SELECT paper_id, entered, matched FROM members WHERE topic_id = ?"
                " AND entered > ? AND entered <= ? ORDER BY entered DESC, seq LIMIT ?",
                (topic_id, ts(after), ts(until), per_topic),
            )
            out += [AlertEntry(topic_id, str(p), parse_ts(e), hits_from(m)) for p, e, m in rows]
        return out


def _record(row: Sequence[Any]) -> AlertRecord:
    from feeds.state.records import AlertRecord

    key, shown, watermark, last_sent, failures, next_try, error = row
    return AlertRecord(
        str(key), str(shown), parse_ts(watermark), opt_dt(last_sent), int(failures),
        opt_dt(next_try), error,
    )  # fmt: skip
