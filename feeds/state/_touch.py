"""What a change makes dirty (to publish again), in SQL on a connection: shared by the
store (see _dirty) and the migrations that change papers (see _schema)."""

from __future__ import annotations

import sqlite3

TOUCH = "INSERT INTO dirty VALUES (?, ?) ON CONFLICT DO NOTHING"
DIRTY_KINDS = ("paper", "topic", "dropped", "archive")


def touch_paper(db: sqlite3.Connection, paper_id: str) -> None:
    """A paper's content changed: its page, the `all` feed and its topics' feeds."""
    db.execute(TOUCH, ("paper", paper_id))
    db.execute(TOUCH, ("topic", "all"))
    for (tid,) in db.execute("SELECT topic_id FROM members WHERE paper_id = ?", (paper_id,)):
        db.execute(TOUCH, ("topic", str(tid)))
