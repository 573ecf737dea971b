"""What the next publish must render again: the decisions of what a change makes dirty
(a paper's page, the feeds it is in, a topic's files), kept in the state so that a run
that dies before publishing leaves them for the next."""

from __future__ import annotations

from feeds.state._db import StoreBase
from feeds.state._touch import DIRTY_KINDS, TOUCH, touch_paper


class DirtyMixin(StoreBase):
    DIRTY_KINDS = DIRTY_KINDS

    def touch(self, kind: str, item_id: str) -> None:
        """Mark a paper page or a topic's files (`all` too) to be rendered again."""
        self.db.execute(TOUCH, (kind, item_id))

    def _touch_paper(self, paper_id: str) -> None:
        touch_paper(self.db, paper_id)

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
            "INSERT INTO dirty SELECT 'paper', paper_id FROM members WHERE topic_id = ?"
            " ON CONFLICT DO NOTHING",
            (topic_id,),
        )
